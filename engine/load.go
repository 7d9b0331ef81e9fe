package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/model/qwen4exp"
)

// architectures are the architectures the engine runs: adding one is its
// package and one entry here.
var architectures = model.NewRegistry(
	qwen3moe.Architecture,
	qwen3next.Architecture,
	qwen4exp.Architecture,
)

// SupportedArchs lists the GGUF architectures the engine can load, sorted.
func SupportedArchs() []string { return architectures.Names() }

// Supports reports whether the engine can load models of architecture arch.
func Supports(arch string) bool {
	_, ok := architectures.Lookup(arch)
	return ok
}

// DemoName is the general.name of the demo model the project generates; a
// model with this name is reported as a demo with random weights.
const DemoName = "Strata demo (random weights)"

// openModel builds the forward pass for f's architecture.
func openModel(_ context.Context, f *gguf.File, opts model.Options) (model.Model, ModelInfo, error) {
	name, _ := f.String("general.name")
	info := ModelInfo{Name: name, Arch: f.Arch(), FileBytes: f.Size, Demo: IsDemoFile(f)}
	if info.Demo {
		info.Name = DemoName
	}
	if f.Arch() == "" {
		return nil, info, fmt.Errorf("the file names no architecture (general.architecture)")
	}
	a, ok := architectures.Lookup(f.Arch())
	if !ok {
		return nil, info, fmt.Errorf("architecture %q is not supported yet (supported: %s)", f.Arch(), strings.Join(SupportedArchs(), ", "))
	}
	m, err := a.Open(f, opts)
	if err != nil {
		return nil, info, err
	}
	mi := m.Info()
	info.Layers, info.Embd, info.Vocab = mi.Layers, mi.Embd, mi.Vocab
	info.Experts, info.ExpertsUsed, info.ContextLength = mi.Experts, mi.ExpertsUsed, mi.ContextLength
	return m, info, nil
}
