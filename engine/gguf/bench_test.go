package gguf

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkParseVocab parses metadata shaped like a Qwen3 tokenizer:
// 151k tokens, 151k merges and their types.
func BenchmarkParseVocab(b *testing.B) {
	const n = 151_669
	toks := make([]string, n)
	merges := make([]string, n)
	types := make([]int32, n)
	for i := range toks {
		toks[i] = fmt.Sprintf("tok%d", i)
		merges[i] = fmt.Sprintf("a%d b%d", i, i)
		types[i] = 1
	}
	w := NewWriter()
	w.AddString("general.architecture", "qwen3moe")
	w.AddStrings("tokenizer.ggml.tokens", toks)
	w.AddStrings("tokenizer.ggml.merges", merges)
	w.AddInt32s("tokenizer.ggml.token_type", types)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(buf.Bytes(), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
