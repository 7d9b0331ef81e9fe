package api

import (
	"context"
	"sync"
	"time"

	"github.com/strata-llm/strata/api/protocol"
)

// scheduler hands out the engine's generation slots in FIFO order. At most
// maxQueue requests wait; each is told its position whenever it changes.
type scheduler struct {
	mu       sync.Mutex
	slots    int
	running  int
	maxQueue int
	waiting  []*waiter
}

type waiter struct {
	ready   chan struct{} // closed when the slot is granted
	granted bool
	notify  func(position int) // must not block
}

func newScheduler(slots, maxQueue int) *scheduler {
	return &scheduler{slots: slots, maxQueue: maxQueue}
}

var errBusy = protocol.Errorf(protocol.CodeBusy, "the server is busy: the request queue is full")

// acquire waits for a slot. notify (may be nil) is called with the
// position (1 = next) when the request starts waiting and each time it
// moves up. It returns the function that frees the slot and how long the
// request waited. A cancelled ctx removes the request from the queue at once.
func (q *scheduler) acquire(ctx context.Context, notify func(int)) (release func(), waited time.Duration, err error) {
	start := time.Now()
	q.mu.Lock()
	if q.running < q.slots && len(q.waiting) == 0 {
		q.running++
		q.mu.Unlock()
		return q.releaseOnce(), 0, nil
	}
	if len(q.waiting) >= q.maxQueue {
		q.mu.Unlock()
		return nil, 0, errBusy
	}
	w := &waiter{ready: make(chan struct{}), notify: notify}
	q.waiting = append(q.waiting, w)
	pos := len(q.waiting)
	q.mu.Unlock()
	if notify != nil {
		notify(pos)
	}
	select {
	case <-w.ready:
		return q.releaseOnce(), time.Since(start), nil
	case <-ctx.Done():
		q.mu.Lock()
		if w.granted {
			q.mu.Unlock()
			q.releaseOnce()() // pass the slot on
			return nil, time.Since(start), ctx.Err()
		}
		var moved []*waiter
		for i, x := range q.waiting {
			if x == w {
				q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
				moved = append(moved, q.waiting[i:]...)
				break
			}
		}
		notes := q.positionsLocked(moved)
		q.mu.Unlock()
		notes()
		return nil, time.Since(start), ctx.Err()
	}
}

// tryAcquire takes a slot only if one is free and nobody waits.
func (q *scheduler) tryAcquire() (func(), bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running < q.slots && len(q.waiting) == 0 {
		q.running++
		return q.releaseOnce(), true
	}
	return nil, false
}

func (q *scheduler) releaseOnce() func() {
	var once sync.Once
	return func() { once.Do(q.release) }
}

func (q *scheduler) release() {
	q.mu.Lock()
	q.running--
	if q.running < q.slots && len(q.waiting) > 0 {
		w := q.waiting[0]
		q.waiting = q.waiting[1:]
		w.granted = true
		q.running++
		close(w.ready)
	}
	notes := q.positionsLocked(q.waiting)
	q.mu.Unlock()
	notes()
}

// positionsLocked returns a function telling ws their new positions.
func (q *scheduler) positionsLocked(ws []*waiter) func() {
	type note struct {
		f   func(int)
		pos int
	}
	var notes []note
	for _, w := range ws {
		if w.notify == nil {
			continue
		}
		for i, x := range q.waiting {
			if x == w {
				notes = append(notes, note{w.notify, i + 1})
				break
			}
		}
	}
	return func() {
		for _, n := range notes {
			n.f(n.pos)
		}
	}
}

// lengths returns how many requests run and wait.
func (q *scheduler) lengths() (running, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running, len(q.waiting)
}
