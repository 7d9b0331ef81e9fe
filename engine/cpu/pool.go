// Package cpu is the CPU backend's compute layer: a persistent worker pool
// and the tensor operations the forward passes are built from (matrix
// products over ggml-typed weights, RMSNorm, RoPE, softmax, SwiGLU), with
// llama.cpp's numerics.
package cpu

import (
	"sync"
	"sync/atomic"
)

// Pool is a fixed set of worker goroutines that run parallel loops. Idle
// workers block on a channel; they never spin. The caller of For takes
// part in the work, so a Pool of n threads starts n-1 goroutines.
// A Pool is safe for concurrent use, but For calls are serialised.
type Pool struct {
	n    int
	mu   sync.Mutex // serialises For
	jobs chan *job
	wg   sync.WaitGroup // live workers
}

type job struct {
	n    int64
	next atomic.Int64
	fn   func(w, i int)
	done sync.WaitGroup
}

func (j *job) run(w int) {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(w, int(i))
	}
}

// NewPool starts a pool of n threads (n < 1 means 1).
func NewPool(n int) *Pool {
	if n < 1 {
		n = 1
	}
	p := &Pool{n: n, jobs: make(chan *job)}
	for w := 1; w < n; w++ {
		p.wg.Add(1)
		go func(w int) {
			defer p.wg.Done()
			for j := range p.jobs {
				j.run(w)
				j.done.Done()
			}
		}(w)
	}
	return p
}

// Threads is the number of threads that run a loop.
func (p *Pool) Threads() int { return p.n }

// For calls fn(i) for every i in [0, n), spread over the pool's threads;
// it returns when all calls have returned. Items are taken in order by
// whichever thread is free, so fn must not depend on which thread runs it.
func (p *Pool) For(n int, fn func(i int)) {
	p.ForW(n, func(_, i int) { fn(i) })
}

// ForW is For, also passing the index w in [0, Threads()) of the thread
// running the item, so callers can give each thread its own scratch space.
func (p *Pool) ForW(n int, fn func(w, i int)) {
	if n <= 0 {
		return
	}
	if n == 1 || p.n == 1 {
		for i := 0; i < n; i++ {
			fn(0, i)
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j := &job{n: int64(n), fn: fn}
	helpers := min(p.n-1, n-1)
	j.done.Add(helpers)
	for w := 0; w < helpers; w++ {
		p.jobs <- j
	}
	j.run(0)
	j.done.Wait()
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	close(p.jobs)
	p.wg.Wait()
}
