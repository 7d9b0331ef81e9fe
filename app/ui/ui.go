// Package ui builds Strata's menus and windows — the tray menu with live
// status, the chat window, the status window, the settings window, the
// models window and the main window shown when there is no tray — on top
// of the engine, the local API's client, the settings store and the model
// manager. It never creates the Fyne application itself (app/desktop
// does), so everything here runs under fyne.io/fyne/v2/test without a
// display.
package ui

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"fyne.io/fyne/v2"

	"github.com/strata-llm/strata/app/autostart"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/dirs"
	"github.com/strata-llm/strata/internal/runner"
	"github.com/strata-llm/strata/internal/settings"
	"github.com/strata-llm/strata/models"
)

// Deps are the parts the UI shows and drives.
type Deps struct {
	App    fyne.App
	Engine *engine.Engine
	// Runner owns the model lifecycle the API shares: Start, Stop and Quit
	// go through it, and the tray shows its keep-alive state.
	Runner   *runner.Runner
	Settings *settings.Store
	// SettingsNotice is shown at the top of the settings window (e.g. that
	// an unreadable settings file was set aside); "" for none.
	SettingsNotice string
	Models         *models.Manager
	// APIInfo returns the API's address (host:port) and token; addr ""
	// while the API is not serving. nil disables "Copy API address and
	// token".
	APIInfo func() (addr, token string)
	// RegenerateToken makes a new API token (nil hides the button).
	RegenerateToken func() error
	// ForgetHistory deletes the learned expert-usage history: of every
	// model with all, else of the loaded one (nil hides "Forget what you
	// learned"). It may wait for a running generation.
	ForgetHistory func(all bool) error
	// DefaultModel is the GGUF loaded when no model is chosen (the demo).
	DefaultModel string
	Dirs         dirs.Dirs
	// Autostart is the login item (nil disables "Start at login").
	Autostart *autostart.Autostart
	// TotalRAM is this machine's memory in bytes (0: models.TotalRAM()).
	TotalRAM uint64
	Log      *slog.Logger
	// Quit ends the application after the engine was stopped (nil:
	// App.Quit).
	Quit func()
}

// UI owns the menus and windows. Create it with New, start following the
// engine and the model manager with Watch, and build the tray menu with
// Menu.
type UI struct {
	d   Deps
	log *slog.Logger
	ctx context.Context // ends with Close
	end context.CancelFunc
	wg  sync.WaitGroup

	// mu guards the state below and every widget change made from a
	// background goroutine (fyne.Do may run its function on the caller's
	// goroutine, as the test driver does).
	mu       sync.Mutex
	status   engine.Status
	life     runner.Status           // status with keep-alive (expiry, idle, stopped by you)
	pulls    map[string]models.Event // running pulls by model name
	startErr string                  // why the last Start could not begin
	menu     *fyne.Menu
	items    map[string]*fyne.MenuItem
	onBadge  func(Badge)
	lastBdg  Badge

	settingsWin  fyne.Window
	settingsForm *settingsForm
	modelsWin    fyne.Window
	modelsView   *modelsView
	mainWin      fyne.Window
	mainView     *mainView
	chatWin      fyne.Window
	chatView     *chatView
	statusWin    fyne.Window
	statusView   *statusView

	conn apiConn   // the UI's connection to the local API
	live liveStats // its telemetry
}

// New returns the UI for d. Call Close when done.
func New(d Deps) *UI {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.TotalRAM == 0 {
		d.TotalRAM = models.TotalRAM()
	}
	ctx, end := context.WithCancel(context.Background())
	u := &UI{d: d, log: d.Log, ctx: ctx, end: end, pulls: map[string]models.Event{}, conn: apiConn{info: d.APIInfo}}
	u.life = d.Runner.Status()
	u.status = u.life.Status
	return u
}

// Watch follows the engine's status, the API's telemetry
// (stats.subscribe, for the live figures) and the model manager's
// downloads, updating the menu, the badge and open windows, until Close.
func (u *UI) Watch() {
	st, stop := u.d.Runner.Subscribe()
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		defer stop()
		tick := time.NewTicker(15 * time.Second) // "unloads in N min" counts down
		defer tick.Stop()
		for {
			select {
			case s, ok := <-st:
				if !ok {
					return
				}
				u.do(func() { u.life, u.status = s, s.Status; u.refreshLocked() })
			case <-tick.C:
				u.do(u.refreshLocked)
			case <-u.ctx.Done():
				return
			}
		}
	}()
	if u.d.APIInfo != nil {
		u.wg.Add(1)
		go u.watchTelemetry()
	}
	if u.d.Models == nil {
		return
	}
	evs := u.d.Models.Subscribe(u.ctx)
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for ev := range evs {
			u.do(func() {
				if ev.Phase.Terminal() {
					delete(u.pulls, ev.Name)
				} else {
					u.pulls[ev.Name] = ev
				}
				u.refreshLocked()
				if u.modelsView != nil {
					u.modelsView.onEventLocked(ev)
				}
			})
		}
	}()
}

// Close stops watching. It does not close the windows or the parts in
// Deps.
func (u *UI) Close() {
	u.end()
	u.conn.close()
	u.wg.Wait()
}

// do runs f on Fyne's goroutine with u.mu held.
func (u *UI) do(f func()) {
	fyne.Do(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		f()
	})
}

// locked runs f with u.mu held on the calling goroutine (for actions,
// which Fyne already runs on its goroutine).
func (u *UI) locked(f func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f()
}

// OnBadge sets a function called (on Fyne's goroutine) whenever the tray
// badge changes, and once at once with the current one.
func (u *UI) OnBadge(f func(Badge)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.onBadge = f
	u.lastBdg = u.badgeLocked()
	if f != nil {
		f(u.lastBdg)
	}
}

// refreshLocked brings the menu, the badge and the main window up to date.
func (u *UI) refreshLocked() {
	u.refreshMenuLocked()
	if b := u.badgeLocked(); b != u.lastBdg {
		u.lastBdg = b
		if u.onBadge != nil {
			u.onBadge(b)
		}
	}
	if u.mainView != nil {
		u.mainView.refreshLocked()
	}
	if u.chatView != nil {
		u.chatView.refreshDemoLocked()
	}
	if u.statusView != nil {
		u.statusView.refreshLocked()
	}
}

// show brings a window to the front, creating it with make on first use.
// Closing a window hides it, so its state survives.
func (u *UI) show(w *fyne.Window, title string, size fyne.Size, make func(fyne.Window)) fyne.Window {
	if *w == nil {
		nw := u.d.App.NewWindow(title)
		make(nw)
		nw.Resize(size)
		nw.SetCloseIntercept(nw.Hide)
		*w = nw
	}
	(*w).Show()
	(*w).RequestFocus()
	return *w
}

// ShowSettings opens the settings window (or brings it to the front),
// with the controls showing the current settings.
func (u *UI) ShowSettings() fyne.Window {
	u.mu.Lock()
	defer u.mu.Unlock()
	w := u.show(&u.settingsWin, "Strata Settings", fyne.NewSize(620, 760), func(w fyne.Window) {
		u.settingsForm = newSettingsForm(u, w)
		w.SetContent(u.settingsForm.content)
	})
	u.settingsForm.load(u.d.Settings.Get())
	return w
}

// ShowModels opens the models window (or brings it to the front).
func (u *UI) ShowModels() fyne.Window {
	u.mu.Lock()
	defer u.mu.Unlock()
	w := u.show(&u.modelsWin, "Strata Models", fyne.NewSize(680, 620), func(w fyne.Window) {
		u.modelsView = newModelsView(u, w)
		w.SetContent(u.modelsView.content)
	})
	u.modelsView.rebuildLocked()
	return w
}

// ShowMain opens the main window: the status line and the tray menu's
// actions as buttons, for desktops without a tray.
func (u *UI) ShowMain() fyne.Window {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.show(&u.mainWin, "Strata", fyne.NewSize(420, 360), func(w fyne.Window) {
		u.mainView = newMainView(u)
		w.SetContent(u.mainView.content)
		u.mainView.refreshLocked()
	})
}
