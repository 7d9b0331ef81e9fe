package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/grammar"
	"github.com/strata-llm/strata/engine/sample"
	"github.com/strata-llm/strata/engine/tokenizer"
	"github.com/strata-llm/strata/internal/runner"
)

// Ollama-compatible endpoints (/api/*), for apps written for Ollama: base
// URL http://127.0.0.1:PORT, the same token rules as everything else.
// Generation streams NDJSON by default; "stream": false answers once.

// OllamaVersion is the Ollama API version these endpoints follow, reported
// by /api/version (clients gate features on it).
const OllamaVersion = "0.11.0"

type olOptions struct {
	NumPredict       *int     `json:"num_predict"`
	Temperature      *float32 `json:"temperature"`
	TopK             int      `json:"top_k"`
	TopP             float32  `json:"top_p"`
	MinP             float32  `json:"min_p"`
	Seed             int64    `json:"seed"`
	Stop             []string `json:"stop"`
	RepeatPenalty    float32  `json:"repeat_penalty"`
	RepeatLastN      int      `json:"repeat_last_n"`
	PresencePenalty  float32  `json:"presence_penalty"`
	FrequencyPenalty float32  `json:"frequency_penalty"`
}

type olCommon struct {
	Model     string              `json:"model"`
	Stream    *bool               `json:"stream"`
	Format    json.RawMessage     `json:"format"`
	Options   olOptions           `json:"options"`
	KeepAlive *protocol.KeepAlive `json:"keep_alive"`
}

type olToolCall struct {
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type olMessage struct {
	Role      string       `json:"role"`
	Content   string       `json:"content"`
	ToolCalls []olToolCall `json:"tool_calls,omitempty"`
	ToolName  string       `json:"tool_name,omitempty"`
}

type olChatRequest struct {
	olCommon
	Messages []olMessage       `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

type olGenerateRequest struct {
	olCommon
	Prompt string `json:"prompt"`
	System string `json:"system"`
	Raw    bool   `json:"raw"`
}

func writeOllamaError(w http.ResponseWriter, err error) {
	var pe *protocol.Error
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Message
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus(protocol.CodeOf(err)))
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// options maps Ollama's request fields to ours.
func (c *olCommon) options() (protocol.Options, engine.ConstraintMaker, error) {
	if c.Model == "" {
		return protocol.Options{}, nil, protocol.Errorf(protocol.CodeBadRequest, "model is required")
	}
	if len(c.Model) > protocol.MaxNameLen || !utf8.ValidString(c.Model) {
		return protocol.Options{}, nil, protocol.Errorf(protocol.CodeBadRequest, "model name too long or not UTF-8")
	}
	o := c.Options
	opts := protocol.Options{
		Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP, Stop: o.Stop,
		RepeatPenalty: o.RepeatPenalty, RepeatLastN: o.RepeatLastN, PresencePenalty: o.PresencePenalty,
		FrequencyPenalty: o.FrequencyPenalty, KeepAlive: c.KeepAlive,
	}
	if o.Seed > 0 {
		opts.Seed = uint64(o.Seed)
	}
	if o.NumPredict != nil && *o.NumPredict > 0 {
		opts.MaxTokens = *o.NumPredict
	}
	f := bytes.TrimSpace(c.Format)
	switch {
	case len(f) == 0 || string(f) == "null" || string(f) == `""`:
		return opts, nil, nil
	case string(f) == `"json"`:
		sch := grammar.AnyObject()
		return opts, func(v *tokenizer.Tokenizer) (sample.Constraint, error) { return sch.NewConstraint(v) }, nil
	case f[0] == '{':
		sch, err := grammar.Compile(f)
		if err != nil {
			return opts, nil, protocol.Errorf(protocol.CodeBadRequest, "format: %v", err)
		}
		return opts, func(v *tokenizer.Tokenizer) (sample.Constraint, error) { return sch.NewConstraint(v) }, nil
	}
	return opts, nil, protocol.Errorf(protocol.CodeBadRequest, `format: want "json" or a JSON schema`)
}

func (s *Server) serveOllamaChat(w http.ResponseWriter, r *http.Request) {
	var req olChatRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	opts, cons, err := req.options()
	if err != nil {
		writeOllamaError(w, err)
		return
	}
	msgs := make([]protocol.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = protocol.Message{Role: m.Role, Content: m.Content, Name: m.ToolName}
		for _, c := range m.ToolCalls {
			args := string(bytes.TrimSpace(c.Function.Arguments))
			var str string
			if json.Unmarshal(c.Function.Arguments, &str) == nil {
				args = str
			}
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, protocol.ToolCall{Type: "function", Function: protocol.FunctionCall{Name: c.Function.Name, Arguments: args}})
		}
	}
	if len(msgs) == 0 { // Ollama: an empty chat loads (or, with keep_alive 0, unloads) the model
		s.ollamaTouch(w, r, req.olCommon, "message", map[string]any{"role": "assistant", "content": ""})
		return
	}
	if _, _, err := protocol.Decode(mustJSON(protocol.Request{Type: protocol.TypeChat, ID: "http",
		Params: mustJSON(protocol.ChatParams{Messages: msgs, Options: opts})})); err != nil {
		writeOllamaError(w, err)
		return
	}
	ts, err := parseTools(req.Tools, nil)
	if err != nil {
		writeOllamaError(w, err)
		return
	}
	s.serveOllama(w, r, engine.Request{Messages: engineMessages(msgs), Constraint: cons}, opts, req.olCommon, ts, true)
}

func (s *Server) serveOllamaGenerate(w http.ResponseWriter, r *http.Request) {
	var req olGenerateRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	opts, cons, err := req.options()
	if err != nil {
		writeOllamaError(w, err)
		return
	}
	if req.Prompt == "" {
		s.ollamaTouch(w, r, req.olCommon, "response", "")
		return
	}
	if len(req.Prompt)+len(req.System) > protocol.MaxPromptBytes {
		writeOllamaError(w, protocol.Errorf(protocol.CodeBadRequest, "prompt longer than %d bytes", protocol.MaxPromptBytes))
		return
	}
	ereq := engine.Request{Prompt: req.Prompt, Constraint: cons}
	if !req.Raw { // Ollama applies the model's template to the prompt
		var msgs []engine.Message
		if req.System != "" {
			msgs = append(msgs, engine.Message{Role: "system", Content: req.System})
		}
		ereq = engine.Request{Messages: append(msgs, engine.Message{Role: "user", Content: req.Prompt}), Constraint: cons}
	}
	s.serveOllama(w, r, ereq, opts, req.olCommon, toolSpec{}, false)
}

// ollamaTouch answers a request without prompt or messages: Ollama loads
// the model (done_reason "load"), or with keep_alive 0 unloads it ("unload").
func (s *Server) ollamaTouch(w http.ResponseWriter, r *http.Request, c olCommon, field string, empty any) {
	var keep *time.Duration
	reason := "load"
	if c.KeepAlive != nil {
		d := c.KeepAlive.D
		keep = &d
		if d == 0 {
			reason = "unload"
		}
	}
	if err := s.run.Touch(r.Context(), keep); err != nil {
		if errors.Is(err, runner.ErrNotLoaded) {
			err = protocol.Errorf(protocol.CodeModelNotLoaded, "no model is loaded: press Start in the menu bar or send engine.load")
		}
		writeOllamaError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": c.Model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
		field: empty, "done": true, "done_reason": reason})
}

func (s *Server) serveOllama(w http.ResponseWriter, r *http.Request, ereq engine.Request, opts protocol.Options, c olCommon, ts toolSpec, isChat bool) {
	smp, err := s.sampling(opts)
	if err == nil {
		err = ts.apply(&ereq)
	}
	if err != nil {
		writeOllamaError(w, err)
		return
	}
	ereq.Sampling = smp
	g := genRequest{req: ereq, keepAlive: opts.KeepAlive}
	stream := c.Stream == nil || *c.Stream
	tp := newToolParser(ts)
	now := func() string { return time.Now().UTC().Format(time.RFC3339Nano) }
	piece := func(text string, calls []toolCall, done bool) map[string]any {
		m := map[string]any{"model": c.Model, "created_at": now(), "done": done}
		if isChat {
			msg := map[string]any{"role": "assistant", "content": text}
			if len(calls) > 0 {
				var out []any
				for _, tc := range calls {
					out = append(out, map[string]any{"function": map[string]any{"name": tc.Name, "arguments": json.RawMessage(tc.Arguments)}})
				}
				msg["tool_calls"] = out
			}
			m["message"] = msg
		} else {
			m["response"] = text
		}
		return m
	}
	final := func(m map[string]any, st protocol.GenStats) map[string]any {
		reason := st.FinishReason
		if reason == "cancelled" {
			reason = "stop"
		}
		ns := func(msv float64) int64 { return int64(msv * 1e6) }
		prefill := st.TimeToFirstToken
		m["done_reason"] = reason
		m["total_duration"] = ns(st.DurationMS + st.QueueMS)
		m["load_duration"] = 0
		m["prompt_eval_count"] = st.PromptTokens
		m["prompt_eval_duration"] = ns(prefill)
		m["eval_count"] = st.GeneratedTokens
		m["eval_duration"] = ns(st.DurationMS - prefill)
		return m
	}
	ctx := r.Context()
	if !stream {
		var text strings.Builder
		var calls []toolCall
		st, err := s.generate(ctx, g, nil, func(t engine.Token) error {
			content, cs := tp.add(t.Text)
			text.WriteString(content)
			calls = append(calls, cs...)
			return nil
		})
		if err != nil && !errors.Is(err, errCancelled) {
			writeOllamaError(w, err)
			return
		}
		content, cs := tp.end()
		text.WriteString(content)
		calls = append(calls, cs...)
		writeJSON(w, http.StatusOK, final(piece(text.String(), calls, true), st))
		return
	}
	flusher, _ := w.(http.Flusher)
	started := false
	send := func(v any) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	st, err := s.generate(ctx, g, nil, func(t engine.Token) error {
		text, calls := tp.add(t.Text)
		if text == "" && len(calls) == 0 {
			return nil
		}
		return send(piece(text, calls, false))
	})
	if err != nil && !errors.Is(err, errCancelled) {
		if !started {
			writeOllamaError(w, err)
			return
		}
		send(map[string]string{"error": err.Error()})
		return
	}
	if ctx.Err() != nil {
		return
	}
	text, calls := tp.end()
	send(final(piece(text, calls, true), st))
}

func (s *Server) serveOllamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": OllamaVersion})
}

type olModel struct {
	Name       string    `json:"name"`
	Model      string    `json:"model"`
	ModifiedAt time.Time `json:"modified_at"`
	Size       int64     `json:"size"`
	Digest     string    `json:"digest"`
	Details    olDetails `json:"details"`
	ExpiresAt  *string   `json:"expires_at,omitempty"`
	SizeVRAM   *int64    `json:"size_vram,omitempty"`
	Context    int       `json:"context_length,omitempty"`
}

type olDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

func details(arch, quant string) olDetails {
	return olDetails{Format: "gguf", Family: arch, Families: []string{arch}, QuantizationLevel: quant}
}

func (s *Server) serveOllamaTags(w http.ResponseWriter, r *http.Request) {
	out := []olModel{}
	seen := map[string]bool{}
	if st := s.run.Status(); st.Model != nil {
		id := modelID(st.Model)
		out = append(out, olModel{Name: id, Model: id, Size: st.Model.FileBytes, Details: details(st.Model.Arch, "")})
		seen[id] = true
	}
	if s.cfg.Models != nil {
		ms, err := s.cfg.Models.List(r.Context())
		if err != nil {
			writeOllamaError(w, err)
			return
		}
		for _, m := range ms {
			if m.Installed && !seen[m.Name] {
				out = append(out, olModel{Name: m.Name, Model: m.Name, Size: m.SizeBytes, Details: details(m.Arch, m.Quant)})
				seen[m.Name] = true
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

// serveOllamaPs lists the loaded model with when keep-alive unloads it.
func (s *Server) serveOllamaPs(w http.ResponseWriter, r *http.Request) {
	out := []olModel{}
	if st := s.run.Status(); st.Model != nil {
		id := modelID(st.Model)
		exp := st.ExpiresAt
		if exp.IsZero() { // in use: Ollama reports the expiry it will arm
			exp = time.Now()
		}
		e := exp.UTC().Format(time.RFC3339Nano)
		zero := int64(0)
		out = append(out, olModel{Name: id, Model: id, Size: st.MemoryBytes, Details: details(st.Model.Arch, ""),
			ExpiresAt: &e, SizeVRAM: &zero, Context: st.Model.ContextLength})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

func (s *Server) serveOllamaShow(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"` // older clients
	}
	if !s.decodeBody(w, r, &req) {
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	if name == "" {
		writeOllamaError(w, protocol.Errorf(protocol.CodeBadRequest, "model is required"))
		return
	}
	caps := []string{"completion", "tools"}
	if st := s.run.Status(); st.Model != nil && (name == modelID(st.Model) || !s.installed(r, name)) {
		m := st.Model
		writeJSON(w, http.StatusOK, map[string]any{
			"modelfile": "", "parameters": "", "template": "", "license": "",
			"details": details(m.Arch, ""),
			"model_info": map[string]any{
				"general.architecture":           m.Arch,
				"general.name":                   m.Name,
				m.Arch + ".block_count":          m.Layers,
				m.Arch + ".embedding_length":     m.Embd,
				m.Arch + ".context_length":       m.ContextLength,
				m.Arch + ".expert_count":         m.Experts,
				m.Arch + ".expert_used_count":    m.ExpertsUsed,
				"tokenizer.ggml.vocabulary_size": m.Vocab,
			},
			"capabilities": caps,
			"modified_at":  time.Now().UTC().Format(time.RFC3339),
		})
		return
	}
	if s.cfg.Models != nil {
		ms, err := s.cfg.Models.List(r.Context())
		if err != nil {
			writeOllamaError(w, err)
			return
		}
		for _, m := range ms {
			if m.Installed && m.Name == name {
				writeJSON(w, http.StatusOK, map[string]any{"modelfile": "", "parameters": "", "template": "", "license": "",
					"details": details(m.Arch, m.Quant), "model_info": map[string]any{"general.architecture": m.Arch},
					"capabilities": caps})
				return
			}
		}
	}
	writeOllamaError(w, protocol.Errorf(protocol.CodeNotFound, "model %q not found", name))
}

func (s *Server) installed(r *http.Request, name string) bool {
	if s.cfg.Models == nil {
		return false
	}
	ms, err := s.cfg.Models.List(r.Context())
	if err != nil {
		return false
	}
	for _, m := range ms {
		if m.Installed && m.Name == name {
			return true
		}
	}
	return false
}
