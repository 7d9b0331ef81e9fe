package tokenizer_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/strata-llm/strata/engine/tokenizer"
)

// gpt2Bytes is GPT-2's byte-to-character table, written out independently
// of the package: printable Latin-1 stands for itself, the rest is shifted to
// U+0100 and up in byte order.
func gpt2Bytes() [256]string {
	var t [256]string
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			t[b] = string(rune(b))
		} else {
			t[b] = string(rune(256 + n))
			n++
		}
	}
	return t
}

func enc(s string) string {
	t := gpt2Bytes()
	var b strings.Builder
	for _, c := range []byte(s) {
		b.WriteString(t[c])
	}
	return b.String()
}

// vocab is a hand-made vocabulary: the 256 byte tokens (id = byte value),
// then the results of merges in order, then extra tokens.
type vocab struct {
	cfg tokenizer.Config
	ids map[string]int32
}

func newVocab(merges []string, extra ...string) *vocab {
	v := &vocab{ids: map[string]int32{}}
	add := func(s string, typ int32) {
		if _, ok := v.ids[s]; ok {
			return
		}
		v.ids[s] = int32(len(v.cfg.Tokens))
		v.cfg.Tokens = append(v.cfg.Tokens, s)
		v.cfg.TokenTypes = append(v.cfg.TokenTypes, typ)
	}
	for _, s := range gpt2Bytes() {
		add(s, tokenizer.TypeNormal)
	}
	for _, m := range merges {
		add(strings.Replace(m, " ", "", 1), tokenizer.TypeNormal)
	}
	for _, s := range extra {
		typ := int32(tokenizer.TypeControl)
		if strings.HasPrefix(s, "user:") {
			s, typ = s[5:], tokenizer.TypeUserDefined
		}
		add(s, typ)
	}
	v.cfg.Model = "gpt2"
	v.cfg.Pre = "qwen2"
	v.cfg.Merges = merges
	return v
}

// wordMerges returns merges that build each word (and its space-prefixed
// form) left to right.
func wordMerges(words ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range words {
		for _, form := range []string{enc(w), enc(" " + w)} {
			r := []rune(form)
			for i := 2; i <= len(r); i++ {
				m := string(r[:i-1]) + " " + string(r[i-1])
				if !seen[m] {
					seen[m] = true
					out = append(out, m)
				}
			}
		}
	}
	return out
}

func (v *vocab) tok(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.New(v.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (v *vocab) id(t testing.TB, s string) int32 {
	t.Helper()
	id, ok := v.ids[s]
	if !ok {
		t.Fatalf("no token %q", s)
	}
	return id
}

func ptr[T any](v T) *T { return &v }

func TestEncodeBPE(t *testing.T) {
	tests := []struct {
		name   string
		merges []string
		text   string
		want   []string // token texts
	}{
		{"merge chain", []string{"a b", "ab c"}, "abc", []string{"abc"}},
		{"rank decides", []string{"b c", "a b"}, "abc", []string{"a", "bc"}},
		{"lower rank first", []string{"a b", "b c"}, "abc", []string{"ab", "c"}},
		{"equal ranks left first", []string{"a a"}, "aaa", []string{"aa", "a"}},
		{"repeats", []string{"a b"}, "abab", []string{"ab", "ab"}},
		{"space prefix", []string{"Ġ a", "Ġa b"}, "x ab", []string{"x", "Ġab"}},
		{"words split first", []string{"a Ġ", "aĠ b"}, "a b", []string{"a", "Ġ", "b"}},
		{"no merges", []string{"x y"}, "ab", []string{"a", "b"}},
		{"multibyte", []string{"ä ¸", "ä¸ Ń"}, "中", []string{"ä¸Ń"}},
		{"newline bytes", []string{"Ċ Ċ"}, "\n\n\n", []string{"ĊĊ", "Ċ"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVocab(tt.merges)
			got := v.tok(t).Encode(tt.text, false, false)
			var want []int32
			for _, s := range tt.want {
				want = append(want, v.id(t, s))
			}
			if !slices.Equal(got, want) {
				t.Errorf("Encode(%q) = %v, want %v (%q)", tt.text, got, want, tt.want)
			}
		})
	}
}

// A merge whose result is not a token falls back to the single-byte tokens
// of its text, as llama.cpp does.
func TestEncodeMergeNotInVocab(t *testing.T) {
	v := newVocab([]string{"x y"})
	// Drop "xy" from the vocabulary, keep the merge.
	i := v.id(t, "xy")
	v.cfg.Tokens = slices.Delete(v.cfg.Tokens, int(i), int(i)+1)
	v.cfg.TokenTypes = slices.Delete(v.cfg.TokenTypes, int(i), int(i)+1)
	got := v.tok(t).Encode("xy", false, false)
	if want := []int32{'x', 'y'}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestEncodeSpecial(t *testing.T) {
	v := newVocab(wordMerges("hi", "im", "end"), "<|im_start|>", "<|im_end|>", "user:<tool>", "<|im_start|>x")
	tok := v.tok(t)
	start, end, tool, startx := v.id(t, "<|im_start|>"), v.id(t, "<|im_end|>"), v.id(t, "<tool>"), v.id(t, "<|im_start|>x")
	hi := v.id(t, "hi")
	tests := []struct {
		text  string
		parse bool
		want  []int32
	}{
		{"<|im_start|>hi<|im_end|>", true, []int32{start, hi, end}},
		{"hi<tool>hi", true, []int32{hi, tool, hi}},
		{"hi<tool>hi", false, []int32{hi, tool, hi}}, // user-defined tokens are always matched
		{"<|im_start|>x", true, []int32{startx}},     // longest first
		{"<|im_start|>y", true, []int32{start, 'y'}},
		{"<|im_end|><|im_end|>", true, []int32{end, end}},
	}
	for _, tt := range tests {
		got := tok.Encode(tt.text, false, tt.parse)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Encode(%q, parse=%v) = %v, want %v", tt.text, tt.parse, got, tt.want)
		}
	}
	// Without parseSpecial, control tokens are plain text.
	got := tok.Encode("<|im_end|>", false, false)
	if slices.Contains(got, end) || tok.Decode(got) != "<|im_end|>" {
		t.Errorf("Encode(<|im_end|>, parse=false) = %v", got)
	}
}

func TestAddSpecial(t *testing.T) {
	v := newVocab(nil, "<s>", "</s>")
	bos, eos := v.id(t, "<s>"), v.id(t, "</s>")
	v.cfg.BOS, v.cfg.EOS = ptr(bos), ptr(eos)
	tests := []struct {
		addBOS, addEOS *bool
		add            bool
		want           []int32
	}{
		{nil, nil, true, []int32{'a'}}, // qwen2 adds nothing by default
		{ptr(true), nil, true, []int32{bos, 'a'}},
		{ptr(true), ptr(true), true, []int32{bos, 'a', eos}},
		{ptr(true), ptr(true), false, []int32{'a'}},
		{ptr(false), ptr(true), true, []int32{'a', eos}},
	}
	for _, tt := range tests {
		v.cfg.AddBOS, v.cfg.AddEOS = tt.addBOS, tt.addEOS
		got := v.tok(t).Encode("a", tt.add, false)
		if !slices.Equal(got, tt.want) {
			t.Errorf("addBOS=%v addEOS=%v add=%v: %v, want %v", tt.addBOS, tt.addEOS, tt.add, got, tt.want)
		}
	}
	v.cfg.AddBOS, v.cfg.AddEOS = ptr(true), nil
	if got := v.tok(t).Encode("", true, false); !slices.Equal(got, []int32{bos}) {
		t.Errorf("empty text with BOS: %v", got)
	}
	tok := v.tok(t)
	if tok.BOS() != bos || tok.EOS() != eos || tok.BOSText() != "<s>" || tok.EOSText() != "</s>" {
		t.Errorf("BOS/EOS = %d %d %q %q", tok.BOS(), tok.EOS(), tok.BOSText(), tok.EOSText())
	}
}

func TestDefaults(t *testing.T) {
	// llama.cpp's BPE defaults: BOS = EOS = 11 when the file names none;
	// llama3 adds BOS by default.
	v := newVocab(nil)
	v.cfg.Pre = "llama3"
	tok := v.tok(t)
	if tok.BOS() != 11 || tok.EOS() != 11 || !tok.AddBOS() || tok.AddEOS() {
		t.Errorf("llama3 defaults: bos %d eos %d addBOS %v addEOS %v", tok.BOS(), tok.EOS(), tok.AddBOS(), tok.AddEOS())
	}
	v.cfg.Pre = "glm4"
	if tok := v.tok(t); tok.BOS() != -1 || tok.BOSText() != "" {
		t.Errorf("glm4 BOS = %d", tok.BOS())
	}
}

func TestEOG(t *testing.T) {
	v := newVocab(nil, "<|im_end|>", "<|endoftext|>", "<|fim_pad|>", "<|im_start|>", "user:<|eot_id|>")
	// A normal-typed <|im_end|> is still made a control token, as llama.cpp does.
	v.cfg.TokenTypes[v.id(t, "<|im_end|>")] = tokenizer.TypeNormal
	v.cfg.EOS = ptr(int32('z'))
	tok := v.tok(t)
	for _, s := range []string{"<|im_end|>", "<|endoftext|>", "<|fim_pad|>", "<|eot_id|>", "z"} {
		if !tok.IsEOG(v.id(t, s)) {
			t.Errorf("%q is not end-of-generation", s)
		}
	}
	for _, s := range []string{"<|im_start|>", "a"} {
		if tok.IsEOG(v.id(t, s)) {
			t.Errorf("%q is end-of-generation", s)
		}
	}
	if !tok.IsControl(v.id(t, "<|im_end|>")) {
		t.Error("<|im_end|> is not a control token")
	}
	if got := tok.Encode("<|im_end|>", false, true); !slices.Equal(got, []int32{v.id(t, "<|im_end|>")}) {
		t.Errorf("Encode(<|im_end|>) = %v", got)
	}

	// gpt-oss: with <|return|> and <|call|>, <|end|> is not an end.
	v = newVocab(nil, "<|end|>", "<|return|>", "<|call|>")
	tok = v.tok(t)
	if tok.IsEOG(v.id(t, "<|end|>")) || !tok.IsEOG(v.id(t, "<|return|>")) {
		t.Errorf("gpt-oss EOG = %v", tok.EOG())
	}
}

func TestNewErrors(t *testing.T) {
	base := func() tokenizer.Config { return newVocab([]string{"a b"}, "<x>").cfg }
	tests := []struct {
		name string
		edit func(c *tokenizer.Config)
		want string
	}{
		{"spm", func(c *tokenizer.Config) { c.Model = "llama" }, `"llama"`},
		{"no model", func(c *tokenizer.Config) { c.Model = "" }, "missing"},
		{"unknown pre", func(c *tokenizer.Config) { c.Pre = "mystery" }, `"mystery"`},
		{"default pre", func(c *tokenizer.Config) { c.Pre = "" }, "pre"},
		{"no tokens", func(c *tokenizer.Config) { c.Tokens, c.TokenTypes = nil, nil }, "no tokens"},
		{"duplicate", func(c *tokenizer.Config) { c.Tokens[257] = c.Tokens[5] }, "same text"},
		{"short types", func(c *tokenizer.Config) { c.TokenTypes = c.TokenTypes[:10] }, "token types"},
		{"merge without space", func(c *tokenizer.Config) { c.Merges = []string{"ab"} }, "merge 0"},
		{"merge empty right", func(c *tokenizer.Config) { c.Merges = []string{"a "} }, "merge 0"},
		{"bos range", func(c *tokenizer.Config) { c.BOS = ptr(int32(len(c.Tokens))) }, "bos token id"},
		{"eos negative", func(c *tokenizer.Config) { c.EOS = ptr(int32(-2)) }, "eos token id"},
		{"add bos without bos", func(c *tokenizer.Config) { c.Pre = "glm4"; c.AddBOS = ptr(true) }, "BOS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.edit(&c)
			_, err := tokenizer.New(c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := tokenizer.New(base()); err != nil {
		t.Errorf("base config: %v", err)
	}
}

func TestTokenBytes(t *testing.T) {
	v := newVocab([]string{"Ġ h", "Ġh i"}, "<|im_end|>", "<0x41>", "<unused>")
	v.cfg.TokenTypes[v.id(t, "<0x41>")] = tokenizer.TypeByte
	v.cfg.TokenTypes[v.id(t, "<unused>")] = tokenizer.TypeUnused
	tok := v.tok(t)
	tests := []struct {
		id   int32
		want string
	}{
		{v.id(t, "Ġhi"), " hi"},
		{v.id(t, "Ċ"), "\n"},
		{0xE4, "\xe4"},
		{v.id(t, "<|im_end|>"), "<|im_end|>"},
		{v.id(t, "<0x41>"), "A"},
		{v.id(t, "<unused>"), ""},
		{-1, ""},
		{int32(tok.NVocab()), ""},
	}
	for _, tt := range tests {
		if got := string(tok.TokenBytes(tt.id)); got != tt.want {
			t.Errorf("TokenBytes(%d) = %q, want %q", tt.id, got, tt.want)
		}
	}
	ids := []int32{v.id(t, "<|im_end|>"), v.id(t, "Ġhi"), 0xE4, 0xB8, 0xAD}
	if got := tok.Decode(ids); got != "<|im_end|> hi中" {
		t.Errorf("Decode = %q", got)
	}
}

func TestStreamDecoder(t *testing.T) {
	v := newVocab(nil, "<|im_end|>")
	end := v.id(t, "<|im_end|>")
	tok := v.tok(t)
	tests := []struct {
		name  string
		ids   []int32
		steps []string
		flush string
	}{
		{"ascii", []int32{'h', 'i'}, []string{"h", "i"}, ""},
		{"split char", []int32{0xE4, 0xB8, 0xAD, '!'}, []string{"", "", "中", "!"}, ""},
		{"emoji", []int32{0xF0, 0x9F, 0x98, 0x80}, []string{"", "", "", "😀"}, ""},
		{"stray continuation", []int32{0x80, 'a'}, []string{"\uFFFD", "a"}, ""},
		{"invalid byte", []int32{0xFF}, []string{"\uFFFD"}, ""},
		{"cut by ascii", []int32{0xE4, 0xB8, 'x'}, []string{"", "", "\uFFFDx"}, ""},
		{"cut by control", []int32{0xE4, end}, []string{"", "\uFFFD<|im_end|>"}, ""},
		{"surrogate prefix", []int32{0xED, 0xA0}, []string{"", "\uFFFD\uFFFD"}, ""},
		{"held at flush", []int32{'a', 0xF0, 0x9F}, []string{"a", "", ""}, "\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tok.NewStreamDecoder()
			for i, id := range tt.ids {
				if got := d.Next(id); got != tt.steps[i] {
					t.Errorf("Next(%d) #%d = %q, want %q", id, i, got, tt.steps[i])
				}
			}
			if got := d.Flush(); got != tt.flush {
				t.Errorf("Flush = %q, want %q", got, tt.flush)
			}
			if got := d.Flush(); got != "" {
				t.Errorf("second Flush = %q", got)
			}
		})
	}
}

// Streaming any valid text token by token reproduces it exactly.
func TestStreamDecoderRoundTrip(t *testing.T) {
	tok := newVocab(wordMerges("hello", "world", "中文"), "<|im_end|>").tok(t)
	for _, s := range append(slices.Clone(handCases), genCorpus(3, 200, nil)...) {
		d := tok.NewStreamDecoder()
		var b strings.Builder
		for _, id := range tok.Encode(s, false, true) {
			out := d.Next(id)
			if !utf8.ValidString(out) {
				t.Fatalf("%q: invalid UTF-8 %q", s, out)
			}
			b.WriteString(out)
		}
		b.WriteString(d.Flush())
		if b.String() != s {
			t.Errorf("stream of %q gave %q", s, b.String())
		}
	}
}

func TestRoundTrip(t *testing.T) {
	tok := newVocab(wordMerges("hello", "world", "the", "中文", "😀"), "<|im_end|>", "user:<tool>").tok(t)
	for _, s := range append(slices.Clone(handCases), genCorpus(4, 300, nil)...) {
		for _, parse := range []bool{false, true} {
			if got := tok.Decode(tok.Encode(s, false, parse)); got != s {
				t.Errorf("Decode(Encode(%q, parse=%v)) = %q", s, parse, got)
			}
		}
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := newVocab(wordMerges("hello", "world"), "<|im_end|>").tok(t)
	texts := genCorpus(5, 50, nil)
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, true, true)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for i, s := range texts {
				if got := tok.Encode(s, true, true); !slices.Equal(got, want[i]) {
					errs <- fmt.Errorf("%q: %v, want %v", s, got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestInvalidUTF8(t *testing.T) {
	// llama.cpp reads a byte that starts no sequence as U+FFFD; overlong
	// forms decode to their codepoint.
	tok := newVocab(nil).tok(t)
	tests := []struct{ in, same string }{
		{"\xff", "\uFFFD"},
		{"a\x80b", "a\uFFFDb"},
		{"\xe4\xb8", "\uFFFD\uFFFD"},
		{"\xe4\xb8x", "\uFFFD\uFFFDx"},
		{"\xc0\x80", "\x00"},
		{"\xc1\xbf", "\x7f"},
	}
	for _, tt := range tests {
		if got, want := tok.Encode(tt.in, false, false), tok.Encode(tt.same, false, false); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v (as %q)", tt.in, got, want, tt.same)
		}
	}
	// Codepoints llama.cpp cannot re-encode (it throws) become U+FFFD;
	// surrogates keep their bytes.
	if got, want := tok.Encode("\xf7\xbf\xbf\xbf", false, false), tok.Encode("\uFFFD", false, false); !slices.Equal(got, want) {
		t.Errorf("above U+10FFFF: %v, want %v", got, want)
	}
	if got := tok.Decode(tok.Encode("\xed\xa0\x80", false, false)); got != "\xed\xa0\x80" {
		t.Errorf("surrogate: %q", got)
	}
}
