package tokenizer_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzEncodeDecode(f *testing.F) {
	for _, s := range handCases {
		f.Add(s)
	}
	for _, s := range genInvalid(7, 20) {
		f.Add(s)
	}
	tok := newVocab(wordMerges("hello", "world", "the", "and", "中文", "café", "😀", "  ", "\n\n", "123", "'s"),
		"<|im_start|>", "<|im_end|>", "<|endoftext|>").tok(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []bool{false, true} {
			ids := tok.Encode(s, true, parse)
			for _, id := range ids {
				if id < 0 || int(id) >= tok.NVocab() {
					t.Fatalf("Encode(%q) gave id %d outside the vocabulary", s, id)
				}
			}
			if len(s) > 0 && len(ids) == 0 {
				t.Fatalf("Encode(%q) gave no tokens", s)
			}
			d := tok.NewStreamDecoder()
			var b strings.Builder
			for _, id := range ids {
				b.WriteString(d.Next(id))
			}
			b.WriteString(d.Flush())
			if !utf8.ValidString(b.String()) {
				t.Fatalf("stream of %q is not valid UTF-8: %q", s, b.String())
			}
			if utf8.ValidString(s) {
				if got := tok.Decode(ids); got != s {
					t.Fatalf("Decode(Encode(%q, parse=%v)) = %q", s, parse, got)
				}
				if b.String() != s {
					t.Fatalf("stream of %q (parse=%v) = %q", s, parse, b.String())
				}
			}
		}
		// Invalid UTF-8 is tokenized as llama.cpp reads it.
		if eq, ok := llamaEquivalent(s); ok && eq != s {
			if got, want := tok.Encode(s, false, false), tok.Encode(eq, false, false); !slices.Equal(got, want) {
				t.Fatalf("Encode(%q) = %v, but its llama.cpp reading %q gives %v", s, got, eq, want)
			}
		}
	})
}
