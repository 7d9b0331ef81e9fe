//go:build linux || darwin

package engine_test

import (
	"context"
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
