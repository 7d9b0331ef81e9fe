package experts_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/routing"
	"github.com/strata-llm/strata/engine/synth"
)

func writeModel(t testing.TB, typ ggml.Type) string {
	t.Helper()
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Type, cfg.Layers, cfg.Vocab, cfg.Experts, cfg.ExpertsUsed, cfg.Seed = typ, 3, 512, 16, 4, 3
	cfg.RouterSkew = 1
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// run decodes toks (a prompt in two batches, then one token at a time) and
// returns every row's logits; newExperts nil means the in-memory provider.
func run(t testing.TB, path string, toks []int32, newExperts func(*gguf.File, *model.ExpertLayout) (model.ExpertProvider, error)) [][]float32 {
	t.Helper()
	return runRouted(t, path, toks, nil, newExperts)
}

// runRouted is run with a routing policy.
func runRouted(t testing.TB, path string, toks []int32, route *routing.State, newExperts func(*gguf.File, *model.ExpertLayout) (model.ExpertProvider, error)) [][]float32 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	be := cpu.NewBackend(2)
	defer be.Close()
	opts := model.Options{Backend: be, Routing: route}
	var prov model.ExpertProvider
	if newExperts != nil {
		opts.NewExperts = func(l *model.ExpertLayout) (model.ExpertProvider, error) {
			p, err := newExperts(f, l)
			prov = p
			return p, err
		}
	}
	m, err := qwen3moe.Open(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := prov.(interface{ Close() error }); ok {
		defer c.Close()
	}
	s, err := m.NewSession(128)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	for at := 0; at < len(toks); {
		n := 1
		switch at {
		case 0:
			n = 20
		case 20:
			n = 5
		}
		b := model.Batch{Tokens: toks[at : at+n], Logits: make([]bool, n)}
		for i := range b.Logits {
			b.Logits[i] = true
		}
		if err := s.Forward(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Out {
			out = append(out, append([]float32(nil), r...))
		}
		at += n
	}
	return out
}

func same(a, b [][]float32) error {
	for i := range a {
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return fmt.Errorf("row %d logit %d: %g vs %g", i, j, a[i][j], b[i][j])
			}
		}
	}
	return nil
}

// TestStreamMatchesInMemory: tokens' logits with experts streamed through
// arenas from all experts down to a single slot, with random read delays
// and 1..8 readers, are bit-identical to the in-memory engine's.
func TestStreamMatchesInMemory(t *testing.T) {
	path := writeModel(t, ggml.Q4_K)
	rng := rand.New(rand.NewPCG(1, 2))
	toks := make([]int32, 40)
	for i := range toks {
		toks[i] = int32(rng.IntN(512))
	}
	want := run(t, path, toks, nil)
	f, _ := gguf.Open(path)
	slotBytes := probeLayout(t, f) // bytes of one expert's slot
	f.Close()
	for _, tc := range []struct {
		slots, readers int
	}{{48, 4}, {24, 1}, {8, 8}, {4, 3}, {1, 2}} {
		t.Run(fmt.Sprintf("%dslots-%dreaders", tc.slots, tc.readers), func(t *testing.T) {
			var mu sync.Mutex
			drng := rand.New(rand.NewPCG(uint64(tc.slots), 7))
			delay := func() {
				mu.Lock()
				d := time.Duration(drng.IntN(400)) * time.Microsecond
				mu.Unlock()
				time.Sleep(d)
			}
			var st experts.Stats
			got := run(t, path, toks, func(f *gguf.File, l *model.ExpertLayout) (model.ExpertProvider, error) {
				s, err := experts.NewStream(f, l, experts.StreamOptions{Budget: int64(tc.slots) * slotBytes, Readers: tc.readers, ReadDelay: delay})
				if err != nil {
					return nil, err
				}
				return &statsOnClose{Stream: s, dst: &st}, nil
			})
			if err := same(want, got); err != nil {
				t.Fatal(err)
			}
			if st.Slots != min(tc.slots, st.Slots) || (tc.slots < 48 && st.Misses == 0) {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// probeLayout returns the slot size a Stream uses for f's experts.
func probeLayout(t testing.TB, f *gguf.File) int64 {
	be := cpu.NewBackend(1)
	defer be.Close()
	var slot int64
	_, err := qwen3moe.Open(f, model.Options{Backend: be, NewExperts: func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		s, err := experts.NewStream(f, l, experts.StreamOptions{Budget: 1})
		if err != nil {
			return nil, err
		}
		slot = s.Stats().SlotBytes
		s.Close()
		return experts.NewFile(f, l)
	}})
	if err != nil {
		t.Fatal(err)
	}
	return slot
}

// TestStreamResidencyIsDeterministic: the same requests give the same hits,
// misses and read-aheads whatever the read delays.
func TestStreamResidencyIsDeterministic(t *testing.T) {
	path := writeModel(t, ggml.Q8_0)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	slot := probeLayout(t, f)
	toks := []int32{1, 9, 33, 100, 7, 7, 7, 250, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28}
	var first experts.Stats
	for i, maxDelay := range []int{0, 500, 2000} {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		var mu sync.Mutex
		var st experts.Stats
		run(t, path, toks, func(f *gguf.File, l *model.ExpertLayout) (model.ExpertProvider, error) {
			s, err := experts.NewStream(f, l, experts.StreamOptions{Budget: 10 * slot, Readers: 3, ReadDelay: func() {
				if maxDelay == 0 {
					return
				}
				mu.Lock()
				d := time.Duration(rng.IntN(maxDelay)) * time.Microsecond
				mu.Unlock()
				time.Sleep(d)
			}})
			if err != nil {
				return nil, err
			}
			return &statsOnClose{Stream: s, dst: &st}, nil
		})
		if st.Misses == 0 || st.Hits == 0 {
			t.Fatalf("delay %d µs: %d hits, %d misses: the arena should both hit and miss", maxDelay, st.Hits, st.Misses)
		}
		if i == 0 {
			first = st
			continue
		}
		if st.Hits != first.Hits || st.Misses != first.Misses || st.ReadAheads != first.ReadAheads || st.Resident != first.Resident ||
			st.AheadUsed != first.AheadUsed || st.AheadDropped != first.AheadDropped {
			t.Fatalf("delay %d µs: hits %d misses %d read-aheads %d (used %d, dropped %d) resident %d; without delay %d %d %d (%d, %d) %d",
				maxDelay, st.Hits, st.Misses, st.ReadAheads, st.AheadUsed, st.AheadDropped, st.Resident,
				first.Hits, first.Misses, first.ReadAheads, first.AheadUsed, first.AheadDropped, first.Resident)
		}
	}
}

// statsOnClose records a Stream's counters when it is closed.
type statsOnClose struct {
	*experts.Stream
	dst *experts.Stats
}

func (s *statsOnClose) Close() error {
	*s.dst = s.Stream.Stats()
	return s.Stream.Close()
}

// TestStreamReadErrors: a file truncated after the model was opened makes
// the request that needs a lost expert fail with an error naming it; the
// provider keeps working for experts it can read.
func TestStreamReadErrors(t *testing.T) {
	path := writeModel(t, ggml.Q8_0)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	be := cpu.NewBackend(1)
	defer be.Close()
	var s *experts.Stream
	m, err := qwen3moe.Open(f, model.Options{Backend: be, NewExperts: func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		s, err = experts.NewStream(f, l, experts.StreamOptions{Budget: 1 << 30})
		return s, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The last layer's down experts are at the end of the file: cut it.
	if err := os.Truncate(path, f.Size-int64(f.Size/20)); err != nil {
		t.Fatal(err)
	}
	sess, _ := m.NewSession(64)
	var lastErr error
	for i := 0; i < 20 && lastErr == nil; i++ {
		lastErr = sess.Forward(context.Background(), &model.Batch{Tokens: []int32{int32(i * 17 % 512)}})
	}
	if lastErr == nil || !errors.Is(lastErr, io.ErrUnexpectedEOF) {
		t.Fatalf("reading a truncated file: %v", lastErr)
	}
}

// TestCacheRoutingIsDeterministic: with cache-aware routing on, the
// choices depend on residency, yet the same prompt gives the same logits
// at any read speed; and they differ from exact routing (the policy acts).
func TestCacheRoutingIsDeterministic(t *testing.T) {
	path := writeModel(t, ggml.Q8_0)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	slot := probeLayout(t, f)
	f.Close()
	toks := make([]int32, 40)
	for i := range toks {
		toks[i] = int32(i * 37 % 512)
	}
	exact := run(t, path, toks, nil)
	pol := &routing.State{Policy: routing.CacheRoute{Enabled: true, Lambda: 3, AlwaysKept: 1, MaxRank: 10}}
	var first [][]float32
	for i, maxDelay := range []int{0, 300, 1500} {
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		var mu sync.Mutex
		got := runRouted(t, path, toks, pol, func(f *gguf.File, l *model.ExpertLayout) (model.ExpertProvider, error) {
			return experts.NewStream(f, l, experts.StreamOptions{Budget: 12 * slot, Readers: 3, ReadDelay: func() {
				if maxDelay > 0 {
					mu.Lock()
					d := time.Duration(rng.IntN(maxDelay)) * time.Microsecond
					mu.Unlock()
					time.Sleep(d)
				}
			}})
		})
		if i == 0 {
			first = got
			if same(exact, got) == nil {
				t.Fatal("cache-aware routing changed nothing")
			}
			continue
		}
		if err := same(first, got); err != nil {
			t.Fatalf("read delays up to %d µs changed the result: %v", maxDelay, err)
		}
	}
	tel := pol.Stats
	if tel.Swapped == 0 || tel.Agreement/float64(tel.Tokens) >= 1 || tel.KL <= 0 {
		t.Fatalf("telemetry %+v", tel)
	}
}

// TestWarmKeepsTheHottest: after Warm fills the arena hottest first, the
// first misses evict the coldest experts of the fill, not the hottest.
func TestWarmKeepsTheHottest(t *testing.T) {
	s := openStream(t, 4, experts.StreamOptions{})
	if n := s.Warm([][2]int{{0, 5}, {0, 6}, {0, 7}, {0, 8}}); n != 4 {
		t.Fatalf("warm queued %d of 4", n)
	}
	for done, total := s.Warmed(); done < total; done, total = s.Warmed() {
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	for _, e := range []int32{1, 2} { // two misses
		fe, err := s.Fetch(ctx, 0, []int32{e})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fe.Ready(ctx, nil); err != nil {
			t.Fatal(err)
		}
		fe.Release()
	}
	res := s.Resident(0, nil)
	if !res[5] || !res[6] || res[7] || res[8] {
		t.Fatalf("resident after two misses: 5 %v 6 %v 7 %v 8 %v; want the two hottest of the fill kept", res[5], res[6], res[7], res[8])
	}
}

// TestReadAheadPrecision: a read-ahead its layer does not use is dropped
// from the cache at the layer's fetch; while fewer than half the reads are
// used, only every 8th prediction is read; once predictions are used
// again, every one is read.
func TestReadAheadPrecision(t *testing.T) {
	s := openStream(t, 6, experts.StreamOptions{ReadDelay: func() { time.Sleep(100 * time.Microsecond) }})
	ctx := context.Background()
	fetch := func(e int32) {
		t.Helper()
		fe, err := s.Fetch(ctx, 1, []int32{e})
		if err != nil {
			t.Fatal(err)
		}
		defer fe.Release()
		if _, err := fe.Ready(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Wrong predictions: the layer always fetches expert 0.
	for i := 0; i < 40; i++ {
		a, b := int32(2+i%14), int32(2+(i+7)%14)
		read := s.Stats().ReadAheads
		s.Prefetch(1, []int32{a, b})
		res := s.Resident(1, nil)
		if read = s.Stats().ReadAheads - read; read > 0 && (!res[a] || !res[b]) {
			t.Fatalf("prediction %d: read ahead but not resident", i)
		}
		fetch(0)
		if res := s.Resident(1, nil); res[a] || res[b] {
			t.Fatalf("prediction %d: unused read-ahead still resident after the fetch", i)
		}
	}
	st := s.Stats()
	if st.AheadUsed != 0 || st.AheadDropped != st.ReadAheads || st.Precision >= 0.5 {
		t.Fatalf("after wrong predictions: %d read ahead, %d used, %d dropped, precision %.2f", st.ReadAheads, st.AheadUsed, st.AheadDropped, st.Precision)
	}
	before := st.ReadAheads
	for i := 0; i < 32; i++ {
		s.Prefetch(1, []int32{int32(2 + i%14), int32(2 + (i+7)%14)})
		fetch(0)
	}
	if n := s.Stats().ReadAheads - before; n != 8 {
		t.Fatalf("32 predictions below the precision threshold read %d experts, want 8 (every 8th, 2 each)", n)
	}
	// Right predictions: the probes' reads are used, precision recovers,
	// and then every prediction is read.
	for i := 0; i < 100; i++ {
		e := int32(2 + i%14) // evicted since its last use: 6 slots
		s.Prefetch(1, []int32{e})
		fetch(e)
	}
	before = s.Stats().ReadAheads
	for i := 100; i < 128; i++ {
		e := int32(2 + i%14)
		s.Prefetch(1, []int32{e})
		fetch(e)
	}
	if st := s.Stats(); st.ReadAheads-before != 28 || st.Precision < 0.5 {
		t.Fatalf("28 right predictions read %d experts (want 28), precision %.2f", st.ReadAheads-before, st.Precision)
	}
}

// openStream opens writeModel's Q8_0 model with its experts streamed
// through an arena of slots slots (opts' Budget is set) and returns the
// stream; the model closes with the test.
func openStream(t *testing.T, slots int, opts experts.StreamOptions) *experts.Stream {
	t.Helper()
	f, err := gguf.Open(writeModel(t, ggml.Q8_0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	opts.Budget = int64(slots) * probeLayout(t, f)
	be := cpu.NewBackend(1)
	t.Cleanup(func() { be.Close() })
	var s *experts.Stream
	m, err := qwen3moe.Open(f, model.Options{Backend: be, NewExperts: func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		st, err := experts.NewStream(f, l, opts)
		s = st
		return st, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return s
}

// A fetch is placed (model.Placer) when every requested expert has a slot
// at once, so a caller may hold them all; with more experts than slots the
// rest wait for Done. An allocator's arena is used as given, and one of
// the wrong size or alignment is refused.
func TestStreamPlacedAndAlloc(t *testing.T) {
	var allocs int
	alloc := func(n int) ([]byte, func(), error) {
		allocs++
		b := make([]byte, n+8192)
		off := (4096 - int(uintptr(unsafe.Pointer(&b[0])))%4096) % 4096
		return b[off : off+n], func() {}, nil
	}
	s := openStream(t, 3, experts.StreamOptions{Readers: 2, Alloc: alloc})
	if allocs != 1 {
		t.Fatalf("the allocator was called %d times", allocs)
	}
	for _, tc := range []struct {
		experts []int32
		placed  bool
	}{{[]int32{0, 1}, true}, {[]int32{0, 1, 2}, true}, {[]int32{0, 1, 2, 3}, false}} {
		f, err := s.Fetch(context.Background(), 0, tc.experts)
		if err != nil {
			t.Fatal(err)
		}
		if p := f.(model.Placer).Placed(); p != tc.placed {
			t.Errorf("fetch of %d experts into 3 slots: placed %v", len(tc.experts), p)
		}
		var got []int
		for len(got) < len(tc.experts) {
			idx, err := f.Ready(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, idx...)
			f.Done(idx)
		}
		f.Release()
	}
	f, err := gguf.Open(writeModel(t, ggml.Q8_0))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	be := cpu.NewBackend(1)
	defer be.Close()
	bad := func(n int) ([]byte, func(), error) { b := make([]byte, n+4097); return b[1 : n+1], func() {}, nil }
	_, err = qwen3moe.Open(f, model.Options{Backend: be, NewExperts: func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		return experts.NewStream(f, l, experts.StreamOptions{Budget: 1, Alloc: bad})
	}})
	if err == nil || !strings.Contains(err.Error(), "aligned") {
		t.Errorf("a misaligned arena: %v", err)
	}
}
