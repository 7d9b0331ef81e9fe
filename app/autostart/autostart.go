// Package autostart makes Strata start when the user logs in: a
// LaunchAgent property list in ~/Library/LaunchAgents on macOS, an XDG
// autostart desktop entry on Linux. Files are written and removed
// atomically.
package autostart

import (
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Label is the LaunchAgent label and the desktop entry's base name.
const Label = "dev.strata.app"

// Autostart manages the login item of one executable.
type Autostart struct {
	goos string
	path string // the plist or .desktop file
	exe  string // absolute path of the program to start
}

// New returns the login item for exe (an absolute path) on this platform:
// on macOS ~/Library/LaunchAgents/dev.strata.app.plist, elsewhere
// $XDG_CONFIG_HOME/autostart/dev.strata.app.desktop (~/.config when
// XDG_CONFIG_HOME is unset or relative).
func New(exe string) (*Autostart, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("start at login: %w", err)
	}
	return newFor(runtime.GOOS, home, os.Getenv("XDG_CONFIG_HOME"), exe)
}

func newFor(goos, home, xdgConfig, exe string) (*Autostart, error) {
	if !filepath.IsAbs(exe) {
		return nil, fmt.Errorf("start at login: program path %q is not absolute", exe)
	}
	if strings.ContainsAny(exe, "\x00\n\r") {
		return nil, fmt.Errorf("start at login: program path %q has control characters", exe)
	}
	a := &Autostart{goos: goos, exe: exe}
	switch goos {
	case "darwin":
		a.path = filepath.Join(home, "Library", "LaunchAgents", Label+".plist")
	case "windows":
		return nil, errors.New("start at login: not supported on Windows")
	default:
		if xdgConfig == "" || !filepath.IsAbs(xdgConfig) {
			xdgConfig = filepath.Join(home, ".config")
		}
		a.path = filepath.Join(xdgConfig, "autostart", Label+".desktop")
	}
	return a, nil
}

// Path returns the file that makes Strata start at login.
func (a *Autostart) Path() string { return a.path }

// Enabled reports whether the login item exists.
func (a *Autostart) Enabled() bool {
	_, err := os.Stat(a.path)
	return err == nil
}

// Set writes (on) or removes (off) the login item. Writing goes through a
// temporary file that is synced and renamed, so a crash never leaves a
// partial file.
func (a *Autostart) Set(on bool) error {
	if !on {
		err := os.Remove(a.path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("start at login: remove %s: %w", a.path, err)
		}
		syncDir(filepath.Dir(a.path))
		return nil
	}
	return writeAtomic(a.path, a.content())
}

// content returns the login item's file for the platform.
func (a *Autostart) content() []byte {
	if a.goos == "darwin" {
		return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + Label + `</string>
	<key>ProgramArguments</key>
	<array>
		<string>` + html.EscapeString(a.exe) + `</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>ProcessType</key>
	<string>Interactive</string>
</dict>
</plist>
`)
	}
	return []byte(`[Desktop Entry]
Type=Application
Name=Strata
Comment=Local AI models in your menu bar
Exec=` + DesktopExec(a.exe) + `
Icon=` + Label + `
Terminal=false
X-GNOME-Autostart-enabled=true
`)
}

// DesktopExec quotes a program path for a desktop entry's Exec key
// (Desktop Entry Specification, "The Exec key").
func DesktopExec(p string) string {
	if !strings.ContainsAny(p, " \t\"'\\><~|&;$*?#()`=%") {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range p {
		switch r {
		case '"', '`', '$', '\\':
			b.WriteString(`\\`) // the string level escapes the backslash once more
			b.WriteRune(r)
		case '%':
			b.WriteString("%%")
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("start at login: %w", err)
	}
	f, err := os.CreateTemp(dir, ".strata-autostart-*.tmp")
	if err != nil {
		return fmt.Errorf("start at login: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("start at login: write %s: %w", path, err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
