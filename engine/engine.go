// Package engine runs language models: it loads a GGUF model, turns requests
// (raw prompts, chat turns or token ids) into tokens, drives the forward pass
// and the sampler, and streams tokens with per-request statistics. The API
// and the menu-bar app both use it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/chat"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/routing"
	"github.com/strata-llm/strata/engine/sample"
	"github.com/strata-llm/strata/engine/speculation/gate"
	"github.com/strata-llm/strata/engine/tokenizer"
	"github.com/strata-llm/strata/engine/usage"
	"github.com/strata-llm/strata/internal/cores"
)

// Errors a request can end with; test with errors.Is.
var (
	// ErrNoModel: no model is loaded.
	ErrNoModel = errors.New("no model loaded")
	// ErrBadRequest: the request itself is wrong (no or several prompt
	// kinds, token ids outside the vocabulary, a prompt longer than the
	// context, a chat template that fails); retrying it cannot help.
	ErrBadRequest = errors.New("bad request")
	// ErrCancelled: the caller's context ended; it wraps ctx.Err().
	ErrCancelled = errors.New("cancelled")
)

// badRequest wraps err as ErrBadRequest.
func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// cancelled wraps a context's error as ErrCancelled.
type cancelled struct{ err error }

func (c cancelled) Error() string   { return c.err.Error() }
func (c cancelled) Unwrap() []error { return []error{ErrCancelled, c.err} }
func cancelledErr(err error) error  { return cancelled{err} }

// DefaultMaxTokens is used when a request sets no MaxTokens.
const DefaultMaxTokens = 512

// Options configure an Engine; they come from the settings in one place
// (SetOptions). The zero value is usable: one thread per physical core
// (cores.Default), the model's context length capped at 4096, slog's
// default logger.
type Options struct {
	Threads       int                // worker threads; 0: cores.Default(); applies at the next Load
	ContextLength int                // positions per session; 0: min(model's, 4096); applies at the next Load
	Streaming     Streaming          // when experts are streamed from the SSD; applies at the next Load
	ExpertCache   int64              // expert cache bytes when streaming; 0: what the process may use; applies at the next Load
	Routing       routing.CacheRoute // cache-aware routing; applies from the next generation
	Speculation   Speculation        // speculative decoding; applies from the next generation
	// HistoryDir holds the learned expert-usage histories of streamed
	// models (one file per model, named by its identity); "": none kept.
	// Applies at the next Load.
	HistoryDir string
	// ProfileDirs are searched in order for a static usage profile of a
	// streamed model (a file named like its history, made by strata dev
	// profile: shipped with the app or imported by the user); the first
	// found is blended with the history when the expert cache is warmed
	// at load and rebalanced between turns (usage.Blend). Applies at the
	// next Load.
	ProfileDirs []string
	// Profiles holds the static profiles shipped inside the binary
	// (resources.Profiles: files named like a history at its root),
	// searched after ProfileDirs, so one the user made or imported wins;
	// nil: none. Applies at the next Load.
	Profiles fs.FS
	Logger   *slog.Logger // nil: slog.Default()
	// Backend runs the model's ops: "" or "cpu" the CPU; "metal" the
	// Metal backend (the GPU on a Mac, the emulator on Linux), which must
	// pass its kernel selftest first. Applies at the next Load.
	Backend string

	// OnProgress, if set, is called with every step of a load's progress
	// (also published in Status), on the loading goroutine and outside
	// the engine's locks: a command line draws a bar with it.
	OnProgress func(Progress)

	record bool // BuildProfile: count every token's experts into loaded.rec
	// BackendChecked: the program already ran the Metal selftest on this
	// device for this app and OS version and it passed
	// (internal/backendpick), so Load does not run the quick one again.
	BackendChecked bool
	// BackendReason says why Backend was chosen ("the Metal selftest
	// passed on Apple M3 …", "this is linux/amd64, not a Mac with Apple
	// silicon"); Status reports it.
	BackendReason string
	// BackendFallback: the user asked for Metal (or Auto on a Mac) and the
	// CPU runs the model instead; Status reports it as a warning.
	BackendFallback bool
}

// Engine owns at most one loaded model and runs one generation at a time;
// other callers of Generate wait for their turn (or their context).
// All methods are safe for concurrent use.
type Engine struct {
	opts Options
	log  *slog.Logger

	turn chan struct{} // one slot: held while loading, unloading or generating

	mu    sync.Mutex // guards the fields below
	state State
	err   string
	lm    *loaded
	prog  *Progress // the load's, while state is loading
	last  *Stats
	// liveSpec is the running generation's speculation so far, or the
	// last speculating generation's (nil before any).
	liveSpec *SpecStats
	subs     map[chan Status]struct{}
	closed   bool
}

// loaded is a model with everything a generation needs.
type loaded struct {
	info   ModelInfo
	file   *gguf.File
	be     backend.Backend
	model  model.Model
	tok    *tokenizer.Tokenizer
	tmpl   string // chat template source ("" if the file has none)
	sess   model.Session
	stream *experts.Stream // nil unless experts are streamed
	route  *routing.State  // the MoE layers' routing policy and telemetry
	hist   *history        // nil unless a usage history is kept
	prof   *usage.History  // the static usage profile; nil when none was found
	rec    *usage.History  // BuildProfile's counts (Options.record)
	idle   time.Time       // when the model last finished work
	batch  model.Batch     // reused for decode steps
	one    [1]int32

	resident  int64      // bytes of weights read into memory (0 when mapped)
	sessBytes int64      // the session's KV cache and buffers; guarded by Engine.mu
	gate      *gate.Gate // SpecGate's measurements for this model; nil until a request speculates
	keep      *keeper    // keeps the weights' memory warm while idle; nil when nothing is kept
}

// sessionBytes asks the session what it holds; only while it is not in use.
func (lm *loaded) sessionBytes() int64 { return lm.sess.MemoryBytes() }

// forward runs tokens through the session, wanting the last row's logits.
func (lm *loaded) forward(ctx context.Context, tokens []int32) ([]float32, error) {
	lm.batch = model.Batch{Tokens: tokens}
	if err := lm.sess.Forward(ctx, &lm.batch); err != nil {
		return nil, err
	}
	return lm.batch.Out[0], nil
}

// wakeAfter is the idle time after which a request first wakes the
// backend (see Backend.WarmUp) while its prompt is tokenized. Measured
// with strata bench --ttft-idle 60s (8-layer 120 MB Q8_0 synthetic
// qwen3moe, 64-token prompt, 2 threads, load average ~20 on 2 cores):
// after idle a request does no more work than right after another — CPU
// time medians 120 vs 124 ms in memory, 192 vs 192 ms streaming experts,
// a few page faults (the runtime had released 3–6 MB), no extra GC — and
// time to first token was 0.87–1.11× the warm one across three runs of
// 3–7 rounds: what varied was waiting for a CPU, not the engine.
const wakeAfter = 10 * time.Second

// wake starts the backend's warm-up if the model has been idle for
// wakeAfter; the returned function stops it and waits (idempotent).
func (lm *loaded) wake() func() {
	w, ok := lm.be.(interface{ WarmUp(stop <-chan struct{}) })
	if !ok || time.Since(lm.idle) < wakeAfter {
		return func() {}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		w.WarmUp(stop)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
		})
	}
}

// prefill forwards a prompt and returns its last row's logits. A batch
// larger than model.InvariantRows may round differently from a small one,
// so its last token is forwarded alone: the logits that start generation
// are then the same whether a request forwards the whole prompt or reuses
// all of it but the last token (the same request sent twice).
func (lm *loaded) prefill(ctx context.Context, tokens []int32) ([]float32, error) {
	if n := len(tokens); n > model.InvariantRows {
		lm.batch = model.Batch{Tokens: tokens[:n-1], Logits: make([]bool, n-1)}
		if err := lm.sess.Forward(ctx, &lm.batch); err != nil {
			return nil, err
		}
		return lm.step(ctx, tokens[n-1])
	}
	return lm.forward(ctx, tokens)
}

// step forwards one token.
func (lm *loaded) step(ctx context.Context, id int32) ([]float32, error) {
	lm.one[0] = id
	return lm.forward(ctx, lm.one[:])
}

// New returns an Engine with no model loaded.
func New(opts Options) *Engine {
	if opts.Threads <= 0 {
		opts.Threads = cores.Default()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Engine{
		opts:  opts,
		log:   opts.Logger,
		turn:  make(chan struct{}, 1),
		state: StateStopped,
		subs:  map[chan Status]struct{}{},
	}
}

func (e *Engine) acquire(ctx context.Context) error {
	select {
	case e.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) release() { <-e.turn }

// acquireModel waits for the engine's turn and returns the loaded model;
// on success the caller must release the turn.
func (e *Engine) acquireModel(ctx context.Context) (*loaded, error) {
	if err := e.acquire(ctx); err != nil {
		return nil, err
	}
	e.mu.Lock()
	lm := e.lm
	e.mu.Unlock()
	if lm == nil {
		e.release()
		return nil, ErrNoModel
	}
	return lm, nil
}

// Load opens the GGUF model at path, replacing any loaded model. It waits
// for a running generation to finish. On failure no model is loaded and
// Status reports the error.
func (e *Engine) Load(ctx context.Context, path string) error {
	if err := e.acquire(ctx); err != nil {
		return err
	}
	defer e.release()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return errors.New("engine closed")
	}
	old := e.lm
	e.lm = nil
	e.setStateLocked(StateLoading, "")
	e.mu.Unlock()
	if old != nil {
		old.close()
	}
	start := time.Now()
	lm, err := e.open(ctx, path)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.setStateLocked(StateError, err.Error())
		return err
	}
	e.lm = lm
	e.setStateLocked(StateReady, "")
	e.log.Info("model loaded", "path", path, "arch", lm.info.Arch, "layers", lm.info.Layers,
		"experts", lm.info.Experts, "ctx", lm.sess.Cap(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func (e *Engine) open(ctx context.Context, path string) (lm *loaded, err error) {
	e.mu.Lock()
	opts := e.opts
	e.mu.Unlock()
	f, plan, nctx, err := openFile(ctx, path, opts, func(done, total int64) {
		e.setProgress(PhaseReading, "Reading the model into memory", done, total)
	})
	if err != nil {
		return nil, err
	}
	var stream **experts.Stream
	defer func() {
		if err != nil {
			if stream != nil && *stream != nil {
				(*stream).Close()
			}
			f.Close()
		}
	}()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	be, err := newBackend(ctx, opts, e.log)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			be.Close()
		}
	}()
	// The file's mappings are wrapped before the model binds its matrices
	// inside them; the expert arena once the model made it.
	if err = mapHost(be, f, nil, e.log); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	route := &routing.State{}
	mopts := model.Options{Backend: be, Routing: route}
	var hist *history
	if plan.mode == modeStream {
		mopts.NewExperts, stream = newStream(f, plan, 0, be)
		if opts.HistoryDir != "" {
			if hist, err = openHistory(f, opts.HistoryDir, e.log); err != nil {
				return nil, fmt.Errorf("load %s: %w", path, err)
			}
			mopts.Usage = hist.h
		}
	}
	var rec *usage.History
	if opts.record {
		id, layers, ne, err := modelIdentity(f)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", path, err)
		}
		rec = usage.New(id, layers, ne)
		mopts.Usage = rec
	}
	m, info, err := openModel(ctx, f, mopts)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if err := mapHost(be, nil, stream, e.log); err != nil {
		m.Close()
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	sess, err := m.NewSession(nctx)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("load %s: session: %w", path, err)
	}
	info.Path = path
	info.Memory = plan.mode.String()
	tmpl, _ := f.String("tokenizer.chat_template")
	if _, err := chat.Which(tmpl, info.Arch, e.log); err != nil {
		e.log.Warn("chat requests will fail", "path", path, "err", err)
	}
	lm = &loaded{info: info, file: f, be: be, model: m, tok: tok, tmpl: tmpl, sess: sess, route: route, rec: rec}
	switch plan.mode {
	case modeInMemory:
		lm.resident = f.Size
	case modeStream:
		lm.stream = *stream
		st := lm.stream.Stats()
		info.ExpertCacheBytes = int64(st.Slots) * st.SlotBytes
		lm.resident = info.ExpertCacheBytes + plan.dense // the dense part is pinned (openFile)
		lm.info = info
		e.log.Info("streaming experts", "path", path, "cache", gib(info.ExpertCacheBytes), "slots", st.Slots,
			"dense", gib(plan.dense), "usable", gib(int64(plan.usable)), "direct", st.Direct)
		lm.hist, lm.prof = hist, openProfile(f, opts.ProfileDirs, opts.Profiles, e.log)
		if hist != nil || lm.prof != nil {
			b := usage.Blend{Profile: lm.prof}
			if hist != nil {
				b.History = hist.h
			}
			t0 := time.Now()
			n := lm.stream.Warm(warmOrder(hist, lm.prof))
			if err := e.waitWarm(ctx, lm.stream, n); err != nil {
				return nil, fmt.Errorf("load %s: %w", path, err)
			}
			e.log.Info("expert cache warmed from the usage history", "experts", n, "history", hist != nil,
				"profile", lm.prof != nil, "history_weight", b.HistoryWeight(), "took", time.Since(t0).Round(time.Millisecond))
		}
	}
	lm.sessBytes = lm.sessionBytes()
	lm.idle = time.Now()
	var arena []byte
	if lm.stream != nil {
		arena = lm.stream.Arena()
	}
	lm.keep = startKeeper(warmRegions(f, plan.mode, arena), e.turn, keepWarmEvery)
	return lm, nil
}

// warmText says what the warming phase does.
const warmText = "Filling the expert cache with the parts you use most"

// warmPoll is how often a load looks at the expert cache's warm-up.
const warmPoll = 50 * time.Millisecond

// waitWarm waits until the experts Warm queued are in the cache, showing
// it as the load's progress: the first request then starts on the
// experts its history names instead of racing their reads.
func (e *Engine) waitWarm(ctx context.Context, s *experts.Stream, queued int) error {
	if queued == 0 {
		return nil
	}
	e.setProgress(PhaseWarming, warmText, 0, int64(queued))
	tick := time.NewTicker(warmPoll)
	defer tick.Stop()
	for {
		done, total := s.Warmed()
		e.setProgress(PhaseWarming, warmText, int64(done), int64(total))
		if done >= total {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// setProgress publishes the load's progress.
func (e *Engine) setProgress(phase, text string, done, total int64) {
	p := &Progress{Phase: phase, Text: text, Done: done, Total: total}
	if total > 0 {
		p.Fraction = float64(done) / float64(total)
	} else {
		p.Fraction = 1
	}
	e.mu.Lock()
	if e.state != StateLoading {
		e.mu.Unlock()
		return
	}
	if q := e.prog; q != nil && q.Phase == p.Phase && q.Done == p.Done && q.Total == p.Total {
		e.mu.Unlock()
		return
	}
	e.prog = p
	e.setStateLocked(StateLoading, "")
	hook := e.opts.OnProgress
	e.mu.Unlock()
	if hook != nil {
		hook(*p)
	}
}

func (lm *loaded) close() {
	lm.keep.stop()
	if lm.hist != nil {
		lm.hist.save()
	}
	lm.sess.Close()
	lm.model.Close()
	if lm.stream != nil {
		lm.stream.Close()
	}
	lm.be.Close()
	lm.file.Close()
	// Give the session's heap (KV cache, buffers) back to the system now,
	// not when the scavenger gets to it: a model loaded next in this
	// process sizes its expert cache by what is usable. Under a 600 MB
	// cgroup limit, three loads in one process got 78, 73 and 67 slots
	// without this; 77, 75 and 74 with it.
	debug.FreeOSMemory()
}

// SetOptions replaces the engine's options (zero fields take their
// defaults; a nil Logger keeps the current one). Threads and context
// length apply at the next Load: a loaded model keeps its own.
func (e *Engine) SetOptions(o Options) {
	if o.Threads <= 0 {
		o.Threads = cores.Default()
	}
	o.ContextLength = max(o.ContextLength, 0)
	e.mu.Lock()
	if o.Logger == nil {
		o.Logger = e.opts.Logger
	}
	e.opts = o
	e.log = o.Logger
	e.mu.Unlock()
}

// logger is the engine's Logger now.
func (e *Engine) logger() *slog.Logger {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.log
}

// Options returns the engine's options.
func (e *Engine) Options() Options {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.opts
}

// Unload frees the loaded model, waiting for a running generation.
func (e *Engine) Unload() error {
	if err := e.acquire(context.Background()); err != nil {
		return err
	}
	defer e.release()
	e.mu.Lock()
	old := e.lm
	e.lm = nil
	e.setStateLocked(StateStopped, "")
	e.mu.Unlock()
	if old != nil {
		old.close()
		e.log.Info("model unloaded", "path", old.info.Path)
	}
	return nil
}

// Close unloads the model; the Engine cannot be used afterwards.
func (e *Engine) Close() error {
	err := e.Unload()
	e.mu.Lock()
	e.closed = true
	for ch := range e.subs {
		close(ch)
		delete(e.subs, ch)
	}
	e.mu.Unlock()
	return err
}

// Status returns a snapshot of the engine.
func (e *Engine) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.statusLocked()
}

func (e *Engine) statusLocked() Status {
	s := Status{State: e.state, Err: e.err, LastStats: e.last, Speculation: e.liveSpec,
		Backend: e.opts.Backend, BackendReason: e.opts.BackendReason, BackendFallback: e.opts.BackendFallback}
	if e.prog != nil {
		p := *e.prog
		s.Progress = &p
	}
	if s.Backend == "" {
		s.Backend = "cpu"
	}
	if e.lm != nil {
		s.Backend = e.lm.be.Name()
		info := e.lm.info
		s.Model = &info
		s.MemoryBytes = e.lm.resident + e.lm.sessBytes
	}
	return s
}

// Subscribe returns a channel that receives the engine's Status after every
// change (only the latest is kept if the reader is slow), and a function
// that ends the subscription.
func (e *Engine) Subscribe() (<-chan Status, func()) {
	ch := make(chan Status, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		close(ch)
		return ch, func() {}
	}
	e.subs[ch] = struct{}{}
	ch <- e.statusLocked()
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if _, ok := e.subs[ch]; ok {
			delete(e.subs, ch)
			close(ch)
		}
	}
}

func (e *Engine) setStateLocked(s State, errText string) {
	e.state, e.err = s, errText
	if s != StateLoading {
		e.prog = nil
	}
	st := e.statusLocked()
	for ch := range e.subs {
		select { // keep only the newest
		case <-ch:
		default:
		}
		ch <- st
	}
}

// Tokenize returns the ids of text as a raw prompt would be tokenized.
func (e *Engine) Tokenize(text string) ([]int32, error) {
	e.mu.Lock()
	lm := e.lm
	e.mu.Unlock()
	if lm == nil {
		return nil, ErrNoModel
	}
	return lm.tok.Encode(text, true, true), nil
}

// Generate runs one request, calling emit for every generated token as soon
// as it is sampled. Cancelling ctx stops the generation within one token;
// the returned Stats then have FinishReason "cancelled" and the error is
// ctx.Err(). An error from emit also stops the generation and is returned.
func (e *Engine) Generate(ctx context.Context, req Request, emit func(Token) error) (Stats, error) {
	if err := e.acquire(ctx); err != nil {
		return Stats{FinishReason: FinishCancelled}, cancelledErr(err)
	}
	defer e.release()
	e.mu.Lock()
	lm := e.lm
	if lm == nil {
		e.mu.Unlock()
		return Stats{}, ErrNoModel
	}
	e.setStateLocked(StateGenerating, "")
	e.mu.Unlock()

	before := lm.expertSnap()
	e.mu.Lock()
	lm.route.Policy = e.opts.Routing
	e.mu.Unlock()
	if err := lm.route.Policy.Validate(lm.info.ExpertsUsed, lm.info.Experts); err != nil {
		e.log.Warn("cache-aware routing off for this model", "err", err)
		lm.route.Policy = routing.CacheRoute{}
	}
	routed := lm.route.Stats
	stopWarm := lm.wake()
	st, err := e.generate(ctx, lm, req, emit, stopWarm)
	stopWarm()
	lm.idle = time.Now()
	if lm.stream != nil {
		st.Experts = expertStats(before, lm.expertSnap(), st.Duration)
	}
	if lm.route.Policy.Enabled {
		st.Routing = routingStats(lm.route.Stats.Sub(routed))
	}
	if lm.hist != nil && st.PromptTokens+st.GeneratedTokens > 0 {
		lm.hist.endTurn(st.PromptTokens+st.GeneratedTokens, lm.stream, lm.prof)
	}
	sessBytes := lm.sessionBytes() // the turn is still held: nothing else uses the session

	e.mu.Lock()
	lm.sessBytes = sessBytes
	if st.FinishReason != "" {
		s := st
		e.last = &s
	}
	if e.lm == lm {
		e.setStateLocked(StateReady, "")
	}
	e.mu.Unlock()
	return st, err
}

func (e *Engine) promptTokens(lm *loaded, req Request) ([]int32, error) {
	n := 0
	for _, set := range []bool{req.Prompt != "", len(req.Messages) > 0, len(req.Tokens) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, badRequest("a request needs exactly one of prompt, messages or tokens")
	}
	switch {
	case len(req.Tokens) > 0:
		for _, id := range req.Tokens {
			if id < 0 || int(id) >= lm.info.Vocab {
				return nil, badRequest("token id %d is outside the vocabulary (0..%d)", id, lm.info.Vocab-1)
			}
		}
		return append([]int32(nil), req.Tokens...), nil
	case len(req.Messages) > 0:
		msgs := make([]chat.Message, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = chat.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name}
		}
		text, err := chat.Render(lm.tmpl, lm.info.Arch, msgs, chat.Options{
			AddGenerationPrompt: true,
			BOS:                 lm.tok.BOSText(),
			EOS:                 lm.tok.EOSText(),
			Logger:              e.log,
			Tools:               req.Tools,
		})
		if err != nil {
			return nil, fmt.Errorf("%w: chat template: %w", ErrBadRequest, err)
		}
		return lm.tok.Encode(text+req.Prefill, true, true), nil
	default:
		return lm.tok.Encode(req.Prompt, true, true), nil
	}
}

func (e *Engine) generate(ctx context.Context, lm *loaded, req Request, emit func(Token) error, stopWarm func()) (st Stats, err error) {
	start := time.Now()
	prompt, err := e.promptTokens(lm, req)
	stopWarm() // the warm-up ran while the prompt was rendered and tokenized
	if err != nil {
		return Stats{}, err
	}
	st = Stats{PromptTokens: len(prompt), PromptIDs: prompt}
	if len(prompt) == 0 {
		return st, badRequest("empty prompt")
	}
	capacity := lm.sess.Cap()
	if len(prompt) >= capacity {
		return st, badRequest("prompt of %d tokens does not fit the context of %d", len(prompt), capacity)
	}
	maxTokens := req.Sampling.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	smp := sample.New(req.Sampling, lm.info.Vocab)
	var cons sample.Constraint
	if req.Constraint != nil {
		if cons, err = req.Constraint(lm.tok); err != nil {
			return st, badRequest("constraint: %v", err)
		}
	}

	// Reuse the longest prefix the session already holds; at least the last
	// prompt token is always forwarded, for its logits. Rows are computed
	// alike in any batch, so this gives what a fresh request computes.
	o := e.speculation()
	keep := min(reusable(lm.sess, prompt), drafting(lm, o, req))
	for keep > 0 && !lm.sess.CanTruncate(keep) {
		keep--
	}
	if err := lm.sess.Truncate(keep); err != nil {
		return st, err
	}
	logits, err := lm.prefill(ctx, prompt[keep:])
	if err != nil {
		return e.finish(ctx, st, start, start, err)
	}
	prefillDone := time.Now()
	if d := prefillDone.Sub(start).Seconds(); d > 0 {
		st.PromptPerSecond = float64(len(prompt)-keep) / d
	}

	history := append([]int32(nil), prompt...)
	dec := lm.tok.NewStreamDecoder()
	stop := newStopMatcher(req.Sampling.Stop)
	var firstAt time.Time
	log := e.logger()
	sp := newSpeculator(ctx, lm, o, req, log)
	debug := sp == nil && log.Enabled(ctx, debugForwards)
	var published time.Time
	if sp != nil {
		published = time.Now()
		e.publishSpec(sp.snapshot())
		defer func() {
			st.Speculation = sp.stats()
			e.publishSpec(st.Speculation)
		}()
	}
	for {
		if err := ctx.Err(); err != nil {
			return e.finish(ctx, st, start, firstAt, err)
		}
		if cons != nil {
			cons.Mask(logits) // the session's buffer; the next forward overwrites it
		}
		var id int32
		if sp != nil { // never under a constraint (newSpeculator)
			id = sp.next(smp, logits, history)
		} else {
			id = smp.Sample(logits, history)
		}
		if cons != nil {
			if err := cons.Accept(id); err != nil {
				return e.finish(ctx, st, start, firstAt, err)
			}
		}
		if st.GeneratedTokens == 0 {
			firstAt = time.Now()
			st.TimeToFirstToken = firstAt.Sub(start)
		}
		st.GeneratedTokens++
		history = append(history, id)
		if lm.tok.IsEOG(id) {
			tail, _ := stop.add(dec.Flush())
			if tail += stop.flush(); tail != "" {
				if err := emit(Token{ID: -1, Text: tail}); err != nil {
					return e.finish(ctx, st, start, firstAt, err)
				}
			}
			st.FinishReason = FinishStop
			break
		}
		text, hit := stop.add(dec.Next(id))
		if err := emit(Token{ID: id, Text: text}); err != nil {
			return e.finish(ctx, st, start, firstAt, err)
		}
		if hit || cons != nil && cons.Done() {
			if !hit {
				tail, _ := stop.add(dec.Flush())
				if tail += stop.flush(); tail != "" {
					if err := emit(Token{ID: -1, Text: tail}); err != nil {
						return e.finish(ctx, st, start, firstAt, err)
					}
				}
			}
			st.FinishReason = FinishStop
			break
		}
		if st.GeneratedTokens >= maxTokens || len(history)-1 >= capacity { // the session holds history but id
			tail, _ := stop.add(dec.Flush())
			if tail += stop.flush(); tail != "" {
				if err := emit(Token{ID: -1, Text: tail}); err != nil {
					return e.finish(ctx, st, start, firstAt, err)
				}
			}
			st.FinishReason = FinishLength
			break
		}
		if sp != nil {
			logits, err = sp.step(ctx, id, history, maxTokens-st.GeneratedTokens)
			if time.Since(published) >= liveEvery {
				published = time.Now()
				e.publishSpec(sp.snapshot())
			}
		} else if debug {
			stall0, t0 := lm.stall(), time.Now()
			logits, err = lm.step(ctx, id)
			log.Debug("forward", "rows", 1, "ms", ms(time.Since(t0)), "stall_ms", ms(lm.stall()-stall0))
		} else {
			logits, err = lm.step(ctx, id)
		}
		if err != nil {
			return e.finish(ctx, st, start, firstAt, err)
		}
	}
	return e.finish(ctx, st, start, firstAt, nil)
}

// finish fills the timing figures; a context error becomes "cancelled".
func (e *Engine) finish(ctx context.Context, st Stats, start, firstAt time.Time, err error) (Stats, error) {
	now := time.Now()
	st.Duration = now.Sub(start)
	if !firstAt.IsZero() && st.GeneratedTokens > 1 {
		if d := now.Sub(firstAt).Seconds(); d > 0 {
			st.TokensPerSecond = float64(st.GeneratedTokens-1) / d
		}
	}
	if err != nil && ctx.Err() != nil {
		st.FinishReason = FinishCancelled
		return st, cancelledErr(ctx.Err())
	}
	if err != nil && st.FinishReason == "" {
		st.FinishReason = FinishCancelled
	}
	return st, err
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// reusable is how many of prompt's leading tokens sess can keep: the
// common prefix, short of the last prompt token (always forwarded for its
// logits), and only as far back as the session can roll back (else none:
// the prompt is forwarded from the start).
func reusable(sess model.Session, prompt []int32) int {
	keep := min(commonPrefix(sess.Tokens(), prompt), len(prompt)-1)
	for ; keep > 0; keep-- {
		if sess.CanTruncate(keep) {
			return keep
		}
	}
	return 0
}

// stopMatcher holds back text that could be the start of a stop string, so
// a stop string is never emitted.
type stopMatcher struct {
	stops   []string
	pending string
}

func newStopMatcher(stops []string) *stopMatcher {
	var s []string
	for _, x := range stops {
		if x != "" {
			s = append(s, x)
		}
	}
	return &stopMatcher{stops: s}
}

// add appends text and returns what may be emitted, and whether a stop
// string was found (the text before it is returned, the rest dropped).
func (m *stopMatcher) add(text string) (string, bool) {
	if len(m.stops) == 0 {
		return text, false
	}
	buf := m.pending + text
	for _, s := range m.stops {
		if i := strings.Index(buf, s); i >= 0 {
			m.pending = ""
			return buf[:i], true
		}
	}
	// Keep the longest suffix of buf that is a prefix of a stop string.
	hold := 0
	for _, s := range m.stops {
		for k := min(len(s)-1, len(buf)); k > hold; k-- {
			if strings.HasPrefix(s, buf[len(buf)-k:]) {
				hold = k
				break
			}
		}
	}
	m.pending = buf[len(buf)-hold:]
	return buf[:len(buf)-hold], false
}

func (m *stopMatcher) flush() string {
	p := m.pending
	m.pending = ""
	return p
}

// expertSnapshot is the expert counters at one moment: the cache's and,
// with the Metal backend, how its handshakes gave experts to the GPU.
type expertSnapshot struct {
	cache experts.Stats
	loads backend.ExpertLoads
}

func (lm *loaded) expertSnap() expertSnapshot {
	var s expertSnapshot
	if lm.stream != nil {
		s.cache = lm.stream.Stats()
	}
	if mb, ok := lm.be.(interface{ ExpertLoads() backend.ExpertLoads }); ok {
		s.loads = mb.ExpertLoads()
	}
	return s
}

// expertStats is the streaming work between two snapshots of the expert
// counters, over a generation of duration d.
func expertStats(sa, sb expertSnapshot, d time.Duration) *ExpertStats {
	a, b := sa.cache, sb.cache
	x := &ExpertStats{Hits: b.Hits - a.Hits, Misses: b.Misses - a.Misses, ReadAheads: b.ReadAheads - a.ReadAheads,
		AheadUsed: b.AheadUsed - a.AheadUsed,
		BytesRead: b.BytesRead - a.BytesRead, StallSeconds: (b.Stall - a.Stall).Seconds(),
		CacheBytes: int64(b.Slots) * b.SlotBytes,
		InPlace:    sb.loads.Bound - sa.loads.Bound, Copied: sb.loads.Copied - sa.loads.Copied}
	if n := x.Hits + x.Misses; n > 0 {
		x.HitRate = float64(x.Hits) / float64(n)
	}
	if s := d.Seconds(); s > 0 {
		x.ReadMBps = float64(x.BytesRead) / 1e6 / s
	}
	return x
}

// routingStats summarises a generation's routing decisions.
func routingStats(t routing.Telemetry) *RoutingStats {
	r := &RoutingStats{}
	if t.Tokens > 0 {
		r.Agreement = t.Agreement / float64(t.Tokens)
		r.KL = t.KL / float64(t.Tokens)
	}
	if t.Slots > 0 {
		r.SwappedPct = 100 * float64(t.Swapped) / float64(t.Slots)
		r.ResidentPct = 100 * float64(t.Resident) / float64(t.Slots)
	}
	return r
}
