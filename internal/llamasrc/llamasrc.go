// Package llamasrc reads files of the llama.cpp source that the oracle's npm
// package carries (node-llama-cpp's llama/gitRelease.bundle under
// tools/oracle, installed by scripts/deps.sh test), so generators and tests
// can use llama.cpp's own headers without a checkout beside the project.
// It needs git on the PATH.
package llamasrc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BundlePath is the bundle's path relative to the module root.
const BundlePath = "tools/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle"

// ErrNoBundle is returned (wrapped) when the bundle is not installed.
var ErrNoBundle = errors.New("llama.cpp source bundle not installed (run scripts/deps.sh test)")

// Bundle returns the absolute path of the bundle, found from the module
// root above dir (the folder holding go.mod).
func Bundle(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("llamasrc: no go.mod above " + dir)
		}
		dir = parent
	}
	p := filepath.Join(dir, filepath.FromSlash(BundlePath))
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("llamasrc: %w: %v", ErrNoBundle, err)
	}
	return p, nil
}

// ReadFiles returns the contents of the named files (paths inside the
// llama.cpp tree, e.g. "ggml/src/ggml-common.h") at the bundle's HEAD. It
// fetches the bundle into a temporary bare repository, which it removes.
func ReadFiles(ctx context.Context, bundle string, names ...string) (map[string][]byte, error) {
	tmp, err := os.MkdirTemp("", "llamasrc-*.git")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + tmp}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("llamasrc: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	if _, err := git("init", "-q", "--bare"); err != nil {
		return nil, err
	}
	if _, err := git("fetch", "-q", bundle, "HEAD"); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := git("show", "FETCH_HEAD:"+n)
		if err != nil {
			return nil, err
		}
		out[n] = b
	}
	return out, nil
}

// ReadFile is ReadFiles for one file, with the bundle found from the
// working directory.
func ReadFile(ctx context.Context, name string) ([]byte, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	bundle, err := Bundle(wd)
	if err != nil {
		return nil, err
	}
	files, err := ReadFiles(ctx, bundle, name)
	if err != nil {
		return nil, err
	}
	return files[name], nil
}
