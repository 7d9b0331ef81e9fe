package qwen4exp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/synth"
)

// spConfig is a small qwen4exp with QSA (ratio 4, top_k 16: a query past
// 19 cells keeps 19, cutting inside a block) and the PLE on layer 0.
func spConfig(typ ggml.Type) synth.Config {
	c := synth.Defaults(synth.ArchQwen4Exp)
	c.Type, c.Vocab, c.Seed = typ, 512, 7
	c.Embd, c.FFExpert, c.FFShared, c.Experts, c.HCLowRank = 128, 128, 128, 4, 64
	c.Heads, c.HeadsKV, c.HeadDim = 2, 1, 64
	c.SSMState, c.SSMGroups, c.SSMVHeads = 32, 1, 2
	c.IndexerTopK, c.CompressRatio = 16, 4
	return c
}

func spWrite(t testing.TB, cfg synth.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

func spOpen(t testing.TB, path string, opts model.Options) (*gguf.File, *Model) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return spOpenFile(t, f, opts)
}

func spOpenFile(t testing.TB, f *gguf.File, opts model.Options) (*gguf.File, *Model) {
	t.Helper()
	if opts.Backend == nil {
		be := cpu.NewBackend(2)
		t.Cleanup(func() { be.Close() })
		opts.Backend = be
	}
	m, err := Open(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

func spSession(t testing.TB, m *Model, n int) *Session {
	t.Helper()
	s, err := m.NewSession(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*Session)
}

func spTokens(rng *rand.Rand, n, vocab int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(vocab))
	}
	return out
}

// spForward runs toks in one batch and returns copies of every row's logits.
func spForward(t testing.TB, s model.Session, toks []int32) [][]float32 {
	t.Helper()
	all := make([]bool, len(toks))
	for i := range all {
		all[i] = true
	}
	b := model.Batch{Tokens: toks, Logits: all}
	if err := s.Forward(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(b.Out))
	for i, r := range b.Out {
		out[i] = slices.Clone(r)
	}
	return out
}

func spSame(a, b []float32) bool {
	return len(a) == len(b) && slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestSparseLongPromptChunks: with QSA and PLE, a 600-token prompt (past
// position 19 every query keeps 19 of its cells: the selection decides)
// in one batch and in chunks of 1, 7, 64 and the rest gives identical
// logits at every position (F32 weights, whose kernels give each row what
// it gets alone): the indexer cache, the pooled blocks and the PLE history
// carry across batches exactly. (600, not 1,100: the package's tests must
// stay within go test's 10 minutes under -race on a loaded 2-core
// machine; TestSparseGreedyMatchesLlamaCpp prefills 1,030 in chunks.)
func TestSparseLongPromptChunks(t *testing.T) {
	_, m := spOpen(t, spWrite(t, spConfig(ggml.F32)), model.Options{})
	toks := spTokens(rand.New(rand.NewPCG(1, 1)), 600, 512)
	want := spForward(t, spSession(t, m, 600), toks)
	s := spSession(t, m, 600)
	var got [][]float32
	for _, n := range []int{1, 7, 64, len(toks) - 72} {
		got = append(got, spForward(t, s, toks[len(got):len(got)+n])...)
	}
	for i := range want {
		if !spSame(got[i], want[i]) {
			t.Fatalf("position %d: chunked prefill differs from one batch", i)
		}
	}
}

// TestSparseRollback: forward a prompt past the QSA width, forward k rows,
// roll back, forward other rows, roll back, forward the first k again:
// identical logits, for every k the checkpoints cover and rollbacks into
// the middle of a block; the PLE history and the indexer's pooled blocks
// are restored with the DeltaNet state.
func TestSparseRollback(t *testing.T) {
	_, m := spOpen(t, spWrite(t, spConfig(ggml.Q8_0)), model.Options{})
	rng := rand.New(rand.NewPCG(5, 6))
	prompt := spTokens(rng, 41, 512)
	for k := 1; k < Checkpoints; k++ {
		s := spSession(t, m, 128)
		spForward(t, s, prompt)
		more := spTokens(rng, k, 512)
		first := spForward(t, s, more)
		if err := s.Truncate(len(prompt)); err != nil {
			t.Fatal(err)
		}
		alt := spTokens(rng, k, 512)
		altGot := spForward(t, s, alt)
		altFresh := spSession(t, m, 128)
		spForward(t, altFresh, prompt)
		if want := spForward(t, altFresh, alt); !spSame(altGot[k-1], want[k-1]) {
			t.Fatalf("k %d: rows forwarded after a rollback differ from a fresh session's", k)
		}
		for il, c := range s.idx {
			if c == nil {
				continue
			}
			fc := altFresh.idx[il]
			if c.nPooled != fc.nPooled || !spSame(c.pooled[:c.nPooled*m.hp.IndexerDim], fc.pooled[:fc.nPooled*m.hp.IndexerDim]) {
				t.Fatalf("k %d layer %d: the indexer's pooled blocks after a rollback (%d) differ from a fresh session's (%d)", k, il, c.nPooled, fc.nPooled)
			}
		}
		if il := m.hp.PLE.Layer; !spSame(s.rec.Present(il)[2], altFresh.rec.Present(il)[2]) {
			t.Fatalf("k %d: the PLE history after a rollback differs from a fresh session's", k)
		}
		if err := s.Truncate(len(prompt)); err != nil {
			t.Fatal(err)
		}
		again := spForward(t, s, more)
		for i := range first {
			if !spSame(first[i], again[i]) {
				t.Fatalf("k %d row %d: logits after rollback differ", k, i)
			}
		}
		// And the same rows in a fresh session: the rollback left no trace.
		fresh := spSession(t, m, 128)
		spForward(t, fresh, prompt)
		if got := spForward(t, fresh, more); !spSame(got[k-1], first[k-1]) {
			t.Fatalf("k %d: fresh session differs", k)
		}
	}
}

// recordingBackend is the CPU backend recording the bytes of every Matrix
// made, so a test can see that the PLE table is never one.
type recordingBackend struct {
	*cpu.Backend
	mats [][]byte
}

func (b *recordingBackend) NewMatrix(t ggml.Type, data []byte, rows, cols int) (*backend.Matrix, error) {
	b.mats = append(b.mats, data)
	return b.Backend.NewMatrix(t, data, rows, cols)
}

// TestPLETableStreamedTokens: with the experts (and so the PLE table)
// streamed from the file, generation gives the tokens of the mapped model
// bit for bit, the table's rows are read through the stream and cached, and
// in neither mode is the table a backend Matrix (the backend's warm-up and
// resident weights never include it).
func TestPLETableStreamedTokens(t *testing.T) {
	path := spWrite(t, spConfig(ggml.Q8_0))
	rng := rand.New(rand.NewPCG(8, 9))
	prompt := spTokens(rng, 40, 512)
	greedy := func(streamed bool) ([]int32, *Model, [][]byte, *gguf.File) {
		be := &recordingBackend{Backend: cpu.NewBackend(2)}
		t.Cleanup(func() { be.Close() })
		opts := model.Options{Backend: be}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if streamed {
			opts.NewExperts = func(l *model.ExpertLayout) (model.ExpertProvider, error) {
				st, err := experts.NewStream(f, l, experts.StreamOptions{Budget: 1 << 20, Readers: 2})
				if err == nil {
					t.Cleanup(func() { st.Close() })
				}
				return st, err
			}
		}
		m, err := Open(f, opts)
		if err != nil {
			t.Fatal(err)
		}
		s := spSession(t, m, 128)
		var out []int32
		next := prompt
		for len(out) < 24 {
			rows := spForward(t, s, next)
			last := rows[len(rows)-1]
			best := int32(0)
			for i, v := range last {
				if v > last[best] {
					best = int32(i)
				}
			}
			out = append(out, best)
			next = []int32{best}
		}
		return out, m, be.mats, f
	}
	mapped, mm, mats, f := greedy(false)
	streamed, sm, smats, sf := greedy(true)
	if !slices.Equal(mapped, streamed) {
		t.Fatalf("streamed PLE table: tokens %v, mapped %v", streamed, mapped)
	}
	if mm.pleTab.Streamed() || !sm.pleTab.Streamed() {
		t.Fatal("the table's modes are not mapped and streamed")
	}
	st := sm.pleTab.Stats()
	if st.Reads == 0 || st.Rows == 0 {
		t.Fatalf("streamed table stats %+v: no rows read", st)
	}
	t.Logf("streamed table: %d rows gathered, %d read (%d bytes)", st.Rows, st.Reads, st.BytesRead)
	for _, c := range []struct {
		f    *gguf.File
		mats [][]byte
	}{{f, mats}, {sf, smats}} {
		ti, _ := c.f.Tensor(pleTableName)
		table := c.f.Data(ti)
		lo, hi := uintptr(unsafe.Pointer(&table[0])), uintptr(unsafe.Pointer(&table[len(table)-1]))
		for _, d := range c.mats {
			if len(d) == 0 {
				continue
			}
			if p := uintptr(unsafe.Pointer(&d[0])); p+uintptr(len(d)) > lo && p <= hi {
				t.Fatalf("a backend Matrix of %d bytes covers the PLE table", len(d))
			}
		}
	}
}

// failingExperts fails every fetch of layer fail while armed.
type failingExperts struct {
	model.ExpertProvider
	fail  int
	armed bool
}

func (p *failingExperts) Fetch(ctx context.Context, layer int, ids []int32) (model.Fetch, error) {
	if p.armed && layer == p.fail {
		return nil, errors.New("injected read error")
	}
	return p.ExpertProvider.Fetch(ctx, layer, ids)
}

// TestSparseFailedForward: a forward pass that fails after the QSA layer
// stored its keys and pooled the blocks it completed leaves the session as
// it was: the next batch at the same positions gives a fresh session's
// logits.
func TestSparseFailedForward(t *testing.T) {
	cfg := spConfig(ggml.Q8_0)
	cfg.Layers = 6 // attention (QSA) on layer 3, before the failing layer 5
	path := spWrite(t, cfg)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var fe *failingExperts
	_, m := spOpenFile(t, f, model.Options{NewExperts: func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		p, err := experts.NewFile(f, l)
		fe = &failingExperts{ExpertProvider: p, fail: 5}
		return fe, err
	}})
	rng := rand.New(rand.NewPCG(3, 4))
	prompt, bad, good := spTokens(rng, 38, 512), spTokens(rng, 9, 512), spTokens(rng, 9, 512)
	s := spSession(t, m, 128)
	spForward(t, s, prompt)
	fe.armed = true
	all := make([]bool, len(bad))
	for i := range all {
		all[i] = true
	}
	if err := s.Forward(context.Background(), &model.Batch{Tokens: bad, Logits: all}); err == nil {
		t.Fatal("the injected error did not fail the forward pass")
	}
	fe.armed = false
	got := spForward(t, s, good)
	fresh := spSession(t, m, 128)
	spForward(t, fresh, prompt)
	want := spForward(t, fresh, good)
	for i := range want {
		if !spSame(got[i], want[i]) {
			t.Fatalf("row %d after a failed forward differs from a fresh session's", i)
		}
	}
}

// TestSparseDecodeAllocations: once the buffers have grown, a decode step
// with QSA and the PLE (table mapped) allocates nothing, as the context
// grows past block boundaries.
func TestSparseDecodeAllocations(t *testing.T) {
	_, m := spOpen(t, spWrite(t, spConfig(ggml.Q8_0)), model.Options{})
	s := spSession(t, m, 512)
	ctx := context.Background()
	if err := s.Forward(ctx, &model.Batch{Tokens: spTokens(rand.New(rand.NewPCG(1, 2)), 40, 512)}); err != nil {
		t.Fatal(err)
	}
	b := model.Batch{Tokens: []int32{5}}
	allocs := testing.AllocsPerRun(50, func() {
		b.Tokens = b.Tokens[:1]
		if err := s.Forward(ctx, &b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%.0f allocations per decoded token", allocs)
	}
}
