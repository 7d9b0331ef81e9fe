package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/strata-llm/strata/api/protocol"
)

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
  "parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer"}},"required":["city","days"]}}}`

type oaToolReply struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// A forced tool call on the random-weight demo model (Qwen3's template)
// comes back as a parsed call whose arguments match the parameters; the
// call and its result then go back in as history.
func TestForcedToolCallRoundTrip(t *testing.T) {
	h := start(t, nil)
	val := validator(t, `{"type":"object","properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer"}},"required":["city","days"]}`)
	for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_weather"}}`} {
		for seed := 1; seed <= 5; seed++ {
			body := `{"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":200,"seed":` + string(rune('0'+seed)) +
				`,"tools":[` + weatherTool + `],"tool_choice":` + choice + `}`
			resp := h.request(t, "POST", "/v1/chat/completions", body, nil)
			var out oaToolReply
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || len(out.Choices) != 1 {
				t.Fatalf("status %d: %v", resp.StatusCode, err)
			}
			ch := out.Choices[0]
			if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
				t.Fatalf("choice %s seed %d: finish %q, %d calls, content %v", choice, seed, ch.FinishReason, len(ch.Message.ToolCalls), ch.Message.Content)
			}
			call := ch.Message.ToolCalls[0]
			if call.Type != "function" || call.Function.Name != "get_weather" || !strings.HasPrefix(call.ID, "call_") {
				t.Fatalf("call %+v", call)
			}
			var args any
			if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
				t.Fatalf("arguments %q: %v", call.Function.Arguments, err)
			}
			if err := val.Validate(args); err != nil {
				t.Fatalf("arguments %s: %v", call.Function.Arguments, err)
			}
			// Feed the call and a result back.
			hist, _ := json.Marshal([]any{
				map[string]any{"role": "user", "content": "Weather in Paris?"},
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": call.ID, "type": "function",
					"function": map[string]any{"name": call.Function.Name, "arguments": call.Function.Arguments}}}},
				map[string]any{"role": "tool", "tool_call_id": call.ID, "content": `{"temp": 21}`},
			})
			resp = h.request(t, "POST", "/v1/chat/completions", `{"max_tokens":4,"tools":[`+weatherTool+`],"messages":`+string(hist)+`}`, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("round trip: status %d", resp.StatusCode)
			}
		}
	}
}

// Streaming: the call arrives as an OpenAI tool_calls delta with index,
// id, name and arguments, and the stream ends with finish_reason tool_calls.
func TestForcedToolCallStream(t *testing.T) {
	h := start(t, nil)
	resp := h.request(t, "POST", "/v1/chat/completions", `{"stream":true,"max_tokens":200,"seed":3,"messages":[{"role":"user","content":"x"}],
		"tools":[`+weatherTool+`],"tool_choice":"required"}`, nil)
	events, done, err := sseEvents(resp.Body)
	if err != nil || !done {
		t.Fatalf("stream: %v done %v", err, done)
	}
	var name, args, finish string
	for _, ev := range events {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    *int   `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil || *tc.Index != 0 || tc.ID == "" {
					t.Errorf("delta %+v", tc)
				}
				name += tc.Function.Name
				args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if name != "get_weather" || !json.Valid([]byte(args)) || finish != "tool_calls" {
		t.Fatalf("streamed call %q %q finish %q", name, args, finish)
	}
}

func TestToolRequestErrors(t *testing.T) {
	h := start(t, nil)
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"other"}}}`,
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":[` + weatherTool + `],"tool_choice":"sometimes"}`,
	} {
		if resp := h.request(t, "POST", "/v1/chat/completions", body, nil); resp.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", body, resp.StatusCode)
		}
	}
}

// The websocket chat takes tools and response_format too: a forced call
// arrives as a delta with tool_calls; a json_schema reply parses.
func TestWebsocketToolsAndFormat(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, time.Minute)
	var calls []protocol.ToolCall
	g, err := c.Chat(ctx, protocol.ChatParams{
		Messages:   []protocol.Message{{Role: "user", Content: "Weather?"}},
		Tools:      []json.RawMessage{json.RawMessage(weatherTool)},
		ToolChoice: json.RawMessage(`"required"`),
		Options:    protocol.Options{MaxTokens: 200, Seed: 5},
	}, func(ev protocol.Event) { calls = append(calls, ev.ToolCalls...) })
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Function.Name != "get_weather" || !json.Valid([]byte(calls[0].Function.Arguments)) || strings.Contains(g.Text, "<tool_call>") {
		t.Fatalf("calls %+v text %q", calls, g.Text)
	}
	g, err = c.Chat(ctx, protocol.ChatParams{
		Messages: []protocol.Message{{Role: "user", Content: "JSON"}},
		Options: protocol.Options{MaxTokens: 300, Seed: 6, ResponseFormat: &protocol.ResponseFormat{Type: "json_schema",
			JSONSchema: &protocol.JSONSchema{Schema: json.RawMessage(replySchema)}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := validator(t, replySchema).Validate(mustParse(t, g.Text)); err != nil {
		t.Fatalf("%s: %v", g.Text, err)
	}
}

func mustParse(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}
