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
)

// Engine is what the server needs from the engine; *engine.Engine has it.
type Engine interface {
	Load(ctx context.Context, path string) error
	Unload() error
	Status() engine.Status
	Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Stats, error)
}

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

// Config configures a Server. Engine and Tokens are required; zero limits
// take the defaults below.
type Config struct {
	Engine   Engine
	Tokens   TokenChecker
	Models   Models   // nil: models.* answer not_found
	Settings Settings // nil: settings.* answer not_found
	Logger   *slog.Logger
	Version  string // server version reported by hello

	// DefaultModel returns the model file to load when engine.load names
	// none (the selected model, or the demo model).
	DefaultModel func(ctx context.Context) (string, error)
	// OnSelect is called after models.select loaded a model.
	OnSelect func(name, path string)
	// KeepAlive returns how long a model stays loaded after a request that
	// sets no keep_alive: negative is forever, 0 unloads at once. nil: forever.
	KeepAlive func() time.Duration

	AllowedOrigins []string // origins (scheme://host[:port]) allowed besides none
	AllowedHosts   []string // Host names allowed besides localhost, 127.0.0.1 and ::1

	MaxMessageBytes   int           // websocket message and HTTP body limit; default 1 MiB
	MaxConnections    int           // websocket connections; default 64
	MaxQueue          int           // generations waiting behind the running one; default 16
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
	def(&c.MaxQueue, 16)
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
	cfg   Config
	log   *slog.Logger
	sched *scheduler

	ctx    context.Context // cancelled by Shutdown: all work stops
	cancel context.CancelFunc

	mu      sync.Mutex
	closing bool
	conns   map[*wsConn]struct{}
	pulls   map[string]context.CancelCauseFunc // pull reference → cancel
	httpSrv *http.Server

	connWG sync.WaitGroup // websocket handlers

	keep keepAlive

	generated atomic.Int64
	requests  atomic.Int64
	tcpConns  atomic.Int64
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil || cfg.Tokens == nil {
		return nil, errors.New("api: Config needs an Engine and Tokens")
	}
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:    cfg,
		log:    cfg.Logger,
		sched:  newScheduler(1, cfg.MaxQueue),
		ctx:    ctx,
		cancel: cancel,
		conns:  map[*wsConn]struct{}{},
		pulls:  map[string]context.CancelCauseFunc{},
	}
	s.keep.s = s
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
	s.keep.stop()
	return err
}

// genRequest is a generation from either protocol.
type genRequest struct {
	req       engine.Request
	keepAlive *protocol.KeepAlive
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

// generate runs one generation through the FIFO queue: it waits for the
// slot (telling queued its position), reloads a model that keep-alive
// unloaded, generates, and re-arms keep-alive. ctx ends it at any point.
func (s *Server) generate(ctx context.Context, g genRequest, queued func(int), emit func(engine.Token) error) (protocol.GenStats, error) {
	s.requests.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()

	release, waited, err := s.sched.acquire(ctx, queued)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return protocol.GenStats{FinishReason: string(engine.FinishCancelled), QueueMS: ms(waited)}, s.cancelErr(err)
		}
		return protocol.GenStats{}, err
	}
	defer release()
	s.keep.hold()
	defer s.keep.arm(g.keepAlive)

	if err := s.keep.ensureLoaded(ctx); err != nil {
		return protocol.GenStats{}, err
	}
	st, err := s.cfg.Engine.Generate(ctx, g.req, func(t engine.Token) error {
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
	case errors.Is(err, engine.ErrNoModel):
		return gs, protocol.Errorf(protocol.CodeModelNotLoaded, "no model is loaded: send engine.load or models.select first")
	case ctx.Err() != nil:
		gs.FinishReason = string(engine.FinishCancelled)
		return gs, s.cancelErr(ctx.Err())
	case st.FinishReason == "":
		// The engine refused the request before generating (bad ids,
		// prompt longer than the context, empty prompt).
		return gs, protocol.Errorf(protocol.CodeBadRequest, "%v", err)
	default:
		return gs, fmt.Errorf("generate: %w", err)
	}
}

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
	return protocol.GenStats{
		PromptTokens:     st.PromptTokens,
		GeneratedTokens:  st.GeneratedTokens,
		TimeToFirstToken: ms(st.TimeToFirstToken),
		DurationMS:       ms(st.Duration),
		PromptPerSecond:  st.PromptPerSecond,
		TokensPerSecond:  st.TokensPerSecond,
		FinishReason:     string(st.FinishReason),
	}
}

func toModelInfo(m *engine.ModelInfo) *protocol.ModelInfo {
	if m == nil {
		return nil
	}
	return &protocol.ModelInfo{
		Name: m.Name, Path: m.Path, Arch: m.Arch, Layers: m.Layers, Embd: m.Embd, Vocab: m.Vocab,
		Experts: m.Experts, ExpertsUsed: m.ExpertsUsed, ContextLength: m.ContextLength,
		FileBytes: m.FileBytes, Demo: m.Demo,
	}
}

// status is the engine's status with the queue length.
func (s *Server) status() protocol.EngineStatus {
	st := s.cfg.Engine.Status()
	_, waiting := s.sched.lengths()
	ps := protocol.EngineStatus{
		State:       string(st.State),
		Model:       toModelInfo(st.Model),
		Error:       st.Err,
		MemoryBytes: st.MemoryBytes,
		QueueLength: waiting,
	}
	if st.LastStats != nil {
		gs := toGenStats(*st.LastStats)
		ps.Last = &gs
	}
	return ps
}

func (s *Server) telemetry() protocol.Telemetry {
	st := s.cfg.Engine.Status()
	running, waiting := s.sched.lengths()
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
	}
	if st.LastStats != nil {
		t.TokensPerSecond = st.LastStats.TokensPerSecond
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
	case s.cfg.DefaultModel != nil:
		path, err = s.cfg.DefaultModel(ctx)
	default:
		return "", protocol.Errorf(protocol.CodeBadRequest, "no default model: name one")
	}
	if err != nil {
		return "", err
	}
	s.keep.forget()
	if err := s.cfg.Engine.Load(ctx, path); err != nil {
		return "", fmt.Errorf("load model: %w", err)
	}
	s.keep.arm(nil)
	return path, nil
}

// keepAlive unloads the model after a period without requests and loads
// it again (same file) when the next request comes.
type keepAlive struct {
	s *Server

	mu       sync.Mutex
	timer    *time.Timer
	unloaded string // the model keep-alive unloaded, for reloading
	stopped  bool
}

// hold stops the timer while a generation runs.
func (k *keepAlive) hold() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer != nil {
		k.timer.Stop()
	}
}

// arm starts the timer with the request's keep-alive, or the setting.
func (k *keepAlive) arm(req *protocol.KeepAlive) {
	d := time.Duration(-1)
	if req != nil {
		d = req.D
	} else if k.s.cfg.KeepAlive != nil {
		d = k.s.cfg.KeepAlive()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer != nil {
		k.timer.Stop()
	}
	if d < 0 || k.stopped {
		return
	}
	k.timer = time.AfterFunc(d, k.fire)
}

func (k *keepAlive) fire() {
	release, ok := k.s.sched.tryAcquire()
	if !ok {
		return // a request is running or waiting; it re-arms the timer
	}
	defer release()
	st := k.s.cfg.Engine.Status()
	if st.Model == nil {
		return
	}
	if err := k.s.cfg.Engine.Unload(); err != nil {
		k.s.log.Warn("keep-alive unload", "err", err)
		return
	}
	k.mu.Lock()
	k.unloaded = st.Model.Path
	k.mu.Unlock()
	k.s.log.Info("model unloaded after keep-alive", "path", st.Model.Path)
}

// ensureLoaded reloads the model keep-alive unloaded, if none is loaded.
func (k *keepAlive) ensureLoaded(ctx context.Context) error {
	k.mu.Lock()
	path := k.unloaded
	k.mu.Unlock()
	if path == "" || k.s.cfg.Engine.Status().Model != nil {
		return nil
	}
	k.s.log.Info("reloading model after keep-alive", "path", path)
	if err := k.s.cfg.Engine.Load(ctx, path); err != nil {
		return fmt.Errorf("reload %s: %w", path, err)
	}
	k.forget()
	return nil
}

// forget drops the reload memory (an explicit load or unload happened).
func (k *keepAlive) forget() {
	k.mu.Lock()
	k.unloaded = ""
	k.mu.Unlock()
}

func (k *keepAlive) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	if k.timer != nil {
		k.timer.Stop()
	}
}
