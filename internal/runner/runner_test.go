package runner_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/runner"
)

var demoPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-runner-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	demoPath, err = engine.EnsureDemoModel(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo model:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// countingEngine is the real engine, counting the loads it is asked for.
type countingEngine struct {
	*engine.Engine
	loads, unloads atomic.Int32
}

func (c *countingEngine) Load(ctx context.Context, path string) error {
	c.loads.Add(1)
	return c.Engine.Load(ctx, path)
}

func (c *countingEngine) Unload() error {
	c.unloads.Add(1)
	return c.Engine.Unload()
}

func newRunner(t *testing.T, keep time.Duration) (*runner.Runner, *countingEngine) {
	t.Helper()
	eng := &countingEngine{Engine: engine.New(engine.Options{Threads: 2, ContextLength: 256,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})}
	var keepNS atomic.Int64
	keepNS.Store(int64(keep))
	r, err := runner.New(runner.Config{
		Engine:       eng,
		DefaultModel: func(context.Context) (string, error) { return demoPath, nil },
		KeepAlive:    func() time.Duration { return time.Duration(keepNS.Load()) },
		MaxQueue:     32,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		eng.Close()
	})
	return r, eng
}

func gen(ctx context.Context, r *runner.Runner, n int, keep *time.Duration) (engine.Stats, error) {
	st, _, err := r.Generate(ctx, engine.Request{Prompt: "hello", Sampling: engine.Sampling{MaxTokens: n}},
		runner.GenOptions{KeepAlive: keep}, func(engine.Token) error { return nil })
	return st, err
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func loaded(r *runner.Runner) bool { return r.Status().Model != nil }

func TestKeepAliveExpiryAndReload(t *testing.T) {
	r, eng := newRunner(t, 150*time.Millisecond)
	ctx := context.Background()
	if err := r.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	st := r.Status()
	if st.Model == nil || st.ExpiresAt.IsZero() || time.Until(st.ExpiresAt) > 150*time.Millisecond {
		t.Fatalf("after start: %+v", st)
	}
	if _, err := gen(ctx, r, 2, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "keep-alive unload", func() bool { return !loaded(r) })
	st = r.Status()
	if !st.Idle || st.StoppedByUser || st.Path != demoPath || !st.ExpiresAt.IsZero() {
		t.Fatalf("after expiry: idle=%v stopped=%v path=%q expires=%v", st.Idle, st.StoppedByUser, st.Path, st.ExpiresAt)
	}
	if _, err := gen(ctx, r, 2, nil); err != nil {
		t.Fatalf("request after idle: %v", err)
	}
	if n := eng.loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2 (start, reload)", n)
	}
	if st := r.Status(); st.Idle || st.Model == nil {
		t.Errorf("after reload: %+v", st)
	}
}

func TestKeepAliveOverride(t *testing.T) {
	tests := []struct {
		name    string
		setting time.Duration
		req     time.Duration
		unload  bool // unloads within the wait
		wait    time.Duration
	}{
		{"zero unloads at once", time.Hour, 0, true, 2 * time.Second},
		{"negative keeps forever", 50 * time.Millisecond, -1, false, 400 * time.Millisecond},
		{"short request overrides long setting", time.Hour, 100 * time.Millisecond, true, 3 * time.Second},
		{"long request overrides short setting", 50 * time.Millisecond, time.Hour, false, 400 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRunner(t, tc.setting)
			ctx := context.Background()
			if err := r.Start(ctx, demoPath); err != nil {
				t.Fatal(err)
			}
			keep := tc.req
			if _, err := gen(ctx, r, 2, &keep); err != nil {
				t.Fatal(err)
			}
			st := r.Status()
			switch {
			case tc.req < 0 && !st.ExpiresAt.Equal(runner.Forever):
				t.Errorf("expires_at %v, want Forever", st.ExpiresAt)
			case tc.req > time.Minute && time.Until(st.ExpiresAt) < 59*time.Minute:
				t.Errorf("expires_at %v, want an hour from now", st.ExpiresAt)
			}
			deadline := time.Now().Add(tc.wait)
			for loaded(r) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := !loaded(r); got != tc.unload {
				t.Errorf("unloaded=%v, want %v", got, tc.unload)
			}
			if tc.unload && !r.Status().Idle {
				t.Error("keep-alive unload not reported as idle")
			}
		})
	}
}

// 20 requests arriving together at an idle runner load the model once.
func TestSingleFlightReload(t *testing.T) {
	r, eng := newRunner(t, time.Hour)
	ctx := context.Background()
	if err := r.Start(ctx, demoPath); err != nil {
		t.Fatal(err)
	}
	zero := time.Duration(0)
	if _, err := gen(ctx, r, 1, &zero); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "unload", func() bool { return r.Status().Idle })
	before := eng.loads.Load()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := gen(ctx, r, 2, nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := eng.loads.Load() - before; n != 1 {
		t.Errorf("%d loads for 20 concurrent first requests, want 1", n)
	}
}

// 20 concurrent Starts (menu bar and API at once) share one load.
func TestSingleFlightStart(t *testing.T) {
	r, eng := newRunner(t, time.Hour)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Start(context.Background(), ""); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := eng.loads.Load(); n != 1 {
		t.Errorf("%d loads, want 1", n)
	}
}

// A request arriving while keep-alive unloads waits for it and reloads.
func TestRequestDuringUnload(t *testing.T) {
	r, eng := newRunner(t, time.Hour)
	ctx := context.Background()
	if err := r.Start(ctx, demoPath); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		zero := time.Duration(0)
		if _, err := gen(ctx, r, 1, &zero); err != nil { // unloads right after
			t.Fatal(err)
		}
		if _, err := gen(ctx, r, 1, nil); err != nil { // arrives during or after the unload
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if eng.loads.Load() < 2 {
		t.Errorf("%d loads: requests never reloaded", eng.loads.Load())
	}
}

// Stop (the menu bar's) cancels the running generation at once, unloads,
// and requests then fail until Start; the API sees the same state.
func TestStopByUserCancelsAndSharesState(t *testing.T) {
	r, _ := newRunner(t, time.Hour)
	ctx := context.Background()
	if err := r.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once sync.Once
		_, _, err := r.Generate(ctx, engine.Request{Prompt: "long", Sampling: engine.Sampling{MaxTokens: 100000}},
			runner.GenOptions{}, func(engine.Token) error {
				once.Do(func() { close(started) })
				// A consumer of 1,000 tokens/s: the demo model alone
				// fills the 256 positions in ~20 ms on a Zen 5, so the
				// generation had ended before Stop came.
				time.Sleep(time.Millisecond)
				return nil
			})
		done <- err
	}()
	<-started
	t0 := time.Now()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Stop took %v behind a running generation", d)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("running generation ended with %v, want cancelled", err)
	}
	st := r.Status()
	if st.Model != nil || !st.StoppedByUser || st.Idle {
		t.Fatalf("after Stop: %+v", st)
	}
	if _, err := gen(ctx, r, 1, nil); !errors.Is(err, runner.ErrNotLoaded) {
		t.Fatalf("request after Stop: %v, want ErrNotLoaded", err)
	}
	if err := r.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.StoppedByUser || st.Model == nil {
		t.Fatalf("after Start: %+v", st)
	}
	if _, err := gen(ctx, r, 1, nil); err != nil {
		t.Fatal(err)
	}
}

// A load is cancelled when its only caller gives up; Stop cancels it too.
func TestLoadCancellable(t *testing.T) {
	r, _ := newRunner(t, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Start(ctx, demoPath); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a cancelled context: %v", err)
	}
	waitFor(t, "load to settle", func() bool { s := r.Status(); return s.State != engine.StateLoading })
	if err := r.Start(context.Background(), demoPath); err != nil {
		t.Fatalf("Start after a cancelled one: %v", err)
	}
}

func TestSubscribeSeesLifecycle(t *testing.T) {
	r, _ := newRunner(t, 100*time.Millisecond)
	ch, stop := r.Subscribe()
	defer stop()
	if err := r.Start(context.Background(), demoPath); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-ch:
			if s.Idle && s.Model == nil {
				return
			}
		case <-deadline:
			t.Fatal("no idle status published")
		}
	}
}

func TestReload(t *testing.T) {
	r, eng := newRunner(t, time.Hour)
	if err := r.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if eng.loads.Load() != 0 {
		t.Fatal("Reload loaded with nothing loaded")
	}
	if err := r.Start(context.Background(), demoPath); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if eng.loads.Load() != 2 || !loaded(r) {
		t.Fatalf("loads %d, loaded %v", eng.loads.Load(), loaded(r))
	}
}
