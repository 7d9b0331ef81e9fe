package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strata-llm/strata/api/protocol"
)

// sseEvents parses a server-sent event stream as OpenAI's clients do:
// events separated by blank lines, "data:" fields joined by newlines,
// comment lines (":") ignored, the stream ending at "data: [DONE]".
func sseEvents(r io.Reader) (events []string, done bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var data []string
	flush := func() {
		if len(data) > 0 {
			events = append(events, strings.Join(data, "\n"))
			data = nil
		}
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "data:"):
			v := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			if v == "[DONE]" {
				flush()
				return events, true, sc.Err()
			}
			data = append(data, v)
		default:
			// Other fields (event:, id:, retry:) are not used by OpenAI streams.
			if !strings.HasPrefix(line, "event:") && !strings.HasPrefix(line, "id:") && !strings.HasPrefix(line, "retry:") {
				return events, false, fmt.Errorf("not an SSE line: %q", line)
			}
		}
	}
	flush()
	return events, false, sc.Err()
}

type chatChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func TestOpenAIChatStream(t *testing.T) {
	h := start(t, nil)
	body := `{"model":"whatever","stream":true,"stream_options":{"include_usage":true},"temperature":0,"max_tokens":12,
	  "messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`
	resp := h.request(t, "POST", "/v1/chat/completions", body, nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	events, done, err := sseEvents(resp.Body)
	if err != nil || !done {
		t.Fatalf("stream: done=%v err=%v", done, err)
	}
	var text strings.Builder
	var finish string
	var usage *chatChunk
	id := ""
	for i, e := range events {
		var c chatChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %d %q: %v", i, e, err)
		}
		if c.Object != "chat.completion.chunk" || c.ID == "" || c.Created == 0 || c.Model == "" {
			t.Errorf("chunk %d header %+v", i, c)
		}
		if id == "" {
			id = c.ID
		} else if c.ID != id {
			t.Errorf("chunk ids differ: %s %s", id, c.ID)
		}
		if c.Usage != nil {
			usage = &c
			continue
		}
		if len(c.Choices) != 1 {
			t.Fatalf("chunk %d: %d choices", i, len(c.Choices))
		}
		ch := c.Choices[0]
		if i == 0 && ch.Delta.Role != "assistant" {
			t.Errorf("first chunk has no assistant role: %s", e)
		}
		if ch.Delta.Content != nil {
			text.WriteString(*ch.Delta.Content)
		}
		if ch.FinishReason != nil {
			if finish != "" {
				t.Error("two finish reasons")
			}
			finish = *ch.FinishReason
		}
	}
	if finish != "length" && finish != "stop" {
		t.Errorf("finish reason %q", finish)
	}
	if usage == nil || usage.Usage.CompletionTokens == 0 || usage.Usage.CompletionTokens > 12 ||
		usage.Usage.TotalTokens != usage.Usage.PromptTokens+usage.Usage.CompletionTokens || len(usage.Choices) != 0 {
		t.Errorf("usage chunk %+v", usage)
	}

	// The same request without streaming gives the same text (greedy).
	resp = h.request(t, "POST", "/v1/chat/completions", strings.Replace(body, `"stream":true`, `"stream":false`, 1), nil)
	var full struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&full); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if full.Object != "chat.completion" || len(full.Choices) != 1 || full.Choices[0].Message.Role != "assistant" {
		t.Errorf("response %+v", full)
	}
	if full.Choices[0].Message.Content != text.String() || full.Choices[0].FinishReason != finish {
		t.Errorf("non-stream %q/%s, stream %q/%s", full.Choices[0].Message.Content, full.Choices[0].FinishReason, text.String(), finish)
	}
}

func TestOpenAICompletions(t *testing.T) {
	h := start(t, nil)
	resp := h.request(t, "POST", "/v1/completions", `{"prompt":"One two","max_tokens":5,"temperature":0,"stream":true}`, nil)
	events, done, err := sseEvents(resp.Body)
	if err != nil || !done || len(events) < 2 {
		t.Fatalf("%d events, done=%v, %v", len(events), done, err)
	}
	var streamed strings.Builder
	for _, e := range events {
		var c chatChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil || c.Object != "text_completion" || len(c.Choices) != 1 {
			t.Fatalf("chunk %q: %v", e, err)
		}
		streamed.WriteString(c.Choices[0].Text)
	}
	resp = h.request(t, "POST", "/v1/completions", `{"prompt":["One two"],"max_tokens":5,"temperature":0}`, nil)
	var full struct {
		Object  string `json:"object"`
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&full); err != nil {
		t.Fatal(err)
	}
	if full.Object != "text_completion" || full.Choices[0].Text != streamed.String() || full.Usage.CompletionTokens != 5 || full.Choices[0].FinishReason != "length" {
		t.Errorf("completion %+v, streamed %q", full, streamed.String())
	}
}

func TestOpenAIModelsAndHealth(t *testing.T) {
	h := start(t, nil)
	resp := h.request(t, "GET", "/v1/models", "", nil)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || list.Object != "list" || len(list.Data) != 1 || list.Data[0].Object != "model" || list.Data[0].ID == "" {
		t.Fatalf("models %+v %v", list, err)
	}
	if resp := h.request(t, "GET", "/health", "", nil); resp.StatusCode != 200 {
		t.Errorf("health ready: %d", resp.StatusCode)
	}
	h.run.Stop()
	if resp := h.request(t, "GET", "/health", "", nil); resp.StatusCode != 503 {
		t.Errorf("health without model: %d", resp.StatusCode)
	}
	resp = h.request(t, "POST", "/v1/completions", `{"prompt":"a"}`, nil)
	if resp.StatusCode != 503 || errorCode(t, resp) != string(protocol.CodeModelNotLoaded) {
		t.Errorf("completion without model: %d", resp.StatusCode)
	}
	// While loading: 503 "loading".
	loaded := make(chan error, 1)
	go func() { loaded <- h.run.Start(ctxT(t, 30*time.Second), demoPath) }()
	sawLoading := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		resp := h.request(t, "GET", "/health", "", nil)
		var b struct{ Status string }
		json.NewDecoder(resp.Body).Decode(&b)
		if b.Status == "loading" {
			sawLoading = true
			if resp.StatusCode != 503 {
				t.Errorf("loading: %d", resp.StatusCode)
			}
		}
		if resp.StatusCode == 200 {
			break
		}
	}
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	t.Logf("saw the loading state: %v", sawLoading)
}

func TestKeepAliveUnloadsAndReloads(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, 30*time.Second)
	p := greedy(2, "a")
	p.KeepAlive = &protocol.KeepAlive{D: 50 * time.Millisecond}
	if _, err := c.Complete(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.eng.Status().Model != nil {
		if time.Now().After(deadline) {
			t.Fatal("model not unloaded after keep_alive")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp := h.request(t, "GET", "/health", "", nil); resp.StatusCode != 200 {
		t.Errorf("health after keep-alive unload: %d", resp.StatusCode)
	}
	g, err := c.Complete(ctx, greedy(2, "a"), nil)
	if err != nil || len(g.Tokens) != 2 {
		t.Fatalf("after unload: %+v %v", g, err)
	}
	if st := h.eng.Status(); st.Model == nil || st.Model.Path != demoPath {
		t.Errorf("not reloaded: %+v", st)
	}
}
