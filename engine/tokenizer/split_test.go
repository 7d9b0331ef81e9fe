package tokenizer

import (
	"slices"
	"testing"
	"unicode"
)

func splitWords(kind preKind, text string) []string {
	s := splitter{cpts: llamaRunes(text)}
	s.split(kind)
	var out []string
	begin := 0
	for _, end := range s.out {
		out = append(out, string(s.cpts[begin:end]))
		begin = end
	}
	return out
}

// The expected splits are read off the regexes in llama.cpp's
// src/llama-vocab.cpp for each pre-tokenizer.
func TestSplit(t *testing.T) {
	tests := []struct {
		kind preKind
		text string
		want []string
	}{
		{preQwen2, "Hello world", []string{"Hello", " world"}},
		{preQwen2, "I'm fine", []string{"I", "'m", " fine"}},
		{preQwen2, "IT'S", []string{"IT", "'S"}},
		{preQwen2, "we'LL'RE'Ve", []string{"we", "'LL", "'RE", "'Ve"}},
		{preQwen2, "'x", []string{"'x"}},
		{preQwen2, "abc123", []string{"abc", "1", "2", "3"}},
		{preQwen2, "  x", []string{" ", " x"}},
		{preQwen2, "x   ", []string{"x", "   "}},
		{preQwen2, "x   y", []string{"x", "  ", " y"}},
		{preQwen2, "a  \n\n b", []string{"a", "  \n\n", " b"}},
		{preQwen2, "a \n \n  b", []string{"a", " \n \n", " ", " b"}},
		{preQwen2, "hi!!\n\nthere", []string{"hi", "!!\n\n", "there"}},
		{preQwen2, " ?!", []string{" ?!"}},
		{preQwen2, "\t\tx", []string{"\t", "\tx"}},
		{preQwen2, "(x)", []string{"(x", ")"}},
		{preQwen2, "\nx", []string{"\n", "x"}},
		{preQwen2, "中文 字", []string{"中文", " 字"}},
		{preQwen2, "e\u0301!", []string{"e", "\u0301!"}},
		{preQwen2, "\u3000x", []string{"\u3000x"}},
		{preQwen2, "1\u00a0", []string{"1", "\u00a0"}},
		{preQwen35, "e\u0301!", []string{"e\u0301", "!"}},
		{preQwen35, "\u0301x", []string{"\u0301x"}},
		{preLlama3, "1234567", []string{"123", "456", "7"}},
		{preLlama3, "I'm 12", []string{"I", "'m", " ", "12"}},
		{preGPT2, "Hello world", []string{"Hello", " world"}},
		{preGPT2, " 123x", []string{" 123", "x"}},
		{preGPT2, "I'M", []string{"I", "'", "M"}},
		{preGPT2, "I'm", []string{"I", "'m"}},
		{preGPT2, "a\n\nb", []string{"a", "\n", "\n", "b"}},
		{preGPT2, "a   b", []string{"a", "  ", " b"}},
		{preGPT2, " !?", []string{" !?"}},
	}
	for _, tt := range tests {
		if got := splitWords(tt.kind, tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("split(%d, %q) = %q, want %q", tt.kind, tt.text, got, tt.want)
		}
	}
}

// llama.cpp's codepoint tables (src/unicode-data.cpp) are generated from
// Unicode 15.1; Go's are 15.0 plus the unicode151 patch. A Go release with
// newer tables would classify characters llama.cpp calls undefined.
func TestUnicodeVersion(t *testing.T) {
	if unicode.Version != "15.0.0" {
		t.Fatalf("Go's unicode tables are %s; recheck cptFlags against llama.cpp's unicode-data.cpp (Unicode 15.1)", unicode.Version)
	}
	tests := []struct {
		r    rune
		want uint16
	}{
		{'a', fLetter}, {'Z', fLetter}, {'7', fNumber}, {'!', fPunct}, {'$', fSymbol}, {'+', fSymbol},
		{' ', fSeparator | fWhitespace}, {'\n', fControl | fWhitespace}, {0x85, fControl | fWhitespace},
		{0xA0, fSeparator | fWhitespace}, {0x3000, fSeparator | fWhitespace}, {0x0301, fMark},
		{0x4E2D, fLetter}, {0x1F600, fSymbol}, {0xE000, fControl}, {0xD800, fControl}, {0x0378, fUndefined},
		{0x2EBF0, fLetter}, {0x2EE5D, fLetter}, {0x2EE5E, fUndefined}, {0x31EF, fSymbol}, {0x2FFC, fSymbol},
		{0x110000, fUndefined}, {0x1FFFFF, fUndefined},
	}
	for _, tt := range tests {
		if got := cptFlags(tt.r); got != tt.want {
			t.Errorf("cptFlags(%U) = %#x, want %#x", tt.r, got, tt.want)
		}
	}
}

func TestLlamaRunes(t *testing.T) {
	tests := []struct {
		in   string
		want []rune
	}{
		{"a中😀", []rune{'a', 0x4E2D, 0x1F600}},
		{"\xff", []rune{0xFFFD}},
		{"\xe4\xb8", []rune{0xFFFD, 0xFFFD}},
		{"\xc0\x80", []rune{0}},
		{"\xed\xa0\x80", []rune{0xD800}},
		{"\xf7\xbf\xbf\xbf", []rune{0x1FFFFF}},
		{"\xf8\x80", []rune{0xFFFD, 0xFFFD}},
	}
	for _, tt := range tests {
		if got := llamaRunes(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("llamaRunes(%q) = %U, want %U", tt.in, got, tt.want)
		}
	}
}
