package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
)

// TestQwen4ExpStreamingMatchesInMemory: a qwen4exp model (hyper-connection
// residual, per-layer expert sizes) whose experts are streamed through
// caches from all of them (~19 MB) down to one generates, bit for bit, the
// tokens it generates with every expert in memory.
func TestQwen4ExpStreamingMatchesInMemory(t *testing.T) {
	cfg := denseQwen4Exp(12)
	cfg.Experts, cfg.ExpertsUsed, cfg.WeightScale, cfg.RouterSkew = 16, 4, 8, 1
	cfg.FFExperts = []int{256, 512, 256, 384}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	want, _ := greedy(t, engine.Options{Threads: 2, Streaming: engine.StreamNever}, path, 32)
	for _, cache := range []int64{32 << 20, 8 << 20, 2 << 20, 512 << 10, 1} {
		got, st := greedy(t, engine.Options{Threads: 2, Streaming: engine.StreamAlways, ExpertCache: cache}, path, 32)
		if !slices.Equal(got, want) {
			t.Fatalf("cache %d bytes: tokens differ from token %d", cache, firstDiff(got, want))
		}
		if x := st.Experts; x == nil || x.Misses == 0 || x.BytesRead == 0 {
			t.Fatalf("cache %d bytes: expert stats %+v", cache, x)
		}
	}
}
