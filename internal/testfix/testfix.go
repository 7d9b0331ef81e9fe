// Package testfix locates shared test fixtures (the GGUF files written by
// llama.cpp's own tools) for tests across the module.
package testfix

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FixturesDir returns the absolute path of the shared fixtures folder,
// shared/fixtures in the parent of the module root (the folder holding
// go.mod, found by walking up from the working directory). If it is absent
// the test is skipped, or fails when the environment has CI=true.
func FixturesDir(t testing.TB) string {
	t.Helper()
	dir, err := fixturesDir()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared fixtures: %v", err)
		}
		t.Skipf("shared fixtures not available: %v", err)
	}
	return dir
}

func fixturesDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "fixtures")
	st, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", errors.New(dir + " is not a directory")
	}
	return dir, nil
}

// moduleRoot walks up from dir to the first folder holding go.mod.
func moduleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found above the working directory")
		}
		dir = parent
	}
}
