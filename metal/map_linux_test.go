package metal_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/metal"
)

// noCopyEmulator is the emulator with the GPU's no-copy wrapping: as the
// emulator's memory is its own, a wrap is a copy, made at the call, which
// is the same for the read-only memory map wrapped here. It counts wraps.
type noCopyEmulator struct {
	*metal.Emulator
	wraps int
}

func (e *noCopyEmulator) NoCopy(b []byte) (metal.BufRef, error) {
	e.wraps++
	buf, err := e.Alloc(len(b))
	if err != nil {
		return metal.BufRef{}, err
	}
	copy(buf.Bytes(), b)
	return metal.BufRef{Buf: buf}, nil
}

// With the file's mapping wrapped once (MapHost) before the model opens,
// nothing else is wrapped: the dense matrices and, through a prompt and a
// decode step, every expert slice are bound inside that buffer at their
// offsets. The logits equal the CPU's as in
// TestBackendQwen3MoEMatchesCPU.
func TestBackendMapHostWrapsOnce(t *testing.T) {
	ctx := context.Background()
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Type, cfg.Layers, cfg.Seed = ggml.Q4_K, 2, 5
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(ctx, path, cfg); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dev := &noCopyEmulator{Emulator: emulator(t, metal.EmulatorOptions{Order: metal.Shuffled})}
	be := metal.NewBackend(dev)
	maps := f.Mappings()
	if len(maps) != 1 {
		t.Fatalf("%d mappings", len(maps))
	}
	if n, err := be.MapHost(maps[0]); err != nil || n != 1 || dev.wraps != 1 {
		t.Fatalf("MapHost: %d buffers, %d wraps, %v", n, dev.wraps, err)
	}
	mg, err := qwen3moe.Open(f, model.Options{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	f32, err := gguf.Open(dequantized(t, f))
	if err != nil {
		t.Fatal(err)
	}
	defer f32.Close()
	mc, err := qwen3moe.Open(f32, model.Options{Backend: cpu.NewBackend(1)})
	if err != nil {
		t.Fatal(err)
	}
	sg, _ := mg.NewSession(32)
	sc, _ := mc.NewSession(32)
	for step, toks := range [][]int32{{3, 99, 512, 7, 7, 1, 2, 3}, {42}} {
		logits := make([]bool, len(toks))
		for i := range logits {
			logits[i] = true
		}
		bg, bc := model.Batch{Tokens: toks, Logits: logits}, model.Batch{Tokens: toks, Logits: logits}
		if err := sg.Forward(ctx, &bg); err != nil {
			t.Fatal(err)
		}
		if err := sc.Forward(ctx, &bc); err != nil {
			t.Fatal(err)
		}
		for r := range toks {
			if d, sd, same := compareLogits(bg.Out[r], bc.Out[r]); d/sd > logitBound || !same {
				t.Fatalf("step %d row %d: max |Δlogit| %.3g σ, same top %v", step, r, d/sd, same)
			}
		}
	}
	if dev.wraps != 1 {
		t.Errorf("%d wraps: expert slices were wrapped one by one", dev.wraps)
	}
}
