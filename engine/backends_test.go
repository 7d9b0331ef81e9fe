//go:build linux || darwin

package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine"
)

// The Metal backend (the emulator here, the GPU on a Mac) passes its
// selftest at Load and generates; an unknown backend is refused.
func TestMetalBackend(t *testing.T) {
	eng := demoEngine(t, engine.Options{Threads: 1, ContextLength: 64, Backend: "metal"})
	ids, _, st := generate(t, eng, engine.Request{Prompt: "Hello", Sampling: engine.Sampling{MaxTokens: 4}})
	if len(ids) != 4 || st.GeneratedTokens != 4 {
		t.Fatalf("generated %v, stats %+v", ids, st)
	}
	path, err := engine.EnsureDemoModel(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bad := engine.New(engine.Options{Backend: "vulkan"})
	defer bad.Close()
	if err := bad.Load(context.Background(), path); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Fatalf("unknown backend: %v", err)
	}
	if _, err := bad.Generate(context.Background(), engine.Request{Prompt: "x"}, nil); err == nil {
		t.Fatal("generate after a failed load: no error")
	}
}

// With experts streamed, the Metal backend allocates the expert cache, so
// its decode steps use each expert where the cache read it (no copy); the
// greedy tokens are those it generates with the model in memory (the same
// kernels on the same weights), and the stats say how experts reached the
// GPU.
func TestMetalBackendStreamsInPlace(t *testing.T) {
	path := writeSynth(t, t.TempDir(), nil)
	want, _ := greedy(t, engine.Options{Threads: 1, Backend: "metal", Streaming: engine.StreamNever}, path, 8)
	got, st := greedy(t, engine.Options{Threads: 1, Backend: "metal", Streaming: engine.StreamAlways, ExpertCache: 2 << 20}, path, 8)
	if !slices.Equal(got, want) {
		t.Fatalf("streamed tokens %v, in memory %v", got, want)
	}
	x := st.Experts
	if x == nil || x.Misses == 0 || x.InPlace == 0 || x.Copied != 0 {
		t.Fatalf("expert stats %+v: want misses, every expert used in place and none copied", x)
	}
}
