// Package api serves Strata to local apps: a versioned JSON protocol over
// one websocket (/v1/ws, see docs/api.md and package api/protocol) and an
// OpenAI-compatible HTTP API (/v1/models, /v1/chat/completions,
// /v1/completions, /health) on the same port. It is secure by default:
// Host and Origin checks on every request, a per-install token compared in
// constant time, and bounds on message sizes, connections, the generation
// queue and per-connection send buffers.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/grammar"
	"github.com/strata-llm/strata/engine/sample"
	"github.com/strata-llm/strata/engine/tokenizer"
	"github.com/strata-llm/strata/internal/runner"
)

// Models is what the models.* operations need from the model manager.
// Errors that are *protocol.Error keep their code (e.g. not_found);
// others are reported as internal.
type Models interface {
	// List returns catalog and installed models.
	List(ctx context.Context) ([]protocol.ModelEntry, error)
	// Pull downloads and verifies a model, reporting progress.
	Pull(ctx context.Context, name string, progress func(protocol.PullProgress)) error
	// Delete removes an installed model.
	Delete(ctx context.Context, name string) error
	// Path returns the file to load for an installed model.
	Path(ctx context.Context, name string) (string, error)
}

// Settings is what settings.get and settings.set need from the settings
// store: the settings struct as a JSON object, and a patch (a JSON object
// of fields to change) validated, persisted and applied as a whole.
// Validation failures should be *protocol.Error with code bad_request.
type Settings interface {
	Get() ([]byte, error)
	Set(ctx context.Context, patch []byte) ([]byte, error)
}

// TokenChecker tells whether a presented API token is valid; it must
// compare in constant time (internal/token.Store does).
type TokenChecker interface {
	Valid(token string) bool
}

// Config configures a Server. Runner and Tokens are required; zero limits
// take the defaults below.
type Config struct {
	// Runner owns the model lifecycle (loading, keep-alive, the queue of
	// generations) shared with the menu bar.
	Runner   *runner.Runner
	Tokens   TokenChecker
	Models   Models   // nil: models.* answer not_found
	Settings Settings // nil: settings.* answer not_found
	Logger   *slog.Logger
	Version  string // server version reported by hello

	// OnSelect is called after models.select loaded a model.
	OnSelect func(name, path string)

	AllowedOrigins []string // origins (scheme://host[:port], chrome-extension://ID) allowed besides none
	// Origins, when set, returns more allowed origins at each request (the
	// settings' list, so a change applies at once).
	Origins      func() []string
	AllowedHosts []string // Host names allowed besides localhost, 127.0.0.1 and ::1

	MaxMessageBytes   int           // websocket message and HTTP body limit; default 1 MiB
	MaxConnections    int           // websocket connections; default 64
	MaxOpsPerConn     int           // operations in flight per connection; default 32
	SendBuffer        int           // events buffered per connection; default 512
	MaxTokens         int           // the largest max_tokens a request may ask; default 8192
	DefaultMaxTokens  int           // max_tokens when a request sets none; default 512
	ReadHeaderTimeout time.Duration // default 10s
	IdleTimeout       time.Duration // idle HTTP keep-alive and idle websocket; default 5m
	AuthTimeout       time.Duration // time to send the token on a websocket; default 10s
	PingInterval      time.Duration // websocket pings; default 30s (pong awaited 2×)
	WriteTimeout      time.Duration // one websocket write; default 10s
}

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxMessageBytes, 1<<20)
	def(&c.MaxConnections, 64)
	def(&c.MaxOpsPerConn, 32)
	def(&c.SendBuffer, 512)
	def(&c.MaxTokens, 8192)
	def(&c.DefaultMaxTokens, 512)
	defd(&c.ReadHeaderTimeout, 10*time.Second)
	defd(&c.IdleTimeout, 5*time.Minute)
	defd(&c.AuthTimeout, 10*time.Second)
	defd(&c.PingInterval, 30*time.Second)
	defd(&c.WriteTimeout, 10*time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Version == "" {
		c.Version = "dev"
	}
}

// Server is the API server. Create it with New, serve with Serve or use
// Handler, stop with Shutdown.
type Server struct {
	cfg Config
	log *slog.Logger
	run *runner.Runner

	ctx    context.Context // cancelled by Shutdown: all work stops
	cancel context.CancelFunc

	mu      sync.Mutex
	closing bool
	conns   map[*wsConn]struct{}
	pulls   map[string]context.CancelCauseFunc // pull reference → cancel
	httpSrv *http.Server

	connWG sync.WaitGroup // websocket handlers

	generated atomic.Int64
	requests  atomic.Int64
	tcpConns  atomic.Int64
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Runner == nil || cfg.Tokens == nil {
		return nil, errors.New("api: Config needs a Runner and Tokens")
	}
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:    cfg,
		log:    cfg.Logger,
		run:    cfg.Runner,
		ctx:    ctx,
		cancel: cancel,
		conns:  map[*wsConn]struct{}{},
		pulls:  map[string]context.CancelCauseFunc{},
	}
	return s, nil
}

// Handler returns the server's HTTP handler with its checks stacked:
// Host, then Origin/CORS, then the token, then the routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/ws", s.serveWS)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("POST /v1/chat/completions", s.serveChatCompletions)
	mux.HandleFunc("POST /v1/completions", s.serveCompletions)
	mux.HandleFunc("GET /health", s.serveHealth)
	mux.HandleFunc("GET /api/version", s.serveOllamaVersion)
	mux.HandleFunc("GET /api/tags", s.serveOllamaTags)
	mux.HandleFunc("GET /api/ps", s.serveOllamaPs)
	mux.HandleFunc("POST /api/show", s.serveOllamaShow)
	mux.HandleFunc("POST /api/chat", s.serveOllamaChat)
	mux.HandleFunc("POST /api/generate", s.serveOllamaGenerate)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeHTTPError(w, http.StatusNotFound, protocol.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return chain(mux,
		s.checkHost,   // DNS rebinding: only our own names reach anything
		s.checkOrigin, // browsers: only allow-listed pages (or native clients)
		s.requireToken,
	)
}

// Serve accepts connections on l until Shutdown. It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(l net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnState:         s.connState,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		return http.ErrServerClosed
	}
	s.httpSrv = srv
	s.mu.Unlock()
	return srv.Serve(l)
}

// connState caps open TCP connections (websockets and HTTP) at twice the
// websocket limit, so a flood cannot exhaust file descriptors.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		if s.tcpConns.Add(1) > int64(2*s.cfg.MaxConnections) {
			c.Close()
		}
	case http.StateHijacked, http.StateClosed:
		s.tcpConns.Add(-1)
	}
}

// Shutdown stops the server: new connections are refused, in-flight
// generations and pulls are cancelled (within one token), websocket
// clients get a closing event and a close frame with the reason, and
// Shutdown waits for all of it or ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	srv := s.httpSrv
	conns := make([]*wsConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.cancel()
	for _, c := range conns {
		c.closeWith(closeGoingAway, "server shutting down")
	}
	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
	}
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

// genRequest is a generation from either protocol.
type genRequest struct {
	req       engine.Request
	keepAlive *protocol.KeepAlive
}

// constraint compiles a response format into the engine's constraint
// (nil for plain text).
func constraint(rf *protocol.ResponseFormat) (engine.ConstraintMaker, error) {
	if rf == nil {
		return nil, nil
	}
	var sch *grammar.Schema
	switch rf.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		sch = grammar.AnyObject()
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
			return nil, protocol.Errorf(protocol.CodeBadRequest, "response_format json_schema needs json_schema.schema")
		}
		var err error
		if sch, err = grammar.Compile(rf.JSONSchema.Schema); err != nil {
			return nil, protocol.Errorf(protocol.CodeBadRequest, "response_format: %v", err)
		}
	default:
		return nil, protocol.Errorf(protocol.CodeBadRequest, "response_format type %q: want text, json_object or json_schema", rf.Type)
	}
	return func(v *tokenizer.Tokenizer) (sample.Constraint, error) { return sch.NewConstraint(v) }, nil
}

// sampling maps validated options to the engine's, applying defaults.
func (s *Server) sampling(o protocol.Options) (engine.Sampling, error) {
	if err := o.Validate(); err != nil {
		return engine.Sampling{}, err
	}
	if o.MaxTokens > s.cfg.MaxTokens {
		return engine.Sampling{}, protocol.Errorf(protocol.CodeBadRequest, "max_tokens %d exceeds the server's limit of %d", o.MaxTokens, s.cfg.MaxTokens)
	}
	t := float32(protocol.DefaultTemperature)
	if o.Temperature != nil {
		t = *o.Temperature
	}
	mt := o.MaxTokens
	if mt == 0 {
		mt = s.cfg.DefaultMaxTokens
	}
	return engine.Sampling{
		MaxTokens:        mt,
		Temperature:      t,
		TopK:             o.TopK,
		TopP:             o.TopP,
		MinP:             o.MinP,
		RepeatPenalty:    o.RepeatPenalty,
		RepeatLastN:      o.RepeatLastN,
		PresencePenalty:  o.PresencePenalty,
		FrequencyPenalty: o.FrequencyPenalty,
		Seed:             o.Seed,
		Stop:             o.Stop,
	}, nil
}

// generate runs one generation through the runner's FIFO queue (which
// tells queued its position, reloads a model keep-alive unloaded and
// re-arms keep-alive). ctx ends it at any point.
func (s *Server) generate(ctx context.Context, g genRequest, queued func(int), emit func(engine.Token) error) (protocol.GenStats, error) {
	s.requests.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()

	var o runner.GenOptions
	o.Queued = queued
	if g.keepAlive != nil {
		d := g.keepAlive.D
		o.KeepAlive = &d
	}
	st, waited, err := s.run.Generate(ctx, g.req, o, func(t engine.Token) error {
		if t.ID >= 0 {
			s.generated.Add(1)
		}
		return emit(t)
	})
	gs := toGenStats(st)
	gs.QueueMS = ms(waited)
	switch {
	case err == nil:
		return gs, nil
	case errors.Is(err, runner.ErrBusy):
		return gs, errBusy
	case errors.Is(err, runner.ErrNotLoaded):
		return gs, protocol.Errorf(protocol.CodeModelNotLoaded, "no model is loaded: send engine.load or models.select first (or press Start in the menu bar)")
	case ctx.Err() != nil || errors.Is(err, runner.ErrClosed):
		gs.FinishReason = string(engine.FinishCancelled)
		return gs, s.cancelErr(ctx.Err())
	case errors.Is(err, engine.ErrBadRequest):
		// The engine refused the request (bad ids, prompt longer than the
		// context, empty prompt, a constraint it cannot build).
		return gs, protocol.Errorf(protocol.CodeBadRequest, "%v", err)
	default:
		return gs, fmt.Errorf("generate: %w", err)
	}
}

var errBusy = protocol.Errorf(protocol.CodeBusy, "the server is busy: the request queue is full")

// errCancelled marks a generation the client cancelled (not an error for
// the client: it gets done with finish_reason "cancelled").
var errCancelled = errors.New("cancelled by the client")

func (s *Server) cancelErr(err error) error {
	if s.ctx.Err() != nil {
		return protocol.Errorf(protocol.CodeCancelled, "server shutting down")
	}
	return errCancelled
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func toGenStats(st engine.Stats) protocol.GenStats {
	g := protocol.GenStats{
		PromptTokens:     st.PromptTokens,
		GeneratedTokens:  st.GeneratedTokens,
		TimeToFirstToken: ms(st.TimeToFirstToken),
		DurationMS:       ms(st.Duration),
		PromptPerSecond:  st.PromptPerSecond,
		TokensPerSecond:  st.TokensPerSecond,
		FinishReason:     string(st.FinishReason),
		Speculation:      toSpecStats(st.Speculation),
	}
	if x := st.Experts; x != nil {
		g.Experts = &protocol.ExpertStats{Hits: x.Hits, Misses: x.Misses, ReadAheads: x.ReadAheads, AheadUsed: x.AheadUsed,
			HitRate: x.HitRate, BytesRead: x.BytesRead,
			ReadMBps: x.ReadMBps, StallSeconds: x.StallSeconds, CacheBytes: x.CacheBytes, InPlace: x.InPlace, Copied: x.Copied}
	}
	if r := st.Routing; r != nil {
		g.Routing = &protocol.RoutingStats{Agreement: r.Agreement, KL: r.KL, SwappedPct: r.SwappedPct, ResidentPct: r.ResidentPct}
	}
	return g
}

func toSpecStats(s *engine.SpecStats) *protocol.SpecStats {
	if s == nil {
		return nil
	}
	return &protocol.SpecStats{Proposed: s.Proposed, Verified: s.Verified, Accepted: s.Accepted, Declined: s.Declined,
		Verifies: s.Verifies, PlainSteps: s.PlainSteps, T1MS: s.T1MS, TRatio: s.TRatio, StallMS: s.StallMS, Acceptance: s.Acceptance,
		Depths: s.Depths, Refills: s.Refills}
}

func toModelInfo(m *engine.ModelInfo) *protocol.ModelInfo {
	if m == nil {
		return nil
	}
	return &protocol.ModelInfo{
		Name: m.Name, Path: m.Path, Arch: m.Arch, Layers: m.Layers, Embd: m.Embd, Vocab: m.Vocab,
		Experts: m.Experts, ExpertsUsed: m.ExpertsUsed, ContextLength: m.ContextLength,
		FileBytes: m.FileBytes, Demo: m.Demo, Memory: m.Memory, ExpertCacheBytes: m.ExpertCacheBytes,
	}
}

// status is the engine's status with the queue length.
func (s *Server) status() protocol.EngineStatus {
	st := s.run.Status()
	ps := protocol.EngineStatus{
		State:           string(st.State),
		Model:           toModelInfo(st.Model),
		Error:           st.Err,
		MemoryBytes:     st.MemoryBytes,
		QueueLength:     st.Waiting,
		Idle:            st.Idle,
		StoppedByUser:   st.StoppedByUser,
		Backend:         st.Backend,
		BackendReason:   st.BackendReason,
		BackendFallback: st.BackendFallback,
		Speculation:     toSpecStats(st.Speculation),
	}
	if !st.ExpiresAt.IsZero() {
		t := st.ExpiresAt.UTC()
		ps.ExpiresAt = &t
	}
	if p := st.Progress; p != nil && st.State == engine.StateLoading {
		ps.Progress = &protocol.LoadProgress{Phase: p.Phase, Text: p.Text, Done: p.Done, Total: p.Total, Fraction: p.Fraction}
	}
	if st.LastStats != nil {
		gs := toGenStats(*st.LastStats)
		ps.Last = &gs
	}
	return ps
}

func (s *Server) telemetry() protocol.Telemetry {
	st := s.run.Status()
	running, waiting := st.Running, st.Waiting
	s.mu.Lock()
	nconn := len(s.conns)
	s.mu.Unlock()
	t := protocol.Telemetry{
		Time:           time.Now().UTC(),
		State:          string(st.State),
		QueueLength:    waiting,
		Running:        running,
		MemoryBytes:    st.MemoryBytes,
		Connections:    nconn,
		GeneratedTotal: s.generated.Load(),
		RequestsTotal:  s.requests.Load(),
		Speculation:    toSpecStats(st.Speculation),
	}
	if st.LastStats != nil {
		t.TokensPerSecond = st.LastStats.TokensPerSecond
		if e := st.LastStats.Experts; e != nil {
			hit, rate := e.HitRate, e.ReadMBps*1e6
			t.CacheHitRate, t.SSDBytesPerSecond = &hit, &rate
		}
	}
	return t
}

// loadModel loads name (through Models) or, when empty, the default model.
func (s *Server) loadModel(ctx context.Context, name string) (string, error) {
	var path string
	var err error
	switch {
	case name != "":
		if err := protocol.ValidModelName(name); err != nil {
			return "", err
		}
		if s.cfg.Models == nil {
			return "", protocol.Errorf(protocol.CodeNotFound, "no model manager: model %q not found", name)
		}
		path, err = s.cfg.Models.Path(ctx, name)
	}
	if err != nil {
		return "", err
	}
	if err := s.run.Start(ctx, path); err != nil {
		if ctx.Err() != nil {
			return "", protocol.Errorf(protocol.CodeCancelled, "load cancelled")
		}
		return "", fmt.Errorf("load model: %w", err)
	}
	if path == "" {
		path = s.run.Status().Path
	}
	return path, nil
}
