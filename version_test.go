package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestAppVersion(t *testing.T) {
	v, err := appVersion(fyneApp)
	if err != nil || v != version || v == "" {
		t.Fatalf("appVersion(FyneApp.toml) = %q, %v; version = %q", v, err, version)
	}
	// The macOS bundle's Info.plist (packaging replaces its version from
	// FyneApp.toml too) must not drift either.
	plist, err := os.ReadFile("packaging/macos/Info.plist")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<key>CFBundleShortVersionString</key>\s*<string>([^<]*)</string>`).FindSubmatch(plist)
	if m == nil || string(m[1]) != version {
		t.Errorf("Info.plist CFBundleShortVersionString %q, FyneApp.toml %q", m, version)
	}
	for _, tc := range []struct{ doc, err string }{
		{"[Details]\nVersion = \"1.2.3\"\nBuild = 4\n", ""},
		{"[Details]\nVersion = \"1.2.3-rc.1\"\nBuild = 4\n", ""},
		{"[Details]\nVersion = \"1.2\"\nBuild = 4\n", "semantic version"},
		{"[Details]\nVersion = 1\nBuild = 4\n", "incompatible types"},
		{"[Details]\nBuild = 4\n", "no Details.Version"},
		{"[Details]\nVersion = \"1.2.3\"\n", "Build"},
		{"[Details\nVersion = \"1.2.3\"\n", "FyneApp.toml"},
		{"Version = \"1.2.3\"\nBuild = 1\n", "no Details.Version"},
	} {
		_, err := appVersion([]byte(tc.doc))
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: err %v, want %q", tc.doc, err, tc.err)
		}
	}
}
