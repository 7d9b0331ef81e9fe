package qwen4exp_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
	"github.com/strata-llm/strata/engine/model/qwen4exp"
	"github.com/strata-llm/strata/engine/synth"
)

// writeSynth writes a small dense qwen4exp (3 DeltaNet layers, then
// attention; no compress ratios, no PLE) of weight type typ and returns its
// path.
func writeSynth(t testing.TB, typ ggml.Type, edit func(*synth.Config)) string {
	t.Helper()
	cfg := synth.Defaults(synth.ArchQwen4Exp)
	cfg.Type, cfg.Vocab, cfg.Seed = typ, 512, 7
	cfg.CompressRatio, cfg.PLELayer = 0, -1
	// Two streams keep the 26-type batch-invariance test quick (the
	// mixers' cost grows with the streams); TestMemoryAndInfo checks 2.
	cfg.HCCount = 2
	if edit != nil {
		edit(&cfg)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

func openModel(t testing.TB, path string, opts model.Options) (*gguf.File, *qwen4exp.Model) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if opts.Backend == nil {
		opts.Backend = modeltest.NewBackend(t, 2)
	}
	m, err := qwen4exp.Open(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

func synthModel(t testing.TB, typ ggml.Type, edit func(*synth.Config)) *qwen4exp.Model {
	_, m := openModel(t, writeSynth(t, typ, edit), model.Options{})
	return m
}

// TestBatchInvariance: every row of a forward of 1..16 rows, at random
// positions, has bit for bit the logits of the same row computed alone
// (recurrent state carried row by row), for every weight type.
func TestBatchInvariance(t *testing.T) {
	for _, typ := range synth.Types {
		t.Run(typ.String(), func(t *testing.T) {
			t.Parallel()
			m := synthModel(t, typ, nil)
			rng := rand.New(rand.NewPCG(uint64(typ), 3))
			for trial := 0; trial < 2; trial++ {
				prefix := modeltest.RandTokens(rng, rng.IntN(30), 512)
				rows := modeltest.RandTokens(rng, 1+rng.IntN(16), 512)
				batched, single := modeltest.NewSession(t, m, 64), modeltest.NewSession(t, m, 64)
				if len(prefix) > 0 {
					modeltest.ForwardAll(t, batched, prefix)
					modeltest.ForwardAll(t, single, prefix)
				}
				got := modeltest.ForwardAll(t, batched, rows)
				for i, tok := range rows {
					if want := modeltest.ForwardAll(t, single, []int32{tok})[0]; !modeltest.SameBits(got[i], want) {
						t.Fatalf("trial %d: row %d of a batch of %d at position %d differs from the row alone", trial, i, len(rows), len(prefix)+i)
					}
				}
			}
		})
	}
}

// TestLongPromptChunks: a 1,100-token prompt in one batch and in uneven
// chunks (1, 7, 64, the rest) gives identical logits at every position
// where the weights' matrix kernels give each row what it gets alone
// (F32; F16 and BF16 too, measured); with quantized weights the tiles of
// large batches round differently (model.InvariantRows): Q8_0 differs at
// 8 of 1,100 positions by 2e-7 of the logits' scale, bounded here at 1e-5.
func TestLongPromptChunks(t *testing.T) {
	for _, typ := range []ggml.Type{ggml.F32, ggml.Q8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			t.Parallel()
			m := synthModel(t, typ, func(c *synth.Config) {
				c.Embd, c.FFExpert, c.FFShared, c.Experts = 128, 128, 128, 4
				c.Heads, c.HeadsKV, c.HeadDim = 2, 1, 64
				c.SSMState, c.SSMGroups, c.SSMVHeads = 32, 1, 2
				c.HCCount, c.HCLowRank = 2, 128
			})
			modeltest.LongPromptChunks(t, m, typ)
		})
	}
}

// TestRollback: forward a prompt, forward k rows, roll back, forward the
// same k: identical logits, for every k a checkpoint covers; further back
// than the checkpoints fails with ErrRollback and leaves the session as it
// was; back to the start always works.
func TestRollback(t *testing.T) {
	modeltest.Rollback(t, synthModel(t, ggml.Q8_0, nil), qwen4exp.Checkpoints)
}

// TestFailedForwardLeavesSession: a forward that fails after some layers
// advanced their recurrent state leaves the session as it was; bad batches
// are refused.
func TestFailedForwardLeavesSession(t *testing.T) {
	path := writeSynth(t, ggml.Q8_0, nil)
	modeltest.FailedForward(t, func(opts model.Options) (*gguf.File, model.Model) {
		f, m := openModel(t, path, opts)
		return f, m
	}, 2)
}

// TestMemoryAndInfo: the recurrent state and its checkpoints and the
// HC-wide residual count in MemoryBytes; Info describes the model.
func TestMemoryAndInfo(t *testing.T) {
	m := synthModel(t, ggml.Q8_0, nil)
	hp := m.Hparams()
	if m.Info().Layers != 4 || m.Info().Embd != 256 || hp.HC != 2 || len(m.Experts().Layers) != 4 {
		t.Fatalf("info %+v, hparams %+v, %d expert layers", m.Info(), hp, len(m.Experts().Layers))
	}
	s := modeltest.NewSession(t, m, 16)
	ch := (2*hp.SSMGroups + hp.SSMVHeads) * hp.SSMState
	state := int64(4 * (ch*(hp.SSMConv-1) + hp.SSMVHeads*hp.SSMState*hp.SSMState))
	if got, want := s.MemoryBytes(), 3*state*(qwen4exp.Checkpoints+1); got < want {
		t.Fatalf("MemoryBytes %d, want at least the 3 layers' states and checkpoints (%d)", got, want)
	}
	before := s.MemoryBytes()
	modeltest.ForwardAll(t, s, []int32{1, 2, 3})
	if grown := s.MemoryBytes() - before; grown < int64(4*3*hp.HC*hp.Embd) {
		t.Fatalf("a 3-row batch grew MemoryBytes by %d, less than its HC residual", grown)
	}
}

// TestPerLayerExpertSizes: expert_feed_forward_length as an array of
// different sizes per layer (which llama.cpp cannot load: it sizes every
// layer by the first entry) loads, each layer's experts sized by its own
// entry, and runs; the same array of equal entries gives the logits of
// the scalar key bit for bit.
func TestPerLayerExpertSizes(t *testing.T) {
	m := synthModel(t, ggml.Q8_0, func(c *synth.Config) { c.FFExperts = []int{256, 512, 256, 768} })
	for il, want := range []int{256, 512, 256, 768} {
		if got := m.Experts().Layers[il].Down.Cols; got != want || m.Hparams().FFExpert[il] != want {
			t.Fatalf("layer %d: experts of %d (hparams %d), want %d", il, got, m.Hparams().FFExpert[il], want)
		}
	}
	toks := []int32{5, 6, 7, 8}
	out := modeltest.ForwardAll(t, modeltest.NewSession(t, m, 8), toks)
	for _, v := range out[3] {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite logits")
		}
	}
	scalar := synthModel(t, ggml.Q8_0, nil)
	arr := synthModel(t, ggml.Q8_0, func(c *synth.Config) { c.FFExperts = []int{256, 256, 256, 256} })
	a, b := modeltest.ForwardAll(t, modeltest.NewSession(t, scalar, 8), toks), modeltest.ForwardAll(t, modeltest.NewSession(t, arr, 8), toks)
	for i := range a {
		if !modeltest.SameBits(a[i], b[i]) {
			t.Fatalf("row %d: the array of equal sizes differs from the scalar key", i)
		}
	}
}
