package ui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/strata-llm/strata/app/autostart"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/dirs"
	"github.com/strata-llm/strata/internal/runner"
	"github.com/strata-llm/strata/internal/settings"
	"github.com/strata-llm/strata/models"
	"github.com/strata-llm/strata/resources"
)

// demoPath generates the demo model once for all tests.
var demoPath = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "strata-ui-demo-")
	if err != nil {
		return "", err
	}
	return engine.EnsureDemoModel(context.Background(), dir)
})

type fixture struct {
	u     *UI
	eng   *engine.Engine
	store *settings.Store
	dirs  dirs.Dirs
}

func newFixture(t *testing.T, mod func(*Deps)) *fixture {
	t.Helper()
	demo, err := demoPath()
	if err != nil {
		t.Fatalf("demo model: %v", err)
	}
	a := test.NewTempApp(t)
	d, err := dirs.Under(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Create(); err != nil {
		t.Fatal(err)
	}
	store, notice, err := settings.Load(filepath.Join(d.Config, settings.FileName))
	if err != nil || notice != "" {
		t.Fatalf("settings: %v %q", err, notice)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	eng := engine.New(engine.Options{Threads: 1, Logger: log})
	run, err := runner.New(runner.Config{Engine: eng, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close(); eng.Close() })
	deps := Deps{App: a, Engine: eng, Runner: run, Settings: store, DefaultModel: demo, Dirs: d, Log: log, TotalRAM: 16 << 30}
	if mod != nil {
		mod(&deps)
	}
	u := New(deps)
	t.Cleanup(u.Close)
	return &fixture{u: u, eng: deps.Engine, store: store, dirs: d}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// waitFor polls cond until it holds or 60 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func item(t *testing.T, u *UI, label string) (label2 string, disabled, checked bool) {
	t.Helper()
	it, ok := u.Item(label)
	if !ok {
		t.Fatalf("no menu item %q", label)
	}
	return it.Label, it.Disabled, it.Checked
}

// tap runs a menu item's action, looked up by label (the tray host
// renumbers items) through Item, which copies it under the UI's lock.
func tap(t *testing.T, u *UI, label string) {
	t.Helper()
	it, ok := u.Item(label)
	if !ok {
		t.Fatalf("no menu item %q", label)
	}
	if it.Disabled {
		t.Fatalf("%q is disabled", label)
	}
	it.Action()
}

func TestTrayStartStop(t *testing.T) {
	var badges []Badge
	var bmu sync.Mutex
	f := newFixture(t, func(d *Deps) {
		d.APIInfo = func() (string, string) { return "127.0.0.1:11711", "tok-123" }
	})
	u := f.u
	menu := u.Menu()
	var labels []string
	for _, it := range menu.Items {
		if !it.IsSeparator {
			labels = append(labels, it.Label)
		}
	}
	want := []string{"Engine stopped", "No model loaded", LabelStart, LabelStop, LabelChat, LabelStatus, LabelModels, LabelSettings, LabelCopyAPI, LabelLogs, LabelLogin, LabelQuit}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Fatalf("menu items %q, want %q", labels, want)
	}
	u.OnBadge(func(b Badge) { bmu.Lock(); badges = append(badges, b); bmu.Unlock() })
	u.Watch()

	// Stopped: Start enabled, Stop disabled, the status line is disabled text.
	if _, dis, _ := item(t, u, "status"); !dis {
		t.Error("status line should be disabled (it is information)")
	}
	if _, dis, _ := item(t, u, LabelStart); dis {
		t.Error("Start disabled while stopped")
	}
	if _, dis, _ := item(t, u, LabelStop); !dis {
		t.Error("Stop enabled while stopped")
	}
	if _, dis, _ := item(t, u, LabelLogin); !dis {
		t.Error("Start at login enabled without an autostart")
	}

	tap(t, u, LabelStart)
	waitFor(t, "ready status", func() bool { return strings.HasSuffix(u.StatusLine(), "— ready") })
	if st := f.eng.Status(); u.StatusLine() != u.modelName(st)+" — ready" || st.Model == nil {
		t.Errorf("status line %q for %+v", u.StatusLine(), st.Model)
	}
	if l, _, _ := item(t, u, "status"); l != u.StatusLine() {
		t.Errorf("status item %q", l)
	}
	if l, dis, _ := item(t, u, "detail"); !strings.HasPrefix(l, "Memory in use: ") || strings.HasSuffix(l, " 0 bytes") || !dis {
		t.Errorf("detail item %q (disabled %v)", l, dis)
	}
	if _, dis, _ := item(t, u, LabelStart); !dis {
		t.Error("Start enabled while ready")
	}
	if _, dis, _ := item(t, u, LabelStop); dis {
		t.Error("Stop disabled while ready")
	}

	// A generation shows its speed in the status line.
	_, err := f.eng.Generate(context.Background(), engine.Request{Prompt: "hello", Sampling: engine.Sampling{MaxTokens: 6}},
		func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tokens/s", func() bool { return strings.Contains(u.StatusLine(), "tokens/s") })

	tap(t, u, LabelCopyAPI)
	if clip := u.d.App.Clipboard().Content(); !strings.Contains(clip, "ws://127.0.0.1:11711/v1/ws") || !strings.Contains(clip, "tok-123") {
		t.Errorf("clipboard %q", clip)
	}

	tap(t, u, LabelStop)
	waitFor(t, "stopped status", func() bool { return u.StatusLine() == "Engine stopped" })
	waitFor(t, "Start enabled", func() bool { _, dis, _ := item(t, u, LabelStart); return !dis })
	if _, dis, _ := item(t, u, LabelStop); !dis {
		t.Error("Stop enabled after stop")
	}

	bmu.Lock()
	var icons []string
	for _, b := range badges {
		if len(icons) == 0 || icons[len(icons)-1] != b.Icon {
			icons = append(icons, b.Icon)
		}
	}
	bmu.Unlock()
	// stopped → (busy while loading, when observed) → idle (ready) → … → stopped
	if icons[0] != resources.BadgeStopped || icons[len(icons)-1] != resources.BadgeStopped || !contains(icons, resources.BadgeIdle) {
		t.Errorf("badge icons %q", icons)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestTrayStartErrors(t *testing.T) {
	f := newFixture(t, nil)
	u := f.u
	u.Menu()
	u.Watch()

	// A chosen model that is not installed: a clear error, Start stays enabled.
	s := f.store.Get()
	s.Model = "not-installed"
	if err := f.store.Set(s); err != nil {
		t.Fatal(err)
	}
	tap(t, u, LabelStart)
	if got := u.StatusLine(); !strings.HasPrefix(got, "Error: model not-installed") {
		t.Fatalf("status line %q", got)
	}
	if _, dis, _ := item(t, u, LabelStart); dis {
		t.Error("Start disabled after a failed start")
	}

	// A file that is not a model: the engine's load error shows, badge error.
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(bad, []byte("not a gguf file at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Model = ""
	if err := f.store.Set(s); err != nil {
		t.Fatal(err)
	}
	u.d.DefaultModel = bad
	tap(t, u, LabelStart)
	waitFor(t, "load error", func() bool {
		return strings.HasPrefix(u.StatusLine(), "Error: ") && strings.Contains(u.StatusLine(), "bad.gguf")
	})
	var b Badge
	u.locked(func() { b = u.badgeLocked() })
	if b.Icon != resources.BadgeError || b.Title != "!" {
		t.Errorf("badge %+v", b)
	}
	if _, dis, _ := item(t, u, LabelStart); dis {
		t.Error("Start disabled in the error state")
	}
	if _, dis, _ := item(t, u, LabelStop); !dis {
		t.Error("Stop enabled in the error state")
	}
}

func TestStartAtLogin(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	login, err := autostart.New("/usr/local/bin/strata")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(d *Deps) { d.Autostart = login })
	u := f.u
	u.Menu()
	if _, dis, chk := item(t, u, LabelLogin); dis || chk {
		t.Fatalf("login item disabled=%v checked=%v", dis, chk)
	}
	tap(t, u, LabelLogin)
	if _, _, chk := item(t, u, LabelLogin); !chk {
		t.Fatal("not checked after enabling")
	}
	if _, err := os.Stat(filepath.Join(cfg, "autostart", "dev.strata.app.desktop")); err != nil {
		t.Fatal(err)
	}
	tap(t, u, LabelLogin)
	if _, _, chk := item(t, u, LabelLogin); chk {
		t.Fatal("checked after disabling")
	}
	if _, err := os.Stat(filepath.Join(cfg, "autostart", "dev.strata.app.desktop")); !os.IsNotExist(err) {
		t.Fatalf("desktop entry still there: %v", err)
	}
}

func TestMainWindowMirrorsMenu(t *testing.T) {
	f := newFixture(t, nil)
	u := f.u
	w := u.ShowMain()
	u.Watch()
	var startDisabled, stopDisabled bool
	var text string
	read := func() {
		u.locked(func() {
			text = u.mainView.status.Text
			startDisabled = u.mainView.buttons[LabelStart].Disabled()
			stopDisabled = u.mainView.buttons[LabelStop].Disabled()
		})
	}
	read()
	if text != "Engine stopped" || startDisabled || !stopDisabled {
		t.Fatalf("main window: %q start disabled %v stop disabled %v", text, startDisabled, stopDisabled)
	}
	var start func()
	u.locked(func() { start = u.mainView.buttons[LabelStart].OnTapped })
	start()
	waitFor(t, "ready in the main window", func() bool { read(); return strings.HasSuffix(text, "ready") })
	var detail string
	u.locked(func() { detail = u.mainView.detail.Text })
	if !strings.HasPrefix(detail, "Memory in use: ") {
		t.Errorf("main window detail %q", detail)
	}
	if !startDisabled || stopDisabled {
		t.Fatalf("ready: start disabled %v stop disabled %v", startDisabled, stopDisabled)
	}
	if w.Title() != "Strata" {
		t.Fatalf("title %q", w.Title())
	}
}

func sha256hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestStatusLine(t *testing.T) {
	u := &UI{}
	demo := &engine.ModelInfo{Name: "x", Demo: true}
	named := &engine.ModelInfo{Name: "Qwen3 30B", Path: "/m/q.gguf"}
	unnamed := &engine.ModelInfo{Path: "/m/q4.gguf"}
	soon := time.Now().Add(3*time.Minute + 30*time.Second)
	tests := []struct {
		st       engine.Status
		startErr string
		want     string
		icon     string
		title    string
		life     runner.Status
	}{
		{engine.Status{State: engine.StateStopped}, "", "Engine stopped", resources.BadgeStopped, "", runner.Status{}},
		{engine.Status{State: engine.StateStopped}, "model q: not installed", "Error: model q: not installed", resources.BadgeError, "!", runner.Status{}},
		{engine.Status{State: engine.StateLoading}, "", "Loading the model…", resources.BadgeBusy, "…", runner.Status{}},
		{engine.Status{State: engine.StateLoading, Progress: &engine.Progress{Phase: engine.PhaseReading, Text: "Reading the model into memory", Done: 45, Total: 100, Fraction: 0.45}},
			"", "Loading the model… 45% · reading the model into memory", resources.BadgeBusy, "45%", runner.Status{}},
		{engine.Status{State: engine.StateLoading, Progress: &engine.Progress{Phase: engine.PhaseWarming, Text: "Filling the expert cache", Done: 3, Total: 3, Fraction: 1}},
			"", "Loading the model… 100% · filling the expert cache", resources.BadgeBusy, "100%", runner.Status{}},
		{engine.Status{State: engine.StateReady, Model: demo}, "", "Demo model (random weights) — ready", resources.BadgeIdle, "", runner.Status{}},
		{engine.Status{State: engine.StateReady, Model: named, LastStats: &engine.Stats{TokensPerSecond: 12.345}}, "",
			"Qwen3 30B — ready · 12.3 tokens/s", resources.BadgeIdle, "", runner.Status{}},
		{engine.Status{State: engine.StateGenerating, Model: unnamed}, "", "q4.gguf — generating", resources.BadgeBusy, "…", runner.Status{}},
		{engine.Status{State: engine.StateError, Err: "load /m/x.gguf:\n  bad magic"}, "", "Error: load /m/x.gguf: bad magic", resources.BadgeError, "!", runner.Status{}},
		// Keep-alive: the countdown while loaded, idle (not stopped by you) after it.
		{engine.Status{State: engine.StateReady, Model: named}, "", "Qwen3 30B — ready · unloads in 4 min", resources.BadgeIdle, "", runner.Status{ExpiresAt: soon}},
		{engine.Status{State: engine.StateReady, Model: named}, "", "Qwen3 30B — ready", resources.BadgeIdle, "", runner.Status{ExpiresAt: runner.Forever}},
		{engine.Status{State: engine.StateStopped}, "", LineIdle, resources.BadgeStopped, "", runner.Status{Idle: true}},
		{engine.Status{State: engine.StateStopped}, "", "Engine stopped", resources.BadgeStopped, "", runner.Status{StoppedByUser: true}},
	}
	for _, tt := range tests {
		u.status, u.startErr, u.life = tt.st, tt.startErr, tt.life
		if got := u.statusLineLocked(); got != tt.want {
			t.Errorf("%s: status line %q, want %q", tt.st.State, got, tt.want)
		}
		if b := u.badgeLocked(); b.Icon != tt.icon || b.Title != tt.title || b.Tooltip != "Strata: "+tt.want {
			t.Errorf("%s: badge %+v", tt.st.State, b)
		}
	}
	// Downloads show in the badge while the engine is idle.
	u.status, u.startErr = engine.Status{State: engine.StateReady, Model: demo}, ""
	u.pulls = map[string]models.Event{"a": {Done: 30, Total: 100}, "b": {Done: 12, Total: 100}}
	if b := u.badgeLocked(); b.Icon != resources.BadgeBusy || b.Title != "↓ 21%" {
		t.Errorf("downloading badge %+v", b)
	}
}
