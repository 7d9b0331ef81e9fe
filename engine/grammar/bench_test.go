package grammar_test

import (
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/grammar"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/engine/tokenizer"
)

// qwenSizedVocab is synth's byte-level BPE vocabulary of Qwen3's size
// (151936 tokens) through the real tokenizer.
func qwenSizedVocab(b *testing.B) *tokenizer.Tokenizer {
	v, err := synth.BuildVocab(151936)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := tokenizer.New(tokenizer.Config{Model: "gpt2", Pre: "qwen2", Tokens: v.Tokens, TokenTypes: v.Types, Merges: v.Merges})
	if err != nil {
		b.Fatal(err)
	}
	return tok
}

// BenchmarkMaskPerToken is the constraint's cost per generated token (Mask
// over the whole vocabulary, then Accept), on the person schema, for
// greedy generation over random logits; "unconstrained" is the same loop
// without the constraint (a greedy argmax), for the overhead.
func BenchmarkMaskPerToken(b *testing.B) {
	tok := qwenSizedVocab(b)
	s, err := grammar.Compile([]byte(personSchema))
	if err != nil {
		b.Fatal(err)
	}
	n := tok.NVocab()
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([][]float32, 64)
	for i := range noise {
		noise[i] = make([]float32, n)
		for j := range noise[i] {
			noise[i][j] = float32(rng.NormFloat64())
		}
	}
	logits := make([]float32, n)
	argmax := func() int32 {
		best := 0
		for i, l := range logits {
			if l > logits[best] {
				best = i
			}
		}
		return int32(best)
	}
	b.Run("constrained", func(b *testing.B) {
		c, _ := s.NewConstraint(tok)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if c.Done() {
				c, _ = s.NewConstraint(tok)
			}
			copy(logits, noise[i%len(noise)])
			c.Mask(logits)
			if err := c.Accept(argmax()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mask+accept", func(b *testing.B) { // the constraint alone
		c, _ := s.NewConstraint(tok)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if c.Done() {
				c, _ = s.NewConstraint(tok)
			}
			copy(logits, noise[i%len(noise)])
			b.StartTimer()
			c.Mask(logits)
			b.StopTimer()
			id := argmax()
			b.StartTimer()
			if err := c.Accept(id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unconstrained", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			copy(logits, noise[i%len(noise)])
			argmax()
		}
	})
}
