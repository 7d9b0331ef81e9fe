package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
)

// peakedEngine loads a small peaked qwen3moe (greedy text is far from
// ties, as a real model's often is).
func peakedEngine(t *testing.T) *engine.Engine {
	t.Helper()
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Layers, cfg.WeightScale, cfg.Seed = 2, 8, 21
	path := filepath.Join(t.TempDir(), "peaked.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Threads: 2, ContextLength: 1024})
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// TestSameGreedyRequestTwice: a greedy request sent again reuses the cached
// prompt and still gives the same 512 tokens, and so does a third after
// another prompt in between.
func TestSameGreedyRequestTwice(t *testing.T) {
	eng := peakedEngine(t)
	prompt := make([]int32, 42) // longer than a batch-invariant step
	for i := range prompt {
		prompt[i] = int32(3 + i*7%900)
	}
	req := engine.Request{Tokens: prompt, Sampling: engine.Sampling{Temperature: 0, MaxTokens: 512}}
	first, _, st := generate(t, eng, req)
	if st.GeneratedTokens < 64 {
		t.Fatalf("only %d tokens generated (%s)", st.GeneratedTokens, st.FinishReason)
	}
	second, _, _ := generate(t, eng, req)
	if !slices.Equal(first, second) {
		t.Fatalf("second request differs from token %d", firstDiff(first, second))
	}
	generate(t, eng, engine.Request{Tokens: []int32{5, 6, 7}, Sampling: engine.Sampling{MaxTokens: 4}})
	third, _, _ := generate(t, eng, req)
	if !slices.Equal(first, third) {
		t.Fatalf("request after another prompt differs from token %d", firstDiff(first, third))
	}
}

func firstDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestRequestErrorsAreTyped: bad requests and cancellations say which they
// are, and the engine serves the next request.
func TestRequestErrorsAreTyped(t *testing.T) {
	eng := peakedEngine(t)
	for _, req := range []engine.Request{
		{},
		{Prompt: "a", Tokens: []int32{1}},
		{Tokens: []int32{1 << 20}},
		{Tokens: make([]int32, 2000)},
	} {
		_, err := eng.Generate(context.Background(), req, func(engine.Token) error { return nil })
		if !errors.Is(err, engine.ErrBadRequest) || errors.Is(err, engine.ErrCancelled) {
			t.Errorf("request %+v: error %v is not a bad request", req.Tokens[:min(len(req.Tokens), 2)], err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	st, err := eng.Generate(ctx, engine.Request{Prompt: "hello", Sampling: engine.Sampling{MaxTokens: 100}}, func(engine.Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, engine.ErrCancelled) || !errors.Is(err, context.Canceled) || st.FinishReason != engine.FinishCancelled {
		t.Fatalf("cancelled request: %v, %s", err, st.FinishReason)
	}
	if _, _, st := generate(t, eng, engine.Request{Prompt: "hello", Sampling: engine.Sampling{MaxTokens: 3}}); st.GeneratedTokens == 0 {
		t.Fatal("no tokens after a cancelled request")
	}
}
