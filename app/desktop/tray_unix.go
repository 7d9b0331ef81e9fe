//go:build linux || freebsd || openbsd || netbsd

package desktop

import (
	"os"

	"github.com/godbus/dbus/v5"
)

func haveDisplay() bool {
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// trayProblem says why the tray cannot start ("" if it can): systray needs
// a D-Bus session bus, and panics on quit without one.
func trayProblem() string {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return "no D-Bus session bus: " + err.Error()
	}
	conn.Close()
	return ""
}

// trayHostMissing says why no tray icon will be visible ("" if a
// StatusNotifierWatcher — the tray host — is on the session bus).
func trayHostMissing() string {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	var has bool
	err = conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&has)
	if err != nil {
		return "asking D-Bus for the tray host: " + err.Error()
	}
	if !has {
		return "org.kde.StatusNotifierWatcher is not on the session bus"
	}
	return ""
}
