// Package runner owns the model lifecycle that the API and the menu bar
// share: which model is loaded and why (started, idle after keep-alive,
// stopped by the user), single-flight cancellable loading, the FIFO queue of
// generations, keep-alive expiry with Ollama's meaning (a duration, 0 =
// unload now, negative = forever) and reloading when settings change.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-llm/strata/engine"
)

// Engine is what the runner drives; *engine.Engine has it.
type Engine interface {
	Load(ctx context.Context, path string) error
	Unload() error
	Status() engine.Status
	Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Stats, error)
	Subscribe() (<-chan engine.Status, func())
}

// Config configures a Runner. Engine is required.
type Config struct {
	Engine Engine
	// DefaultModel returns the model file to load when Start names none.
	// nil: Start needs a path.
	DefaultModel func(ctx context.Context) (string, error)
	// KeepAlive returns how long a model stays loaded after a request that
	// sets no keep-alive: negative is forever, 0 unloads at once. nil: forever.
	KeepAlive func() time.Duration
	// MaxQueue is how many generations may wait behind the running one
	// (default 16); more get ErrBusy.
	MaxQueue int
	Logger   *slog.Logger
}

// Errors of Generate and Start.
var (
	// ErrBusy: the queue of waiting generations is full.
	ErrBusy = errors.New("the request queue is full")
	// ErrNotLoaded: no model is loaded and none is to be reloaded (never
	// started, or stopped by the user).
	ErrNotLoaded = errors.New("no model is loaded")
	// ErrClosed: the runner was closed.
	ErrClosed = errors.New("runner closed")
)

// Forever is the ExpiresAt reported for a model kept loaded forever, as
// Ollama reports it (a date far in the future) so clients can parse it.
var Forever = time.Date(2318, 11, 18, 0, 0, 0, 0, time.UTC)

// Status is the engine's status with the lifecycle around it.
type Status struct {
	engine.Status
	// Path is the loaded model's file, or the one a request reloads when Idle.
	Path string
	// Idle: keep-alive unloaded the model; the next request reloads Path.
	Idle bool
	// StoppedByUser: Stop unloaded the model; requests fail until Start.
	StoppedByUser bool
	// ExpiresAt is when keep-alive unloads the loaded model: zero while
	// nothing is loaded or a generation runs or waits; Forever for never.
	ExpiresAt time.Time
	// Running and Waiting count generations in the queue.
	Running, Waiting int
}

// Runner is the single owner of the model lifecycle. Create it with New;
// all methods are safe for concurrent use.
type Runner struct {
	cfg Config
	log *slog.Logger
	eng Engine

	ctx    context.Context // ended by Close: cancels loads and generations
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	path      string // loaded model, or the one to reload when idle
	idle      bool
	stopped   bool
	flight    *flight       // the load in progress
	unloading chan struct{} // closed when the unload in progress ends
	running   int
	waiting   []*waiter
	gens      map[*genHandle]struct{} // running generations, for Stop
	timer     *time.Timer
	expires   time.Time
	lastKeep  time.Duration // the keep-alive that armed the timer
	subs      map[chan Status]struct{}
	wg        sync.WaitGroup
}

type flight struct {
	path    string
	done    chan struct{}
	err     error
	waiters int
	cancel  context.CancelFunc
}

type waiter struct {
	ready   chan struct{}
	granted bool
	notify  func(int)
}

type genHandle struct{ cancel context.CancelFunc }

// New returns a Runner over cfg.Engine. Call Close when done.
func New(cfg Config) (*Runner, error) {
	if cfg.Engine == nil {
		return nil, errors.New("runner: Config needs an Engine")
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 16
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{cfg: cfg, log: cfg.Logger, eng: cfg.Engine, ctx: ctx, cancel: cancel,
		gens: map[*genHandle]struct{}{}, subs: map[chan Status]struct{}{}}
	if st := r.eng.Status(); st.Model != nil {
		r.path = st.Model.Path
		r.armLocked(r.keepAlive(nil))
	}
	ch, stop := r.eng.Subscribe()
	r.wg.Add(1)
	go func() { // republish engine changes with the lifecycle around them
		defer r.wg.Done()
		defer stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-ch:
				if !ok {
					return
				}
				r.mu.Lock()
				r.publishLocked()
				r.mu.Unlock()
			}
		}
	}()
	return r, nil
}

// Status returns a snapshot.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusLocked()
}

func (r *Runner) statusLocked() Status {
	s := Status{Status: r.eng.Status(), Path: r.path, Idle: r.idle, StoppedByUser: r.stopped,
		Running: r.running, Waiting: len(r.waiting)}
	if s.Model != nil && r.running == 0 && len(r.waiting) == 0 && r.flight == nil {
		if r.timer != nil {
			s.ExpiresAt = r.expires
		} else if r.lastKeep < 0 {
			s.ExpiresAt = Forever
		}
	}
	if s.Model == nil && r.flight != nil && s.State == engine.StateStopped {
		s.State = engine.StateLoading
	}
	return s
}

// Subscribe returns a channel receiving the Status after every change
// (only the newest is kept for a slow reader) and a function ending it.
func (r *Runner) Subscribe() (<-chan Status, func()) {
	ch := make(chan Status, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		close(ch)
		return ch, func() {}
	}
	r.subs[ch] = struct{}{}
	ch <- r.statusLocked()
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[ch]; ok {
			delete(r.subs, ch)
			close(ch)
		}
	}
}

func (r *Runner) publishLocked() {
	if len(r.subs) == 0 {
		return
	}
	st := r.statusLocked()
	for ch := range r.subs {
		select {
		case <-ch:
		default:
		}
		ch <- st
	}
}

func (r *Runner) keepAlive(req *time.Duration) time.Duration {
	if req != nil {
		return *req
	}
	if r.cfg.KeepAlive != nil {
		return r.cfg.KeepAlive()
	}
	return -1
}

// Start loads path (or, when empty, the default model) and makes it the
// model requests use; it clears "stopped by you". Concurrent Starts of the
// same model share one load; ctx ends this caller's wait, and the load
// itself is cancelled when every caller waiting for it has gone, or by
// Stop or Close. A model already loaded from path is not loaded again.
func (r *Runner) Start(ctx context.Context, path string) error {
	if path == "" {
		if r.cfg.DefaultModel == nil {
			return errors.New("no default model: name one")
		}
		p, err := r.cfg.DefaultModel(ctx)
		if err != nil {
			return err
		}
		path = p
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	r.stopped = false
	r.mu.Unlock()
	return r.load(ctx, path)
}

// load brings path in, single-flight, waiting for an unload in progress.
func (r *Runner) load(ctx context.Context, path string) error {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return ErrClosed
		}
		if u := r.unloading; u != nil {
			r.mu.Unlock()
			select {
			case <-u:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		f := r.flight
		if f == nil {
			if st := r.eng.Status(); st.Model != nil && st.Model.Path == path && r.path == path {
				r.mu.Unlock()
				return nil
			}
			f = r.startFlightLocked(path)
		}
		f.waiters++
		r.mu.Unlock()
		select {
		case <-f.done:
			if f.path == path {
				return f.err
			}
			continue // another model was being loaded; now load ours
		case <-ctx.Done():
			r.mu.Lock()
			if f.waiters--; f.waiters == 0 {
				f.cancel()
			}
			r.mu.Unlock()
			return ctx.Err()
		}
	}
}

func (r *Runner) startFlightLocked(path string) *flight {
	lctx, cancel := context.WithCancel(r.ctx)
	f := &flight{path: path, done: make(chan struct{}), cancel: cancel}
	r.flight = f
	r.stopTimerLocked()
	r.publishLocked()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		start := time.Now()
		err := r.eng.Load(lctx, path)
		r.mu.Lock()
		r.flight = nil
		f.err = err
		if err == nil {
			r.path, r.idle = path, false
			r.log.Info("model loaded", "path", path, "took", time.Since(start).Round(time.Millisecond))
			if r.running == 0 && len(r.waiting) == 0 {
				r.armLocked(r.keepAlive(nil))
			}
		} else {
			r.path, r.idle = "", false
		}
		close(f.done)
		r.publishLocked()
		r.mu.Unlock()
	}()
	return f
}

// Stop is the user's stop: it cancels a load in progress and the running
// generation (which ends within one token), unloads the model and marks it
// "stopped by you": requests fail with ErrNotLoaded until Start. It never
// waits for a generation to finish on its own.
func (r *Runner) Stop() error {
	r.mu.Lock()
	r.stopped, r.idle = true, false
	r.path = ""
	if r.flight != nil {
		r.flight.cancel()
	}
	for g := range r.gens {
		g.cancel()
	}
	r.stopTimerLocked()
	r.publishLocked()
	f := r.flight
	r.mu.Unlock()
	if f != nil {
		<-f.done
	}
	return r.unload(false)
}

// unload frees the model; idle tells whether keep-alive did it (the next
// request reloads it) or the user.
func (r *Runner) unload(idle bool) error {
	r.mu.Lock()
	for r.unloading != nil {
		u := r.unloading
		r.mu.Unlock()
		<-u
		r.mu.Lock()
	}
	done := make(chan struct{})
	r.unloading = done
	r.stopTimerLocked()
	if idle && !r.stopped {
		r.idle = true // already while unloading, so no one sees "stopped"
	}
	r.publishLocked()
	r.mu.Unlock()
	err := r.eng.Unload()
	r.mu.Lock()
	r.unloading = nil
	close(done)
	switch {
	case err != nil && idle:
		r.idle = false
	case err == nil && !idle:
		r.path = ""
	}
	r.publishLocked()
	r.mu.Unlock()
	return err
}

// Reload loads the current model again (e.g. after the engine's options
// changed in the settings), after the generations queued before it; a
// runner with nothing loaded has nothing to do.
func (r *Runner) Reload(ctx context.Context) error {
	release, _, err := r.acquire(ctx, nil)
	if err != nil {
		return err
	}
	defer release(nil)
	r.mu.Lock()
	path := r.path
	loaded := r.eng.Status().Model != nil
	r.mu.Unlock()
	if path == "" || !loaded {
		return nil
	}
	if err := r.eng.Unload(); err != nil {
		return err
	}
	return r.load(ctx, path)
}

// GenOptions are a generation's lifecycle options.
type GenOptions struct {
	// KeepAlive overrides the setting for how long the model stays loaded
	// after this request (negative: forever, 0: unload at once).
	KeepAlive *time.Duration
	// Queued is told the request's queue position (1 = next) when it
	// starts waiting and whenever it moves up. It must not block.
	Queued func(position int)
}

// Generate runs req when its turn comes (FIFO, at most MaxQueue waiting),
// reloading a model keep-alive unloaded (once for all waiting requests; a
// request arriving during an unload waits for it and reloads), and re-arms
// keep-alive afterwards. It returns how long the request waited. Stop or
// Close cancel it.
func (r *Runner) Generate(ctx context.Context, req engine.Request, o GenOptions, emit func(engine.Token) error) (engine.Stats, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	release, waited, err := r.acquire(ctx, o.Queued)
	if err != nil {
		return engine.Stats{FinishReason: engine.FinishCancelled}, waited, err
	}
	keep := r.keepAlive(o.KeepAlive)
	defer func() { release(&keep) }()
	if err := r.ensureLoaded(ctx); err != nil {
		return engine.Stats{}, waited, err
	}
	g := &genHandle{cancel: cancel}
	r.mu.Lock()
	if r.stopped || r.closed {
		r.mu.Unlock()
		return engine.Stats{}, waited, ErrNotLoaded
	}
	r.gens[g] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.gens, g)
		r.mu.Unlock()
	}()
	stop := context.AfterFunc(r.ctx, cancel)
	defer stop()
	st, err := r.eng.Generate(ctx, req, emit)
	if errors.Is(err, engine.ErrNoModel) {
		err = ErrNotLoaded
	}
	return st, waited, err
}

// ensureLoaded reloads the idle model; with nothing to reload it fails.
func (r *Runner) ensureLoaded(ctx context.Context) error {
	for {
		r.mu.Lock()
		if u := r.unloading; u != nil {
			r.mu.Unlock()
			select {
			case <-u:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if f := r.flight; f != nil {
			r.mu.Unlock()
			select {
			case <-f.done:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		loaded := r.eng.Status().Model != nil
		path, idle := r.path, r.idle
		r.mu.Unlock()
		switch {
		case loaded:
			return nil
		case idle && path != "":
			r.log.Info("reloading the model after keep-alive", "path", path)
			if err := r.load(ctx, path); err != nil {
				return fmt.Errorf("reload %s: %w", path, err)
			}
			return nil
		default:
			return ErrNotLoaded
		}
	}
}

// acquire waits for the generation slot in FIFO order.
func (r *Runner) acquire(ctx context.Context, notify func(int)) (release func(keep *time.Duration), waited time.Duration, err error) {
	start := time.Now()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, 0, ErrClosed
	}
	r.stopTimerLocked()
	if r.running == 0 && len(r.waiting) == 0 {
		r.running++
		r.publishLocked()
		r.mu.Unlock()
		return r.releaseOnce(), 0, nil
	}
	if len(r.waiting) >= r.cfg.MaxQueue {
		r.rearmIfIdleLocked()
		r.mu.Unlock()
		return nil, 0, ErrBusy
	}
	w := &waiter{ready: make(chan struct{}), notify: notify}
	r.waiting = append(r.waiting, w)
	pos := len(r.waiting)
	r.publishLocked()
	r.mu.Unlock()
	if notify != nil {
		notify(pos)
	}
	select {
	case <-w.ready:
		return r.releaseOnce(), time.Since(start), nil
	case <-ctx.Done():
		r.mu.Lock()
		if w.granted {
			r.mu.Unlock()
			r.releaseOnce()(nil)
			return nil, time.Since(start), ctx.Err()
		}
		var moved []*waiter
		for i, x := range r.waiting {
			if x == w {
				r.waiting = append(r.waiting[:i], r.waiting[i+1:]...)
				moved = r.waiting[i:]
				break
			}
		}
		notes := r.positionsLocked(moved)
		r.rearmIfIdleLocked()
		r.publishLocked()
		r.mu.Unlock()
		notes()
		return nil, time.Since(start), ctx.Err()
	}
}

func (r *Runner) releaseOnce() func(*time.Duration) {
	var once sync.Once
	return func(keep *time.Duration) { once.Do(func() { r.release(keep) }) }
}

// release passes the slot on, or, with nobody waiting, arms keep-alive
// with the finished request's duration (nil: the setting).
func (r *Runner) release(keep *time.Duration) {
	r.mu.Lock()
	r.running--
	if len(r.waiting) > 0 {
		w := r.waiting[0]
		r.waiting = r.waiting[1:]
		w.granted = true
		r.running++
		close(w.ready)
	} else {
		d := r.keepAlive(keep)
		r.lastKeep = d
		if d == 0 && r.eng.Status().Model != nil && !r.closed {
			r.mu.Unlock()
			r.expire()
			return
		}
		r.armLocked(d)
	}
	notes := r.positionsLocked(r.waiting)
	r.publishLocked()
	r.mu.Unlock()
	notes()
}

func (r *Runner) rearmIfIdleLocked() {
	if r.running == 0 && len(r.waiting) == 0 {
		r.armLocked(r.lastKeepOrSetting())
	}
}

func (r *Runner) lastKeepOrSetting() time.Duration {
	if r.lastKeep != 0 {
		return r.lastKeep
	}
	return r.keepAlive(nil)
}

func (r *Runner) positionsLocked(ws []*waiter) func() {
	type note struct {
		f   func(int)
		pos int
	}
	var notes []note
	for _, w := range ws {
		if w.notify == nil {
			continue
		}
		for i, x := range r.waiting {
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

// armLocked starts the keep-alive timer: d < 0 never expires; 0 expires now.
func (r *Runner) armLocked(d time.Duration) {
	r.stopTimerLocked()
	r.lastKeep = d
	if d < 0 || r.closed {
		return
	}
	r.expires = time.Now().Add(d)
	r.timer = time.AfterFunc(d, r.expire)
}

func (r *Runner) stopTimerLocked() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.expires = time.Time{}
}

// expire unloads the model after keep-alive unless work arrived meanwhile.
func (r *Runner) expire() {
	r.mu.Lock()
	busy := r.running > 0 || len(r.waiting) > 0 || r.flight != nil || r.unloading != nil || r.closed
	loaded := r.eng.Status().Model != nil
	r.timer = nil
	r.expires = time.Time{}
	// Claim the slot so no generation starts while unloading.
	if busy || !loaded {
		r.mu.Unlock()
		return
	}
	r.running++
	r.mu.Unlock()
	if err := r.unload(true); err != nil {
		r.log.Warn("keep-alive unload", "err", err)
	} else {
		r.log.Info("model unloaded after keep-alive", "path", r.Status().Path)
	}
	r.mu.Lock()
	r.running--
	if len(r.waiting) > 0 {
		w := r.waiting[0]
		r.waiting = r.waiting[1:]
		w.granted = true
		r.running++
		close(w.ready)
		notes := r.positionsLocked(r.waiting)
		r.publishLocked()
		r.mu.Unlock()
		notes()
		return
	}
	r.publishLocked()
	r.mu.Unlock()
}

// Close cancels loads and generations, stops keep-alive and unloads the
// model. The runner cannot be used afterwards; the engine stays open.
func (r *Runner) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.stopTimerLocked()
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	err := r.eng.Unload()
	r.mu.Lock()
	for ch := range r.subs {
		close(ch)
		delete(r.subs, ch)
	}
	r.mu.Unlock()
	return err
}

// MaxQueue is how many generations may wait behind the running one.
func (r *Runner) MaxQueue() int { return r.cfg.MaxQueue }

// Touch brings the model in (reloading one keep-alive unloaded) after the
// queued generations, then re-arms keep-alive with keep (nil: the
// setting); keep 0 unloads it at once, as keep-alive would. This is
// Ollama's load and unload by an empty request.
func (r *Runner) Touch(ctx context.Context, keep *time.Duration) error {
	release, _, err := r.acquire(ctx, nil)
	if err != nil {
		return err
	}
	err = r.ensureLoaded(ctx)
	release(keep)
	return err
}
