package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
)

// DemoName is the general.name of the demo model the project generates; a
// model with this name is reported as a demo with random weights.
const DemoName = "Strata demo (random weights)"

// SupportedArchs lists the architectures (GGUF general.architecture) that
// openModel loads, one per case of its switch.
func SupportedArchs() []string { return []string{qwen3moe.Arch} }

// Supports reports whether this engine can load models of architecture
// arch; the model catalog offers only those for download.
func Supports(arch string) bool { return slices.Contains(SupportedArchs(), arch) }

// openModel builds the forward pass for f's architecture.
func openModel(_ context.Context, f *gguf.File, opts Options) (model.Model, ModelInfo, error) {
	name, _ := f.String("general.name")
	info := ModelInfo{Name: name, Arch: f.Arch(), FileBytes: f.Size, Demo: IsDemoFile(f)}
	if info.Demo {
		info.Name = DemoName
	}
	switch f.Arch() {
	case qwen3moe.Arch:
		m, err := qwen3moe.Open(f, qwen3moe.Options{Threads: opts.Threads})
		if err != nil {
			return nil, info, err
		}
		hp := m.Hparams()
		info.Layers, info.Embd, info.Vocab = hp.Layers, hp.Embd, hp.Vocab
		info.Experts, info.ExpertsUsed, info.ContextLength = hp.Experts, hp.ExpertsUsed, hp.ContextLength
		return m, info, nil
	case "":
		return nil, info, fmt.Errorf("the file names no architecture (general.architecture)")
	default:
		return nil, info, fmt.Errorf("architecture %q is not supported yet (supported: %s)", f.Arch(), strings.Join(SupportedArchs(), ", "))
	}
}
