// Package cpu is the CPU backend's compute layer: a persistent worker pool
// and the tensor operations the forward passes are built from (matrix
// products over ggml-typed weights, RMSNorm, RoPE, softmax, SwiGLU), with
// llama.cpp's numerics.
package cpu

import (
	"context"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// SpinTime is how long a worker keeps polling for the next loop after its
// last one before it parks. A decoded token is some 40 short parallel
// loops separated by a few microseconds of serial work; waking a parked
// goroutine costs as much as such a loop on this VM (inferred with
// BenchmarkMatVec: 1 MB matrix-vector products, ~60 µs each on one
// thread at 19 GB/s, ran at 16 GB/s on two while workers parked between
// them; with spinning workers and contiguous items, 36–38 GB/s), so
// workers stay awake across the loops of a token and between tokens, and
// park once the engine has had nothing for them for SpinTime. An idle
// engine never spins.
const SpinTime = 2 * time.Millisecond

// Pool is a fixed set of worker goroutines that run parallel loops. The
// caller of Run takes part in the work, so a Pool of n threads starts n-1
// goroutines. Workers poll for work for SpinTime after a loop, then park;
// a parked worker costs nothing. A Pool is safe for concurrent use, but Run
// calls are serialised.
type Pool struct {
	n    int
	part int        // items handed out at once: maxItems (a test lowers it)
	mu   sync.Mutex // serialises Run

	// word is the running loop: its generation (16 bits), item count (24
	// bits) and next unclaimed item (24 bits). Threads claim items with a
	// compare-and-swap, so a worker that still holds an older word claims
	// nothing.
	word atomic.Uint64
	// active counts workers between announcing themselves and finishing
	// the items they claimed; Run returns once all items are claimed and
	// no worker is active.
	active atomic.Int32
	task   Task // the running loop's body; written before word is published
	gen    uint64

	workers []*worker
	closed  atomic.Bool
	wg      sync.WaitGroup // live workers

	// Reused tasks of the package's own loops; guarded by mu.
	mat   matTask
	quant quantTask
}

type worker struct {
	parked atomic.Bool
	wake   chan struct{} // one token per wake-up
}

// Task is a parallel loop body: Run(w, i) handles item i on thread w (w in
// [0, Threads())). Passing a pointer to a long-lived Task to Run costs no
// allocation, unlike a func literal that captures variables.
type Task interface {
	Run(w, i int)
}

const (
	itemBits = 24
	itemMask = 1<<itemBits - 1
	// maxItems is the most items one Run hands out at once; longer loops
	// are run in parts.
	maxItems = itemMask
)

func unpack(v uint64) (n, next int) { return int(v >> itemBits & itemMask), int(v & itemMask) }

// NewPool starts a pool of n threads (n < 1 means 1).
func NewPool(n int) *Pool {
	if n < 1 {
		n = 1
	}
	p := &Pool{n: n, part: maxItems}
	for w := 1; w < n; w++ {
		wk := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, wk)
		p.wg.Add(1)
		go p.work(w, wk)
	}
	return p
}

// Threads is the number of threads that run a loop.
func (p *Pool) Threads() int { return p.n }

// Run calls t.Run(w, i) for every i in [0, n), spread over the pool's
// threads, and returns when all calls have returned. Items are taken in
// order by whichever thread is free, so results must not depend on which
// thread ran an item; w lets each thread use its own scratch space.
func (p *Pool) Run(n int, t Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runLocked(n, t)
}

// runLocked is Run with p.mu held.
func (p *Pool) runLocked(n int, t Task) {
	if n <= 0 {
		return
	}
	if n == 1 || p.n == 1 {
		for i := 0; i < n; i++ {
			t.Run(0, i)
		}
		return
	}
	for base := 0; base < n; base += p.part {
		m := min(n-base, p.part)
		if base == 0 {
			p.runPart(m, t)
		} else {
			p.runPart(m, offsetTask{t, base})
		}
	}
}

// offsetTask shifts item numbers for the later parts of a long loop.
type offsetTask struct {
	t    Task
	base int
}

func (o offsetTask) Run(w, i int) { o.t.Run(w, o.base+i) }

func (p *Pool) runPart(n int, t Task) {
	p.task = t
	p.gen = (p.gen + 1) & 0xffff
	p.word.Store(p.gen<<(2*itemBits) | uint64(n)<<itemBits)
	for _, wk := range p.workers {
		if wk.parked.Load() && wk.parked.CompareAndSwap(true, false) {
			wk.wake <- struct{}{}
		}
	}
	p.claim(0)
	// Wait for the items still running on workers: a spin with the CPU
	// hint only. Yielding here was costly: the caller may be locked to its
	// OS thread (the main goroutine of a GUI program is), and then each
	// runtime.Gosched hands the thread's P to another thread and back
	// (two futex wake-ups); with a yield every ~30 µs of waiting, the
	// worker of a 2-thread decode sat idle 19 % of the time while the
	// caller did 58 % of the items. It yields only after a long wait, in
	// case a worker lost its P.
	var since time.Time
	for spins := 1; p.active.Load() != 0; spins++ {
		cpuRelax()
		if spins&4095 == 0 {
			if since.IsZero() {
				since = time.Now()
			} else if time.Since(since) > time.Millisecond {
				runtime.Gosched()
			}
		}
	}
	p.task = nil
}

// relax is one step of a worker's spin-wait: a CPU hint, and every 1024
// steps a yield to the Go scheduler, so that other goroutines (the API's,
// the garbage collector's) get a P while workers spin between loops.
// (runtime.Gosched on every step cost 10–20 % of a decoded token in
// scheduler locks and thread wake-ups.)
func relax(spins int) {
	if spins&1023 == 0 {
		runtime.Gosched()
		return
	}
	cpuRelax()
}

// claim runs items of the current loop on thread w until none are left.
func (p *Pool) claim(w int) {
	for {
		v := p.word.Load()
		n, next := unpack(v)
		if next >= n {
			return
		}
		if p.word.CompareAndSwap(v, v+1) {
			p.task.Run(w, next)
		}
	}
}

// hasWork reports whether the current loop has unclaimed items.
func (p *Pool) hasWork() bool {
	n, next := unpack(p.word.Load())
	return next < n
}

func (p *Pool) work(w int, wk *worker) {
	defer p.wg.Done()
	// Label the worker's samples in CPU profiles (go tool pprof
	// -tagfocus=pool=worker), to tell its time from the calling thread's.
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("pool", "worker")))
	for {
		// Poll for SpinTime, then park until Run or Close wakes us.
		deadline := time.Now().Add(SpinTime)
		for spins := 0; !p.hasWork(); spins++ {
			if p.closed.Load() {
				return
			}
			if spins&63 == 63 && time.Now().After(deadline) {
				wk.parked.Store(true)
				if p.hasWork() || p.closed.Load() {
					// Work arrived while parking: take it, unless Run
					// already claimed the wake-up, whose token we then
					// consume.
					if !wk.parked.CompareAndSwap(true, false) {
						<-wk.wake
					}
				} else {
					<-wk.wake
				}
				deadline = time.Now().Add(SpinTime)
				continue
			}
			relax(spins)
		}
		p.active.Add(1)
		p.claim(w)
		p.active.Add(-1)
	}
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	p.closed.Store(true)
	for _, wk := range p.workers {
		if wk.parked.CompareAndSwap(true, false) {
			wk.wake <- struct{}{}
		}
	}
	p.wg.Wait()
}
