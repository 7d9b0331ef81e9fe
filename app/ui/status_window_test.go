package ui

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/strata-llm/strata/api/client"
	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/engine"
)

func TestLiveStatus(t *testing.T) {
	var info func() (string, string)
	f := newFixture(t, func(d *Deps) {
		withAPI(t, 32)(d)
		info = d.APIInfo
	})
	if err := f.eng.Load(context.Background(), f.u.d.DefaultModel); err != nil {
		t.Fatal(err)
	}
	u := f.u
	u.Menu()
	u.Watch()
	u.ShowStatus()
	addr, tok := info()
	c, err := client.Dial(context.Background(), "ws://"+addr+"/v1/ws", client.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Long generations, one after another until the test has seen a
	// speed (a sampled end-of-text can end one early): the menu shows
	// the speed while they run.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if _, err := c.Complete(ctx, protocol.CompleteParams{Prompt: "Once", Options: protocol.Options{MaxTokens: 4000}}, nil); err != nil && ctx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var cur float64
	waitFor(t, "a live speed", func() bool {
		u.locked(func() { cur = u.live.current() })
		return cur > 0 && u.Status().State == engine.StateGenerating
	})
	line := u.StatusLine()
	if !strings.Contains(line, "— generating · ") || !strings.HasSuffix(line, " tokens/s") {
		t.Errorf("status line while generating: %q", line)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// After it: the Status window's plot has drawn the speed, the cache
	// and SSD plots stay hidden (the engine reports neither).
	waitFor(t, "the last reply's speed", func() bool { return u.Status().LastStats != nil })
	var lines int
	var speed, mem, note string
	var hitShown, ssdShown bool
	waitFor(t, "the plot", func() bool {
		u.locked(func() {
			v := u.statusView
			r := test.WidgetRenderer(v.tps).(*plotRenderer)
			lines, speed, mem, note = len(r.lines), v.speed.Text, v.mem.Text, v.note.Text
			hitShown, ssdShown = v.hit.Visible(), v.ssd.Visible()
		})
		return lines > 0 && strings.Contains(speed, "last reply")
	})
	if hitShown || ssdShown {
		t.Error("cache or SSD plot shown without figures from the engine")
	}
	if !strings.HasSuffix(mem, " in use") || !strings.Contains(note, "appear here when the engine streams") {
		t.Errorf("memory %q, note %q", mem, note)
	}
	if l, _, _ := item(t, u, "detail"); !strings.HasPrefix(l, "Memory in use: ") || strings.Contains(l, "cache") {
		t.Errorf("detail line %q", l)
	}
}

// Status returns the engine status the UI last saw (tests).
func (u *UI) Status() engine.Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.status
}

// telemetry makes n readings a second apart: a burst of generation in
// the middle, optionally with cache and SSD figures.
func telemetry(start time.Time, n int, streaming bool) []protocol.Telemetry {
	var out []protocol.Telemetry
	var total int64
	for i := 0; i < n; i++ {
		rate := 0.0
		if i > n/4 && i < 3*n/4 {
			rate = 30 + 10*math.Sin(float64(i)/5)
		}
		total += int64(rate)
		tel := protocol.Telemetry{Time: start.Add(time.Duration(i) * time.Second), State: "ready", GeneratedTotal: total, MemoryBytes: 3 << 30}
		if streaming {
			hit, ssd := 0.8+0.1*math.Cos(float64(i)/7), 900e6*rate/40
			tel.CacheHitRate, tel.SSDBytesPerSecond = &hit, &ssd
		}
		out = append(out, tel)
	}
	return out
}

func TestStatusWindow(t *testing.T) {
	f := newFixture(t, func(d *Deps) { d.APIInfo = func() (string, string) { return "", "" } })
	u := f.u
	w := u.ShowStatus()
	u.Menu()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	u.locked(func() {
		if u.statusView.note.Text != "Waiting for the engine's figures…" {
			t.Errorf("note before figures: %q", u.statusView.note.Text)
		}
		for _, tel := range telemetry(start, 240, false) {
			u.live.add(tel)
		}
		u.refreshLocked()
		if u.statusView.hit.Visible() || u.statusView.ssd.Visible() {
			t.Error("cache/SSD plots without figures")
		}
		test.AssertImageMatches(t, "status.png", w.Canvas().Capture())
	})

	// Old readings fall off after plotSpan; cache and SSD figures, once
	// reported, get their plots and a place in the menu.
	u.locked(func() {
		for _, tel := range telemetry(start.Add(240*time.Second), 120, true) {
			u.live.add(tel)
		}
		u.refreshLocked()
		if got := u.live.samples[0].t; !got.Equal(start.Add(59 * time.Second)) {
			t.Errorf("oldest reading %v, want 5 minutes before the newest", got)
		}
		if !u.statusView.hit.Visible() || !u.statusView.ssd.Visible() {
			t.Error("cache/SSD plots hidden although reported")
		}
		if r := test.WidgetRenderer(u.statusView.hit).(*plotRenderer); len(r.lines) != 119 {
			t.Errorf("cache plot: %d segments, want 119", len(r.lines))
		}
	})
	// With the engine stopped the detail line says so, without figures.
	if l, _, _ := item(t, u, "detail"); l != "No model loaded" {
		t.Errorf("detail %q", l)
	}
	u.locked(func() {
		u.status.Model = &engine.ModelInfo{Name: "m"}
		u.status.MemoryBytes = 3 << 30
		u.refreshLocked()
	})
	if l, _, _ := item(t, u, "detail"); !strings.HasPrefix(l, "Memory in use: 3.0 GB · cache hits ") || !strings.Contains(l, " MB/s") {
		t.Errorf("detail %q", l)
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{{0, 1}, {0.3, 0.5}, {1, 1}, {1.2, 2}, {37, 50}, {51, 100}, {880, 1000}} {
		if got := niceCeil(tt.in); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// With experts streamed from the SSD, the engine's cache and SSD figures
// reach the menu and the Status window's plots through the API.
func TestLiveStatusStreaming(t *testing.T) {
	var info func() (string, string)
	f := newFixture(t, func(d *Deps) {
		eng := engine.New(engine.Options{Threads: 1, Streaming: engine.StreamAlways, Logger: d.Log})
		t.Cleanup(func() { eng.Close() })
		d.Engine = eng
		withAPI(t, 16)(d)
		info = d.APIInfo
	})
	if err := f.eng.Load(context.Background(), f.u.d.DefaultModel); err != nil {
		t.Fatal(err)
	}
	if m := f.eng.Status().Model; m == nil || m.Memory != "streaming experts" {
		t.Fatalf("model not streamed: %+v", m)
	}
	u := f.u
	u.Menu()
	u.Watch()
	u.ShowStatus()
	addr, tok := info()
	c, err := client.Dial(context.Background(), "ws://"+addr+"/v1/ws", client.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Complete(context.Background(), protocol.CompleteParams{Prompt: "Once", Options: protocol.Options{MaxTokens: 16}}, nil); err != nil {
		t.Fatal(err)
	}
	ex := f.eng.Status().LastStats.Experts
	if ex == nil {
		t.Fatal("no expert stats from a streamed generation")
	}
	var hitShown, ssdShown bool
	waitFor(t, "the cache and SSD plots", func() bool {
		u.locked(func() { hitShown, ssdShown = u.statusView.hit.Visible(), u.statusView.ssd.Visible() })
		return hitShown && ssdShown
	})
	l, _, _ := item(t, u, "detail")
	if want := fmt.Sprintf("cache hits %.0f%%", ex.HitRate*100); !strings.Contains(l, want) || !strings.Contains(l, " MB/s") {
		t.Errorf("detail line %q, want %q and the SSD rate", l, want)
	}
}

// TestLoadProgressShown: while the model loads, the menu's status line,
// the tray badge and the Status window show how far (fed from the engine
// through the runner); the bar goes when the model is ready.
func TestLoadProgressShown(t *testing.T) {
	f := newFixture(t, nil)
	u := f.u
	u.Menu()
	u.Watch()
	u.ShowStatus()
	reached, release := make(chan struct{}), make(chan struct{})
	o := f.eng.Options()
	o.OnProgress = func(p engine.Progress) {
		if p.Phase == engine.PhaseReading && p.Done == p.Total {
			close(reached)
			<-release
		}
	}
	f.eng.SetOptions(o)
	loaded := make(chan error, 1)
	go func() { loaded <- u.d.Runner.Start(context.Background(), u.d.DefaultModel) }()
	<-reached
	const line = "Loading the model… 100% · reading the model into memory"
	waitFor(t, "the load's progress", func() bool { return u.StatusLine() == line })
	var shown bool
	var value float64
	var badge Badge
	u.locked(func() {
		shown, value = u.statusView.load.Visible(), u.statusView.load.Value
		badge = u.badgeLocked()
	})
	close(release)
	if !shown || value != 1 || badge.Title != "100%" {
		t.Fatalf("while loading: bar shown %v at %g, badge %+v", shown, value, badge)
	}
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ready", func() bool { return strings.Contains(u.StatusLine(), "— ready") })
	u.locked(func() { shown = u.statusView.load.Visible() })
	if shown {
		t.Fatal("the progress bar stays after the load")
	}
}
