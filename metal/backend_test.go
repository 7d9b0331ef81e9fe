//go:build linux || darwin

package metal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/model/qwen4exp"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/metal"
)

// The engine's own qwen3moe graph (engine/model/blocks) on the Metal
// backend: a prompt of several rows in one batch (every row's logits),
// then decode steps, equal the CPU backend's on the same weights in F32
// within logitBound.
func TestBackendQwen3MoEMatchesCPU(t *testing.T) {
	ctx := context.Background()
	for _, typ := range []ggml.Type{ggml.Q4_K, ggml.IQ2_XS, ggml.IQ4_XS, ggml.Q2_K, ggml.IQ3_XXS} {
		t.Run(typ.String(), func(t *testing.T) {
			cfg := synth.Defaults(synth.ArchQwen3MoE)
			cfg.Type, cfg.Layers, cfg.Seed = typ, 2, 5
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := synth.Write(ctx, path, cfg); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			be := metal.NewBackend(testDevice(t))
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
			sg, err := mg.NewSession(32)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := mc.NewSession(32)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			// Q4_K's prompt has 12 rows: Linear and the experts that get at
			// least MatMulMinRows of its rows run the mat-mat kernel (the
			// others' 5 rows reach it in Linear only; kept short for CI time).
			prompt := []int32{3, 99, 512, 7, 7}
			if typ == ggml.Q4_K {
				prompt = []int32{3, 99, 512, 7, 7, 1, 2, 3, 600, 800, 44, 45}
			}
			for step, toks := range [][]int32{prompt, {42}, {1000}} {
				logits := make([]bool, len(toks))
				for i := range logits {
					logits[i] = true
				}
				bg := model.Batch{Tokens: toks, Logits: logits}
				bc := model.Batch{Tokens: toks, Logits: logits}
				if err := sg.Forward(ctx, &bg); err != nil {
					t.Fatal(err)
				}
				if err := sc.Forward(ctx, &bc); err != nil {
					t.Fatal(err)
				}
				for r := range toks {
					d, sd, same := compareLogits(bg.Out[r], bc.Out[r])
					worst = max(worst, d/sd)
					if d/sd > logitBound || !same {
						t.Fatalf("step %d row %d: max |Δlogit| %.3g σ (bound %g), same top token %v", step, r, d/sd, logitBound, same)
					}
				}
			}
			t.Logf("%s: worst max |Δlogit| %.3g σ", typ, worst)
		})
	}
}

// qwen3next on the Metal backend, its gated DeltaNet steps (conv, delta
// rule, gated norm, splits and gates) on the recurrent kernels, nothing on
// the host; logits equal the CPU backend's on the same weights in F32
// within logitBound.
func TestBackendQwen3NextMatchesCPU(t *testing.T) {
	cfg := synth.Defaults(synth.ArchQwen3Next)
	cfg.Type, cfg.Seed = ggml.Q4_K, 5
	mb, worst, syncs := backendMatchesCPU(t, cfg, qwen3next.Open, [][]int32{{3, 99, 512, 7, 7}, {42}, {1000}})
	if mb.HostOps() {
		t.Error("some recurrent steps ran on the host")
	}
	// One command buffer per decode step: each MoE layer's experts are
	// fetched at a handshake inside it (backend.Handshaker), the head's
	// Sync reads the logits. The prompt's rows still take the Sync path
	// (per MoE layer one Sync to read the routing, one after the experts'
	// wave). Before the handshakes: 9; before the routing and the head's
	// gather of rows were ops: 14.
	checkDecodeSyncs(t, syncs, 1)
	t.Logf("worst max |Δlogit| %.3g σ", worst)
}

// TestBackendQwen4ExpMatchesCPU: qwen4exp (hyper-connections, QSA, PLE, the
// tiled DeltaNet broadcast) on the Metal backend gives the CPU's logits
// within logitBound, every backend op on the kernels (none on the host).
// With the synthetic model's top-k of 64 every position of the short
// sequence is kept (QSA attends to all); with a top-k of 1 (4 cells kept,
// ratio 4) the rows from the fifth on attend to a selection; the decode
// step at position 7 completes a block, pooled on the device.
func TestBackendQwen4ExpMatchesCPU(t *testing.T) {
	for _, topK := range []int{64, 1} {
		t.Run(fmt.Sprintf("topk%d", topK), func(t *testing.T) {
			cfg := synth.Defaults(synth.ArchQwen4Exp)
			cfg.Type, cfg.Seed, cfg.IndexerTopK = ggml.Q4_K, 5, topK
			mb, worst, syncs := backendMatchesCPU(t, cfg, qwen4exp.Open, [][]int32{{3, 99, 200, 7, 7}, {42}, {100}, {5}, {9}})
			if mb.HostOps() {
				t.Error("some ops ran on the host")
			}
			// As qwen3next: one command buffer per decode step; the QSA
			// indexer, the PLE gate, the widening of the residual and the
			// clearing of the FFN output are ops and need none. Before the
			// handshakes: 9; before those ops (and the routing): 21.
			checkDecodeSyncs(t, syncs, 1)
			t.Logf("worst max |Δlogit| %.3g σ", worst)
		})
	}
}

// backendMatchesCPU writes the synthetic model cfg, opens it with open on
// the Metal backend and, dequantized to F32, on the CPU backend, runs the
// batches steps through a session of each (every row's logits) and fails
// unless every row's logits agree within logitBound with the same top
// token. It returns the Metal backend, the worst difference in σ and the
// Syncs (command buffers) each step took.
func backendMatchesCPU[M model.Model](t *testing.T, cfg synth.Config, open func(*gguf.File, model.Options) (M, error), steps [][]int32) (*metal.Backend, float64, []int) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(ctx, path, cfg); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	mb := metal.NewBackend(testDevice(t))
	mg, err := open(f, model.Options{Backend: mb})
	if err != nil {
		t.Fatal(err)
	}
	f32, err := gguf.Open(dequantized(t, f))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f32.Close() })
	mc, err := open(f32, model.Options{Backend: cpu.NewBackend(1)})
	if err != nil {
		t.Fatal(err)
	}
	sg, _ := mg.NewSession(32)
	sc, _ := mc.NewSession(32)
	worst := 0.0
	var syncs []int
	for step, toks := range steps {
		logits := make([]bool, len(toks))
		for i := range logits {
			logits[i] = true
		}
		bg := model.Batch{Tokens: toks, Logits: logits}
		bc := model.Batch{Tokens: toks, Logits: logits}
		n0 := mb.Syncs()
		if err := sg.Forward(ctx, &bg); err != nil {
			t.Fatal(err)
		}
		syncs = append(syncs, mb.Syncs()-n0)
		if err := sc.Forward(ctx, &bc); err != nil {
			t.Fatal(err)
		}
		for r := range toks {
			d, sd, same := compareLogits(bg.Out[r], bc.Out[r])
			if d/sd > logitBound || !same {
				t.Fatalf("step %d row %d: max |Δlogit| %.3g σ (bound %g), same top token %v", step, r, d/sd, logitBound, same)
			}
			worst = max(worst, d/sd)
		}
	}
	return mb, worst, syncs
}

// checkDecodeSyncs fails unless every decode step (every step after the
// prompt, one token each) took want Syncs.
func checkDecodeSyncs(t *testing.T, syncs []int, want int) {
	t.Helper()
	for step, n := range syncs[1:] {
		if n != want {
			t.Errorf("decode step %d: %d Syncs (command buffers), want %d", step+1, n, want)
		}
	}
	t.Logf("Syncs per step (prompt first): %v", syncs)
}
