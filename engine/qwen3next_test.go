package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
)

// TestQwen3NextStreamingMatchesInMemory: a hybrid model whose experts are
// streamed through caches down to one expert generates the tokens it
// generates with every expert in memory.
func TestQwen3NextStreamingMatchesInMemory(t *testing.T) {
	cfg := synth.Defaults(synth.ArchQwen3Next)
	cfg.Experts, cfg.ExpertsUsed, cfg.WeightScale, cfg.RouterSkew, cfg.Seed = 16, 4, 8, 1, 12
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	want, _ := greedy(t, engine.Options{Threads: 2, Streaming: engine.StreamNever}, path, 32)
	for _, cache := range []int64{2 << 20, 1} {
		got, st := greedy(t, engine.Options{Threads: 2, Streaming: engine.StreamAlways, ExpertCache: cache}, path, 32)
		if !slices.Equal(got, want) {
			t.Fatalf("cache %d bytes: tokens differ from token %d", cache, firstDiff(got, want))
		}
		if x := st.Experts; x == nil || x.Misses == 0 || x.BytesRead == 0 {
			t.Fatalf("cache %d bytes: expert stats %+v", cache, x)
		}
	}
}
