package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
)

// Supports says yes exactly for the architectures Load opens: a small
// model of every architecture synth writes loads iff Supports says so.
func TestSupportsMatchesLoad(t *testing.T) {
	if len(engine.SupportedArchs()) == 0 {
		t.Fatal("no supported architectures")
	}
	for _, arch := range synth.Archs {
		t.Run(arch, func(t *testing.T) {
			cfg := synth.Defaults(arch)
			cfg.Layers, cfg.Vocab = 1, 512
			path := filepath.Join(t.TempDir(), arch+".gguf")
			if err := synth.Write(context.Background(), path, cfg); err != nil {
				t.Fatal(err)
			}
			eng := engine.New(engine.Options{Threads: 1, ContextLength: 64})
			defer eng.Close()
			err := eng.Load(context.Background(), path)
			if got := engine.Supports(arch); got != (err == nil) {
				t.Errorf("Supports(%q) = %v, but Load: %v", arch, got, err)
			}
			if err != nil && !strings.Contains(err.Error(), "not supported yet") {
				t.Errorf("load error %q does not say the architecture is unsupported", err)
			}
		})
	}
	if engine.Supports("") || engine.Supports("llama") {
		t.Error("Supports accepts an architecture the engine does not have")
	}
}
