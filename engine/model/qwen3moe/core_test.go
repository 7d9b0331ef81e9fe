package qwen3moe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/synth"
)

// synthModel writes a small qwen3moe of weight type typ and opens it.
func synthModel(t testing.TB, typ ggml.Type, edit func(*synth.Config)) (*gguf.File, *qwen3moe.Model) {
	t.Helper()
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Type, cfg.Layers, cfg.Vocab, cfg.Seed = typ, 2, 512, 7
	if edit != nil {
		edit(&cfg)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := qwen3moe.Open(f, model.Options{Backend: modeltest.NewBackend(t, 2)})
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

// TestBatchInvariance: every row of a forward of 1..16 rows, at random
// positions, has bit for bit the logits of the same row computed alone,
// for every weight type.
func TestBatchInvariance(t *testing.T) {
	for _, typ := range synth.Types {
		t.Run(typ.String(), func(t *testing.T) {
			t.Parallel()
			_, m := synthModel(t, typ, nil)
			rng := rand.New(rand.NewPCG(uint64(typ), 3))
			for trial := 0; trial < 3; trial++ {
				prefix := modeltest.RandTokens(rng, rng.IntN(40), 512)
				rows := modeltest.RandTokens(rng, 1+rng.IntN(16), 512)
				batched, err := m.NewSession(128)
				if err != nil {
					t.Fatal(err)
				}
				single, _ := m.NewSession(128)
				if len(prefix) > 0 {
					modeltest.ForwardAll(t, batched, prefix)
					modeltest.ForwardAll(t, single, prefix)
				}
				got := modeltest.ForwardAll(t, batched, rows)
				for i, tok := range rows {
					want := modeltest.ForwardAll(t, single, []int32{tok})[0]
					if !modeltest.SameBits(got[i], want) {
						t.Fatalf("trial %d: row %d of a batch of %d at position %d differs from the row alone", trial, i, len(rows), len(prefix)+i)
					}
				}
			}
		})
	}
}

// TestRollback: forward N, forward k, roll back to N, forward the same k:
// identical logits; a session past its size refuses.
func TestRollback(t *testing.T) {
	_, m := synthModel(t, ggml.Q8_0, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	s, _ := m.NewSession(64)
	prompt, more := modeltest.RandTokens(rng, 20, 512), modeltest.RandTokens(rng, 6, 512)
	modeltest.ForwardAll(t, s, prompt)
	first := modeltest.ForwardAll(t, s, more)
	if !s.CanTruncate(20) {
		t.Fatal("a KV session cannot roll back")
	}
	if err := s.Truncate(20); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 20 || !slicesEqual(s.Tokens(), prompt) {
		t.Fatalf("after rollback: %d tokens", s.Len())
	}
	again := modeltest.ForwardAll(t, s, more)
	for i := range first {
		if !modeltest.SameBits(first[i], again[i]) {
			t.Fatalf("row %d differs after rollback", i)
		}
	}
	if s.CanTruncate(27) || s.Truncate(27) == nil {
		t.Fatal("truncate past the end accepted")
	}
	// Too many tokens for the context, and bad ids: refused, session unchanged.
	if err := s.Forward(context.Background(), &model.Batch{Tokens: modeltest.RandTokens(rng, 64, 512)}); err == nil {
		t.Fatal("forward past the context accepted")
	}
	if err := s.Forward(context.Background(), &model.Batch{Tokens: []int32{600}}); err == nil {
		t.Fatal("token outside the vocabulary accepted")
	}
	if s.Len() != 26 {
		t.Fatalf("failed forwards changed the session: %d tokens", s.Len())
	}
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestHiddenOutputs: rows marked Hidden get the final residual, rows not
// marked for logits get none.
func TestHiddenOutputs(t *testing.T) {
	_, m := synthModel(t, ggml.Q8_0, nil)
	s, _ := m.NewSession(32)
	b := model.Batch{Tokens: []int32{1, 2, 3, 4}, Logits: []bool{false, true, false, true}, Hidden: []bool{true, false, false, true}}
	if err := s.Forward(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Out) != 2 || len(b.HiddenOut) != 2 || len(b.HiddenOut[0]) != m.Info().Embd || len(b.Out[0]) != m.Info().Vocab {
		t.Fatalf("outputs: %d logits rows, %d hidden rows", len(b.Out), len(b.HiddenOut))
	}
	if err := s.Forward(context.Background(), &model.Batch{Tokens: []int32{1, 2}, Logits: []bool{true}}); err == nil {
		t.Fatal("flags of the wrong length accepted")
	}
}

// shuffler delivers a layer's experts from a File provider in a random
// order, from up to workers goroutines with random delays: as an SSD
// cache's readers would.
type shuffler struct {
	file    *experts.File
	rng     *rand.Rand
	workers int
	f       shuffleFetch
}

type shuffleFetch struct {
	s      *shuffler
	layer  int
	exps   []int32
	ready  chan int
	wg     sync.WaitGroup
	cancel chan struct{}
}

func (s *shuffler) Prefetch(int, []int32) {}

func (s *shuffler) Streaming() bool { return false }

func (s *shuffler) Resident(int, []bool) []bool { return nil }

func (s *shuffler) Fetch(_ context.Context, layer int, exps []int32) (model.Fetch, error) {
	f := &s.f
	*f = shuffleFetch{s: s, layer: layer, exps: exps, ready: make(chan int, len(exps)), cancel: make(chan struct{})}
	order := s.rng.Perm(len(exps))
	delays := make([]time.Duration, len(exps))
	for i := range delays {
		delays[i] = time.Duration(s.rng.IntN(300)) * time.Microsecond
	}
	work := make(chan int, len(exps))
	for _, i := range order {
		work <- i
	}
	close(work)
	for w := 0; w < s.workers; w++ {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for i := range work {
				select {
				case <-time.After(delays[i]):
				case <-f.cancel:
					return
				}
				f.ready <- i
			}
		}()
	}
	return f, nil
}

func (f *shuffleFetch) Ready(ctx context.Context, dst []int) ([]int, error) {
	select {
	case i := <-f.ready:
		dst = append(dst, i)
	case <-ctx.Done():
		return dst, ctx.Err()
	}
	for {
		select {
		case i := <-f.ready:
			dst = append(dst, i)
		default:
			return dst, nil
		}
	}
}

func (f *shuffleFetch) Weights(i int) model.ExpertWeights {
	return f.s.file.Weights(f.layer, int(f.exps[i]))
}

func (f *shuffleFetch) Done([]int) {}

func (f *shuffleFetch) Release() {
	close(f.cancel)
	f.wg.Wait()
}

// TestProviderOrderIndependent: experts delivered in random order with
// random delays, by 1..8 concurrent readers, give bit-identical logits to
// the in-memory provider.
func TestProviderOrderIndependent(t *testing.T) {
	f, ref := synthModel(t, ggml.Q4_K, func(c *synth.Config) { c.Experts, c.ExpertsUsed = 16, 4 })
	rng := rand.New(rand.NewPCG(9, 9))
	toks := modeltest.RandTokens(rng, 24, 512)
	rs, _ := ref.NewSession(64)
	want := modeltest.ForwardAll(t, rs, toks)
	fp, err := experts.NewFile(f, ref.Experts())
	if err != nil {
		t.Fatal(err)
	}
	for workers := 1; workers <= 8; workers++ {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			prov := &shuffler{file: fp, rng: rand.New(rand.NewPCG(uint64(workers), 1)), workers: workers}
			m, err := qwen3moe.Open(f, model.Options{Backend: modeltest.NewBackend(t, 2),
				NewExperts: func(*model.ExpertLayout) (model.ExpertProvider, error) { return prov, nil }})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := m.NewSession(64)
			// The prompt in uneven chunks, then decode-sized steps.
			var got [][]float32
			for _, n := range []int{7, 1, 12, 1, 3} {
				got = append(got, modeltest.ForwardAll(t, s, toks[len(got):len(got)+n])...)
			}
			for i := range want {
				if !modeltest.SameBits(got[i], want[i]) {
					t.Fatalf("row %d differs with shuffled deliveries", i)
				}
			}
		})
	}
}
