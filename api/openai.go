package api

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/chat"
)

// The OpenAI-compatible endpoints. Fields Strata does not know are
// ignored, as OpenAI clients send many; the ones it knows are validated.

// stringList is a JSON string or array of strings ("stop", "prompt").
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = stringList{s}
		return nil
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return errors.New("want a string or an array of strings")
	}
	*l = ss
	return nil
}

// oaContent is a message content: a string or an array of parts of which
// the text parts are joined.
type oaContent string

func (c *oaContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = oaContent(s)
		return nil
	}
	if bytes.Equal(b, []byte("null")) {
		*c = ""
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("content: want a string or an array of parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return fmt.Errorf("content part of type %q is not supported (text only)", p.Type)
		}
		sb.WriteString(p.Text)
	}
	*c = oaContent(sb.String())
	return nil
}

type oaCommon struct {
	Model               string   `json:"model"`
	Stream              bool     `json:"stream"`
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens *int     `json:"max_completion_tokens"`
	Temperature         *float32 `json:"temperature"`
	TopP                *float32 `json:"top_p"`
	TopK                int      `json:"top_k"` // extension, as llama-server
	MinP                float32  `json:"min_p"` // extension
	RepeatPenalty       float32  `json:"repeat_penalty"`
	PresencePenalty     float32  `json:"presence_penalty"`
	FrequencyPenalty    float32  `json:"frequency_penalty"`
	Seed                *int64   `json:"seed"`
	N                   *int     `json:"n"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	KeepAlive      *protocol.KeepAlive      `json:"keep_alive"` // extension, as Ollama
	ResponseFormat *protocol.ResponseFormat `json:"response_format"`
}

type oaChatRequest struct {
	oaCommon
	Stop     stringList `json:"stop"`
	Messages []struct {
		Role       string              `json:"role"`
		Content    oaContent           `json:"content"`
		ToolCalls  []protocol.ToolCall `json:"tool_calls"`
		ToolCallID string              `json:"tool_call_id"`
		Name       string              `json:"name"`
	} `json:"messages"`
	Tools      []json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage   `json:"tool_choice"`
}

// engineMessages converts protocol messages for the engine.
func engineMessages(ms []protocol.Message) []engine.Message {
	out := make([]engine.Message, len(ms))
	for i, m := range ms {
		out[i] = engine.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return out
}

type oaCompletionRequest struct {
	oaCommon
	Stop   stringList `json:"stop"`
	Prompt stringList `json:"prompt"`
}

func (c *oaCommon) options(stop stringList) (protocol.Options, error) {
	o := protocol.Options{
		Temperature:      c.Temperature,
		TopK:             c.TopK,
		MinP:             c.MinP,
		RepeatPenalty:    c.RepeatPenalty,
		PresencePenalty:  c.PresencePenalty,
		FrequencyPenalty: c.FrequencyPenalty,
		Stop:             stop,
		KeepAlive:        c.KeepAlive,
		ResponseFormat:   c.ResponseFormat,
	}
	if c.Temperature == nil {
		one := float32(1) // OpenAI's default
		o.Temperature = &one
	}
	if c.TopP != nil {
		o.TopP = *c.TopP
	}
	switch {
	case c.MaxCompletionTokens != nil:
		o.MaxTokens = *c.MaxCompletionTokens
	case c.MaxTokens != nil:
		o.MaxTokens = *c.MaxTokens
	}
	if c.Seed != nil {
		o.Seed = uint64(*c.Seed)
	}
	if c.N != nil && *c.N != 1 {
		return o, protocol.Errorf(protocol.CodeBadRequest, "n=%d: only one choice per request is supported", *c.N)
	}
	if c.Model != "" && c.Model != "default" {
		// Only checked: generation uses the loaded model.
		if err := protocol.ValidModelName(c.Model); err != nil {
			return o, err
		}
	}
	return o, nil
}

// decodeBody reads a JSON body of at most MaxMessageBytes into v.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxMessageBytes))
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, protocol.CodeBadRequest, fmt.Sprintf("body larger than %d bytes", s.cfg.MaxMessageBytes))
		} else {
			writeHTTPError(w, http.StatusBadRequest, protocol.CodeBadRequest, "malformed JSON body: "+err.Error())
		}
		return false
	}
	return true
}

func writeErr(w http.ResponseWriter, err error) {
	var pe *protocol.Error
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Message
	}
	code := protocol.CodeOf(err)
	writeHTTPError(w, httpStatus(code), code, msg)
}

func (s *Server) modelName() string {
	st := s.run.Status().Status
	if st.Model == nil {
		return "none"
	}
	return modelID(st.Model)
}

func modelID(m *engine.ModelInfo) string {
	if m.Name != "" {
		return m.Name
	}
	return strings.TrimSuffix(filepath.Base(m.Path), ".gguf")
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	data := []model{}
	seen := map[string]bool{}
	if st := s.run.Status().Status; st.Model != nil {
		id := modelID(st.Model)
		data = append(data, model{ID: id, Object: "model", OwnedBy: "strata"})
		seen[id] = true
	}
	if s.cfg.Models != nil {
		ms, err := s.cfg.Models.List(r.Context())
		if err != nil {
			writeErr(w, err)
			return
		}
		for _, m := range ms {
			if m.Installed && !seen[m.Name] {
				data = append(data, model{ID: m.Name, Object: "model", OwnedBy: "strata"})
				seen[m.Name] = true
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	st := s.run.Status().Status
	switch st.State {
	case engine.StateReady, engine.StateGenerating:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case engine.StateLoading:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
	case engine.StateStopped:
		if s.run.Status().Idle { // unloaded after keep-alive; the next request reloads it
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "model": "unloaded until the next request"})
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "stopped"})
	default:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": string(st.State)})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (s *Server) serveChatCompletions(w http.ResponseWriter, r *http.Request) {
	var req oaChatRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	opts, err := req.options(req.Stop)
	if err != nil {
		writeErr(w, err)
		return
	}
	msgs := make([]protocol.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = protocol.Message{Role: m.Role, Content: string(m.Content), ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name}
	}
	// The websocket's validation, so both APIs accept the same requests.
	if _, _, err := protocol.Decode(mustJSON(protocol.Request{Type: protocol.TypeChat, ID: "http",
		Params: mustJSON(protocol.ChatParams{Messages: msgs, Options: opts})})); err != nil {
		writeErr(w, err)
		return
	}
	ts, err := parseTools(req.Tools, req.ToolChoice)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.serveOpenAI(w, r, engine.Request{Messages: engineMessages(msgs)}, opts, req.oaCommon, ts, true)
}

func (s *Server) serveCompletions(w http.ResponseWriter, r *http.Request) {
	var req oaCompletionRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	opts, err := req.options(req.Stop)
	if err != nil {
		writeErr(w, err)
		return
	}
	if len(req.Prompt) != 1 || req.Prompt[0] == "" {
		writeErr(w, protocol.Errorf(protocol.CodeBadRequest, "prompt must be one non-empty string"))
		return
	}
	if len(req.Prompt[0]) > protocol.MaxPromptBytes {
		writeErr(w, protocol.Errorf(protocol.CodeBadRequest, "prompt longer than %d bytes", protocol.MaxPromptBytes))
		return
	}
	s.serveOpenAI(w, r, engine.Request{Prompt: req.Prompt[0]}, opts, req.oaCommon, toolSpec{}, false)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are marshalled here
	}
	return b
}

// serveOpenAI runs the generation and answers in OpenAI's chat or text
// completion format, streamed as server-sent events or in one body.
func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request, ereq engine.Request, opts protocol.Options, c oaCommon, ts toolSpec, chat bool) {
	smp, err := s.sampling(opts)
	if err == nil {
		ereq.Constraint, err = constraint(opts.ResponseFormat)
	}
	if err == nil {
		err = ts.apply(&ereq)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	ereq.Sampling = smp
	g := genRequest{req: ereq, keepAlive: opts.KeepAlive}
	id := newID("cmpl-")
	object := "text_completion"
	if chat {
		id = newID("chatcmpl-")
		object = "chat.completion"
	}
	created := time.Now().Unix()
	model := s.modelName()
	ctx := r.Context()

	tp := newToolParser(ts)
	if !c.Stream {
		var text strings.Builder
		var calls []toolCall
		st, err := s.generate(ctx, g, nil, func(t engine.Token) error {
			content, cs := tp.add(t.Text)
			text.WriteString(content)
			calls = append(calls, cs...)
			return nil
		})
		if err != nil && !errors.Is(err, errCancelled) {
			writeErr(w, err)
			return
		}
		content, cs := tp.end()
		text.WriteString(content)
		calls = append(calls, cs...)
		choice := map[string]any{"index": 0, "finish_reason": oaFinish(st.FinishReason)}
		if chat {
			msg := map[string]any{"role": "assistant", "content": text.String()}
			if len(calls) > 0 {
				msg["tool_calls"] = oaToolCalls(calls, 0, false)
				choice["finish_reason"] = "tool_calls"
				if strings.TrimSpace(text.String()) == "" {
					msg["content"] = nil
				}
			}
			choice["message"] = msg
		} else {
			choice["text"] = text.String()
			choice["logprobs"] = nil
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": object, "created": created, "model": s.modelName(),
			"choices":            []any{choice},
			"usage":              usage(st),
			"system_fingerprint": "strata",
		})
		return
	}

	flusher, _ := w.(http.Flusher)
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
	}
	send := func(v any) error {
		start()
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	chunk := func(delta map[string]any, text string, finish any) map[string]any {
		if chat {
			return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		}
		return map[string]any{"id": id, "object": "text_completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish}}}
	}
	// Queue positions are not streamed over HTTP: the status line must wait
	// until the request either starts or fails (busy, no model).
	first := true
	ncalls := 0
	sendText := func(text string, calls []toolCall) error {
		if text == "" && len(calls) == 0 && !first {
			return nil
		}
		var delta map[string]any
		if chat {
			delta = map[string]any{"content": text}
			if len(calls) > 0 {
				delta = map[string]any{"tool_calls": oaToolCalls(calls, ncalls, true)}
				ncalls += len(calls)
				if text != "" {
					if err := send(chunk(map[string]any{"content": text}, text, nil)); err != nil {
						return err
					}
				}
			}
			if first {
				delta["role"] = "assistant"
			}
		}
		first = false
		return send(chunk(delta, text, nil))
	}
	st, err := s.generate(ctx, g, nil, func(t engine.Token) error {
		text, calls := tp.add(t.Text)
		if !first && text == "" && len(calls) == 0 {
			return nil
		}
		return sendText(text, calls)
	})
	if err == nil || errors.Is(err, errCancelled) {
		if text, calls := tp.end(); text != "" || len(calls) > 0 {
			sendText(text, calls)
		}
	}
	if err != nil && !errors.Is(err, errCancelled) {
		if !started {
			writeErr(w, err)
			return
		}
		code := protocol.CodeOf(err)
		var pe *protocol.Error
		msg := err.Error()
		if errors.As(err, &pe) {
			msg = pe.Message
		}
		send(map[string]any{"error": map[string]any{"message": msg, "type": string(code), "code": string(code)}})
		return
	}
	if ctx.Err() != nil {
		return // the client went away
	}
	var delta map[string]any
	if chat {
		delta = map[string]any{}
		if first {
			delta = map[string]any{"role": "assistant", "content": ""}
		}
	}
	finish := oaFinish(st.FinishReason)
	if ncalls > 0 {
		finish = "tool_calls"
	}
	send(chunk(delta, "", finish))
	if c.StreamOptions != nil && c.StreamOptions.IncludeUsage {
		obj := "text_completion"
		if chat {
			obj = "chat.completion.chunk"
		}
		send(map[string]any{"id": id, "object": obj, "created": created, "model": model, "choices": []any{}, "usage": usage(st)})
	}
	start()
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

func oaFinish(r string) string {
	switch r {
	case "length":
		return "length"
	case "cancelled":
		return "stop"
	default:
		return "stop"
	}
}

func usage(st protocol.GenStats) map[string]int {
	return map[string]int{
		"prompt_tokens":     st.PromptTokens,
		"completion_tokens": st.GeneratedTokens,
		"total_tokens":      st.PromptTokens + st.GeneratedTokens,
	}
}
