package qwen4exp_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen4exp"
	"github.com/strata-llm/strata/engine/synth"
)

func newBackend(t testing.TB, threads int) *cpu.Backend {
	be := cpu.NewBackend(threads)
	t.Cleanup(func() { be.Close() })
	return be
}

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
		opts.Backend = newBackend(t, 2)
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

func randTokens(rng *rand.Rand, n, vocab int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(vocab))
	}
	return out
}

func allRows(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

// forwardAll runs toks in one batch and returns copies of every row's logits.
func forwardAll(t testing.TB, s model.Session, toks []int32) [][]float32 {
	t.Helper()
	b := model.Batch{Tokens: toks, Logits: allRows(len(toks))}
	if err := s.Forward(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(b.Out))
	for i, r := range b.Out {
		out[i] = slices.Clone(r)
	}
	return out
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func newSession(t testing.TB, m model.Model, n int) model.Session {
	t.Helper()
	s, err := m.NewSession(n)
	if err != nil {
		t.Fatal(err)
	}
	return s
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
				prefix := randTokens(rng, rng.IntN(30), 512)
				rows := randTokens(rng, 1+rng.IntN(16), 512)
				batched, single := newSession(t, m, 64), newSession(t, m, 64)
				if len(prefix) > 0 {
					forwardAll(t, batched, prefix)
					forwardAll(t, single, prefix)
				}
				got := forwardAll(t, batched, rows)
				for i, tok := range rows {
					if want := forwardAll(t, single, []int32{tok})[0]; !sameBits(got[i], want) {
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
			toks := randTokens(rand.New(rand.NewPCG(1, 1)), 1100, 512)
			want := forwardAll(t, newSession(t, m, 1100), toks)
			s := newSession(t, m, 1100)
			var got [][]float32
			for _, n := range []int{1, 7, 64, len(toks) - 72} {
				got = append(got, forwardAll(t, s, toks[len(got):len(got)+n])...)
			}
			var worst float64
			differ := 0
			for i := range want {
				if !sameBits(got[i], want[i]) {
					differ++
				}
				var scale, d float64
				for j := range want[i] {
					scale = max(scale, math.Abs(float64(want[i][j])))
					d = max(d, math.Abs(float64(got[i][j]-want[i][j])))
				}
				worst = max(worst, d/scale)
			}
			t.Logf("%s: %d of %d positions differ, worst %.3g of the logits' scale", typ, differ, len(want), worst)
			if typ == ggml.F32 && differ > 0 || worst > 1e-5 {
				t.Fatalf("chunked prefill differs from one batch at %d positions, by up to %.3g of the logits' scale", differ, worst)
			}
		})
	}
}

// TestRollback: forward a prompt, forward k rows, roll back, forward the
// same k: identical logits, for every k a checkpoint covers; further back
// than the checkpoints fails with ErrRollback and leaves the session as it
// was; back to the start always works.
func TestRollback(t *testing.T) {
	m := synthModel(t, ggml.Q8_0, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	prompt := randTokens(rng, 20, 512)
	for k := 1; k < qwen4exp.Checkpoints; k++ {
		s := newSession(t, m, 64)
		forwardAll(t, s, prompt)
		more := randTokens(rng, k, 512)
		first := forwardAll(t, s, more)
		if !s.CanTruncate(20) {
			t.Fatalf("k=%d: cannot roll back", k)
		}
		if err := s.Truncate(20); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Tokens(), prompt) {
			t.Fatalf("after rollback: %d tokens", s.Len())
		}
		again := forwardAll(t, s, more)
		for i := range first {
			if !sameBits(first[i], again[i]) {
				t.Fatalf("k=%d: row %d differs after rollback", k, i)
			}
		}
	}
	// Decoding one token at a time keeps the last Checkpoints-1 positions.
	s := newSession(t, m, 64)
	forwardAll(t, s, prompt)
	ref := newSession(t, m, 64)
	forwardAll(t, ref, prompt)
	steps := randTokens(rng, 10, 512)
	for _, tok := range steps {
		forwardAll(t, s, []int32{tok})
	}
	n := 30 - qwen4exp.Checkpoints // one position too far
	if s.CanTruncate(n) {
		t.Fatalf("CanTruncate(%d) of 30 with %d checkpoints", n, qwen4exp.Checkpoints)
	}
	if err := s.Truncate(n); !errors.Is(err, model.ErrRollback) || s.Len() != 30 {
		t.Fatalf("truncate past the checkpoints: %v, %d tokens", err, s.Len())
	}
	if err := s.Truncate(n + 1); err != nil {
		t.Fatal(err)
	}
	forwardAll(t, ref, steps[:n+1-20])
	a, b := forwardAll(t, s, steps[n+1-20:]), forwardAll(t, ref, steps[n+1-20:])
	for i := range a {
		if !sameBits(a[i], b[i]) {
			t.Fatalf("row %d differs after rolling back %d positions", i, qwen4exp.Checkpoints-1)
		}
	}
	// Back to the start, then the prompt again.
	if err := s.Truncate(0); err != nil {
		t.Fatal(err)
	}
	fresh := newSession(t, m, 64)
	if x, y := forwardAll(t, s, prompt), forwardAll(t, fresh, prompt); !sameBits(x[19], y[19]) {
		t.Fatal("the state after Truncate(0) is not the start")
	}
	if s.CanTruncate(21) || s.Truncate(21) == nil {
		t.Fatal("truncate past the end accepted")
	}
}

// failing wraps a provider and fails the fetch of one layer, once armed.
type failing struct {
	model.ExpertProvider
	layer int
	armed bool
}

func (f *failing) Fetch(ctx context.Context, layer int, exps []int32) (model.Fetch, error) {
	if f.armed && layer == f.layer {
		return nil, fmt.Errorf("read error (test)")
	}
	return f.ExpertProvider.Fetch(ctx, layer, exps)
}

// TestFailedForwardLeavesSession: a forward that fails after some layers
// advanced their recurrent state leaves the session as it was; bad batches
// are refused.
func TestFailedForwardLeavesSession(t *testing.T) {
	path := writeSynth(t, ggml.Q8_0, nil)
	f, ref := openModel(t, path, model.Options{})
	fp, err := experts.NewFile(f, ref.Experts())
	if err != nil {
		t.Fatal(err)
	}
	prov := &failing{ExpertProvider: fp, layer: 2}
	_, m := openModel(t, path, model.Options{NewExperts: func(*model.ExpertLayout) (model.ExpertProvider, error) { return prov, nil }})
	rng := rand.New(rand.NewPCG(3, 4))
	prompt, more := randTokens(rng, 12, 512), randTokens(rng, 5, 512)
	s, rs := newSession(t, m, 32), newSession(t, ref, 32)
	forwardAll(t, s, prompt)
	forwardAll(t, rs, prompt)
	prov.armed = true
	if err := s.Forward(context.Background(), &model.Batch{Tokens: more}); err == nil {
		t.Fatal("failing provider: forward succeeded")
	}
	prov.armed = false
	for _, b := range []*model.Batch{
		{Tokens: randTokens(rng, 32, 512)}, {Tokens: []int32{512}}, {Tokens: []int32{1, 2}, Logits: []bool{true}}, {},
	} {
		if err := s.Forward(context.Background(), b); err == nil {
			t.Fatalf("bad batch of %d accepted", len(b.Tokens))
		}
	}
	if s.Len() != 12 {
		t.Fatalf("failed forwards changed the session: %d tokens", s.Len())
	}
	a, b := forwardAll(t, s, more), forwardAll(t, rs, more)
	for i := range a {
		if !sameBits(a[i], b[i]) {
			t.Fatalf("row %d differs after a failed forward", i)
		}
	}
	if !s.CanTruncate(12) {
		t.Fatal("cannot roll back over the batch after a failure")
	}
}

// TestMemoryAndInfo: the recurrent state and its checkpoints and the
// HC-wide residual count in MemoryBytes; Info describes the model.
func TestMemoryAndInfo(t *testing.T) {
	m := synthModel(t, ggml.Q8_0, nil)
	hp := m.Hparams()
	if m.Info().Layers != 4 || m.Info().Embd != 256 || hp.HC != 2 || len(m.Experts().Layers) != 4 {
		t.Fatalf("info %+v, hparams %+v, %d expert layers", m.Info(), hp, len(m.Experts().Layers))
	}
	s := newSession(t, m, 16)
	ch := (2*hp.SSMGroups + hp.SSMVHeads) * hp.SSMState
	state := int64(4 * (ch*(hp.SSMConv-1) + hp.SSMVHeads*hp.SSMState*hp.SSMState))
	if got, want := s.MemoryBytes(), 3*state*(qwen4exp.Checkpoints+1); got < want {
		t.Fatalf("MemoryBytes %d, want at least the 3 layers' states and checkpoints (%d)", got, want)
	}
	before := s.MemoryBytes()
	forwardAll(t, s, []int32{1, 2, 3})
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
	out := forwardAll(t, newSession(t, m, 8), toks)
	for _, v := range out[3] {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite logits")
		}
	}
	scalar := synthModel(t, ggml.Q8_0, nil)
	arr := synthModel(t, ggml.Q8_0, func(c *synth.Config) { c.FFExperts = []int{256, 256, 256, 256} })
	a, b := forwardAll(t, newSession(t, scalar, 8), toks), forwardAll(t, newSession(t, arr, 8), toks)
	for i := range a {
		if !sameBits(a[i], b[i]) {
			t.Fatalf("row %d: the array of equal sizes differs from the scalar key", i)
		}
	}
}
