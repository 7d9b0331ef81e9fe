package metal_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/model/qwen3next"
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

// With the model in memory (the file-backed provider) and the file's
// mapping wrapped by MapHost, a decode step's handshakes bind each expert
// where it lies in the mapping (no copy), and the logits are bit-identical
// to the Sync path's. Wrapped in 1 MiB parts (more than MaxBases), the
// experts past the fourth part are copied instead, in the same steps.
func TestBackendOneBufferBindsFile(t *testing.T) {
	ctx := context.Background()
	cfg := synth.Defaults(synth.ArchQwen3Next)
	cfg.Type, cfg.Seed = ggml.Q4_K, 5
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(ctx, path, cfg); err != nil {
		t.Fatal(err)
	}
	run := func(oneBuffer bool, partLen int) ([][]float32, backend.ExpertLoads) {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		dev := &noCopyEmulator{Emulator: emulator(t, metal.EmulatorOptions{Order: metal.Shuffled})}
		mb := metal.NewBackend(dev)
		mb.PartLen = partLen
		for _, m := range f.Mappings() {
			if _, err := mb.MapHost(m); err != nil {
				t.Fatal(err)
			}
		}
		var be backend.Backend = mb
		if !oneBuffer {
			be = syncOnly{mb}
		}
		m, err := qwen3next.Open(f, model.Options{Backend: be})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.NewSession(32)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]float32
		for _, toks := range [][]int32{{3, 99, 200, 7, 7}, {42}, {100}, {11, 12}, {13, 14, 15}} {
			flags := make([]bool, len(toks))
			for i := range flags {
				flags[i] = true
			}
			b := model.Batch{Tokens: toks, Logits: flags}
			if err := s.Forward(ctx, &b); err != nil {
				t.Fatal(err)
			}
			for _, row := range b.Out {
				out = append(out, append([]float32(nil), row...))
			}
		}
		return out, mb.ExpertLoads()
	}
	want, _ := run(false, 0)
	for _, partLen := range []int{0, 1 << 20} {
		got, l := run(true, partLen)
		for r := range got {
			for i, v := range got[r] {
				if math.Float32bits(v) != math.Float32bits(want[r][i]) {
					t.Fatalf("parts of %d bytes: row %d logit %d: %g in one command buffer, %g with Syncs", partLen, r, i, v, want[r][i])
				}
			}
		}
		if l.Bound == 0 || (partLen == 0) != (l.Copied == 0) {
			t.Errorf("parts of %d bytes: %d experts bound, %d copied", partLen, l.Bound, l.Copied)
		}
		t.Logf("parts of %d bytes: %d experts bound, %d copied", partLen, l.Bound, l.Copied)
	}
}
