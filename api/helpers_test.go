package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-llm/strata/api"
	"github.com/strata-llm/strata/api/client"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/runner"
	"github.com/strata-llm/strata/internal/settings"
	"github.com/strata-llm/strata/internal/token"
)

// demoPath is the demo model (engine.EnsureDemoModel), generated once.
var demoPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-api-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	demoPath, err = engine.EnsureDemoModel(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo model:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func quietLogger() *slog.Logger {
	if os.Getenv("STRATA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// harness is a real server (real engine on the demo model) on a free
// loopback port.
type harness struct {
	t        *testing.T
	srv      *api.Server
	eng      *engine.Engine
	run      *runner.Runner
	tok      *token.Store
	settings *settings.Store
	addr     string // 127.0.0.1:PORT
	served   chan error
	stopOnce sync.Once
}

func start(t *testing.T, mod func(*api.Config)) *harness {
	t.Helper()
	return startWith(t, nil, mod)
}

// startWith also lets the test configure the runner (queue, keep-alive).
func startWith(t *testing.T, rmod func(*runner.Config), mod func(*api.Config)) *harness {
	t.Helper()
	eng := engine.New(engine.Options{Threads: 2, ContextLength: 1024, Logger: quietLogger()})
	rcfg := runner.Config{
		Engine:       pacedEngine{eng},
		DefaultModel: func(context.Context) (string, error) { return demoPath, nil },
		Logger:       quietLogger(),
	}
	if rmod != nil {
		rmod(&rcfg)
	}
	run, err := runner.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(context.Background(), demoPath); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tok, err := token.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := settings.Load(filepath.Join(dir, settings.FileName))
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{
		Runner:   run,
		Tokens:   tok,
		Settings: api.SettingsStore(st),
		Logger:   quietLogger(),
		Version:  "test",
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, eng: eng, run: run, tok: tok, settings: st, addr: l.Addr().String(), served: make(chan error, 1)}
	go func() { h.served <- srv.Serve(l) }()
	t.Cleanup(h.stop)
	return h
}

// tokenPace is the least time each generated token takes in these tests.
// The demo model decodes ~12,000 tokens/s on a Zen 5 (400 tokens in
// 33 ms), faster than a test's round trips, so a generation the tests
// expect to be running (queued behind, cancelled, duplicated, its socket
// filling) had already ended: TestQueue, TestMultiplexing,
// TestDuplicateID, TestCancelByContext, TestCompleteDeterministicAndCancel
// and TestSlowClientDisconnected failed on most runs without -race there.
// A real model is 100-1000 times slower than the demo; this one is paced
// to 2,000 tokens/s.
const tokenPace = 500 * time.Microsecond

// pacedEngine is the real engine, each of whose generated tokens is
// handed on no sooner than tokenPace after the one before (or after the
// generation started).
type pacedEngine struct{ *engine.Engine }

func (p pacedEngine) Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Stats, error) {
	next := time.Now().Add(tokenPace)
	return p.Engine.Generate(ctx, req, func(tk engine.Token) error {
		if d := time.Until(next); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		next = time.Now().Add(tokenPace)
		return emit(tk)
	})
}

func (h *harness) stop() { h.stopOnce.Do(h.doStop) }

func (h *harness) doStop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		h.t.Errorf("shutdown: %v", err)
	}
	select {
	case <-h.served:
	case <-ctx.Done():
		h.t.Error("Serve did not return after Shutdown")
	}
	h.run.Close()
	h.eng.Close()
}

func (h *harness) wsURL() string { return "ws://" + h.addr + "/v1/ws" }

func (h *harness) dial(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, h.wsURL(), client.Options{Token: h.tok.String(), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// request makes an HTTP request with the token (unless auth is "-").
func (h *harness) request(t *testing.T, method, path, body string, hdr map[string]string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+h.addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.tok.String())
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func ptr[T any](v T) *T { return &v }
