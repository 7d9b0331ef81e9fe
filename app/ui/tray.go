package ui

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/runner"
	"github.com/strata-llm/strata/resources"
)

// Tray menu labels. Items are found by label: the tray host renumbers
// them whenever the menu is refreshed.
const (
	LabelStart    = "Start engine"
	LabelStop     = "Stop engine"
	LabelChat     = "Chat…"
	LabelStatus   = "Status…"
	LabelModels   = "Models…"
	LabelSettings = "Settings…"
	LabelCopyAPI  = "Copy API address and token"
	LabelLogs     = "Open logs folder"
	LabelLogin    = "Start at login"
	LabelQuit     = "Quit"
)

// Badge is what the tray shows beside its icon.
type Badge struct {
	Icon    string // resources.BadgeIdle, BadgeStopped, BadgeBusy or BadgeError
	Title   string // short text beside the icon (macOS menu bar): "", "…", "↓ 42%", "!"
	Tooltip string // the status line
}

// Menu returns the tray menu: a status line (model, state, tokens/s of
// the current or last generation), a detail line (memory in use, the
// queue, and cache hits and SSD reads once the engine reports them),
// Start/Stop engine, Chat…, Status…, Models…, Settings…, Copy API address and token, Open logs folder, Start at
// login, Quit. The same *fyne.Menu is updated in place (labels, disabled
// and checked states) as the engine's state changes, and refreshed.
func (u *UI) Menu() *fyne.Menu {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.menuLocked()
}

func (u *UI) menuLocked() *fyne.Menu {
	if u.menu != nil {
		return u.menu
	}
	status := &fyne.MenuItem{Label: "Strata", Disabled: true}
	detail := &fyne.MenuItem{Label: "", Disabled: true}
	items := []*fyne.MenuItem{
		status,
		detail,
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem(LabelStart, u.Start),
		fyne.NewMenuItem(LabelStop, u.Stop),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem(LabelChat, func() { u.ShowChat() }),
		fyne.NewMenuItem(LabelStatus, func() { u.ShowStatus() }),
		fyne.NewMenuItem(LabelModels, func() { u.ShowModels() }),
		fyne.NewMenuItem(LabelSettings, func() { u.ShowSettings() }),
		fyne.NewMenuItem(LabelCopyAPI, u.CopyAPI),
		fyne.NewMenuItem(LabelLogs, u.OpenLogs),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem(LabelLogin, u.ToggleLogin),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem(LabelQuit, u.Quit),
	}
	u.menu = fyne.NewMenu("Strata", items...)
	u.items = map[string]*fyne.MenuItem{"status": status, "detail": detail}
	for _, it := range items {
		if !it.IsSeparator && it != status && it != detail {
			u.items[it.Label] = it
		}
	}
	u.items[LabelQuit].IsQuit = true
	u.refreshMenuLocked()
	return u.menu
}

// Item returns a copy of the menu item with the given label ("status" for
// the status line, "detail" for the line below it), as it is now.
func (u *UI) Item(label string) (fyne.MenuItem, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	it, ok := u.items[label]
	if !ok {
		return fyne.MenuItem{}, false
	}
	return *it, true
}

// StatusLine returns the status line: model, state and the last
// generation's speed.
func (u *UI) StatusLine() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.statusLineLocked()
}

func (u *UI) modelName(s engine.Status) string {
	if s.Model == nil {
		return ""
	}
	if s.Model.Demo {
		return "Demo model (random weights)"
	}
	if s.Model.Name != "" {
		return s.Model.Name
	}
	return filepath.Base(s.Model.Path)
}

func (u *UI) statusLineLocked() string {
	s := u.status
	name := u.modelName(s)
	switch s.State {
	case engine.StateLoading:
		return loadingLine(s.Progress)
	case engine.StateReady, engine.StateGenerating:
		line := name + " — ready"
		if s.State == engine.StateGenerating {
			line = name + " — generating"
		}
		if cur := u.live.current(); s.State == engine.StateGenerating && cur > 0 {
			line += fmt.Sprintf(" · %.1f tokens/s", cur)
		} else if s.LastStats != nil && s.LastStats.TokensPerSecond > 0 {
			line += fmt.Sprintf(" · %.1f tokens/s", s.LastStats.TokensPerSecond)
		}
		if exp := u.life.ExpiresAt; s.State == engine.StateReady && !exp.IsZero() && !exp.Equal(runner.Forever) {
			line += " · " + unloadsIn(time.Until(exp))
		}
		return line
	case engine.StateError:
		return "Error: " + shorten(s.Err, 80)
	}
	if u.startErr != "" {
		return "Error: " + shorten(u.startErr, 80)
	}
	if u.life.Idle {
		return LineIdle
	}
	return "Engine stopped"
}

// loadingLine is the status line while a model loads: how far, and what
// is happening (the engine's words).
func loadingLine(p *engine.Progress) string {
	if p == nil {
		return "Loading the model…"
	}
	what := p.Text
	if what != "" {
		what = " · " + strings.ToLower(what[:1]) + what[1:]
	}
	return fmt.Sprintf("Loading the model… %d%%%s", int(100*p.Fraction), what)
}

// LineIdle is the status line after keep-alive unloaded the model, which
// is not the same as stopped by you: the next request loads it again.
const LineIdle = "Idle, unloaded — loads again on the next request"

// unloadsIn says when keep-alive unloads the model: "unloads in 4 min".
func unloadsIn(d time.Duration) string {
	if d < time.Minute {
		return "unloads in less than a minute"
	}
	return fmt.Sprintf("unloads in %d min", int((d+time.Minute-1)/time.Minute))
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// badgeLocked computes the tray badge from the engine and the downloads.
func (u *UI) badgeLocked() Badge {
	b := Badge{Tooltip: "Strata: " + u.statusLineLocked()}
	switch u.status.State {
	case engine.StateLoading:
		b.Icon, b.Title = resources.BadgeBusy, "…"
		if p := u.status.Progress; p != nil {
			b.Title = fmt.Sprintf("%d%%", int(100*p.Fraction))
		}
	case engine.StateGenerating:
		b.Icon, b.Title = resources.BadgeBusy, "…"
	case engine.StateReady:
		b.Icon = resources.BadgeIdle
	case engine.StateError:
		b.Icon, b.Title = resources.BadgeError, "!"
	default:
		b.Icon = resources.BadgeStopped
		if u.startErr != "" {
			b.Icon, b.Title = resources.BadgeError, "!"
		}
	}
	if len(u.pulls) > 0 && b.Title == "" {
		var done, total int64
		for _, ev := range u.pulls {
			done, total = done+ev.Done, total+ev.Total
		}
		b.Icon, b.Title = resources.BadgeBusy, "↓"
		if total > 0 {
			b.Title = fmt.Sprintf("↓ %d%%", done*100/total)
		}
	}
	return b
}

// refreshMenuLocked updates labels and states and refreshes the menu if
// anything changed.
func (u *UI) refreshMenuLocked() {
	if u.menu == nil {
		return
	}
	before := u.snapshotLocked()
	st := u.status.State
	u.items["status"].Label = u.statusLineLocked()
	u.items["detail"].Label = u.detailLineLocked()
	u.items[LabelStart].Disabled = st == engine.StateLoading || st == engine.StateReady || st == engine.StateGenerating
	u.items[LabelStop].Disabled = st != engine.StateReady && st != engine.StateGenerating && !u.life.Idle
	addr := ""
	if u.d.APIInfo != nil {
		addr, _ = u.d.APIInfo()
	}
	u.items[LabelCopyAPI].Disabled = addr == ""
	login := u.items[LabelLogin]
	login.Disabled = u.d.Autostart == nil
	login.Checked = u.d.Autostart != nil && u.d.Autostart.Enabled()
	if u.snapshotLocked() != before {
		u.menu.Refresh()
	}
}

func (u *UI) snapshotLocked() string {
	var b strings.Builder
	for _, it := range u.menu.Items {
		fmt.Fprintf(&b, "%s|%v|%v\n", it.Label, it.Disabled, it.Checked)
	}
	return b.String()
}

// Start loads the chosen model (or the demo) in the background.
func (u *UI) Start() {
	path, err := u.modelPath()
	u.locked(func() {
		u.startErr = ""
		if err != nil {
			u.startErr = err.Error()
			u.log.Error("start engine", "err", err)
		}
		u.refreshLocked()
	})
	if err != nil {
		return
	}
	go func() {
		if err := u.d.Runner.Start(u.ctx, path); err != nil {
			u.log.Error("start engine", "path", path, "err", err)
		}
	}()
}

// modelPath is the GGUF of the chosen model, or the demo's.
func (u *UI) modelPath() (string, error) {
	name := u.d.Settings.Get().Model
	if name == "" {
		if u.d.DefaultModel == "" {
			return "", fmt.Errorf("no model chosen and no demo model available")
		}
		return u.d.DefaultModel, nil
	}
	if u.d.Models == nil {
		return "", fmt.Errorf("model %s: no model manager", name)
	}
	return u.d.Models.Path(name)
}

// Stop cancels a running generation or load and unloads the model, in the
// background (the menu never waits for it).
func (u *UI) Stop() {
	go func() {
		if err := u.d.Runner.Stop(); err != nil {
			u.log.Error("stop engine", "err", err)
		}
	}()
}

// CopyAPI puts the API address and token on the clipboard.
func (u *UI) CopyAPI() {
	if u.d.APIInfo == nil {
		return
	}
	addr, token := u.d.APIInfo()
	if addr == "" {
		return
	}
	u.d.App.Clipboard().SetContent(fmt.Sprintf("ws://%s/v1/ws\nhttp://%s/v1\nToken: %s", addr, addr, token))
}

// OpenLogs opens the logs folder in the file manager.
func (u *UI) OpenLogs() {
	if u.d.Dirs.Logs == "" {
		return
	}
	if err := u.d.App.OpenURL(&url.URL{Scheme: "file", Path: u.d.Dirs.Logs}); err != nil {
		u.log.Error("open logs folder", "dir", u.d.Dirs.Logs, "err", err)
	}
}

// ToggleLogin turns Start at login on or off.
func (u *UI) ToggleLogin() {
	if u.d.Autostart == nil {
		return
	}
	on := !u.d.Autostart.Enabled()
	if err := u.d.Autostart.Set(on); err != nil {
		u.log.Error("start at login", "err", err)
	}
	u.locked(u.refreshLocked)
}

// Quit stops the engine (cancelling a running generation, which ends
// within one token, rather than waiting for it) and ends the application.
func (u *UI) Quit() {
	if err := u.d.Runner.Stop(); err != nil {
		u.log.Error("stop engine", "err", err)
	}
	if u.d.Quit != nil {
		u.d.Quit()
		return
	}
	u.d.App.Quit()
}
