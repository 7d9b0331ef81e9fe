package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRealClients runs the official openai and ollama npm packages
// (tools/clients, installed by scripts/deps.sh test) against strata serve
// on the demo model: chat, streaming with usage, completions, tool calls
// round trip (plain and streamed), json_schema, the Ollama endpoints with
// format, tool history, ps, list and show.
func TestRealClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed (scripts/deps.sh test installs it): %v", err)
	}
	dir, _ := filepath.Abs(filepath.Join("tools", "clients"))
	for _, p := range []string{"openai", "ollama"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			t.Fatalf("%s is not installed in %s: run scripts/deps.sh test (npm ci there)", p, dir)
		}
	}
	home := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--home", home}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	}()
	m := waitFor(t, &stdout, regexp.MustCompile(`serving on (http://127\.0\.0\.1:\d+) .*\nAPI token: ([0-9a-f]{64}) `), 30*time.Second)
	waitFor(t, &stderr, regexp.MustCompile(`model loaded`), 60*time.Second)

	cctx, ccancel := context.WithTimeout(ctx, 5*time.Minute)
	defer ccancel()
	cmd := exec.CommandContext(cctx, node, filepath.Join(dir, "clients.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STRATA_URL="+m[1], "STRATA_TOKEN="+m[2])
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	t.Logf("clients:\n%s", out.String())
	if err != nil {
		t.Fatalf("clients.mjs: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"openai tools round trip", "openai json_schema", "ollama chat stream", "ollama ps, list, show"} {
		if !strings.Contains(out.String(), "ok "+want) {
			t.Errorf("check %q did not run", want)
		}
	}
}
