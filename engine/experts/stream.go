package experts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
)

// directAlign is the alignment of O_DIRECT offsets, lengths and buffers
// (the logical block size is 512 or 4096 bytes; 4096 covers both).
const directAlign = 4096

// chunkBytes is the largest single read: an expert's tensors are cut into
// reads of at most this size so one very large miss is spread over
// several readers. Fewer, larger reads won here: the 48-layer Q4_K_M
// A3B-shaped model at a 4 GB limit (tensors of 0.9–1.3 MB) decoded at
// 12.7–12.8 tok/s with 4 MiB reads (one per tensor) against 11.7–12.3
// with 1 MiB and 9.1–9.7 with 256 KiB, alternating runs; the 4-layer
// Q8_0 one at 1.5 GB 83–90 against 80–86 tok/s with 1 MiB.
const chunkBytes = 4 << 20

// StreamOptions configure a Stream.
type StreamOptions struct {
	// Budget is the arena's size in bytes; at least one expert's slot is
	// always allocated.
	Budget int64
	// Readers is the number of I/O goroutines; 0: 8. An NVMe drive serves
	// several reads at once: on this machine's virtual disk, 8 readers of
	// 1 MiB reads read a 30B-shaped model's misses at 410–530 MB/s against
	// 370–470 MB/s for 4 (under load from other work: noisy).
	Readers int
	// UrgentReaders of them take only urgent reads (experts a layer needs
	// now), so read-ahead never delays a miss; 0: 1 (at most Readers-1).
	UrgentReaders int
	// ReadDelay, if set, is called before every read and may sleep: tests
	// inject slow and uneven I/O through it.
	ReadDelay func()
	// Alloc, if set, allocates the arena (zeroed, aligned to at least 4
	// KiB for O_DIRECT reads) and returns the function freeing it: a
	// backend's host memory its device reads in place
	// (backend.HostAllocator). Default: anonymous memory, on huge pages
	// and locked where allowed.
	Alloc func(n int) ([]byte, func(), error)
}

// Stats are the provider's counters since it was made.
type Stats struct {
	Slots        int           // experts the arena holds
	SlotBytes    int64         // bytes per slot
	Resident     int           // slots holding an expert
	Hits         int64         // requested experts that were resident (or being read ahead)
	Misses       int64         // requested experts read on demand (urgent)
	ReadAheads   int64         // experts queued for read-ahead
	AheadUsed    int64         // of them, fetched by the layer they were read for
	AheadDropped int64         // of them, dropped unused when that layer fetched others
	BytesRead    int64         // bytes read from the file
	ReadTime     time.Duration // summed over readers
	Stall        time.Duration // time layers waited for experts
	Direct       bool          // reads bypass the page cache
	Precision    float64       // running fraction of read-ahead reads the layer then used
}

// Stream serves experts from an arena of fixed slots in anonymous memory,
// filled by preads straight from the GGUF file with the page cache
// bypassed: a model far larger than memory runs with only its dense part
// and a cache of experts resident.
//
// Residency is logical and deterministic: which experts are resident after
// a Fetch or Prefetch depends only on the sequence of calls (LRU over
// logical accesses; a read-ahead expert counts as resident as soon as it
// is queued), never on how fast reads complete, so a routing policy that
// looks at residency gives the same tokens at any disk speed. With exact
// routing the results are bit-identical to the in-memory engine at every
// budget.
type Stream struct {
	opts   StreamOptions
	arena  []byte
	free   func()
	files  []*os.File // by part; index 0 only today
	paths  []string   // of files
	direct bool

	layers []streamLayer
	slots  []slot

	mu       sync.Mutex
	cond     *sync.Cond
	resident map[int64]int32 // key(layer, expert) → slot
	warmed   []int64         // the experts the last Warm queued, for Warmed
	lruHead  int32           // least recently used; -1: empty
	lruTail  int32
	urgent   []readJob // queues, guarded by mu; readers wait on cond
	ahead    []readJob
	stats    Stats
	closed   bool
	// precision is the running (EMA 0.05 per read) fraction of read-ahead
	// reads the layer's next fetch used; predictions counts Prefetch calls.
	precision   float64
	predictions int
	wg          sync.WaitGroup
	fetch       streamFetch
}

type streamLayer struct {
	ok      bool
	parts   [3]tensorPart // gate, up, down
	experts int
	// predicted is the last read-ahead prediction for this layer, scored
	// against the layer's next fetch.
	predicted []int32
	hasPred   bool
}

// Read-ahead is worth its reads only when the layer then uses them: each
// read-ahead read is scored when its layer fetches (used, or dropped
// unused, its slot freed), and while the running precision of those reads
// is below minPrecision only every probeEvery-th prediction is read (those
// probes' reads keep the precision measured).
//
// What counts is the precision of the reads, not of the prediction: the
// predicted experts that are not resident are the prediction's misses
// more than its hits. Measured on the benchmarks' synthetic models (router
// skew 0.5): the next-router prediction recalled 96 % of a token's rank-1
// expert and 78 % of its top 8, but only 25–27 % of the experts it read
// ahead were used (by rank: 40 % for the top-ranked down to 16 %), and
// reading them cost time: 48-layer Q4_K_M at 4 GB 10.8 tok/s with them
// against 11.7 without (121.8 vs 77.0 MB read per token); 4-layer Q8_0 at
// 1.5 GB 66.9–68.1 against 72.6–74.1 tok/s. colibri measured a recall of
// ~72 % on real models, where read-ahead pays; the threshold lets it run
// when at least half of its reads are used.
const (
	minPrecision = 0.5
	probeEvery   = 8
)

type tensorPart struct {
	ref  model.TensorRef
	file int   // index in Stream.files (the part of a split model holding it)
	off  int64 // file offset of expert 0
}

// slot is one arena slot; its fields are guarded by Stream.mu.
type slot struct {
	key        int64 // -1: empty
	gen        uint64
	base       int       // offset of the slot in the arena
	views      [3][2]int // per tensor: start, end of the expert's bytes in the slot
	loaded     bool
	pending    int // reads of this gen not done
	running    int // reads of this gen running
	stale      int // reads of older gens still running
	err        error
	pinned     bool
	ahead      bool // queued by Prefetch and not yet fetched
	waiter     *streamFetch
	widx       int
	prev, next int32
}

type readJob struct {
	raw  *rawJob // a ReadRaw read (no slot) when set
	slot int32
	gen  uint64
	file int
	off  int64 // aligned file offset
	dst  int   // arena offset
	n    int   // bytes (aligned)
	need int   // bytes of them that hold the expert (the rest pads to alignment)
}

func key(layer, expert int) int64 { return int64(layer)<<32 | int64(expert) }

// NewStream makes a provider for the experts layout describes in f,
// reading them from the files of f (every part of a split model). Close it
// when done.
func NewStream(f *gguf.File, layout *model.ExpertLayout, opts StreamOptions) (*Stream, error) {
	if opts.Readers <= 0 {
		opts.Readers = 8
	}
	if opts.UrgentReaders <= 0 {
		opts.UrgentReaders = 1
	}
	opts.UrgentReaders = min(opts.UrgentReaders, opts.Readers-1) // one reader serves both queues
	s := &Stream{opts: opts, resident: map[int64]int32{}, lruHead: -1, lruTail: -1, precision: 1}
	s.cond = sync.NewCond(&s.mu)
	// The slot size fits the largest expert of any layer, each tensor's
	// bytes in an aligned superset range.
	var slotBytes int64
	var paths []string // the files holding experts, by index
	s.layers = make([]streamLayer, len(layout.Layers))
	for il, le := range layout.Layers {
		if le == nil {
			continue
		}
		l := &s.layers[il]
		l.ok, l.experts = true, layout.Experts
		var need int64
		for i, ref := range []model.TensorRef{le.Gate, le.Up, le.Down} {
			t, ok := f.Tensor(ref.Name)
			if !ok {
				return nil, fmt.Errorf("experts: missing tensor %s", ref.Name)
			}
			if ref.PerExpert*int64(layout.Experts) != int64(t.Size) {
				return nil, fmt.Errorf("experts: tensor %s holds %d bytes, want %d", ref.Name, t.Size, ref.PerExpert*int64(layout.Experts))
			}
			path, off, size := f.Location(t)
			if off+int64(t.Size) > size {
				return nil, fmt.Errorf("experts: tensor %s ends at byte %d, past the end of %s (%d bytes)", ref.Name, off+int64(t.Size), path, size)
			}
			fi := slices.Index(paths, path)
			if fi < 0 {
				fi, paths = len(paths), append(paths, path)
			}
			l.parts[i] = tensorPart{ref: ref, file: fi, off: off}
			need += alignUp(ref.PerExpert+directAlign, directAlign)
		}
		slotBytes = max(slotBytes, need)
	}
	if slotBytes == 0 {
		return nil, errors.New("experts: the model has no experts to stream")
	}
	nslots := int(max(opts.Budget/slotBytes, 1))
	alloc := opts.Alloc
	if alloc == nil {
		alloc = allocArena
	}
	arena, free, err := alloc(nslots * int(slotBytes))
	if err == nil && (len(arena) != nslots*int(slotBytes) || uintptr(unsafe.Pointer(unsafe.SliceData(arena)))%directAlign != 0) {
		free()
		err = fmt.Errorf("allocator gave %d bytes at %p, want %d aligned to %d", len(arena), unsafe.SliceData(arena), nslots*int(slotBytes), directAlign)
	}
	if err != nil {
		return nil, fmt.Errorf("experts: allocate an arena of %d slots of %d bytes: %w", nslots, slotBytes, err)
	}
	s.arena, s.free = arena, free
	s.direct = true
	for _, p := range paths {
		file, direct, err := openDirect(p)
		if err != nil {
			for _, f := range s.files {
				f.Close()
			}
			free()
			return nil, fmt.Errorf("experts: %w", err)
		}
		s.files, s.paths = append(s.files, file), append(s.paths, p)
		s.direct = s.direct && direct
	}
	s.slots = make([]slot, nslots)
	for i := range s.slots {
		s.slots[i] = slot{key: -1, base: i * int(slotBytes), prev: -1, next: -1}
	}
	s.stats.Slots, s.stats.SlotBytes, s.stats.Direct = nslots, slotBytes, s.direct
	s.fetch.s = s
	for r := 0; r < opts.Readers; r++ {
		s.wg.Add(1)
		go s.reader(r < opts.UrgentReaders)
	}
	return s, nil
}

func alignUp(n, a int64) int64   { return (n + a - 1) / a * a }
func alignDown(n, a int64) int64 { return n / a * a }

// Close stops the readers and frees the arena; fetched weights must not
// be used afterwards.
func (s *Stream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	s.wg.Wait()
	for _, f := range s.files {
		f.Close()
	}
	s.free()
	return nil
}

// Stats returns the provider's counters.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Resident = len(s.resident)
	st.Precision = s.precision
	return st
}

// Streaming implements model.ExpertProvider: read-ahead pays here.
func (s *Stream) Streaming() bool { return true }

// Resident implements model.ExpertProvider: the logical residency (an
// expert queued for read-ahead counts), which depends only on the order
// of Fetch and Prefetch calls.
func (s *Stream) Resident(layer int, dst []bool) []bool {
	if layer < 0 || layer >= len(s.layers) || !s.layers[layer].ok {
		return nil
	}
	n := s.layers[layer].experts
	if cap(dst) < n {
		dst = make([]bool, n)
	}
	dst = dst[:n]
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := range dst {
		_, dst[e] = s.resident[key(layer, e)]
	}
	return dst
}

// lru list operations (s.mu held).
func (s *Stream) unlink(i int32) {
	sl := &s.slots[i]
	if sl.prev >= 0 {
		s.slots[sl.prev].next = sl.next
	} else if s.lruHead == i {
		s.lruHead = sl.next
	}
	if sl.next >= 0 {
		s.slots[sl.next].prev = sl.prev
	} else if s.lruTail == i {
		s.lruTail = sl.prev
	}
	sl.prev, sl.next = -1, -1
}

func (s *Stream) pushBack(i int32) {
	sl := &s.slots[i]
	sl.prev, sl.next = s.lruTail, -1
	if s.lruTail >= 0 {
		s.slots[s.lruTail].next = i
	}
	s.lruTail = i
	if s.lruHead < 0 {
		s.lruHead = i
	}
}

func (s *Stream) touch(i int32) {
	s.unlink(i)
	s.pushBack(i)
}

// victim returns the least recently used slot that is not pinned (an
// empty slot first), or -1.
func (s *Stream) victim() int32 {
	for i := range s.slots {
		if s.slots[i].key < 0 && !s.slots[i].pinned {
			return int32(i)
		}
	}
	for i := s.lruHead; i >= 0; i = s.slots[i].next {
		if !s.slots[i].pinned {
			return i
		}
	}
	return -1
}

// assign makes slot i hold (layer, expert) and queues its reads (s.mu
// held); a read of the slot's previous expert still running finishes
// before the new ones start.
func (s *Stream) assign(i int32, layer, expert int, urgent bool) {
	sl := &s.slots[i]
	if sl.key >= 0 {
		delete(s.resident, sl.key)
		s.unlink(i)
	}
	sl.key, sl.gen = key(layer, expert), sl.gen+1
	sl.loaded, sl.err, sl.ahead = false, nil, false
	sl.stale += sl.running
	sl.running, sl.pending = 0, 0
	s.resident[sl.key] = i
	s.pushBack(i)
	l := &s.layers[layer]
	dst := sl.base
	var jobs [3 * 16]readJob
	nj := 0
	for t, p := range l.parts {
		start := p.off + int64(expert)*p.ref.PerExpert
		end := start + p.ref.PerExpert
		a0, a1 := alignDown(start, directAlign), alignUp(end, directAlign)
		sl.views[t] = [2]int{dst + int(start-a0), dst + int(start-a0) + int(p.ref.PerExpert)}
		for off := a0; off < a1; off += chunkBytes {
			n := min(a1-off, chunkBytes)
			job := readJob{slot: i, gen: sl.gen, file: p.file, off: off, dst: dst + int(off-a0), n: int(n), need: int(min(n, end-off))}
			if nj < len(jobs) {
				jobs[nj] = job
				nj++
			} else {
				s.queue(job, urgent)
			}
			sl.pending++
		}
		dst += int(alignUp(p.ref.PerExpert+directAlign, directAlign))
	}
	for _, j := range jobs[:nj] {
		s.queue(j, urgent)
	}
}

// queue adds a read (s.mu held).
func (s *Stream) queue(j readJob, urgent bool) {
	if urgent {
		s.urgent = append(s.urgent, j)
	} else {
		s.ahead = append(s.ahead, j)
	}
	s.cond.Broadcast()
}

// reader runs read jobs, urgent ones first; urgentOnly readers take no
// read-ahead, so a miss never waits behind it.
func (s *Stream) reader(urgentOnly bool) {
	defer s.wg.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var j readJob
		switch {
		case s.closed:
			return
		case len(s.urgent) > 0:
			j = s.urgent[0]
			s.urgent = s.urgent[1:]
		case !urgentOnly && len(s.ahead) > 0:
			j = s.ahead[0]
			s.ahead = s.ahead[1:]
		default:
			s.cond.Wait()
			continue
		}
		s.run(j)
	}
}

// run performs one read; it is called and returns with s.mu held.
func (s *Stream) run(j readJob) {
	if j.raw != nil {
		s.runRaw(j.raw)
		return
	}
	sl := &s.slots[j.slot]
	for sl.gen == j.gen && sl.stale > 0 && !s.closed {
		s.cond.Wait() // a read of the slot's previous expert is still writing
	}
	if sl.gen != j.gen || s.closed {
		return // the slot was reassigned before this read started
	}
	sl.running++
	s.mu.Unlock()

	if s.opts.ReadDelay != nil {
		s.opts.ReadDelay()
	}
	t0 := time.Now()
	n, err := s.files[j.file].ReadAt(s.arena[j.dst:j.dst+j.n], j.off)
	if err == io.EOF && n >= j.need {
		err = nil // the last aligned block runs past the end of the file
	} else if err == nil && n < j.need {
		err = io.ErrUnexpectedEOF
	} else if err == io.EOF {
		err = fmt.Errorf("the file ends after %d of %d bytes: %w", n, j.need, io.ErrUnexpectedEOF)
	}
	if err != nil {
		err = fmt.Errorf("read %d bytes at offset %d: %w", j.n, j.off, err)
	}
	dt := time.Since(t0)

	s.mu.Lock()
	s.stats.BytesRead += int64(n)
	s.stats.ReadTime += dt
	if sl.gen != j.gen {
		sl.stale--
		s.cond.Broadcast()
		return
	}
	sl.running--
	sl.pending--
	if err != nil && sl.err == nil {
		sl.err = err
	}
	if sl.pending > 0 {
		return
	}
	if sl.err == nil {
		sl.loaded = true
	} else {
		// Forget the expert: a later fetch reads it again.
		delete(s.resident, sl.key)
		s.unlink(j.slot)
		sl.key = -1
	}
	if f := sl.waiter; f != nil {
		sl.waiter = nil
		if sl.err != nil && f.err == nil {
			f.err = fmt.Errorf("layer %d expert %d: %w", f.layer, f.experts[sl.widx], sl.err)
		}
		f.ready <- sl.widx
	}
	s.cond.Broadcast()
}

// Fetch implements model.ExpertProvider.
func (s *Stream) Fetch(_ context.Context, layer int, experts []int32) (model.Fetch, error) {
	if layer < 0 || layer >= len(s.layers) || !s.layers[layer].ok {
		return nil, fmt.Errorf("experts: layer %d has no experts", layer)
	}
	for _, e := range experts {
		if e < 0 || int(e) >= s.layers[layer].experts {
			return nil, fmt.Errorf("experts: layer %d has no expert %d", layer, e)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("experts: provider closed")
	}
	if s.layers[layer].hasPred {
		s.score(layer, experts)
	}
	f := &s.fetch
	if cap(f.ready) < len(experts) {
		f.ready = make(chan int, max(len(experts), 64))
	}
	f.layer, f.experts, f.err = layer, experts, nil
	f.slotOf = f.slotOf[:0]
	f.waiting = f.waiting[:0]
	for i, e := range experts {
		if si, ok := s.resident[key(layer, int(e))]; ok {
			s.stats.Hits++
			s.touch(si)
			sl := &s.slots[si]
			if sl.ahead {
				sl.ahead = false
				s.stats.AheadUsed++
			}
			sl.pinned = true
			f.slotOf = append(f.slotOf, si)
			if sl.loaded {
				f.ready <- i
			} else {
				sl.waiter, sl.widx = f, i
				s.promote(si)
			}
			continue
		}
		s.stats.Misses++
		f.slotOf = append(f.slotOf, -1)
		f.waiting = append(f.waiting, i)
	}
	s.place(f)
	return f, nil
}

// score updates the read-ahead precision with the reads the prediction for
// layer queued: each one its fetch of experts uses counts as a hit, each
// other one as a miss, and its slot is freed (s.mu held).
func (s *Stream) score(layer int, experts []int32) {
	l := &s.layers[layer]
	l.hasPred = false
	if len(l.predicted) == 0 {
		return
	}
	for _, p := range l.predicted {
		si, ok := s.resident[key(layer, int(p))]
		if !ok || !s.slots[si].ahead {
			continue // not read ahead by this prediction
		}
		if slices.Contains(experts, p) {
			s.precision = 0.95*s.precision + 0.05
			continue // the fetch counts it as used
		}
		// A read-ahead the layer did not use: its slot is freed (a read
		// of it not started yet is skipped) before the cache's useful
		// experts go. Decided by the calls alone, not by I/O timing.
		s.precision *= 0.95
		s.dropAhead(si)
	}
}

// dropAhead frees slot i, which holds an unused read-ahead (s.mu held):
// a read of it not started yet is skipped, a running one finishes into
// the old generation.
func (s *Stream) dropAhead(i int32) {
	sl := &s.slots[i]
	s.stats.AheadDropped++
	delete(s.resident, sl.key)
	s.unlink(i)
	sl.key, sl.gen = -1, sl.gen+1
	sl.loaded, sl.err, sl.ahead = false, nil, false
	sl.stale += sl.running
	sl.running, sl.pending = 0, 0
	s.cond.Broadcast()
}

// promote moves the queued read-ahead reads of slot si to the urgent queue:
// a layer needs them now (s.mu held).
func (s *Stream) promote(si int32) {
	gen := s.slots[si].gen
	n := 0
	for _, j := range s.ahead {
		if j.slot == si && j.gen == gen {
			s.urgent = append(s.urgent, j)
			continue
		}
		s.ahead[n] = j
		n++
	}
	s.ahead = s.ahead[:n]
}

// place gives waiting experts of f the slots that are free or evictable
// (s.mu held).
func (s *Stream) place(f *streamFetch) {
	n := 0
	for _, i := range f.waiting {
		v := s.victim()
		if v < 0 {
			f.waiting[n] = i
			n++
			continue
		}
		s.assign(v, f.layer, int(f.experts[i]), true)
		sl := &s.slots[v]
		sl.pinned, sl.waiter, sl.widx = true, f, i
		f.slotOf[i] = v
	}
	f.waiting = f.waiting[:n]
}

// Prefetch implements model.ExpertProvider: the experts not resident are
// given slots now (evicting the least recently used unpinned ones) and
// queued for read-ahead.
func (s *Stream) Prefetch(layer int, experts []int32) {
	if layer < 0 || layer >= len(s.layers) || !s.layers[layer].ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	l := &s.layers[layer]
	l.predicted, l.hasPred = append(l.predicted[:0], experts...), true
	s.predictions++
	if s.precision < minPrecision && s.predictions%probeEvery != 0 {
		return // scored, not read
	}
	for _, e := range experts {
		if e < 0 || int(e) >= s.layers[layer].experts {
			continue
		}
		if _, ok := s.resident[key(layer, int(e))]; ok {
			continue
		}
		v := s.victim()
		if v < 0 {
			return
		}
		s.assign(v, layer, int(e), false)
		s.slots[v].ahead = true
		s.stats.ReadAheads++
	}
}

// streamFetch is one layer's request; its fields are guarded by Stream.mu
// except ready.
type streamFetch struct {
	s       *Stream
	layer   int
	experts []int32
	slotOf  []int32 // per requested expert: its slot, -1 while it waits for one
	waiting []int   // requested experts without a slot yet
	ready   chan int
	err     error
}

func (f *streamFetch) Ready(ctx context.Context, dst []int) ([]int, error) {
	t0 := time.Now()
	select {
	case i := <-f.ready:
		dst = append(dst, i)
	case <-ctx.Done():
		return dst, ctx.Err()
	}
	for more := true; more; {
		select {
		case i := <-f.ready:
			dst = append(dst, i)
		default:
			more = false
		}
	}
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Stall += time.Since(t0)
	return dst, f.err
}

func (f *streamFetch) Weights(i int) model.ExpertWeights {
	s := f.s
	s.mu.Lock()
	si := f.slotOf[i]
	sl := &s.slots[si]
	v := sl.views
	s.mu.Unlock()
	l := &s.layers[f.layer]
	return model.ExpertWeights{
		Gate: s.arena[v[0][0]:v[0][1]], GateT: l.parts[0].ref.Type,
		Up: s.arena[v[1][0]:v[1][1]], UpT: l.parts[1].ref.Type,
		Down: s.arena[v[2][0]:v[2][1]], DownT: l.parts[2].ref.Type,
	}
}

// Placed implements model.Placer: every requested expert has a slot.
func (f *streamFetch) Placed() bool {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	return len(f.waiting) == 0
}

// Done implements model.Fetch: those experts' slots may be reused.
func (f *streamFetch) Done(idx []int) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range idx {
		if si := f.slotOf[i]; si >= 0 {
			s.slots[si].pinned = false
		}
	}
	if len(f.waiting) > 0 {
		s.place(f)
	}
}

func (f *streamFetch) Release() {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, si := range f.slotOf {
		if si >= 0 {
			sl := &s.slots[si]
			sl.pinned = false
			if sl.waiter == f {
				sl.waiter = nil
			}
		}
	}
	for more := true; more; {
		select {
		case <-f.ready:
		default:
			more = false
		}
	}
	f.experts, f.waiting, f.slotOf = nil, f.waiting[:0], f.slotOf[:0]
}

// Warm queues experts for read-ahead in the given order (hottest first)
// while the arena has room that no fetch needs, so a model starts with
// the experts its history says it will use; it returns how many it
// queued.
func (s *Stream) Warm(order [][2]int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	var filled []int32 // the order's slots, hottest first
	for _, le := range order {
		if n >= len(s.slots) || s.closed {
			break
		}
		l, e := le[0], le[1]
		if l < 0 || l >= len(s.layers) || !s.layers[l].ok || e < 0 || e >= s.layers[l].experts {
			continue
		}
		if i, ok := s.resident[key(l, e)]; ok {
			filled = append(filled, i)
			n++
			continue
		}
		v := s.emptySlot()
		if v < 0 {
			break
		}
		s.assign(v, l, e, false)
		s.warmed = append(s.warmed, key(l, e))
		filled = append(filled, v)
		n++
	}
	// The hottest most recently used, so that the first misses evict the
	// coldest of the fill (filled in order, the hottest were the least
	// recently used and went first).
	for i := len(filled) - 1; i >= 0; i-- {
		s.touch(filled[i])
	}
	return n
}

// Warmed reports how many of the experts the last Warm queued have been
// read (or failed, or left the cache since), of how many it queued: a
// load shows it as progress and waits for done == total.
func (s *Stream) Warmed() (done, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.warmed {
		i, ok := s.resident[k]
		if !ok || s.slots[i].loaded || s.slots[i].err != nil {
			done++
		}
	}
	if s.closed {
		done = len(s.warmed)
	}
	return done, len(s.warmed)
}

// emptySlot returns a slot holding no expert, or -1 (s.mu held).
func (s *Stream) emptySlot() int32 {
	for i := range s.slots {
		if s.slots[i].key < 0 && !s.slots[i].pinned {
			return int32(i)
		}
	}
	return -1
}

// Rebalance swaps, at most max times, the coldest resident expert for the
// hottest one not resident when hot > 1.25·cold + 4 (scores from the
// usage history): between turns, never during a generation. It returns
// the number of swaps.
func (s *Stream) Rebalance(score func(layer, expert int) float32, max int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	swaps := 0
	for ; swaps < max && !s.closed; swaps++ {
		hotL, hotE, hot := -1, -1, float32(-1)
		for l := range s.layers {
			if !s.layers[l].ok {
				continue
			}
			for e := 0; e < s.layers[l].experts; e++ {
				if _, ok := s.resident[key(l, e)]; ok {
					continue
				}
				if c := score(l, e); c > hot {
					hotL, hotE, hot = l, e, c
				}
			}
		}
		cold, coldSlot := float32(math.MaxFloat32), int32(-1)
		for i := range s.slots {
			sl := &s.slots[i]
			if sl.key < 0 || sl.pinned {
				continue
			}
			if c := score(int(sl.key>>32), int(sl.key&0xffffffff)); c < cold {
				cold, coldSlot = c, int32(i)
			}
		}
		if hotL < 0 || coldSlot < 0 || !(hot > 1.25*cold+4) {
			break
		}
		s.assign(coldSlot, hotL, hotE, false)
	}
	return swaps
}

// RawRead is one read of ReadRaw: len(Dst) bytes at file offset Off.
type RawRead struct {
	Off int64
	Dst []byte
}

// RawReads are reads ReadRaw queued; Wait for them before using their Dst.
type RawReads struct {
	s       *Stream
	pending int // guarded by s.mu
	err     error
}

// rawJob is one RawRead through an aligned bounce buffer (the files may be
// open with O_DIRECT).
type rawJob struct {
	batch *RawReads
	file  int
	req   RawRead
}

// ReadRaw queues reads of bytes of the model's file at path that are not
// experts (qwen4exp's PLE table rows) on the stream's readers, urgent (a
// layer waits for them now) or as read-ahead, so they share the experts'
// I/O pool and bandwidth. It fails when the stream does not read path.
func (s *Stream) ReadRaw(path string, reqs []RawRead, urgent bool) (*RawReads, error) {
	fi := slices.Index(s.paths, path)
	if fi < 0 {
		return nil, fmt.Errorf("experts: the stream does not read %s", path)
	}
	b := &RawReads{s: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("experts: stream closed")
	}
	b.pending = len(reqs)
	for _, r := range reqs {
		s.queue(readJob{raw: &rawJob{batch: b, file: fi, req: r}}, urgent)
		if !urgent {
			s.stats.ReadAheads++
		}
	}
	return b, nil
}

// Wait waits until every read is done and returns the first error.
func (b *RawReads) Wait() error {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for b.pending > 0 && !s.closed {
		s.cond.Wait()
	}
	if b.pending > 0 {
		return errors.New("experts: stream closed")
	}
	return b.err
}

// Done reports, without waiting, whether every read is done, and then the
// first error.
func (b *RawReads) Done() (bool, error) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case b.pending == 0:
		return true, b.err
	case s.closed:
		return true, errors.New("experts: stream closed")
	}
	return false, nil
}

// runRaw performs a ReadRaw read; called and returns with s.mu held.
func (s *Stream) runRaw(j *rawJob) {
	s.mu.Unlock()
	if s.opts.ReadDelay != nil {
		s.opts.ReadDelay()
	}
	t0 := time.Now()
	off := alignDown(j.req.Off, directAlign)
	end := alignUp(j.req.Off+int64(len(j.req.Dst)), directAlign)
	buf := alignedBuffer(int(end - off))
	n, err := s.files[j.file].ReadAt(buf, off)
	need := int(j.req.Off-off) + len(j.req.Dst)
	switch {
	case err == io.EOF && n >= need:
		err = nil
	case err == nil && n < need, err == io.EOF:
		err = fmt.Errorf("the file ends after %d of %d bytes: %w", n, need, io.ErrUnexpectedEOF)
	}
	if err == nil {
		copy(j.req.Dst, buf[j.req.Off-off:need])
	} else {
		err = fmt.Errorf("read %d bytes at offset %d: %w", len(j.req.Dst), j.req.Off, err)
	}
	dt := time.Since(t0)
	s.mu.Lock()
	s.stats.BytesRead += int64(n)
	s.stats.ReadTime += dt
	if err != nil && j.batch.err == nil {
		j.batch.err = err
	}
	j.batch.pending--
	s.cond.Broadcast()
}

// alignedBuffer returns n bytes starting at a directAlign boundary.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	a := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % directAlign)
	if a != 0 {
		a = directAlign - a
	}
	return b[a : a+n : a+n]
}

// Arena returns the memory the streamed experts are read into (every
// provided expert slice points into it), for a GPU backend to wrap once.
func (s *Stream) Arena() []byte { return s.arena }
