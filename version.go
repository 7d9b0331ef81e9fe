package main

import (
	_ "embed"
	"fmt"
	"regexp"

	"github.com/BurntSushi/toml"
)

// fyneApp is FyneApp.toml, the one place the version is written (the
// packaging tools read it too).
//
//go:embed FyneApp.toml
var fyneApp []byte

// version is Strata's version, Details.Version of FyneApp.toml.
var version = mustAppVersion(fyneApp)

var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

// appVersion parses FyneApp.toml strictly: valid TOML, a [Details] table
// whose Version is a semantic version and whose Build is a positive
// integer.
func appVersion(b []byte) (string, error) {
	var doc struct {
		Details struct {
			Version string
			Build   int
		}
	}
	md, err := toml.Decode(string(b), &doc)
	if err != nil {
		return "", fmt.Errorf("FyneApp.toml: %w", err)
	}
	switch {
	case !md.IsDefined("Details", "Version"):
		return "", fmt.Errorf("FyneApp.toml: no Details.Version")
	case !semverRe.MatchString(doc.Details.Version):
		return "", fmt.Errorf("FyneApp.toml: Details.Version %q is not a semantic version (1.2.3)", doc.Details.Version)
	case doc.Details.Build < 1:
		return "", fmt.Errorf("FyneApp.toml: Details.Build %d, want a positive integer", doc.Details.Build)
	}
	return doc.Details.Version, nil
}

// mustAppVersion is appVersion for the embedded file, which is part of
// the build: a malformed one is a build defect (TestAppVersion catches it).
func mustAppVersion(b []byte) string {
	v, err := appVersion(b)
	if err != nil {
		panic(err)
	}
	return v
}
