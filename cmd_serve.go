package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strata-llm/strata/api"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/routing"
	"github.com/strata-llm/strata/internal/backendpick"
	"github.com/strata-llm/strata/internal/dirs"
	"github.com/strata-llm/strata/internal/logfile"
	"github.com/strata-llm/strata/internal/runner"
	"github.com/strata-llm/strata/internal/settings"
	"github.com/strata-llm/strata/internal/token"
	"github.com/strata-llm/strata/models"
	"github.com/strata-llm/strata/resources"
)

// Log file rotation: 10 MiB per file, 5 old files kept.
const (
	logFileName  = "strata.log"
	logFileBytes = 10 << 20
	logFilesKept = 5
)

// program holds the parts of a running Strata (serve or the app), built
// once by openProgram and passed down explicitly.
type program struct {
	env      *cmdEnv
	log      *slog.Logger
	logFile  *logfile.Rotator
	settings *settings.Store
	token    *token.Store
	engine   *engine.Engine
	runner   *runner.Runner // the model lifecycle, shared by the API and the menu bar
	models   *models.Manager
	api      *api.Server
	notice   string               // from loading the settings (a bad file set aside), for the settings window
	pick     backendpick.Decision // what runs the model and why (openProgram, then watchSettings)
	pickFor  settings.Backend     // the choice pick was made for
	opts     programOptions
	addr     string // where the API listens, once it does
}

type programOptions struct {
	Addr         string // "" : loopback on the settings' port
	Model        string // "" : the demo model
	AllowNetwork bool   // permit a non-loopback Addr
	// Platform and Selftest decide the backend (nil: this machine and the
	// real Metal selftest); tests set them to run the emulator as the GPU.
	Platform *backendpick.Platform
	Selftest backendpick.Selftester
}

// openProgram creates the folders, the log file, the settings, the token,
// the engine and the API server. Nothing listens or loads yet.
func openProgram(env *cmdEnv, opts programOptions) (p *program, err error) {
	if err := env.Dirs.Create(); err != nil {
		return nil, err
	}
	p = &program{env: env, opts: opts}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if err := p.setupLogging(); err != nil {
		return nil, err
	}
	st, notice, err := settings.Load(filepath.Join(env.Dirs.Config, settings.FileName))
	if err != nil {
		return nil, err
	}
	if notice != "" {
		p.log.Warn(notice)
	}
	p.settings, p.notice = st, notice
	if p.token, err = token.Open(env.Dirs.Config); err != nil {
		return nil, err
	}
	cur := st.Get()
	var hosts []string
	if _, network, err := p.listenAddr(); err == nil && network {
		hosts = allowedHosts()
	}
	p.pick = p.resolveBackend(context.Background(), cur)
	p.engine = engine.New(engineOptions(cur, env.Dirs, p.log, p.pick))
	if p.models, err = openModels(env); err != nil {
		return nil, err
	}
	if p.runner, err = runner.New(runner.Config{
		Engine:       p.engine,
		DefaultModel: p.defaultModel,
		KeepAlive:    p.keepAlive,
		Logger:       p.log.With("component", "runner"),
	}); err != nil {
		return nil, err
	}
	p.api, err = api.New(api.Config{
		Runner:       p.runner,
		Tokens:       p.token,
		Settings:     api.SettingsStore(st),
		Models:       api.ModelManager(p.models),
		OnSelect:     p.selected,
		Logger:       p.log.With("component", "api"),
		Version:      version,
		AllowedHosts: hosts,
		Origins:      func() []string { return p.settings.Get().Browser.AllowedOrigins.List() },
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// resolveBackend decides what runs the model for s: at the first start of
// this app and OS version (or when the setting changes to Auto or Metal
// and no verdict is kept) it runs the Metal selftest, falling back to the
// CPU if it fails.
func (p *program) resolveBackend(ctx context.Context, s settings.Settings) backendpick.Decision {
	plat := backendpick.Current(version)
	if p.opts.Platform != nil {
		plat = *p.opts.Platform
	}
	run := p.opts.Selftest
	if run == nil {
		run = backendpick.MetalSelftest(false)
	}
	p.pickFor = s.Advanced.Backend
	return backendpick.Resolve(ctx, filepath.Join(p.env.Dirs.Data, backendpick.FileName), s.Advanced.Backend, plat, run, p.log)
}

// setupLogging logs to stderr and to a rotating file in the logs folder.
func (p *program) setupLogging() error {
	rot, err := logfile.Open(p.env.Dirs.Logs, logFileName, logFileBytes, logFilesKept)
	if err != nil {
		return err
	}
	p.logFile = rot
	h := slog.NewTextHandler(io.MultiWriter(p.env.Stderr, rot), &slog.HandlerOptions{Level: logLevel(slog.LevelInfo)})
	p.log = slog.New(h)
	p.env.Log = p.log
	return nil
}

// keepAlive is how long a model stays loaded after use, from the settings.
func (p *program) keepAlive() time.Duration {
	m := p.settings.Get().Memory.KeepLoadedMinutes
	if m < 0 {
		return -1
	}
	return time.Duration(m) * time.Minute
}

// defaultModel is the model loaded when none is named: --model, else the
// model chosen in the settings, else the demo model (generated into the
// cache folder at first use).
func (p *program) defaultModel(ctx context.Context) (string, error) {
	if p.opts.Model != "" {
		return p.opts.Model, nil
	}
	if name := p.settings.Get().Model; name != "" {
		path, err := p.models.Path(name)
		if err == nil {
			return path, nil
		}
		p.log.Warn("the chosen model is not available; using the demo model", "model", name, "err", err)
	}
	path, err := engine.EnsureDemoModel(ctx, p.env.Dirs.Cache)
	if err != nil {
		return "", fmt.Errorf("demo model: %w", err)
	}
	p.log.Info("using the demo model: random weights, so its text is gibberish; choose a real model with `strata pull` and --model", "path", path)
	return path, nil
}

// selected records models.select's choice in the settings.
func (p *program) selected(name, path string) {
	s := p.settings.Get()
	s.Model = name
	if err := p.settings.Set(s); err != nil {
		p.log.Warn("saving the chosen model", "model", name, "err", err)
	}
}

// listenAddr is where to listen: --addr, else loopback on the settings'
// port (all interfaces if the settings allow the network).
func (p *program) listenAddr() (addr string, network bool, err error) {
	s := p.settings.Get().API
	addr = p.opts.Addr
	if addr == "" {
		host := "127.0.0.1"
		if s.AllowNetwork {
			host = ""
		}
		addr = net.JoinHostPort(host, strconv.Itoa(s.Port))
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, fmt.Errorf("%w: --addr %q: want HOST:PORT (e.g. 127.0.0.1:%d)", errUsage, addr, settings.DefaultPort)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if !loopback && !s.AllowNetwork && !p.opts.AllowNetwork {
		return "", false, fmt.Errorf("%w: %s is not a loopback address: other devices could connect; pass --allow-network or turn on \"Allow other devices on the network\" in the settings", errUsage, addr)
	}
	return addr, !loopback, nil
}

// listen opens the API's listener.
func (p *program) listen() (net.Listener, error) {
	addr, network, err := p.listenAddr()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if network {
		p.log.Warn("the API accepts connections from other devices on the network (they still need the token)", "addr", l.Addr().String())
	}
	p.addr = l.Addr().String()
	return l, nil
}

// allowedHosts lists this machine's names and addresses, for the Host
// check when the API listens beyond loopback.
func allowedHosts() []string {
	var hosts []string
	if h, err := os.Hostname(); err == nil {
		h = strings.ToLower(h)
		hosts = append(hosts, h, h+".local")
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				hosts = append(hosts, ipn.IP.String())
			}
		}
	}
	return hosts
}

// serveAPI serves the API on l, prints the address and token, loads the
// default model in the background if load is set, and serves until ctx
// ends, then shuts down cleanly.
func (p *program) serveAPI(ctx context.Context, l net.Listener, load bool) error {
	served := make(chan error, 1)
	go func() { served <- p.api.Serve(l) }()
	host := p.addr
	if h, port, err := net.SplitHostPort(p.addr); err == nil && (h == "::" || h == "0.0.0.0" || h == "") {
		host = net.JoinHostPort("127.0.0.1", port)
	}
	fmt.Fprintf(p.env.Stdout, "strata %s serving on http://%s (websocket ws://%s/v1/ws)\n", version, host, host)
	fmt.Fprintf(p.env.Stdout, "API token: %s (in %s)\n", p.token.String(), p.token.Path())
	p.log.Info("api listening", "addr", p.addr, "logs", p.logFile.Path())

	if load {
		go p.loadDefault(ctx)
	}
	go p.watchSettings(ctx)

	select {
	case err := <-served:
		return fmt.Errorf("api: %w", err)
	case <-ctx.Done():
	}
	p.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.api.Shutdown(sctx)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// loadDefault loads the default model, logging a failure (the API stays
// up without a model and says so).
func (p *program) loadDefault(ctx context.Context) {
	if err := p.runner.Start(ctx, ""); err != nil && ctx.Err() == nil {
		p.log.Error("loading the model failed; the API is up without one", "err", err)
	}
}

// watchSettings applies settings changes: speculation from the engine's
// next request; threads and context length reload the loaded model (after
// the queued generations), and it logs that the API's port and network
// access apply when Strata starts next. Keep-alive applies from the next
// request on.
func (p *program) watchSettings(ctx context.Context) {
	ch, stop := p.settings.Subscribe()
	defer stop()
	first := p.settings.Get()
	for {
		select {
		case <-ctx.Done():
			return
		case s, ok := <-ch:
			if !ok {
				return
			}
			if s.Advanced.Backend != p.pickFor {
				p.pick = p.resolveBackend(ctx, s)
			}
			p.engine.SetOptions(engineOptions(s, p.env.Dirs, p.log, p.pick))
			if s.Advanced != first.Advanced || s.Memory.ExpertCacheGB != first.Memory.ExpertCacheGB ||
				s.Memory.LearnUsage != first.Memory.LearnUsage {
				p.log.Info("settings changed: reloading the model with the new threads, context length, backend or expert cache",
					"threads", s.Advanced.Threads, "context_length", s.Advanced.ContextLength, "backend", p.pick.Backend,
					"expert_cache_gb", s.Memory.ExpertCacheGB)
				go func() {
					if err := p.runner.Reload(ctx); err != nil && ctx.Err() == nil {
						p.log.Error("reloading the model after a settings change", "err", err)
					}
				}()
			}
			if s.Speculation != first.Speculation {
				p.log.Info("settings changed: speculative decoding applies from the next request",
					"enabled", s.Speculation.Enabled, "auto_depth", s.Speculation.AutoDepth, "max_draft", s.Speculation.MaxDraftTokens)
			}
			if s.API != first.API {
				p.log.Info("settings changed: the API address applies when Strata starts next")
			}
			first = s
		}
	}
}

// close releases everything openProgram made.
func (p *program) close() {
	if p.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p.api.Shutdown(ctx)
		cancel()
	}
	if p.runner != nil {
		p.runner.Close()
	}
	if p.engine != nil {
		p.engine.Close()
	}
	if p.models != nil {
		p.models.Close()
	}
	if p.log != nil {
		p.log.Info("stopped")
	}
	if p.logFile != nil {
		p.env.Log = cliLogger(p.env.Stderr)
		p.logFile.Close()
	}
}

func cmdServe(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "serve", "strata serve [--addr HOST:PORT] [--home DIR] [--model FILE] [--allow-network]",
		"Runs the engine and the local API (websocket /v1/ws and OpenAI-compatible HTTP)\nwithout a UI. Prints the address and the API token. With no --model it\nuses the demo model (random weights), generated at first start.")
	var opts programOptions
	fs.StringVar(&opts.Addr, "addr", "", "listen address (default 127.0.0.1 on the settings' port, "+strconv.Itoa(settings.DefaultPort)+")")
	fs.StringVar(&opts.Model, "model", "", "GGUF model `file` to load (default: the demo model)")
	fs.BoolVar(&opts.AllowNetwork, "allow-network", false, "allow a non-loopback --addr (other devices can connect with the token)")
	home := fs.String("home", "", "keep all files under `DIR`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := applyHome(env, *home); err != nil {
		return err
	}
	return serve(ctx, env, opts)
}

// serve runs the program headless until ctx ends.
func serve(ctx context.Context, env *cmdEnv, opts programOptions) error {
	p, err := openProgram(env, opts)
	if err != nil {
		return err
	}
	defer p.close()
	l, err := p.listen()
	if err != nil {
		return err
	}
	return p.serveAPI(ctx, l, true)
}

// applyHome points env at DIR when a subcommand got --home.
func applyHome(env *cmdEnv, home string) error {
	if home == "" {
		return nil
	}
	d, err := resolveDirs(home)
	if err != nil {
		return err
	}
	env.Dirs = d
	return nil
}

// engineOptions are the engine's options from the settings: the one place
// where settings become engine behaviour. Threads, context length and the
// expert cache apply when the model next loads (watchSettings reloads it);
// cache-aware routing and speculative decoding from the next generation.
// The backend is pick's, decided from s.Advanced.Backend by resolveBackend.
func engineOptions(s settings.Settings, d dirs.Dirs, log *slog.Logger, pick backendpick.Decision) engine.Options {
	o := engine.Options{
		Backend:         pick.Backend,
		BackendChecked:  pick.Checked,
		BackendReason:   pick.Reason,
		BackendFallback: pick.Fallback,
		Threads:         s.Advanced.Threads,
		ContextLength:   s.Advanced.ContextLength,
		ExpertCache:     int64(s.Memory.ExpertCacheGB * 1e9),
		Logger:          log,
		Routing: routing.CacheRoute{
			Enabled:      s.Routing.Enabled,
			Lambda:       s.Routing.Strength,
			ProtectedTop: s.Routing.ProtectedTop,
			AlwaysKept:   s.Routing.AlwaysKept,
			MaxRank:      s.Routing.MaxRankWindow,
		},
		Speculation: engine.Speculation{
			Enabled:      s.Speculation.Enabled,
			Gate:         s.Speculation.AutoDepth,
			MaxDraft:     s.Speculation.MaxDraftTokens,
			MinDraftProb: s.Speculation.MinDraftProb,
			Lookup:       s.Speculation.PromptLookup,
			MTP:          s.Speculation.MTP,
		},
	}
	if s.Memory.LearnUsage && d.Data != "" {
		o.HistoryDir = historyDir(d.Data)
	}
	if d.Data != "" {
		o.ProfileDirs = []string{profilesDir(d.Data)}
	}
	o.Profiles = resources.Profiles()
	return o
}
