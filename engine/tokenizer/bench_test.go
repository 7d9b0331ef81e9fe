package tokenizer_test

import (
	"strings"
	"testing"
)

// benchText is about 10,000 characters of mixed text.
func benchText() string {
	var b strings.Builder
	for _, s := range genCorpus(9, 2000, []string{"github", "llama", "docs"}) {
		if b.Len() > 0 && len([]rune(b.String())) >= 10000 {
			break
		}
		b.WriteString(s)
		b.WriteByte(' ')
	}
	return string([]rune(b.String())[:10000])
}

func BenchmarkEncode10k(b *testing.B) {
	tok, _ := loadFixture(b, "tiny-qwen3moe-Q8_0.gguf")
	text := benchText()
	b.SetBytes(int64(len(text)))
	var n int
	for b.Loop() {
		n = len(tok.Encode(text, true, true))
	}
	b.ReportMetric(float64(n), "tokens")
}

func BenchmarkDecodeStream(b *testing.B) {
	tok, _ := loadFixture(b, "tiny-qwen3moe-Q8_0.gguf")
	ids := tok.Encode(benchText(), false, true)
	for b.Loop() {
		d := tok.NewStreamDecoder()
		for _, id := range ids {
			d.Next(id)
		}
		d.Flush()
	}
}
