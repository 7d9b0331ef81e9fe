// Package testfix locates the GGUF fixtures that llama.cpp's own tools
// wrote (testdata/ at the module root, described in testdata/README.md), for
// tests across the module. A missing fixture fails the test: it is part of
// the repository, never optional.
package testfix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The fixtures in testdata/ (see its README.md).
const (
	Qwen3MoEQ8_0   = "tiny-qwen3moe-Q8_0.gguf"
	Qwen3MoEQ4_K_M = "tiny-qwen3moe-Q4_K_M.gguf"
	Qwen3NextQ8_0  = "tiny-qwen3next-Q8_0.gguf"
)

// GGUFs lists every GGUF fixture.
var GGUFs = []string{Qwen3MoEQ8_0, Qwen3MoEQ4_K_M, Qwen3NextQ8_0}

// Path returns the absolute path of the fixture file name in the module's
// testdata/ folder (found by walking up from the working directory to the
// folder holding go.mod). The test fails at once if the file is missing.
func Path(t testing.TB, name string) string {
	t.Helper()
	p, err := path(name)
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return p
}

func path(name string) (string, error) {
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("%q is not a file name in testdata/", name)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "testdata", name)
	st, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", errors.New(p + " is not a regular file")
	}
	return p, nil
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
