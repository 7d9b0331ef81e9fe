package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/internal/oracle"
)

// qwen4expSparse is a small qwen4exp with QSA on its attention layers
// (ratio 4, top_k 16: a query past 19 cells keeps 19, cutting inside a
// block) and the PLE on layer 0.
func qwen4expSparse(typ ggml.Type, seed uint64) synth.Config {
	cfg := synth.Defaults(synth.ArchQwen4Exp)
	cfg.Type, cfg.Seed, cfg.RouterSkew = typ, seed, routerSkew
	cfg.Embd, cfg.FFExpert, cfg.FFShared, cfg.Experts, cfg.HCLowRank = 128, 128, 128, 4, 64
	cfg.Heads, cfg.HeadsKV, cfg.HeadDim = 2, 1, 64
	cfg.SSMState, cfg.SSMGroups, cfg.SSMVHeads = 32, 1, 2
	cfg.IndexerTopK, cfg.CompressRatio = 16, 4
	return cfg
}

// TestQwen4ExpSparseLongPromptMatchesLlamaCpp compares a 1,100-token prompt
// (block selection decides every position past 19) with QSA and PLE, F32
// and Q8_0 weights (the Q8_0 PLE table and projections), in one batch.
func TestQwen4ExpSparseLongPromptMatchesLlamaCpp(t *testing.T) {
	o := oracle.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	types := []ggml.Type{ggml.F32, ggml.Q8_0}
	tokens := randomTokens(1100, 1024, 3)
	var jobs []oracle.Job
	paths := make([]string, len(types))
	for i, typ := range types {
		paths[i] = filepath.Join(t.TempDir(), typ.String()+".gguf")
		if err := synth.Write(ctx, paths[i], qwen4expSparse(typ, 5)); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, oracle.Job{Model: paths[i], Ops: []oracle.Op{oracle.Eval{Tokens: tokens, TopK: 1024}}})
	}
	res, err := o.RunJobs(ctx, jobs)
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	for i, typ := range types {
		t.Run(typ.String(), func(t *testing.T) {
			if res[i].Err != nil {
				t.Fatalf("oracle: %v", res[i].Err)
			}
			eng := engine.New(engine.Options{Threads: 2, ContextLength: 2048})
			if err := eng.Load(ctx, paths[i]); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			bound := exactBounds
			if typ != ggml.F32 {
				bound = nextQuantBounds
			}
			compareLlamaCpp(t, ctx, eng, tokens, res[i].Results[0].Probs, bound)
		})
	}
}

// TestQwen4ExpSparseStreamingMatchesInMemory: with QSA and PLE, greedy
// tokens with the experts and the PLE table streamed (caches down to one
// expert) are those of the in-memory engine.
func TestQwen4ExpSparseStreamingMatchesInMemory(t *testing.T) {
	cfg := qwen4expSparse(ggml.Q8_0, 12)
	cfg.WeightScale = 8
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	want, _ := greedy(t, engine.Options{Threads: 2, Streaming: engine.StreamNever}, path, 40)
	for _, cache := range []int64{1 << 20, 1} {
		got, st := greedy(t, engine.Options{Threads: 2, Streaming: engine.StreamAlways, ExpertCache: cache}, path, 40)
		if !slices.Equal(got, want) {
			t.Fatalf("cache %d bytes: tokens differ from token %d", cache, firstDiff(got, want))
		}
		if x := st.Experts; x == nil || x.Misses == 0 || x.BytesRead == 0 {
			t.Fatalf("cache %d bytes: expert stats %+v", cache, x)
		}
	}
}
