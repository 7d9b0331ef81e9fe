package engine_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/engine/tokenizer"
	"github.com/strata-llm/strata/internal/oracle"
	"github.com/strata-llm/strata/internal/testfix"
)

// Bounds on KL(llama.cpp ‖ ours) in nats. Float summation order differs
// between any two implementations (llama.cpp's own x86 builds differ among
// themselves at ~1e-8 relative), and activations quantized to Q8 turn such
// differences into occasional one-step rounding flips. Measured here: a
// 1e-6 relative nudge of our own attention output moves a synthetic Q8_0
// model's next-token distribution by up to KL 4e-3 (the fixtures: 4e-5), so
// the bounds are on the median over positions, with a looser maximum for
// the positions where a rounding flip changed an expert choice.
type klBounds struct {
	median, max float64
	// flips is how many positions may have another top-1 token than
	// llama.cpp's although its margin exceeds marginTop1 (but stays under
	// 2·marginTop1): a route flip at an expert near-tie moves the
	// distribution that far (qwen3next's tests).
	flips int
}

var (
	exactBounds = klBounds{median: 1e-4, max: 1e-3} // no activation quantization (F32/F16/BF16), and the Q8_0 fixture
	quantBounds = klBounds{median: 3e-3, max: 0.5}  // weights whose dot products use Q8 activations
)

// routerSkew makes a few experts win every route by a wide margin in the
// synthetic models, so that float summation order cannot flip an expert
// choice (an MoE's one discontinuity that no kernel can avoid); the
// fixtures keep llama.cpp's own random routers.
const routerSkew = 3

// marginTop1 is the gap between llama.cpp's two most likely tokens above
// which our most likely token must be its.
const marginTop1 = 0.05

type oracleCase struct {
	name  string
	path  string
	bound klBounds
}

func oracleCases(t *testing.T) []oracleCase {
	cases := []oracleCase{
		{"fixture/Q8_0", testfix.Path(t, testfix.Qwen3MoEQ8_0), exactBounds},
		{"fixture/Q4_K_M", testfix.Path(t, testfix.Qwen3MoEQ4_K_M), quantBounds},
	}
	tmp := t.TempDir()
	for _, typ := range []ggml.Type{ggml.F32, ggml.F16, ggml.BF16, ggml.Q8_0, ggml.Q4_0, ggml.Q4_K, ggml.Q5_K,
		ggml.Q6_K, ggml.Q2_K, ggml.Q3_K, ggml.IQ2_XXS, ggml.IQ2_XS, ggml.IQ3_XXS, ggml.IQ4_XS} {
		cfg := synth.Defaults("qwen3moe")
		cfg.Type = typ
		cfg.Seed = 7
		cfg.RouterSkew = routerSkew
		path := filepath.Join(tmp, "synth-"+typ.String()+".gguf")
		if err := synth.Write(context.Background(), path, cfg); err != nil {
			t.Fatalf("synth %s: %v", typ, err)
		}
		b := quantBounds
		if typ == ggml.F32 || typ == ggml.F16 || typ == ggml.BF16 {
			b = exactBounds
		}
		cases = append(cases, oracleCase{"synth/" + typ.String(), path, b})
	}
	return cases
}

func loadEngine(t *testing.T, path string) *engine.Engine {
	t.Helper()
	eng := engine.New(engine.Options{Threads: 2, ContextLength: 256})
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// TestForwardMatchesLlamaCpp compares, position by position on the same
// token sequence, our next-token distribution with llama.cpp's.
func TestForwardMatchesLlamaCpp(t *testing.T) {
	o := oracle.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range oracleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			eng := loadEngine(t, c.path)
			vocab := eng.Status().Model.Vocab
			rng := rand.New(rand.NewPCG(1, 2))
			tokens := make([]int32, 24)
			for i := range tokens {
				tokens[i] = int32(rng.IntN(vocab))
			}
			theirs, err := o.Eval(ctx, c.path, tokens, vocab)
			if err != nil {
				t.Fatalf("oracle: %v", err)
			}
			ours, err := eng.Eval(ctx, tokens, vocab)
			if err != nil {
				t.Fatal(err)
			}
			if len(ours) != len(theirs) {
				t.Fatalf("%d positions, llama.cpp %d", len(ours), len(theirs))
			}
			var worst float64
			kls := make([]float64, 0, len(ours))
			for i := range ours {
				q := make(map[int32]float64, len(ours[i]))
				for _, p := range ours[i] {
					q[p.ID] = p.P
				}
				var kl float64
				for _, p := range theirs[i] {
					if p.P > 0 {
						kl += p.P * math.Log(p.P/math.Max(q[p.ID], 1e-300))
					}
				}
				worst = math.Max(worst, kl)
				kls = append(kls, kl)
				if len(theirs[i]) > 1 && theirs[i][0].P-theirs[i][1].P > marginTop1 && ours[i][0].ID != theirs[i][0].ID {
					t.Errorf("position %d: top token %d (p %.4f), llama.cpp %d (p %.4f, next %.4f)",
						i, ours[i][0].ID, ours[i][0].P, theirs[i][0].ID, theirs[i][0].P, theirs[i][1].P)
				}
			}
			slices.Sort(kls)
			median := kls[len(kls)/2]
			t.Logf("%s: KL median %.3g max %.3g over %d positions", c.name, median, worst, len(ours))
			if median > c.bound.median || worst > c.bound.max || math.IsNaN(worst) {
				t.Errorf("KL median %.3g / max %.3g exceed %.0e / %.0e", median, worst, c.bound.median, c.bound.max)
			}
		})
	}
}

// TestGreedyMatchesLlamaCpp generates 64 greedy tokens from peaked synthetic
// models and requires llama.cpp's exact continuation.
func TestGreedyMatchesLlamaCpp(t *testing.T) {
	o := oracle.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, typ := range []ggml.Type{ggml.Q8_0, ggml.Q4_K, ggml.IQ4_XS} {
		t.Run(typ.String(), func(t *testing.T) {
			cfg := synth.Defaults("qwen3moe")
			cfg.Type = typ
			cfg.Seed = 11
			cfg.WeightScale = 24 // peaked: top-1 above 0.9 at every position
			cfg.RouterSkew = routerSkew
			path := filepath.Join(t.TempDir(), "peaked.gguf")
			if err := synth.Write(ctx, path, cfg); err != nil {
				t.Fatal(err)
			}
			eng := loadEngine(t, path)
			prompt := []int32{1, 2, 3, 4, 5}
			want, err := o.Greedy(ctx, path, prompt, 64)
			if err != nil {
				t.Fatalf("oracle: %v", err)
			}
			var got []int32
			st, err := eng.Generate(ctx, engine.Request{Tokens: prompt, Sampling: engine.Sampling{MaxTokens: 64}},
				func(tk engine.Token) error {
					if tk.ID >= 0 {
						got = append(got, tk.ID)
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			// llama.cpp's greedy run goes on past an end-of-generation token;
			// ours stops there (the token itself is not emitted).
			if st.FinishReason == engine.FinishStop && len(got) < len(want) {
				if !isEOG(t, path, want[len(got)]) {
					t.Errorf("we stopped after %d tokens; llama.cpp's next token %d is not end-of-generation", len(got), want[len(got)])
				}
				want = want[:len(got)]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("greedy tokens differ\n ours  %v\n llama %v", got, want)
			}
			t.Logf("%s: %d greedy tokens identical", typ, len(got))
		})
	}
}

func isEOG(t *testing.T, path string, id int32) bool {
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok.IsEOG(id)
}
