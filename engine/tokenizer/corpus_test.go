package tokenizer_test

import (
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// handCases are strings chosen to exercise each branch of the qwen2 split,
// the special-token partition and BPE corner cases.
var handCases = []string{
	"", " ", "  ", "   ", "\n", "\n\n", "\r\n", "\r", "\t", " \t ", "a", "A", "0",
	"Hello world", "Hello, world!", "hello world ", "hello world  ", "hello  world", "hello   world",
	"I'm", "you're", "we've", "she'll", "he'd", "it's", "don't", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d",
	"I'M", "YOU'RE", "WE'VE", "SHE'LL", "HE'D", "IT'S", "DON'T", "'S", "'T", "'Re", "'rE", "'Ve", "'LL", "'lL", "'D",
	"'Sx", "'LLama", "'REd", "'VEry", "'Mom", "'Ten", "'Dan", "he'Sgone", "'", "''", "'x", "'r", "'l", "'v", "'1", "' s", "'\ns", "x'", "rock'n'roll", "O'Neil's", "''''s",
	"12", "123", "1234567890", "3.14159", "1,000,000", "v1.2.3", "0x1F", "a1b2c3", " 42", "\n42", "abc123def",
	"١٢٣", "½", "²³", "Ⅻ", "⑦", "𝟘𝟙",
	"line1\nline2", "line1\r\nline2", "a\n\n\nb", "a \n b", "a  \n  b", "a\t\tb", "end\n", "end \n", "end  \n\n",
	"  leading", "\tleading tab", "\n\nleading newlines", "trailing   ", "trailing\t\t", "trailing\n ",
	"!!!", "...", "?!", " ...\n", "--\n\n", " --\r\n", "a.b", "a. b", "a .b", "(x)", "[x](y)", "{\"k\": [1, 2]}",
	"def f(x):\n    return x * 2\n", "if (a && b) { c(); }\n", "# Title\n\n- item\n- item2\n", "| a | b |\n|---|---|",
	"https://github.com/ggml-org/llama.cpp", "README.md", "docs/author.html", "user@example.com",
	"héllo", "café", "naïve", "Ångström", "ÉCOLE", "e\u0301", "a\u0300\u0301", "\u0301", " \u0301x", "ß", "İstanbul", "ǅ",
	"中文", "你好，世界！", "日本語のテキスト", "ひらがな カタカナ", "한국어 텍스트", "漢字123", "中a文",
	"😀", "😀😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "1\uFE0F\u20E3", "a😀b", " 😀", "😀\n", "❤️",
	"Привет, мир", "Γειά σου", "مرحبا بالعالم", "שלום", "नमस्ते दुनिया", "สวัสดีครับ", "ሰላም", "Ꭰ",
	"\u00a0", "a\u00a0b", "\u3000x", "a\u2028b", "\u0085", "x\u0085", "\v\f", "a\u200bb", "\ufeffBOM",
	"\ufffd", "a\ufffdb", "\U0002EBF0", "\u31EF", "\u2FFC\u2FFF", "\ue000", "\U000F0000", "\uFFFE", "\u0378", "\x00", "a\x00b", "\x7f",
	"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
	"a<|im_end|>b", " <|im_end|> ", "<|im_end|><|im_end|>", "<|im_start|><|im_end|>", "<|im_end", "|im_end|>",
	"<|im_start|", "<<|im_end|>>", "<|<|endoftext|>|>", "x<|endoftext|>\n\ny", "<|endoftext|>'s", "'<|endoftext|>s",
	"system\nYou are a helpful assistant.", "The quick brown fox jumps over the lazy dog.",
	strings.Repeat("a", 200), strings.Repeat(" ", 50) + "x", strings.Repeat("\n", 20), strings.Repeat("ab", 60),
	strings.Repeat("123", 40), strings.Repeat("😀", 20), strings.Repeat("中", 30),
}

// Character classes for the generated part of the corpus.
var (
	genWords   = []string{"the", "and", "llama", "github", "docs", "author", "model", "token", "readme", "appreciated", "zihin", "https", "com", "org", "ggml", "cpp", "with", "from", "html"}
	genSpaces  = []string{" ", " ", " ", "  ", "\t", "\n", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\u0085", "\v", "\f", "\u2009"}
	genPunct   = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
	genContr   = []string{"s", "t", "re", "ve", "m", "ll", "d", "S", "T", "RE", "Re", "VE", "M", "LL", "Ll", "D", "x", "r", "l"}
	genAccent  = []string{"é", "è", "ê", "ë", "à", "ç", "ñ", "ö", "ü", "ø", "å", "æ", "œ", "ß", "É", "Ç", "Ñ", "Ü", "e\u0301", "o\u0308", "\u0327"}
	genEmoji   = []string{"😀", "🎉", "👍", "👍🏿", "❤️", "🚀", "🇩🇪", "👩‍💻", "🤖", "✨", "©", "™", "†", "∑", "√", "€", "¥"}
	genSpecial = []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_", "|>", "<|", "<|im_start|>user\n", "<|im_start|>assistant\n"}
	genScripts = [][2]rune{
		{0x4E00, 0x9FFF},   // CJK
		{0x3040, 0x309F},   // Hiragana
		{0x30A0, 0x30FF},   // Katakana
		{0xAC00, 0xD7A3},   // Hangul
		{0x0400, 0x04FF},   // Cyrillic
		{0x0370, 0x03FF},   // Greek
		{0x0600, 0x06FF},   // Arabic
		{0x0900, 0x097F},   // Devanagari
		{0x0E00, 0x0E7F},   // Thai
		{0x2000, 0x2BFF},   // punctuation, symbols, arrows
		{0x0300, 0x036F},   // combining marks
		{0x1F300, 0x1FAFF}, // emoji and pictographs
		{0x20000, 0x2A6DF}, // CJK extension B
		{0x2EBF0, 0x2EE5D}, // CJK extension I (Unicode 15.1)
		{0xE000, 0xF8FF},   // private use
		{0x0080, 0x024F},   // Latin-1, Latin extended
		{0x10000, 0x10FFFF},
	}
)

// genCorpus returns n deterministic pseudo-random strings mixing the classes
// above with pieces of the vocabulary (so that long merges are exercised).
func genCorpus(seed uint64, n int, vocab []string) []string {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 1 + r.IntN(14) {
			switch r.IntN(14) {
			case 0, 1:
				if len(vocab) > 0 {
					b.WriteString(pick(vocab))
				}
			case 2:
				w := pick(genWords)
				switch r.IntN(3) {
				case 1:
					w = strings.ToUpper(w[:1]) + w[1:]
				case 2:
					w = strings.ToUpper(w)
				}
				b.WriteString(w)
			case 3:
				for range 1 + r.IntN(12) {
					b.WriteByte(byte('0' + r.IntN(10)))
				}
			case 4, 5:
				for range 1 + r.IntN(4) {
					b.WriteString(pick(genSpaces))
				}
			case 6:
				for range 1 + r.IntN(4) {
					b.WriteByte(genPunct[r.IntN(len(genPunct))])
				}
			case 7:
				b.WriteString("'" + pick(genContr))
			case 8:
				b.WriteString(pick(genAccent))
			case 9:
				b.WriteString(pick(genEmoji))
			case 10, 11:
				sc := genScripts[r.IntN(len(genScripts))]
				for range 1 + r.IntN(5) {
					c := sc[0] + rune(r.IntN(int(sc[1]-sc[0]+1)))
					if !utf8.ValidRune(c) {
						c = 0xFFFD
					}
					b.WriteRune(c)
				}
			case 12:
				b.WriteString(pick(genSpecial))
			case 13:
				b.WriteString(pick([]string{"a", "b", "x", "I", "s", "t"}))
			}
		}
		out = append(out, b.String())
	}
	return out
}

// genInvalid returns n strings holding invalid UTF-8: stray continuation
// bytes, truncated sequences, bytes 0xF8-0xFF, overlong forms.
func genInvalid(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 0xbad))
	bad := []string{"\x80", "\xbf", "\xc3", "\xe4\xb8", "\xf0\x9f\x98", "\xff", "\xfe", "\xf8\x88\x80\x80", "\xc0\x80",
		"\xc1\xbf", "\xe0\x80\x80", "\xf0\x80\x80\x80", "\xe4", "\xc3\x28", "\xe2\x28\xa1", "\xf0\x28\x8c\xbc", "\xa0\xa1"}
	base := genCorpus(seed, n, nil)
	out := make([]string, n)
	for i, s := range base {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			cut := r.IntN(len(s) + 1)
			b.WriteString(s[:cut])
			b.WriteString(bad[r.IntN(len(bad))])
			s = s[cut:]
		}
		b.WriteString(s)
		out[i] = b.String()
	}
	return out
}

// llamaEquivalent returns the valid UTF-8 string that llama.cpp tokenizes
// exactly as it tokenizes s. llama.cpp's decoder (unicode_cpts_from_utf8)
// checks only the lead and continuation bits of a sequence and turns a byte
// that starts no sequence into U+FFFD; the words are then re-encoded from the
// codepoints. ok is false when a decoded codepoint is no Unicode scalar value
// (a surrogate or above U+10FFFF), which no valid string can carry.
func llamaEquivalent(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		n := 0
		switch {
		case c < 0x80:
			b.WriteByte(c)
			i++
			continue
		case c>>5 == 0b110:
			n = 2
		case c>>4 == 0b1110:
			n = 3
		case c>>3 == 0b11110:
			n = 4
		}
		ok := n > 0 && i+n <= len(s)
		for k := 1; ok && k < n; k++ {
			ok = s[i+k]>>6 == 0b10
		}
		if !ok {
			b.WriteRune(utf8.RuneError)
			i++
			continue
		}
		r := rune(c) & (0x7F >> n)
		for k := 1; k < n; k++ {
			r = r<<6 | rune(s[i+k]&0x3F)
		}
		if !utf8.ValidRune(r) {
			return "", false
		}
		b.WriteRune(r)
		i += n
	}
	return b.String(), true
}
