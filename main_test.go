package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-llm/strata/api/client"
	"github.com/strata-llm/strata/api/protocol"
)

// syncBuffer is a bytes.Buffer safe for one writer and polling readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls buf until re matches, returning the submatches.
func waitFor(t *testing.T, buf *syncBuffer, re *regexp.Regexp, d time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(buf.String()); m != nil {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %v in output:\n%s", re, buf.String())
	return nil
}

func greedy(n int) protocol.CompleteParams {
	t := float32(0)
	return protocol.CompleteParams{Prompt: "Once upon a time", Options: protocol.Options{MaxTokens: n, Temperature: &t}}
}

// strata serve on a free loopback port with a temporary home, driven by
// the websocket client: deterministic greedy tokens, cancellation, and
// refusal of wrong or missing tokens.
func TestServeEndToEnd(t *testing.T) {
	home := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--home", home}, &stdout, &stderr)
	}()
	defer func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	}()

	m := waitFor(t, &stdout, regexp.MustCompile(`serving on http://(127\.0\.0\.1:\d+) \(websocket (ws://\S+/v1/ws)\)\nAPI token: ([0-9a-f]{64}) `), 30*time.Second)
	wsURL, tok := m[2], m[3]
	saved, err := os.ReadFile(filepath.Join(home, "config", "api-token"))
	if err != nil || strings.TrimSpace(string(saved)) != tok {
		t.Fatalf("token file %q (%v), printed %q", saved, err, tok)
	}
	if fi, _ := os.Stat(filepath.Join(home, "config", "api-token")); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode().Perm())
	}

	cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
	defer ccancel()
	// Wrong and missing tokens are refused before anything happens.
	if _, err := client.Dial(cctx, wsURL, client.Options{Token: strings.Repeat("f", 64)}); !client.IsCode(err, protocol.CodeUnauthorized) {
		t.Errorf("wrong token: %v, want unauthorized", err)
	}
	if _, err := client.Dial(cctx, wsURL, client.Options{Token: strings.Repeat("f", 64), TokenInHello: true}); !client.IsCode(err, protocol.CodeUnauthorized) {
		t.Errorf("wrong token in hello: %v, want unauthorized", err)
	}
	if _, err := client.Dial(cctx, wsURL, client.Options{}); !client.IsCode(err, protocol.CodeUnauthorized) {
		t.Errorf("missing token: %v, want unauthorized", err)
	}

	c, err := client.Dial(cctx, wsURL, client.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The demo model is generated and loaded in the background.
	var st protocol.EngineStatus
	for st.State != "ready" {
		if st, err = c.EngineStatus(cctx); err != nil {
			t.Fatal(err)
		}
		if st.State == "error" {
			t.Fatalf("engine: %s", st.Error)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Model == nil || !st.Model.Demo || st.Last != nil {
		t.Fatalf("status %+v: want the demo model and no generation yet (refused clients must not generate)", st)
	}
	// Off an Apple-silicon Mac, Auto resolves to the CPU and says why.
	if runtime.GOOS != "darwin" && (st.Backend != "cpu" || st.BackendFallback || !strings.Contains(st.BackendReason, "needs a Mac with Apple silicon")) {
		t.Errorf("backend %q (%q, fallback %v): want the CPU, and the reason", st.Backend, st.BackendReason, st.BackendFallback)
	}
	if _, err := os.Stat(filepath.Join(home, "cache", "strata-demo-qwen3moe-v1.gguf")); err != nil {
		t.Errorf("demo model not in the cache folder: %v", err)
	}

	var ids [2][]int32
	for i := range ids {
		g, err := c.Complete(cctx, greedy(16), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Tokens) != 16 {
			t.Fatalf("run %d: %d tokens, want 16", i, len(g.Tokens))
		}
		ids[i] = g.Tokens
	}
	if !slices.Equal(ids[0], ids[1]) {
		t.Errorf("temperature 0 twice gave different ids:\n%v\n%v", ids[0], ids[1])
	}
	n := 0
	g, err := c.Complete(cctx, greedy(3000), func(ev protocol.Event) {
		if n++; n == 3 {
			c.Cancel(cctx, ev.ID)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The engine stops within a step of the cancel reaching the server,
	// but the demo model decodes a token in well under a millisecond (and
	// speculative decoding emits up to 16 a step on its repetitive text),
	// so more are made while the cancel is on the wire (357 of them once on
	// a Zen 5): the test asks for many more than that.
	if g.Stats.FinishReason != "cancelled" || len(g.Tokens) < 3 || len(g.Tokens) >= 3000 {
		t.Errorf("cancel after 3: %d tokens, finish %q", len(g.Tokens), g.Stats.FinishReason)
	}

	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("serve exited with %d", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	if b, err := os.ReadFile(filepath.Join(home, "logs", "strata.log")); err != nil || !strings.Contains(string(b), "api listening") {
		t.Errorf("log file: %v", err)
	}
}

func TestRunJSON(t *testing.T) {
	home := t.TempDir()
	var outs [2]struct {
		PromptIDs    []int32 `json:"prompt_ids"`
		GeneratedIDs []int32 `json:"generated_ids"`
		Text         *string `json:"text"`
	}
	for i := range outs {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"run", "--home", home, "--prompt", "Hello there", "--max-tokens", "8", "--temperature", "0", "--json"}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil {
			t.Fatalf("not JSON: %q: %v", stdout.String(), err)
		}
		if err := json.Unmarshal(stdout.Bytes(), &outs[i]); err != nil {
			t.Fatal(err)
		}
		o := outs[i]
		if len(o.PromptIDs) == 0 || len(o.GeneratedIDs) == 0 || len(o.GeneratedIDs) > 8 || o.Text == nil {
			t.Errorf("output %s", stdout.String())
		}
	}
	if !slices.Equal(outs[0].GeneratedIDs, outs[1].GeneratedIDs) || !slices.Equal(outs[0].PromptIDs, outs[1].PromptIDs) {
		t.Errorf("greedy runs differ: %v / %v", outs[0], outs[1])
	}
	// Streaming text mode prints the same text.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", "--home", home, "--prompt", "Hello there", "--max-tokens", "8", "--temperature", "0"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.TrimSuffix(stdout.String(), "\n") != *outs[0].Text {
		t.Errorf("text mode %q, json %q", stdout.String(), *outs[0].Text)
	}
}

func TestCLI(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"help"}, 0, "serve", ""},
		{[]string{"--help"}, 0, "usage: strata", ""},
		{[]string{"version"}, 0, "strata " + version, ""},
		{[]string{"--version"}, 0, "strata " + version, ""},
		{[]string{"serve", "--help"}, 0, "", "usage: strata serve"},
		{[]string{"run", "--help"}, 0, "", "--max-tokens"},
		{[]string{"help", "run"}, 0, "", "usage: strata run"},
		{[]string{"inspect", "--help"}, 0, "", "usage: strata inspect"},
		{[]string{"nope"}, 2, "", "unknown command"},
		{[]string{"--bogus"}, 2, "", "unknown flag"},
		{[]string{"run"}, 2, "", "--prompt"},
		{[]string{"run", "--prompt", "x", "--temperature", "9"}, 2, "", "temperature"},
		{[]string{"serve", "--bogus"}, 2, "", "flag provided but not defined"},
		{[]string{"serve", "--addr", "0.0.0.0:0", "--home", t.TempDir()}, 2, "", "not a loopback address"},
		{[]string{"serve", "--addr", "nonsense", "--home", t.TempDir()}, 2, "", "HOST:PORT"},
		{[]string{"inspect", filepath.Join(t.TempDir(), "missing.gguf")}, 1, "", "missing.gguf"},
		{[]string{"selftest", "--help"}, 0, "", "usage: strata selftest"},
		{[]string{"selftest", "extra"}, 2, "", "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tt.code, stdout.String(), stderr.String())
			}
		})
	}
}
