package api_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/strata-llm/strata/internal/runner"
)

func decode[T any](t *testing.T, h *harness, method, path, body string) (T, int) {
	t.Helper()
	var v T
	resp := h.request(t, method, path, body, nil)
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return v, resp.StatusCode
}

type olFinal struct {
	Model   string `json:"model"`
	Message *struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Response   *string `json:"response"`
	Done       bool    `json:"done"`
	DoneReason string  `json:"done_reason"`
	EvalCount  int     `json:"eval_count"`
	PromptEval int     `json:"prompt_eval_count"`
	Error      string  `json:"error"`
}

func TestOllamaEndpoints(t *testing.T) {
	h := start(t, nil)
	v, _ := decode[map[string]string](t, h, "GET", "/api/version", "")
	if v["version"] == "" {
		t.Errorf("version %v", v)
	}
	tags, _ := decode[struct {
		Models []struct {
			Name    string `json:"name"`
			Details struct {
				Format string `json:"format"`
				Family string `json:"family"`
			} `json:"details"`
		} `json:"models"`
	}](t, h, "GET", "/api/tags", "")
	if len(tags.Models) != 1 || tags.Models[0].Details.Format != "gguf" || tags.Models[0].Details.Family != "qwen3moe" {
		t.Fatalf("tags %+v", tags)
	}
	name := tags.Models[0].Name
	show, code := decode[map[string]any](t, h, "POST", "/api/show", `{"model":"`+name+`"}`)
	if code != 200 || show["model_info"].(map[string]any)["general.architecture"] != "qwen3moe" {
		t.Errorf("show %d %v", code, show)
	}

	// Non-streamed chat and generate, with options and usage counts.
	for _, tc := range []struct{ path, body string }{
		{"/api/chat", `{"model":"x","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":5,"temperature":0,"seed":3}}`},
		{"/api/generate", `{"model":"x","stream":false,"prompt":"Once","options":{"num_predict":5,"temperature":0}}`},
		{"/api/generate", `{"model":"x","stream":false,"raw":true,"prompt":"Once","options":{"num_predict":5}}`},
	} {
		f, code := decode[olFinal](t, h, "POST", tc.path, tc.body)
		if code != 200 || !f.Done || f.EvalCount != 5 || f.PromptEval == 0 || f.DoneReason != "length" || f.Model != "x" {
			t.Errorf("%s: %d %+v", tc.path, code, f)
		}
		if (tc.path == "/api/chat") != (f.Message != nil) || (tc.path == "/api/generate") != (f.Response != nil) {
			t.Errorf("%s: wrong shape %+v", tc.path, f)
		}
	}

	// Streaming: NDJSON lines, the last one done with the stats.
	resp := h.request(t, "POST", "/api/chat", `{"model":"x","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":6}}`, nil)
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	var lines []olFinal
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var f olFinal
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, f)
	}
	if len(lines) < 2 || !lines[len(lines)-1].Done || lines[len(lines)-1].EvalCount != 6 || lines[0].Done || lines[0].Message.Role != "assistant" {
		t.Errorf("stream %+v", lines)
	}

	// format: a schema is enforced.
	f, _ := decode[olFinal](t, h, "POST", "/api/chat", `{"model":"x","stream":false,"messages":[{"role":"user","content":"hi"}],
		"format":{"type":"object","properties":{"n":{"type":"integer"},"s":{"enum":["a","b"]}},"required":["n","s"]},"options":{"num_predict":200}}`)
	var obj struct {
		N *int    `json:"n"`
		S *string `json:"s"`
	}
	if err := json.Unmarshal([]byte(f.Message.Content), &obj); err != nil || obj.N == nil || obj.S == nil {
		t.Errorf("format: %q %v", f.Message.Content, err)
	}

	// Errors in Ollama's shape.
	for _, body := range []string{`{"messages":[{"role":"user","content":"hi"}]}`, `{"model":"x","format":"yaml","messages":[{"role":"user","content":"hi"}]}`} {
		f, code := decode[olFinal](t, h, "POST", "/api/chat", body)
		if code != 400 || f.Error == "" {
			t.Errorf("%s: %d %+v", body, code, f)
		}
	}
	if f, code := decode[olFinal](t, h, "POST", "/api/show", `{"model":"nope"}`); code != 200 && (code != 404 || f.Error == "") {
		t.Errorf("show unknown: %d", code)
	}
}

type psList struct {
	Models []struct {
		Name      string    `json:"name"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"models"`
}

// keep_alive with Ollama's meaning on /api/*, /api/ps's expires_at, and
// the empty-request load and unload; engine.status says the same.
func TestOllamaKeepAliveAndPs(t *testing.T) {
	h := startWith(t, func(c *runner.Config) { c.KeepAlive = func() time.Duration { return time.Hour } }, nil)
	ps, _ := decode[psList](t, h, "GET", "/api/ps", "")
	if len(ps.Models) != 1 || time.Until(ps.Models[0].ExpiresAt) < 59*time.Minute {
		t.Fatalf("ps after load: %+v", ps)
	}
	decode[olFinal](t, h, "POST", "/api/generate", `{"model":"x","stream":false,"prompt":"a","keep_alive":"10m","options":{"num_predict":1}}`)
	ps, _ = decode[psList](t, h, "GET", "/api/ps", "")
	if len(ps.Models) != 1 || time.Until(ps.Models[0].ExpiresAt) > 10*time.Minute || time.Until(ps.Models[0].ExpiresAt) < 9*time.Minute {
		t.Fatalf("ps after keep_alive 10m: %+v", ps)
	}
	decode[olFinal](t, h, "POST", "/api/generate", `{"model":"x","stream":false,"prompt":"a","keep_alive":-1,"options":{"num_predict":1}}`)
	ps, _ = decode[psList](t, h, "GET", "/api/ps", "")
	if len(ps.Models) != 1 || ps.Models[0].ExpiresAt.Year() < 2300 {
		t.Fatalf("ps after keep_alive -1: %+v", ps)
	}
	// An empty request with keep_alive 0 unloads; the model is then idle,
	// not stopped: the next request loads it again.
	f, _ := decode[olFinal](t, h, "POST", "/api/generate", `{"model":"x","keep_alive":0}`)
	if !f.Done || f.DoneReason != "unload" {
		t.Fatalf("unload: %+v", f)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.run.Status().Model != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ps, _ = decode[psList](t, h, "GET", "/api/ps", "")
	st := h.run.Status()
	if len(ps.Models) != 0 || !st.Idle || st.StoppedByUser {
		t.Fatalf("after unload: ps %+v status idle=%v stopped=%v", ps, st.Idle, st.StoppedByUser)
	}
	c := h.dial(t)
	es, err := c.EngineStatus(ctxT(t, 10*time.Second))
	if err != nil || !es.Idle || es.State != "stopped" {
		t.Fatalf("engine.status %+v %v", es, err)
	}
	f, _ = decode[olFinal](t, h, "POST", "/api/chat", `{"model":"x","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":2}}`)
	if f.EvalCount != 2 {
		t.Fatalf("after idle: %+v", f)
	}
	es, _ = c.EngineStatus(ctxT(t, 10*time.Second))
	if es.Idle || es.ExpiresAt == nil || time.Until(*es.ExpiresAt) < 59*time.Minute {
		t.Fatalf("engine.status after reload %+v", es)
	}
	f, _ = decode[olFinal](t, h, "POST", "/api/chat", `{"model":"x","messages":[]}`)
	if f.DoneReason != "load" || !strings.Contains(f.Model, "x") {
		t.Errorf("load: %+v", f)
	}
}
