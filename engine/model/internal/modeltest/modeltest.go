// Package modeltest holds what the architectures' tests share: rewriting
// a GGUF file for the bad-input tests, forwards and bit-for-bit
// comparisons, and the session tests every hybrid (recurrent-state)
// architecture passes alike: chunked prefill, rollback over the recurrent
// checkpoints, a failed forward.
package modeltest

import (
	"context"
	"errors"
	"fmt"
	"io"
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
)

// Rewrite copies src to a new file, letting kv and tensor edit or drop
// entries (return false to drop).
func Rewrite(t testing.TB, src string, kv func(*gguf.KV) bool, tensor func(*gguf.TensorInfo) bool) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, e := range f.KV {
		if kv == nil || kv(&e) {
			w.AddKV(e.Key, e.Value)
		}
	}
	for i := range f.Tensors {
		ti := f.Tensors[i]
		data := f.Data(&f.Tensors[i])
		ti.Dims = slices.Clone(ti.Dims)
		if tensor == nil || tensor(&ti) {
			w.AddTensor(ti.Name, ti.Type, ti.Dims, func(out io.Writer) error { _, err := out.Write(data); return err })
		}
	}
	path := filepath.Join(t.TempDir(), "edited.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// SetUint is a Rewrite edit setting key to v.
func SetUint(key string, v uint32) func(*gguf.KV) bool {
	return func(e *gguf.KV) bool {
		if e.Key == key {
			e.Value = gguf.Uint32(v)
		}
		return true
	}
}

// SetInts is a Rewrite edit setting key to the array v.
func SetInts(key string, v []int32) func(*gguf.KV) bool {
	return func(e *gguf.KV) bool {
		if e.Key == key {
			e.Value = gguf.Int32s(v)
		}
		return true
	}
}

// DropKey is a Rewrite edit dropping key.
func DropKey(key string) func(*gguf.KV) bool {
	return func(e *gguf.KV) bool { return e.Key != key }
}

// Drop is a Rewrite edit dropping tensor name.
func Drop(name string) func(*gguf.TensorInfo) bool {
	return func(ti *gguf.TensorInfo) bool { return ti.Name != name }
}

// NewBackend is a CPU backend closed with the test.
func NewBackend(t testing.TB, threads int) *cpu.Backend {
	be := cpu.NewBackend(threads)
	t.Cleanup(func() { be.Close() })
	return be
}

// RandTokens are n token ids below vocab.
func RandTokens(rng *rand.Rand, n, vocab int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(vocab))
	}
	return out
}

// AllRows asks for every row's output.
func AllRows(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

// ForwardAll runs toks in one batch and returns copies of every row's
// logits.
func ForwardAll(t testing.TB, s model.Session, toks []int32) [][]float32 {
	t.Helper()
	b := model.Batch{Tokens: toks, Logits: AllRows(len(toks))}
	if err := s.Forward(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(b.Out))
	for i, r := range b.Out {
		out[i] = slices.Clone(r)
	}
	return out
}

// SameBits reports whether a and b are equal bit for bit.
func SameBits(a, b []float32) bool {
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

// NewSession is a session of m holding up to n positions.
func NewSession(t testing.TB, m model.Model, n int) model.Session {
	t.Helper()
	s, err := m.NewSession(n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// LongPromptChunks: a 1,100-token prompt in one batch and in uneven
// chunks (1, 7, 64, the rest) gives identical logits at every position
// where the weights' matrix kernels give each row what it gets alone
// (F32); with quantized weights (typ) the tiles of large batches round
// differently (model.InvariantRows), bounded at 1e-5 of the logits'
// scale.
func LongPromptChunks(t *testing.T, m model.Model, typ ggml.Type) {
	toks := RandTokens(rand.New(rand.NewPCG(1, 1)), 1100, m.Info().Vocab)
	want := ForwardAll(t, NewSession(t, m, 1100), toks)
	s := NewSession(t, m, 1100)
	var got [][]float32
	for _, n := range []int{1, 7, 64, len(toks) - 72} {
		got = append(got, ForwardAll(t, s, toks[len(got):len(got)+n])...)
	}
	var worst float64
	differ := 0
	for i := range want {
		if !SameBits(got[i], want[i]) {
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
}

// Rollback: forward a prompt, forward k rows, roll back, forward the same
// k: identical logits, for every k the checkpoints cover; further back
// than the checkpoints fails with ErrRollback and leaves the session as it
// was; back to the start always works.
func Rollback(t *testing.T, m model.Model, checkpoints int) {
	rng := rand.New(rand.NewPCG(5, 6))
	vocab := m.Info().Vocab
	prompt := RandTokens(rng, 20, vocab)
	for k := 1; k < checkpoints; k++ {
		s := NewSession(t, m, 64)
		ForwardAll(t, s, prompt)
		more := RandTokens(rng, k, vocab)
		first := ForwardAll(t, s, more)
		if !s.CanTruncate(20) {
			t.Fatalf("k=%d: cannot roll back", k)
		}
		if err := s.Truncate(20); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Tokens(), prompt) {
			t.Fatalf("after rollback: %d tokens", s.Len())
		}
		again := ForwardAll(t, s, more)
		for i := range first {
			if !SameBits(first[i], again[i]) {
				t.Fatalf("k=%d: row %d differs after rollback", k, i)
			}
		}
	}
	// Decoding one token at a time keeps the last checkpoints-1 positions.
	s := NewSession(t, m, 64)
	ForwardAll(t, s, prompt)
	ref := NewSession(t, m, 64)
	ForwardAll(t, ref, prompt)
	steps := RandTokens(rng, 10, vocab)
	for _, tok := range steps {
		ForwardAll(t, s, []int32{tok})
	}
	n := 30 - checkpoints // one position too far
	if s.CanTruncate(n) {
		t.Fatalf("CanTruncate(%d) of 30 with %d checkpoints", n, checkpoints)
	}
	if err := s.Truncate(n); !errors.Is(err, model.ErrRollback) || s.Len() != 30 {
		t.Fatalf("truncate past the checkpoints: %v, %d tokens", err, s.Len())
	}
	if err := s.Truncate(n + 1); err != nil {
		t.Fatal(err)
	}
	ForwardAll(t, ref, steps[:n+1-20])
	a, b := ForwardAll(t, s, steps[n+1-20:]), ForwardAll(t, ref, steps[n+1-20:])
	for i := range a {
		if !SameBits(a[i], b[i]) {
			t.Fatalf("row %d differs after rolling back %d positions", i, checkpoints-1)
		}
	}
	// Back to the start, then the prompt again.
	if err := s.Truncate(0); err != nil {
		t.Fatal(err)
	}
	fresh := NewSession(t, m, 64)
	if x, y := ForwardAll(t, s, prompt), ForwardAll(t, fresh, prompt); !SameBits(x[19], y[19]) {
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

// FailedForward: a forward that fails at layer failLayer's experts, after
// the layers before it advanced their recurrent state, leaves the session
// as it was; bad batches are refused. open opens the same file (once with
// opts' NewExperts set, once without).
func FailedForward(t *testing.T, open func(opts model.Options) (*gguf.File, model.Model), failLayer int) {
	f, ref := open(model.Options{})
	fp, err := experts.NewFile(f, ref.Experts())
	if err != nil {
		t.Fatal(err)
	}
	prov := &failing{ExpertProvider: fp, layer: failLayer}
	_, m := open(model.Options{NewExperts: func(*model.ExpertLayout) (model.ExpertProvider, error) { return prov, nil }})
	vocab := m.Info().Vocab
	rng := rand.New(rand.NewPCG(3, 4))
	prompt, more := RandTokens(rng, 12, vocab), RandTokens(rng, 5, vocab)
	s, rs := NewSession(t, m, 32), NewSession(t, ref, 32)
	ForwardAll(t, s, prompt)
	ForwardAll(t, rs, prompt)
	prov.armed = true
	if err := s.Forward(context.Background(), &model.Batch{Tokens: more}); err == nil {
		t.Fatal("failing provider: forward succeeded")
	}
	prov.armed = false
	for _, b := range []*model.Batch{
		{Tokens: RandTokens(rng, 32, vocab)}, {Tokens: []int32{int32(vocab)}}, {Tokens: []int32{1, 2}, Logits: []bool{true}}, {},
	} {
		if err := s.Forward(context.Background(), b); err == nil {
			t.Fatalf("bad batch of %d accepted", len(b.Tokens))
		}
	}
	if s.Len() != 12 {
		t.Fatalf("failed forwards changed the session: %d tokens", s.Len())
	}
	a, b := ForwardAll(t, s, more), ForwardAll(t, rs, more)
	for i := range a {
		if !SameBits(a[i], b[i]) {
			t.Fatalf("row %d differs after a failed forward", i)
		}
	}
	if !s.CanTruncate(12) {
		t.Fatal("cannot roll back over the batch after a failure")
	}
}

// Drafted is what a DraftHead proposed: tokens and their probabilities.
type Drafted struct {
	Toks  []int32
	Probs []float64
}

// Same reports whether d and o are the same drafts, bit for bit.
func (d Drafted) Same(o Drafted) bool {
	return slices.Equal(d.Toks, o.Toks) && slices.Equal(d.Probs, o.Probs)
}

// Draft asks s's draft head for up to n tokens after next.
func Draft(t testing.TB, s model.Session, next int32, n int) Drafted {
	t.Helper()
	var d Drafted
	if err := s.(model.DraftHead).Draft(context.Background(), next, n, func(tok int32, p float64) {
		d.Toks = append(d.Toks, tok)
		d.Probs = append(d.Probs, p)
	}); err != nil {
		t.Fatal(err)
	}
	return d
}

// ForwardChunks forwards toks in batches of the chunks' sizes (the rest in
// one batch), outputs unread.
func ForwardChunks(t testing.TB, s model.Session, toks []int32, chunks ...int) {
	t.Helper()
	for len(toks) > 0 {
		n := len(toks)
		if len(chunks) > 0 {
			n, chunks = min(chunks[0], n), chunks[1:]
		}
		if err := s.Forward(context.Background(), &model.Batch{Tokens: toks[:n]}); err != nil {
			t.Fatal(err)
		}
		toks = toks[n:]
	}
}
