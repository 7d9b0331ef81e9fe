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
// workers block on a channel; they never spin. The caller of Run takes
// part in the work, so a Pool of n threads starts n-1 goroutines.
// A Pool is safe for concurrent use, but Run calls are serialised.
type Pool struct {
	n    int
	mu   sync.Mutex // serialises Run
	jobs chan *job
	wg   sync.WaitGroup // live workers
	job  job            // the running loop; guarded by mu

	// Reused tasks of the package's own loops; guarded by mu.
	mat   matTask
	quant quantTask
}

// Task is a parallel loop body: Run(w, i) handles item i on thread w (w in
// [0, Threads())). Passing a pointer to a long-lived Task to Run costs no
// allocation, unlike a func literal that captures variables.
type Task interface {
	Run(w, i int)
}

type job struct {
	n    int64
	next atomic.Int64
	task Task
	done sync.WaitGroup
}

func (j *job) run(w int) {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.task.Run(w, int(i))
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
	// Runs are serialised, so one job is reused: every helper has received
	// it and called Done before Wait returns.
	j := &p.job
	j.n, j.task = int64(n), t
	j.next.Store(0)
	helpers := min(p.n-1, n-1)
	j.done.Add(helpers)
	for w := 0; w < helpers; w++ {
		p.jobs <- j
	}
	j.run(0)
	j.done.Wait()
	j.task = nil
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	close(p.jobs)
	p.wg.Wait()
}
