package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/strata-llm/strata/engine/model"
)

// TokenProb is a token and its probability.
type TokenProb struct {
	ID int32   `json:"id"`
	P  float64 `json:"p"`
}

// Eval runs one batched forward pass over tokens from an empty context and
// returns, for every position i, the topK most likely next tokens after
// tokens[0..i] (softmax of the raw logits, no sampling filters).
func (e *Engine) Eval(ctx context.Context, tokens []int32, topK int) ([][]TokenProb, error) {
	lm, err := e.acquireModel(ctx)
	if err != nil {
		return nil, err
	}
	defer e.release()
	if len(tokens) == 0 {
		return nil, fmt.Errorf("eval: no tokens")
	}
	for _, id := range tokens {
		if id < 0 || int(id) >= lm.info.Vocab {
			return nil, fmt.Errorf("eval: token id %d is outside the vocabulary (0..%d)", id, lm.info.Vocab-1)
		}
	}
	if topK <= 0 || topK > lm.info.Vocab {
		topK = lm.info.Vocab
	}
	if err := lm.sess.Truncate(0); err != nil {
		return nil, err
	}
	all := make([]bool, len(tokens))
	for i := range all {
		all[i] = true
	}
	b := model.Batch{Tokens: tokens, Logits: all}
	if err := lm.sess.Forward(ctx, &b); err != nil {
		return nil, err
	}
	out := make([][]TokenProb, len(b.Out))
	for i, logits := range b.Out {
		out[i] = TopProbs(logits, topK)
	}
	return out, nil
}

// TopProbs returns the k most likely tokens of the softmax of logits.
func TopProbs(logits []float32, k int) []TokenProb {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, float64(l))
	}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l) - mx)
	}
	all := make([]TokenProb, len(logits))
	for i, l := range logits {
		all[i] = TokenProb{ID: int32(i), P: math.Exp(float64(l)-mx) / sum}
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].P != all[b].P {
			return all[a].P > all[b].P
		}
		return all[a].ID < all[b].ID
	})
	return all[:min(k, len(all))]
}

// BenchResult holds the figures of one Bench run.
type BenchResult struct {
	PromptTokens   int     `json:"prompt_tokens"`
	GenTokens      int     `json:"gen_tokens"`
	PrefillSeconds float64 `json:"prefill_seconds"`
	DecodeSeconds  float64 `json:"decode_seconds"`
	PrefillPerSec  float64 `json:"prefill_tokens_per_second"`
	DecodePerSec   float64 `json:"decode_tokens_per_second"`
	Threads        int     `json:"threads"`
	Memory         string  `json:"memory"` // how the weights are held (ModelInfo.Memory)
	// Experts is the expert cache's work over the decode steps when
	// experts are streamed.
	Experts *ExpertStats `json:"experts,omitempty"`
}

// Bench times a prefill of promptTokens random tokens in one batch, then
// gen single-token decode steps (greedy), from an empty context, as
// llama-bench's pp and tg tests do.
func (e *Engine) Bench(ctx context.Context, promptTokens, gen int, seed uint64) (BenchResult, error) {
	lm, err := e.acquireModel(ctx)
	if err != nil {
		return BenchResult{}, err
	}
	defer e.release()
	if promptTokens < 1 || gen < 0 || promptTokens+gen > lm.sess.Cap() {
		return BenchResult{}, fmt.Errorf("bench: %d prompt + %d generated tokens do not fit the context of %d", promptTokens, gen, lm.sess.Cap())
	}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	toks := make([]int32, promptTokens)
	for i := range toks {
		toks[i] = int32(rng.IntN(lm.info.Vocab))
	}
	if err := lm.sess.Truncate(0); err != nil {
		return BenchResult{}, err
	}
	e.mu.Lock()
	r := BenchResult{PromptTokens: promptTokens, GenTokens: gen, Threads: e.opts.Threads}
	e.mu.Unlock()
	t0 := time.Now()
	logits, err := lm.forward(ctx, toks)
	if err != nil {
		return r, err
	}
	r.PrefillSeconds = time.Since(t0).Seconds()
	r.PrefillPerSec = float64(promptTokens) / r.PrefillSeconds
	r.Memory = lm.info.Memory
	before := lm.expertSnap()
	t1 := time.Now()
	for i := 0; i < gen; i++ {
		best := 0
		for j, l := range logits {
			if l > logits[best] {
				best = j
			}
		}
		if logits, err = lm.step(ctx, int32(best)); err != nil {
			return r, err
		}
	}
	r.DecodeSeconds = time.Since(t1).Seconds()
	if lm.stream != nil {
		r.Experts = expertStats(before, lm.expertSnap(), time.Since(t1))
	}
	if gen > 0 {
		r.DecodePerSec = float64(gen) / r.DecodeSeconds
	}
	// The session no longer matches any prompt.
	_ = lm.sess.Truncate(0)
	return r, nil
}
