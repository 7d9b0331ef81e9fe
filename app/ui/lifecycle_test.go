package ui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/runner"
)

// The tray's Start and Stop drive the same runner the API generates
// through: Stop cancels a running request at once and makes the next one
// fail as "not loaded"; after keep-alive unloads, the tray says idle, not
// stopped, and a request loads the model again.
func TestTrayAndAPIShareOneLifecycle(t *testing.T) {
	var keep time.Duration = time.Hour
	var mu sync.Mutex
	f := newFixture(t, nil)
	run, err := runner.New(runner.Config{Engine: f.eng, Logger: f.u.log,
		KeepAlive: func() time.Duration { mu.Lock(); defer mu.Unlock(); return keep }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	f.u.d.Runner = run
	u := f.u
	u.Menu()
	u.Watch()
	gen := func(ctx context.Context, n int, emit func(engine.Token) error) error {
		_, _, err := run.Generate(ctx, engine.Request{Prompt: "hi", Sampling: engine.Sampling{MaxTokens: n}}, runner.GenOptions{}, emit)
		return err
	}

	tap(t, u, LabelStart)
	waitFor(t, "ready", func() bool { return strings.Contains(u.StatusLine(), "— ready · unloads in 60 min") })

	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once sync.Once
		done <- gen(context.Background(), 100000, func(engine.Token) error { once.Do(func() { close(started) }); return nil })
	}()
	<-started
	tap(t, u, LabelStop)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("running request ended with %v, want cancelled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not cancel the running request")
	}
	waitFor(t, "stopped", func() bool { return u.StatusLine() == "Engine stopped" })
	if err := gen(context.Background(), 2, func(engine.Token) error { return nil }); !errors.Is(err, runner.ErrNotLoaded) {
		t.Fatalf("request after Stop: %v", err)
	}

	// Keep-alive unloads: idle, not stopped; a request reloads.
	mu.Lock()
	keep = 50 * time.Millisecond
	mu.Unlock()
	tap(t, u, LabelStart)
	waitFor(t, "idle", func() bool { return u.StatusLine() == LineIdle })
	if _, dis, _ := item(t, u, LabelStart); dis {
		t.Error("Start disabled while idle")
	}
	if err := gen(context.Background(), 2, func(engine.Token) error { return nil }); err != nil {
		t.Fatalf("request while idle: %v", err)
	}
}
