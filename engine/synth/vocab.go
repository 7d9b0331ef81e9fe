package synth

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The Qwen control tokens, last in the vocabulary in this order.
const (
	TokenEndOfText = "<|endoftext|>"
	TokenIMStart   = "<|im_start|>"
	TokenIMEnd     = "<|im_end|>"
)

// Token types as llama.cpp stores them in tokenizer.ggml.token_type.
const (
	tokenNormal  = 1
	tokenControl = 3
)

// Vocab is a byte-level BPE vocabulary in GPT-2 form: token strings over
// the bytes_to_unicode alphabet, merges "left right" by rank.
type Vocab struct {
	Tokens []string
	Types  []int32
	Merges []string
	// Ids of the control tokens.
	EndOfText, IMStart, IMEnd int
}

// byteToUnicode is GPT-2's bytes_to_unicode: printable Latin-1 bytes map to
// themselves, the others to U+0100 upwards in byte order.
func byteToUnicode() [256]rune {
	var m [256]rune
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// pretokenize splits text roughly as the qwen2 pre-tokenizer does: letters
// with an optional leading space or symbol, single digits, punctuation runs
// with an optional leading space, whitespace runs. It only shapes which
// merges are learned; llama.cpp applies its own regex when tokenizing.
func pretokenize(text string) []string {
	var out []string
	class := func(r rune) int {
		switch {
		case unicode.IsLetter(r) || unicode.IsMark(r):
			return 1
		case unicode.IsNumber(r):
			return 2
		case unicode.IsSpace(r):
			return 3
		}
		return 4
	}
	rs := []rune(text)
	for i := 0; i < len(rs); {
		start := i
		c := class(rs[i])
		if rs[i] == ' ' && i+1 < len(rs) && class(rs[i+1]) != 3 && class(rs[i+1]) != 2 {
			i++
			c = class(rs[i])
		}
		switch c {
		case 2:
			i++
		default:
			for i < len(rs) && class(rs[i]) == c {
				if c == 3 && i+1 < len(rs) && rs[i+1] != ' ' && class(rs[i+1]) != 3 && i > start {
					break // leave the last space to the next word
				}
				i++
			}
		}
		if i == start {
			i++
		}
		out = append(out, string(rs[start:i]))
	}
	return out
}

// BuildVocab learns a byte-level BPE vocabulary of exactly size tokens from
// the built-in corpus: the 256 byte tokens, merges by greedy pair counting
// (most frequent pair first, ties by the pair's strings), then, if the
// corpus runs out of pairs seen twice, further merges of existing tokens
// with single letters, and the three control tokens last. It is
// deterministic.
func BuildVocab(size int) (*Vocab, error) {
	const nControl = 3
	if size < 256+nControl {
		return nil, fmt.Errorf("vocabulary of %d tokens: need at least %d", size, 256+nControl)
	}
	b2u := byteToUnicode()
	v := &Vocab{}
	index := map[string]int{}
	add := func(s string) int {
		id := len(v.Tokens)
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, tokenNormal)
		index[s] = id
		return id
	}
	for b := range 256 {
		add(string(b2u[b]))
	}
	nMerges := size - 256 - nControl

	// Unique pre-tokens with counts, as symbol id sequences.
	counts := map[string]int{}
	for _, w := range pretokenize(corpus) {
		counts[w]++
	}
	keys := make([]string, 0, len(counts))
	for w := range counts {
		keys = append(keys, w)
	}
	slices.Sort(keys)
	type word struct {
		syms  []int
		count int
	}
	words := make([]word, 0, len(keys))
	for _, k := range keys {
		syms := make([]int, 0, len(k))
		for i := 0; i < len(k); i++ {
			syms = append(syms, int(k[i]))
		}
		words = append(words, word{syms, counts[k]})
	}

	type pair struct{ a, b int }
	for len(v.Merges) < nMerges {
		pc := map[pair]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				pc[pair{w.syms[i], w.syms[i+1]}] += w.count
			}
		}
		best, bestN := pair{}, 0
		for p, n := range pc {
			if n > bestN || n == bestN && cmpPair(v.Tokens, p.a, p.b, best.a, best.b) < 0 {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		merged := v.Tokens[best.a] + v.Tokens[best.b]
		id, ok := index[merged]
		if !ok {
			id = add(merged)
		}
		v.Merges = append(v.Merges, v.Tokens[best.a]+" "+v.Tokens[best.b])
		for wi := range words {
			s := words[wi].syms
			out := s[:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best.a && s[i+1] == best.b {
					out = append(out, id)
					i++
					continue
				}
				out = append(out, s[i])
			}
			words[wi].syms = out
		}
	}

	// Fill: extend existing tokens by one letter, in id order.
	var letters []int
	for b := range 256 {
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' {
			letters = append(letters, b)
		}
	}
	for base := 0; len(v.Merges) < nMerges; base++ {
		if base >= len(v.Tokens) {
			return nil, fmt.Errorf("vocabulary of %d tokens: ran out of merges", size)
		}
		for _, l := range letters {
			if len(v.Merges) == nMerges {
				break
			}
			s := v.Tokens[base] + v.Tokens[l]
			if _, ok := index[s]; ok {
				continue
			}
			add(s)
			v.Merges = append(v.Merges, v.Tokens[base]+" "+v.Tokens[l])
		}
	}
	// Merges may have produced an existing token again (a+b = c+d); pad
	// with fill tokens so the vocabulary has exactly size tokens.
	for base := 256; len(v.Tokens) < size-nControl; base++ {
		for _, l := range letters {
			if len(v.Tokens) == size-nControl {
				break
			}
			s := v.Tokens[base] + v.Tokens[l] + v.Tokens[l]
			if _, ok := index[s]; !ok {
				add(s)
			}
		}
	}
	v.EndOfText = add(TokenEndOfText)
	v.IMStart = add(TokenIMStart)
	v.IMEnd = add(TokenIMEnd)
	for _, id := range []int{v.EndOfText, v.IMStart, v.IMEnd} {
		v.Types[id] = tokenControl
	}
	if len(v.Tokens) != size {
		return nil, fmt.Errorf("vocabulary: built %d tokens, want %d", len(v.Tokens), size)
	}
	return v, nil
}

func cmpPair(tok []string, a1, b1, a2, b2 int) int {
	return cmp.Or(strings.Compare(tok[a1], tok[a2]), strings.Compare(tok[b1], tok[b2]))
}

// Decode turns a byte-level token string back into its bytes.
func Decode(token string) []byte {
	b2u := byteToUnicode()
	var u2b [512]int
	for i := range u2b {
		u2b[i] = -1
	}
	for b, r := range b2u {
		u2b[r] = b
	}
	out := make([]byte, 0, len(token))
	for _, r := range token {
		if r < 512 && u2b[r] >= 0 {
			out = append(out, byte(u2b[r]))
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// corpus is the training text for the merges: English prose, chat turns,
// code and numbers, accented European languages and CJK.
const corpus = `The quick brown fox jumps over the lazy dog. The five boxing wizards jump quickly.
It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.
In the beginning there was nothing, and then there was a model that learned to predict the next token.
A language model reads the text one token at a time and tells us what is likely to come next.
Experts in a mixture of experts model are chosen by a router; only a few of them run for every token.
The weights of the experts live on the disk and are streamed into memory when they are needed.
Hello! How are you today? I'm fine, thanks. What's the weather like where you are? It's sunny and warm.
Could you please explain how the attention mechanism works? Of course: every token looks at the others.
We'll see you tomorrow at 10:30 in the morning; don't be late, and bring the report from 2024.
The price was $1,299.99 in March, 15% lower than in February, and 3 times higher than in 1999.
user: Write a short poem about the sea.
assistant: The sea is wide, the sea is deep, it sings the sailors off to sleep.
user: What is 12 times 34?
assistant: 12 times 34 is 408.
func main() { fmt.Println("hello, world") }
for (int i = 0; i < n; i++) { sum += a[i] * b[i]; }
def forward(self, x): return self.norm(x + self.attention(x))
if err != nil { return fmt.Errorf("open %s: %w", path, err) }
The government announced on Thursday that the new policy would take effect next year.
Scientists have discovered that the ocean absorbs a large share of the heat produced on land.
She said that she would rather read a book than watch the television in the evening.
They were walking along the river when they noticed the bridge had been painted blue.
Café, naïve, résumé, façade, jalapeño, über, São Paulo, Zürich, Kraków, Ångström, Øresund.
Le petit prince a dit : « On ne voit bien qu'avec le cœur. L'essentiel est invisible pour les yeux. »
Où est la gare ? Je voudrais un café crème et un croissant, s'il vous plaît. Très bien, merci beaucoup.
Ich möchte gerne ein Stück Kuchen und eine Tasse Kaffee. Die Straße ist schön, und das Mädchen lächelt.
¿Dónde está la biblioteca? Mañana vamos a la playa con los niños. ¡Qué día tan bonito!
A criança está feliz porque o pão está quente. Não sei se ele virá amanhã à tarde.
Dziękuję bardzo. Czy możesz mi pomóc? Šťastný nový rok. Köszönöm szépen. Mulțumesc frumos.
Καλημέρα, τι κάνεις; Добрый день, как дела? Спасибо, всё хорошо.
今天天气很好，我们去公园散步吧。人工智能正在改变世界。我喜欢学习中文和数学。
这个模型可以回答问题，也可以写诗和翻译文章。北京是中国的首都，上海是一个大城市。
今日はとても良い天気ですね。私は日本語を勉強しています。東京は大きな都市です。
ありがとうございます。すみません、駅はどこですか？カタカナとひらがなを覚えました。
안녕하세요. 만나서 반갑습니다. 오늘 날씨가 정말 좋네요. 한국어를 배우고 있어요.
Emoji are everywhere now 🙂 😀 🚀 ❤️ 👍 and people use them in every message.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 256 1024 65536 3.14159 2.71828 -7 +8 1e-6.
Whitespace	tabs	and    runs   of    spaces, new
lines, and more new

lines appear in code and in prose alike.
The quick brown fox jumps over the lazy dog again, and again, and again, until the dog wakes up.
Once upon a time, in a land far away, there lived a king who loved to count the stars at night.
Every night he counted them, and every night the number was different, which made him very curious.
The engine loads the model, reads the metadata, checks every tensor, and then starts to generate text.
`
