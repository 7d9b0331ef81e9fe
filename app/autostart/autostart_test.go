package autostart

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestLinuxWithTempHome(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("the XDG variant runs on Linux")
	}
	home := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "xdg")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", cfg)
	a, err := New("/opt/Strata App/strata")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(cfg, "autostart", "dev.strata.app.desktop")
	if a.Path() != want {
		t.Fatalf("Path = %s, want %s", a.Path(), want)
	}
	if a.Enabled() {
		t.Fatal("enabled before Set")
	}
	if err := a.Set(true); err != nil {
		t.Fatal(err)
	}
	if !a.Enabled() {
		t.Fatal("not enabled after Set(true)")
	}
	data, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"[Desktop Entry]", "Type=Application", `Exec="/opt/Strata App/strata"`, "Name=Strata"} {
		if !strings.Contains(string(data), line+"\n") {
			t.Errorf("desktop entry lacks %q:\n%s", line, data)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(want))
	if len(ents) != 1 {
		t.Errorf("stray files: %v", ents)
	}
	if err := a.Set(true); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := a.Set(false); err != nil {
		t.Fatal(err)
	}
	if a.Enabled() {
		t.Fatal("still enabled after Set(false)")
	}
	if err := a.Set(false); err != nil { // removing twice is fine
		t.Fatal(err)
	}

	// XDG_CONFIG_HOME unset (or relative): ~/.config.
	t.Setenv("XDG_CONFIG_HOME", "relative/dir")
	b, err := New("/usr/bin/strata")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".config", "autostart", "dev.strata.app.desktop"); b.Path() != want {
		t.Fatalf("Path = %s, want %s", b.Path(), want)
	}
}

func TestDarwinPlist(t *testing.T) {
	home := t.TempDir()
	a, err := newFor("darwin", home, "", "/Applications/Strata.app/Contents/MacOS/strata & <co>")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "Library", "LaunchAgents", "dev.strata.app.plist"); a.Path() != want {
		t.Fatalf("Path = %s", a.Path())
	}
	if err := a.Set(true); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	// Well-formed XML whose program argument round-trips.
	var doc struct {
		Dict struct {
			Strings []string `xml:"string"`
			Array   struct {
				Strings []string `xml:"string"`
			} `xml:"array"`
		} `xml:"dict"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("plist is not XML: %v\n%s", err, data)
	}
	if got := doc.Dict.Array.Strings; len(got) != 1 || got[0] != "/Applications/Strata.app/Contents/MacOS/strata & <co>" {
		t.Fatalf("ProgramArguments = %q", got)
	}
	if doc.Dict.Strings[0] != Label || !strings.Contains(string(data), "<key>RunAtLoad</key>\n\t<true/>") {
		t.Fatalf("plist:\n%s", data)
	}
	if err := a.Set(false); err != nil || a.Enabled() {
		t.Fatalf("Set(false) = %v, enabled %v", err, a.Enabled())
	}
}

func TestBadPaths(t *testing.T) {
	for _, exe := range []string{"strata", "bin/strata", "/x/y\nExec=evil"} {
		if _, err := newFor("linux", "/home/u", "", exe); err == nil {
			t.Errorf("newFor(%q) accepted", exe)
		}
	}
}

func TestDesktopExec(t *testing.T) {
	tests := map[string]string{
		"/usr/bin/strata":    "/usr/bin/strata",
		"/opt/my app/strata": `"/opt/my app/strata"`,
		`/opt/a"b/strata`:    `"/opt/a\\"b/strata"`,
		"/opt/100%/strata":   `"/opt/100%%/strata"`,
		"/opt/$HOME/strata":  `"/opt/\\$HOME/strata"`,
	}
	for in, want := range tests {
		if got := DesktopExec(in); got != want {
			t.Errorf("DesktopExec(%q) = %s, want %s", in, got, want)
		}
	}
}
