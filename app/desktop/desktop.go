// Package desktop runs Strata's menu-bar application: it creates the real
// Fyne application and the system tray (fyne.io/systray) and hands the
// menus and windows to app/ui. It needs a display; the UI logic lives in
// app/ui, which is tested without one.
package desktop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/systray"

	"github.com/strata-llm/strata/app/autostart"
	"github.com/strata-llm/strata/app/ui"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/dirs"
	"github.com/strata-llm/strata/internal/runner"
	"github.com/strata-llm/strata/internal/settings"
	"github.com/strata-llm/strata/models"
	"github.com/strata-llm/strata/resources"
)

// AppID is the application's reverse-DNS identifier (as in FyneApp.toml).
const AppID = "dev.strata.app"

// ErrNoDisplay is returned by Run when there is no display to show the
// app on (Linux without DISPLAY or WAYLAND_DISPLAY); the caller should
// run headless instead.
var ErrNoDisplay = errors.New("no display (DISPLAY and WAYLAND_DISPLAY are unset)")

// Parts are what the menu-bar app drives. The caller owns them: Run does
// not close them, except that quitting from the menu unloads the engine's
// model.
type Parts struct {
	Engine   *engine.Engine
	Runner   *runner.Runner // the model lifecycle shared with the API
	Settings *settings.Store
	// SettingsNotice is shown in the settings window (e.g. the notice
	// settings.Load returned when it set a bad file aside); "" for none.
	SettingsNotice string
	Models         *models.Manager
	// APIInfo returns the API's address (host:port) and token, addr ""
	// while it is not serving; nil disables "Copy API address and token".
	APIInfo func() (addr, token string)
	// RegenerateToken makes a new API token (nil hides the button).
	RegenerateToken func() error
	// ForgetHistory deletes the learned expert-usage history (every
	// model's with all; nil hides "Forget what you learned").
	ForgetHistory func(all bool) error
	Log           *slog.Logger
	Dirs          dirs.Dirs
	// DefaultModel is the GGUF loaded when no model is chosen: the demo
	// model's path from engine.EnsureDemoModel.
	DefaultModel string
	// AutoStart loads the chosen model when the app starts.
	AutoStart bool
}

// Run shows the menu-bar app until the user quits or ctx is cancelled,
// then returns. It must be called from the main goroutine (Fyne and
// macOS require it).
//
// On macOS the tray icon is a template image and a short badge (…, !,
// ↓ 42%) is shown as its title. On Linux, without a D-Bus session bus the
// tray is not started at all (fyne.io/systray would panic on quit) and,
// as without a tray host (no org.kde.StatusNotifierWatcher), Run logs
// that and opens the main window instead. It returns ErrNoDisplay at once
// when there is no display, so the caller can run headless.
func Run(ctx context.Context, p Parts) (err error) {
	if p.Engine == nil || p.Runner == nil || p.Settings == nil {
		return errors.New("desktop: Parts.Engine, Parts.Runner and Parts.Settings are required")
	}
	if !haveDisplay() {
		return ErrNoDisplay
	}
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	defer func() {
		// fyne.io/systray can panic while shutting down a tray it could not
		// start; never let that take the process down with a stack trace.
		if r := recover(); r != nil {
			log.Error("menu-bar app stopped by a panic", "panic", r)
			err = fmt.Errorf("desktop: %v", r)
		}
	}()

	a := fyneapp.NewWithID(AppID)
	a.SetIcon(fyne.NewStaticResource("strata.png", resources.AppIcon()))
	var login *autostart.Autostart
	if exe, err := os.Executable(); err == nil {
		if login, err = autostart.New(exe); err != nil {
			log.Warn("start at login unavailable", "err", err)
			login = nil
		}
	}
	u := ui.New(ui.Deps{
		App: a, Engine: p.Engine, Runner: p.Runner, Settings: p.Settings, SettingsNotice: p.SettingsNotice, Models: p.Models,
		APIInfo: p.APIInfo, RegenerateToken: p.RegenerateToken, ForgetHistory: p.ForgetHistory, DefaultModel: p.DefaultModel, Dirs: p.Dirs,
		Autostart: login, Log: log,
	})
	defer u.Close()

	menu := u.Menu()
	tray, ok := a.(desktop.App)
	trayOK := false
	if ok {
		switch reason := trayProblem(); reason {
		case "":
			tray.SetSystemTrayIcon(trayIcon(resources.BadgeStopped))
			tray.SetSystemTrayMenu(menu)
			trayOK = true
			if host := trayHostMissing(); host != "" {
				log.Info("no system tray host; opening the main window", "detail", host)
				u.ShowMain()
			}
		default:
			log.Info("no system tray; opening the main window", "reason", reason)
			u.ShowMain()
		}
	} else {
		log.Info("this platform has no system tray; opening the main window")
		u.ShowMain()
	}
	if trayOK {
		u.OnBadge(func(b ui.Badge) {
			tray.SetSystemTrayIcon(trayIcon(b.Icon))
			if runtime.GOOS == "darwin" {
				systray.SetTitle(b.Title)
			}
			systray.SetTooltip(b.Tooltip)
		})
	}
	u.Watch()
	if p.AutoStart {
		u.Start()
	}
	go func() {
		<-ctx.Done()
		fyne.Do(a.Quit)
	}()
	a.Run()
	log.Info("menu-bar app closed")
	return nil
}

// trayIcon returns the tray icon for a badge: on macOS the template image
// (wrapped as a themed resource, which makes Fyne hand it to the menu bar
// as a template), elsewhere the colour icon.
func trayIcon(badge string) fyne.Resource {
	if runtime.GOOS == "darwin" {
		return theme.NewThemedResource(fyne.NewStaticResource("tray-"+badge+".png", resources.TrayIcon(badge, true)))
	}
	return fyne.NewStaticResource("tray-"+badge+".png", resources.TrayIcon(badge, false))
}
