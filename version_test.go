package main

import (
	"strings"
	"testing"
)

func TestAppVersion(t *testing.T) {
	v, err := appVersion(fyneApp)
	if err != nil || v != version || v == "" {
		t.Fatalf("appVersion(FyneApp.toml) = %q, %v; version = %q", v, err, version)
	}
	// The macOS bundle's Info.plist has no version of its own: packaging/bundle
	// writes it from FyneApp.toml (its tests check the keys).
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
