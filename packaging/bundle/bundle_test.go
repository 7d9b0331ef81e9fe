package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const root = "../.."

// plistDict decodes a flat plist dict into key → value ("true"/"false"
// for booleans).
func plistDict(t *testing.T, b []byte) map[string]string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	out := map[string]string{}
	var key, elem string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elem = tok.Name.Local
			if (elem == "true" || elem == "false") && key != "" {
				out[key], key = elem, ""
			}
		case xml.CharData:
			s := string(tok)
			switch elem {
			case "key":
				key = s
			case "string":
				if key != "" {
					out[key], key = s, ""
				}
			}
		case xml.EndElement:
			elem = ""
		}
	}
	return out
}

// The repository's own FyneApp.toml and icons pass the checks CI runs.
func TestRepositoryMetadata(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"check", "-root", root}, &out); err != nil {
		t.Fatal(err)
	}
	m, err := LoadMetadata(filepath.Join(root, "FyneApp.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Details.Name != "Strata" || m.Details.ID != "dev.strata.app" {
		t.Fatalf("metadata %+v", m.Details)
	}
	out.Reset()
	if err := run([]string{"version", "-root", root}, &out); err != nil {
		t.Fatal(err)
	}
	if want := m.Details.Version + " "; !strings.HasPrefix(out.String(), want) {
		t.Fatalf("version %q", out.String())
	}
}

// The plist step on a placeholder executable writes an Info.plist with
// the keys macOS needs, taken from FyneApp.toml.
func TestInfoPlist(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "Strata.app", "Contents", "MacOS", "strata")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "Strata.app", "Contents", "Info.plist")
	if err := run([]string{"plist", "-root", root, "-exe", exe, "-out", out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadMetadata(filepath.Join(root, "FyneApp.toml"))
	if err != nil {
		t.Fatal(err)
	}
	got := plistDict(t, b)
	want := map[string]string{
		"LSUIElement":                "true",
		"CFBundleIdentifier":         "dev.strata.app",
		"CFBundleName":               "Strata",
		"CFBundleExecutable":         "strata",
		"CFBundleIconFile":           "icon.icns",
		"CFBundleShortVersionString": m.Details.Version,
		"CFBundleVersion":            "1",
		"CFBundlePackageType":        "APPL",
		"LSMinimumSystemVersion":     MinimumMacOS,
		"NSHighResolutionCapable":    "true",
	}
	if m.Details.Build != 1 {
		want["CFBundleVersion"] = got["CFBundleVersion"]
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// No executable, no plist.
	if err := run([]string{"plist", "-root", root, "-exe", filepath.Join(dir, "missing"), "-out", out + "2"}, io.Discard); err == nil {
		t.Error("plist for a missing executable")
	}
	if err := run([]string{"plist", "-root", root, "-exe", dir, "-out", out + "2"}, io.Discard); err == nil {
		t.Error("plist for a folder as executable")
	}
	if _, err := os.Stat(out + "2"); !os.IsNotExist(err) {
		t.Error("a failed plist step left a file")
	}
}

func TestParseMetadataStrict(t *testing.T) {
	good := `Website = "https://example.org"
[Details]
  Icon = "resources/icons/app.png"
  Name = "Strata"
  ID = "dev.strata.app"
  Version = "1.2.3"
  Build = 4
[LinuxAndBSD]
  Categories = ["Utility"]
`
	if _, err := ParseMetadata([]byte(good)); err != nil {
		t.Fatalf("good metadata: %v", err)
	}
	tests := []struct {
		name, toml, want string
	}{
		{"unknown key", good + "  Colour = \"red\"\n", "unknown keys: LinuxAndBSD.Colour"},
		{"unknown section", good + "[Windows]\n  X = 1\n", "unknown keys"},
		{"bad toml", good + "[Details\n", "toml"},
		{"wrong type", strings.Replace(good, "Build = 4", `Build = "4"`, 1), "Build"},
		{"no name", strings.Replace(good, `Name = "Strata"`, `Name = ""`, 1), "Details.Name"},
		{"bad version", strings.Replace(good, `"1.2.3"`, `"1.2"`, 1), "Details.Version"},
		{"leading zero", strings.Replace(good, `"1.2.3"`, `"1.02.3"`, 1), "Details.Version"},
		{"build zero", strings.Replace(good, "Build = 4", "Build = 0", 1), "Details.Build"},
		{"bad id", strings.Replace(good, `"dev.strata.app"`, `"Strata App"`, 1), "Details.ID"},
		{"other id", strings.Replace(good, `"dev.strata.app"`, `"org.example.app"`, 1), "login item"},
		{"icon outside", strings.Replace(good, `"resources/icons/app.png"`, `"../x.png"`, 1), "Details.Icon"},
		{"icon not png", strings.Replace(good, `app.png`, `app.icns`, 1), "Details.Icon"},
	}
	for _, tt := range tests {
		_, err := ParseMetadata([]byte(tt.toml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
}

func TestCheckIconsRejects(t *testing.T) {
	m, err := LoadMetadata(filepath.Join(root, "FyneApp.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(filepath.Join(root, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The app icon where a template belongs is the wrong size; a colour
	// tray icon as template is not black.
	copyFile("resources/icons/app.png", m.Details.Icon)
	if err := CheckIcons(dir, m); err == nil || !strings.Contains(err.Error(), "no menu-bar template icons") {
		t.Errorf("no templates: %v", err)
	}
	copyFile("resources/icons/tray_idle.png", "resources/icons/template_idle.png")
	if err := CheckIcons(dir, m); err == nil || !strings.Contains(err.Error(), "want 44×44") {
		t.Errorf("64 px template: %v", err)
	}
	copyFile("resources/icons/template_busy.png", "resources/icons/template_idle.png")
	copyFile("resources/icons/tray_idle.png", m.Details.Icon)
	if err := CheckIcons(dir, m); err == nil || !strings.Contains(err.Error(), "want 1024×1024") {
		t.Errorf("small app icon: %v", err)
	}
}

func TestDesktopEntry(t *testing.T) {
	m, err := LoadMetadata(filepath.Join(root, "FyneApp.toml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DesktopEntry(m, "/home/a b/.local/bin/strata")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"[Desktop Entry]\n", "Name=Strata\n", `Exec="/home/a b/.local/bin/strata"` + "\n",
		"Icon=dev.strata.app\n", "Categories=Utility;\n", "Terminal=false\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("desktop entry lacks %q:\n%s", want, s)
		}
	}
	if _, err := DesktopEntry(m, "strata"); err == nil {
		t.Error("relative Exec accepted")
	}
}

func TestAutostartCommand(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "cfg"))
	exe := filepath.Join(home, ".local", "bin", "strata")
	if err := run([]string{"autostart", "-exe", exe, "on"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	// The file the menu's Start at login checks.
	entry := filepath.Join(home, "cfg", "autostart", "dev.strata.app.desktop")
	if runtime.GOOS == "darwin" {
		entry = filepath.Join(home, "Library", "LaunchAgents", "dev.strata.app.plist")
	}
	b, err := os.ReadFile(entry)
	if err != nil || !strings.Contains(string(b), exe) {
		t.Fatalf("login item %s: %v\n%s", entry, err, b)
	}
	if err := run([]string{"autostart", "-exe", exe, "off"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Fatalf("login item still there: %v", err)
	}
	if err := run([]string{"autostart", "-exe", exe, "maybe"}, io.Discard); err == nil {
		t.Error("autostart maybe accepted")
	}
	if err := run([]string{"nonsense"}, io.Discard); err == nil {
		t.Error("unknown command accepted")
	}
}
