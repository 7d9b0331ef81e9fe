package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/synth"
)

// The demo model: a tiny qwen3moe with random weights that Strata
// generates itself (deterministically, a few MB) the first time it starts
// without a model, so a newcomer sees tokens stream with no download. Its
// text is gibberish, and everything that shows it says so.
const (
	DemoFileName = "strata-demo-qwen3moe-v1.gguf" // in the cache folder; bump the version when the recipe changes
	DemoKey      = "strata.demo"                  // bool metadata key marking the demo file
)

// demoConfig is the demo model's recipe.
func demoConfig() synth.Config {
	return synth.Defaults(synth.ArchQwen3MoE)
}

// EnsureDemoModel returns the path of the demo model in cacheDir,
// generating it first if it is missing or does not open as the demo
// model. The file is written atomically (temporary file, fsync, rename),
// so an interrupted run never leaves a file that looks complete.
func EnsureDemoModel(ctx context.Context, cacheDir string) (string, error) {
	path := filepath.Join(cacheDir, DemoFileName)
	if f, err := gguf.Open(path); err == nil {
		ok, _ := f.Bool(DemoKey)
		f.Close()
		if ok {
			return path, nil
		}
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return "", fmt.Errorf("demo model: %w", err)
	}
	w, err := synth.NewWriter(ctx, demoConfig())
	if err != nil {
		return "", fmt.Errorf("demo model: %w", err)
	}
	w.AddBool(DemoKey, true)
	if err := w.WriteFile(path); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("demo model: %w", ctx.Err())
		}
		return "", fmt.Errorf("demo model: %w", err)
	}
	return path, nil
}

// IsDemoFile reports whether f is the demo model: it carries the DemoKey
// marker (EnsureDemoModel writes it) or is named DemoName.
func IsDemoFile(f *gguf.File) bool {
	if ok, _ := f.Bool(DemoKey); ok {
		return true
	}
	name, _ := f.String("general.name")
	return name == DemoName
}
