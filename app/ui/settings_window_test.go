package ui

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/usage"
	"github.com/strata-llm/strata/internal/settings"
)

func typeInto(f *settingsForm, key, text string) {
	e := f.rows[key].entry
	e.SetText("")
	test.Type(e, text)
}

func TestSettingsWindowRoundTrip(t *testing.T) {
	fx := newFixture(t, nil)
	u := fx.u
	w := u.ShowSettings()
	f := u.settingsForm
	if w.Title() != "Strata Settings" {
		t.Fatalf("title %q", w.Title())
	}

	// Controls show the stored settings; knobs the engine lacks are disabled.
	if got := f.rows["api.port"].entry.Text; got != "11711" {
		t.Fatalf("port shows %q", got)
	}
	if got := f.rows["advanced.threads"].entry.Text; got != "Auto" {
		t.Fatalf("threads shows %q", got)
	}
	for _, fl := range settings.Fields() {
		r := f.rows[fl.Key]
		disabled := (r.entry != nil && r.entry.Disabled()) || (r.check != nil && r.check.Disabled())
		if disabled == fl.Live {
			t.Errorf("%s: disabled=%v but live=%v", fl.Key, disabled, fl.Live)
		}
	}

	// Invalid values: inline errors naming the problem, nothing saved.
	typeInto(f, "advanced.threads", "lots")
	typeInto(f, "api.port", "80")
	typeInto(f, "memory.keep_loaded_minutes", "-5")
	if f.Apply() {
		t.Fatal("Apply accepted invalid values")
	}
	for key, want := range map[string]string{
		"advanced.threads":           `Must be a whole number from 1 to 256 or Auto, got "lots".`,
		"api.port":                   "Must be a whole number from 1024 to 65535, got 80.",
		"memory.keep_loaded_minutes": "Must be a whole number from 0 to 10080 or forever, got -5.",
	} {
		r := f.rows[key]
		if !r.err.Visible() || r.err.Text != want {
			t.Errorf("%s error %q (visible %v), want %q", key, r.err.Text, r.err.Visible(), want)
		}
	}
	if !strings.Contains(f.status.Text, "3 setting(s) need fixing") {
		t.Errorf("status %q", f.status.Text)
	}
	if fx.store.Get() != settings.Defaults() {
		t.Fatal("invalid Apply changed the settings")
	}
	test.AssertImageMatches(t, "settings_errors.png", captureAll(w, f.inner, f.bottom))

	// Valid values: Apply persists (a fresh Load reads them) and notifies.
	ch, cancel := fx.store.Subscribe()
	defer cancel()
	typeInto(f, "advanced.threads", "2")
	typeInto(f, "api.port", "9000")
	typeInto(f, "memory.keep_loaded_minutes", "forever")
	typeInto(f, "advanced.context_length", "8192")
	f.rows["advanced.backend"].pick.SetSelected("CPU")
	test.Tap(f.rows["api.allow_network"].check)
	if !f.netWarn.Visible() {
		t.Error("no warning when allowing other devices")
	}
	test.Tap(f.apply)
	for _, r := range f.rows {
		if r.err.Visible() {
			t.Errorf("%s still shows %q", r.f.Key, r.err.Text)
		}
	}
	want := settings.Defaults()
	want.Advanced.Threads, want.API.Port, want.Memory.KeepLoadedMinutes, want.Advanced.ContextLength, want.API.AllowNetwork = 2, 9000, settings.KeepForever, 8192, true
	want.Advanced.Backend = settings.BackendCPU
	if got := <-ch; got != want {
		t.Fatalf("notified %+v, want %+v", got, want)
	}
	reloaded, notice, err := settings.Load(filepath.Join(fx.dirs.Config, settings.FileName))
	if err != nil || notice != "" || reloaded.Get() != want {
		t.Fatalf("reloaded %+v %q %v", reloaded.Get(), notice, err)
	}
	if f.status.Text != "Saved. The changes are in effect." {
		t.Errorf("status %q", f.status.Text)
	}

	// Reset restores the defaults, in the store and the controls.
	test.Tap(f.reset)
	if got := fx.store.Get(); got != settings.Defaults() {
		t.Fatalf("after reset %+v", got)
	}
	if f.rows["api.port"].entry.Text != "11711" || f.rows["api.allow_network"].check.Checked || f.rows["memory.keep_loaded_minutes"].entry.Text != "5" ||
		f.rows["advanced.backend"].pick.Selected != "Auto" {
		t.Fatal("controls not reset")
	}
	test.AssertImageMatches(t, "settings.png", captureAll(w, f.inner, f.bottom))
}

// The settings window says what runs the model and why, as a warning
// when Metal was wanted and the CPU runs it.
func TestSettingsBackendShown(t *testing.T) {
	fx := newFixture(t, nil)
	o := fx.u.d.Engine.Options()
	o.Backend, o.BackendReason, o.BackendFallback = "cpu", "the Metal selftest failed on Apple M3 (1 of 101 checks: rope)", true
	fx.u.d.Engine.SetOptions(o)
	w := fx.u.ShowSettings()
	if got := labelTexts(w.Content()); !strings.Contains(got, "Now: the processor (CPU). The Metal selftest failed on Apple M3 (1 of 101 checks: rope).") {
		t.Fatalf("labels: %s", got)
	}
}

func TestSettingsNoticeShown(t *testing.T) {
	fx := newFixture(t, func(d *Deps) { d.SettingsNotice = "Your settings file could not be used." })
	w := fx.u.ShowSettings()
	if !strings.Contains(labelTexts(w.Content()), "Your settings file could not be used.") {
		t.Fatal("notice not shown")
	}
}

// labelTexts joins the text of every label under o.
func labelTexts(o fyne.CanvasObject) string {
	var b strings.Builder
	for _, x := range test.LaidOutObjects(o) {
		if l, ok := x.(*widget.Label); ok {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}

// captureAll renders a window tall enough to show all of a scrolled
// content, then restores its size.
func captureAll(w fyne.Window, scrolled, fixed fyne.CanvasObject) image.Image {
	w.Canvas().Unfocus()
	old := w.Canvas().Size()
	w.Resize(fyne.NewSize(old.Width, scrolled.MinSize().Height+fixed.MinSize().Height+2*theme.Padding()))
	img := w.Canvas().Capture()
	w.Resize(old)
	return img
}

// The allowed web pages are a list, one origin per line: valid ones are
// saved as browsers send them, an invalid one is refused under the list.
func TestSettingsWindowOrigins(t *testing.T) {
	fx := newFixture(t, nil)
	u := fx.u
	u.ShowSettings()
	f := u.settingsForm
	f.origins.SetText("https://App.Example\n\nchrome-extension://abcdef")
	if !f.Apply() {
		t.Fatalf("valid origins refused: %s", f.originsErr.Text)
	}
	got := u.d.Settings.Get().Browser.AllowedOrigins.List()
	if len(got) != 2 || got[0] != "https://app.example" || got[1] != "chrome-extension://abcdef" {
		t.Fatalf("saved origins %v", got)
	}
	f.origins.SetText("https://ok.example\nhttps://*.example/path")
	if f.Apply() {
		t.Fatal("an origin with a wildcard and a path was accepted")
	}
	if f.originsErr.Hidden || !strings.Contains(f.originsErr.Text, "only a host and port") {
		t.Fatalf("origin error %q", f.originsErr.Text)
	}
	if got := u.d.Settings.Get().Browser.AllowedOrigins.List(); len(got) != 2 {
		t.Fatalf("a refused list changed the settings: %v", got)
	}
	if !f.Reset() || f.origins.Text != "" {
		t.Fatalf("reset left %q", f.origins.Text)
	}
}

// TestSettingsForgetHistory: "Forget what you learned" asks first (Cancel
// deletes nothing), offers the loaded model or every model, and deletes
// through the engine: every history, or only the loaded model's.
func TestSettingsForgetHistory(t *testing.T) {
	hist := t.TempDir()
	var calls []bool
	fx := newFixture(t, func(d *Deps) {
		eng := d.Engine
		d.ForgetHistory = func(all bool) error {
			calls = append(calls, all)
			return eng.ForgetHistory(hist, all)
		}
	})
	u := fx.u
	put := func(names ...string) {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(hist, n), []byte("counts"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	left := func() []string {
		m, _ := filepath.Glob(filepath.Join(hist, "*.usage"))
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		return m
	}
	status := func() (s string) {
		u.locked(func() { s = u.settingsForm.status.Text })
		return s
	}
	w := u.ShowSettings()
	f := u.settingsForm
	if f.forget == nil {
		t.Fatal("no Forget button")
	}
	put("aaaaaaaaaaaaaaaaaaaaaaaa.usage", "bbbbbbbbbbbbbbbbbbbbbbbb.usage")

	// Cancel: nothing is deleted.
	test.Tap(f.forget)
	if f.forgetChoice == nil || len(f.forgetChoice.Options) != 1 || f.forgetChoice.Options[0] != forgetAll {
		t.Fatalf("with no model loaded the choices are %v", f.forgetChoice.Options)
	}
	test.Tap(findButton(t, w.Canvas().Overlays().Top(), "Cancel"))
	if len(calls) != 0 || len(left()) != 2 {
		t.Fatalf("cancel: calls %v, files %v", calls, left())
	}

	// Every model.
	test.Tap(f.forget)
	test.Tap(findButton(t, w.Canvas().Overlays().Top(), "Forget"))
	<-f.forgetDone
	if len(calls) != 1 || !calls[0] || len(left()) != 0 {
		t.Fatalf("forget all: calls %v, files %v", calls, left())
	}
	if got := status(); got != "Forgotten for every model. Strata learns again from your next conversation." {
		t.Fatalf("status %q", got)
	}

	// The loaded model only: its history goes, another model's stays.
	if err := u.d.Runner.Start(context.Background(), u.d.DefaultModel); err != nil {
		t.Fatal(err)
	}
	u.locked(func() { u.status = u.d.Runner.Status().Status })
	gf, err := gguf.Open(u.d.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	id, err := usage.IdentityOf(u.d.DefaultModel, gf.DataOffset)
	gf.Close()
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Base(engine.ProfilePath(hist, id))
	put(mine, "bbbbbbbbbbbbbbbbbbbbbbbb.usage")
	test.Tap(f.forget)
	if opts := f.forgetChoice.Options; len(opts) != 2 || opts[0] != forgetLoaded+" (Demo model (random weights))" || f.forgetChoice.Selected != opts[0] {
		t.Fatalf("choices %v, selected %q", opts, f.forgetChoice.Selected)
	}
	test.Tap(findButton(t, w.Canvas().Overlays().Top(), "Forget"))
	<-f.forgetDone
	if len(calls) != 2 || calls[1] || !slices.Equal(left(), []string{"bbbbbbbbbbbbbbbbbbbbbbbb.usage"}) {
		t.Fatalf("forget the loaded model's: calls %v, files %v", calls, left())
	}
	if got := status(); got != "Forgotten for the loaded model. Strata learns again from your next conversation." {
		t.Fatalf("status %q", got)
	}
}
