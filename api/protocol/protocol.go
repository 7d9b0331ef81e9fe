// Package protocol defines the messages of Strata's websocket API: the
// request envelope and the parameters of every operation, the events the
// server sends back, the stable error codes, and the strict decoder the
// server runs on every incoming message. It has no dependencies on the
// engine, so clients (api/client, the menu-bar app) can use it alone.
package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Version is the protocol version this package speaks. It is sent in the
// hello result; a client asking for another version is refused.
const Version = 1

// Operation types (the "type" of a request).
const (
	TypeHello            = "hello"
	TypeChat             = "chat"
	TypeComplete         = "complete"
	TypeCancel           = "cancel"
	TypeModelsList       = "models.list"
	TypeModelsPull       = "models.pull"
	TypeModelsCancelPull = "models.cancel_pull"
	TypeModelsDelete     = "models.delete"
	TypeModelsSelect     = "models.select"
	TypeEngineLoad       = "engine.load"
	TypeEngineUnload     = "engine.unload"
	TypeEngineStatus     = "engine.status"
	TypeSettingsGet      = "settings.get"
	TypeSettingsSet      = "settings.set"
	TypeStatsSubscribe   = "stats.subscribe"
	TypeStatsUnsubscribe = "stats.unsubscribe"
)

// Event types (the "type" of a server message).
const (
	EventResult   = "result"   // the reply of a one-shot operation
	EventQueued   = "queued"   // a generation waits; Position 1 is next
	EventDelta    = "delta"    // generated text and token ids
	EventDone     = "done"     // a generation ended; Stats set
	EventProgress = "progress" // a model download progressed
	EventStats    = "stats"    // periodic telemetry of a subscription
	EventError    = "error"    // the operation failed; Code and Message set
	EventClosing  = "closing"  // the server closes the connection; Message says why
)

// Code is a stable error code.
type Code string

// Error codes. Clients may switch on them; messages are for people.
const (
	CodeUnauthorized   Code = "unauthorized"
	CodeBadRequest     Code = "bad_request"
	CodeNotFound       Code = "not_found"
	CodeBusy           Code = "busy"
	CodeModelNotLoaded Code = "model_not_loaded"
	CodeCancelled      Code = "cancelled"
	CodeInternal       Code = "internal"
)

// Error is a protocol error: a code and a message for people.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf returns an *Error with the given code.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns err's code: its *Error code, else internal.
func CodeOf(err error) Code {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return CodeInternal
}

// Request is a client message. ID is chosen by the client; every event
// about this request carries it back.
type Request struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Event is a server message. Which fields are set depends on Type.
type Event struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`     // result
	Position  int             `json:"position,omitempty"`   // queued
	Text      string          `json:"text,omitempty"`       // delta
	Tokens    []int32         `json:"tokens,omitempty"`     // delta
	ToolCalls []ToolCall      `json:"tool_calls,omitempty"` // delta: calls the model made (chat with tools)
	Stats     *GenStats       `json:"stats,omitempty"`      // done
	Progress  *PullProgress   `json:"progress,omitempty"`   // progress
	Telemetry *Telemetry      `json:"telemetry,omitempty"`  // stats
	Code      Code            `json:"code,omitempty"`       // error
	Message   string          `json:"message,omitempty"`    // error, closing
}

// MarshalJSON always writes "text" for delta events (it may be empty
// while a multi-byte character is incomplete); other events omit it.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	if e.Type == EventDelta {
		return json.Marshal(struct {
			plain
			Text string `json:"text"`
		}{plain(e), e.Text})
	}
	return json.Marshal(plain(e))
}

// HelloParams open a session. Token is required when the connection was
// not authorized by an Authorization header; it must then be the first
// message.
type HelloParams struct {
	Token    string `json:"token,omitempty"`
	Protocol int    `json:"protocol,omitempty"` // 0: the server's
	Client   string `json:"client,omitempty"`   // free-form name, for logs
}

// HelloResult describes the server.
type HelloResult struct {
	Server   string       `json:"server"`   // server version
	Protocol int          `json:"protocol"` // protocol version
	Engine   EngineStatus `json:"engine"`
	Limits   Limits       `json:"limits"`
}

// Limits are the server's bounds.
type Limits struct {
	MaxMessageBytes int `json:"max_message_bytes"`
	MaxConnections  int `json:"max_connections"`
	MaxQueue        int `json:"max_queue"` // waiting generations beyond the running one
	MaxTokens       int `json:"max_tokens"`
	SendBuffer      int `json:"send_buffer"` // events buffered per connection before it is dropped
}

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"` // system, user, assistant, tool
	Content string `json:"content"`
	// ToolCalls are the calls an assistant turn made; ToolCallID (and
	// Name) say which call a tool turn answers.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is a function call in OpenAI's shape.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and gives its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Options are the sampling options of chat and complete.
type Options struct {
	MaxTokens        int        `json:"max_tokens,omitempty"`  // 0: server default
	Temperature      *float32   `json:"temperature,omitempty"` // nil: DefaultTemperature; 0: greedy
	TopK             int        `json:"top_k,omitempty"`
	TopP             float32    `json:"top_p,omitempty"`
	MinP             float32    `json:"min_p,omitempty"`
	RepeatPenalty    float32    `json:"repeat_penalty,omitempty"`
	RepeatLastN      int        `json:"repeat_last_n,omitempty"`
	PresencePenalty  float32    `json:"presence_penalty,omitempty"`
	FrequencyPenalty float32    `json:"frequency_penalty,omitempty"`
	Seed             uint64     `json:"seed,omitempty"` // 0: random
	Stop             []string   `json:"stop,omitempty"`
	KeepAlive        *KeepAlive `json:"keep_alive,omitempty"` // nil: the server's setting
	// ResponseFormat constrains the reply to JSON (OpenAI's shape).
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
}

// ResponseFormat is OpenAI's response_format: type "text" (no constraint),
// "json_object" (any JSON object) or "json_schema" (JSONSchema.Schema).
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema names a schema for response_format.
type JSONSchema struct {
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict,omitempty"`
}

// DefaultTemperature applies when a request sets none.
const DefaultTemperature = 0.8

// Bounds on request fields.
const (
	MaxIDLen       = 128
	MaxMessages    = 1024
	MaxStops       = 8
	MaxStopLen     = 256
	MaxPromptBytes = 1 << 20
	MaxTokenIDs    = 1 << 17
	MaxNameLen     = 200
	MaxURLLen      = 2048
)

// ChatParams ask for a reply to chat turns. Tools (OpenAI's
// {"type":"function","function":{name, description, parameters}} objects)
// are offered to the model through its chat template; ToolChoice is
// "auto" (default), "none", "required" or {"type":"function","function":{"name":…}}.
type ChatParams struct {
	Messages   []Message         `json:"messages"`
	Tools      []json.RawMessage `json:"tools,omitempty"`
	ToolChoice json.RawMessage   `json:"tool_choice,omitempty"`
	Options
}

// CompleteParams ask for a continuation of a raw prompt or of token ids
// (exactly one).
type CompleteParams struct {
	Prompt string  `json:"prompt,omitempty"`
	Tokens []int32 `json:"tokens,omitempty"`
	Options
}

// CancelParams name the request to cancel (a generation or a pull).
type CancelParams struct {
	ID string `json:"id"`
}

// CancelResult says whether a running or queued request was found.
type CancelResult struct {
	Cancelled bool `json:"cancelled"`
}

// ModelParams name a model: a catalog or installed name, REPO/FILE, or
// (for models.pull) an https URL.
type ModelParams struct {
	Name string `json:"name"`
}

// EngineLoadParams choose what to load; an empty Model loads the selected
// model, or the demo model if none is selected.
type EngineLoadParams struct {
	Model string `json:"model,omitempty"`
}

// SettingsSetParams carry the settings fields to change, as a JSON object
// of the settings struct's fields; fields left out keep their values.
type SettingsSetParams struct {
	Settings json.RawMessage `json:"settings"`
}

// StatsSubscribeParams set the telemetry period.
type StatsSubscribeParams struct {
	IntervalMS int `json:"interval_ms,omitempty"` // 0: 1000; 100..60000
}

// StatsUnsubscribeParams name the subscription (its stats.subscribe id).
type StatsUnsubscribeParams struct {
	ID string `json:"id"`
}

// OK is the result of operations with nothing else to say.
type OK struct {
	OK bool `json:"ok"`
}

// ModelInfo describes a loaded model.
type ModelInfo struct {
	Name          string `json:"name"`
	Path          string `json:"path"`
	Arch          string `json:"arch"`
	Layers        int    `json:"layers"`
	Embd          int    `json:"embd"`
	Vocab         int    `json:"vocab"`
	Experts       int    `json:"experts"`
	ExpertsUsed   int    `json:"experts_used"`
	ContextLength int    `json:"context_length"`
	FileBytes     int64  `json:"file_bytes"`
	Demo          bool   `json:"demo"` // a demo model with random weights
	// Memory is how the weights are held: "in memory", "mapped" or
	// "streaming experts" (from the SSD into a cache of ExpertCacheBytes).
	Memory           string `json:"memory,omitempty"`
	ExpertCacheBytes int64  `json:"expert_cache_bytes,omitempty"`
}

// EngineStatus is the engine's state.
type EngineStatus struct {
	State string `json:"state"` // stopped, loading, ready, generating, error
	// Progress says how far a load has come while State is loading.
	Progress    *LoadProgress `json:"progress,omitempty"`
	Model       *ModelInfo    `json:"model,omitempty"`
	Error       string        `json:"error,omitempty"`
	MemoryBytes int64         `json:"memory_bytes"`
	QueueLength int           `json:"queue_length"` // generations waiting
	Last        *GenStats     `json:"last,omitempty"`
	// ExpiresAt is when keep-alive unloads the loaded model (absent while
	// nothing is loaded or generations run or wait; far in the future,
	// 2318, when it is kept forever, as Ollama reports it).
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Idle: keep-alive unloaded the model; the next request reloads it.
	Idle bool `json:"idle,omitempty"`
	// StoppedByUser: the menu bar's Stop or engine.unload unloaded it;
	// requests fail with model_not_loaded until a load.
	StoppedByUser bool `json:"stopped_by_user,omitempty"`
	// Backend runs the model: "cpu" or "metal" (the loaded model's, or
	// the next load's while none is loaded).
	Backend string `json:"backend,omitempty"`
	// BackendReason says why: the setting, the platform, or the Metal
	// selftest's verdict at the first start of this version.
	BackendReason string `json:"backend_reason,omitempty"`
	// BackendFallback: Metal was wanted and the CPU runs the model (the
	// selftest failed, or this is not a Mac with Apple silicon).
	BackendFallback bool `json:"backend_fallback,omitempty"`
	// Speculation is live: the running generation's speculative decoding
	// so far (refreshed every half second), else the last speculating
	// generation's; absent before any.
	Speculation *SpecStats `json:"speculation,omitempty"`
}

// LoadProgress is how far a model's load has come.
type LoadProgress struct {
	Phase    string  `json:"phase"`    // "reading" (the weights into memory) or "warming" (the expert cache, from what the app learned)
	Text     string  `json:"text"`     // what is happening, in words for a person
	Done     int64   `json:"done"`     // bytes read, or experts in the cache
	Total    int64   `json:"total"`    // of how many
	Fraction float64 `json:"fraction"` // of the phase, 0 to 1
}

// GenStats describe a finished generation. Fields may be added (e.g.
// speculation acceptance, cache hit rate); clients must ignore unknown ones.
type GenStats struct {
	PromptTokens     int     `json:"prompt_tokens"`
	GeneratedTokens  int     `json:"generated_tokens"`
	TimeToFirstToken float64 `json:"time_to_first_token_ms"`
	DurationMS       float64 `json:"duration_ms"`
	QueueMS          float64 `json:"queue_ms"` // time waiting for the engine
	PromptPerSecond  float64 `json:"prompt_tokens_per_second"`
	TokensPerSecond  float64 `json:"tokens_per_second"`
	FinishReason     string  `json:"finish_reason"` // stop, length, cancelled
	// Experts is the expert cache's work when experts stream from the SSD.
	Experts *ExpertStats `json:"experts,omitempty"`
	// Routing describes cache-aware routing's choices when it is on.
	Routing *RoutingStats `json:"routing,omitempty"`
	// Speculation is speculative decoding's work; absent when it was off.
	Speculation *SpecStats `json:"speculation,omitempty"`
}

// ExpertStats describe expert streaming over one generation.
type ExpertStats struct {
	Hits         int64   `json:"hits"`               // experts found in the cache (or being read ahead)
	Misses       int64   `json:"misses"`             // experts read while a layer waited
	ReadAheads   int64   `json:"read_aheads"`        // experts read ahead for a layer not reached yet
	AheadUsed    int64   `json:"read_aheads_used"`   // of them, used by that layer
	HitRate      float64 `json:"hit_rate"`           // hits / (hits + misses)
	BytesRead    int64   `json:"bytes_read"`         // from the SSD
	ReadMBps     float64 `json:"read_mb_per_second"` // bytes read / the generation's time
	StallSeconds float64 `json:"stall_seconds"`      // time layers waited for experts
	CacheBytes   int64   `json:"cache_bytes"`
	// On the Metal backend: experts the GPU used where the cache read
	// them, and experts copied into its slots instead.
	InPlace int64 `json:"experts_in_place,omitempty"`
	Copied  int64 `json:"experts_copied,omitempty"`
}

// RoutingStats describe cache-aware routing over one generation, against
// exact routing of the same hidden states.
type RoutingStats struct {
	Agreement   float64 `json:"agreement"`    // mean |chosen ∩ true top-k| / k
	KL          float64 `json:"kl"`           // mean KL of the chosen weights from the true top-k ones
	SwappedPct  float64 `json:"swapped_pct"`  // % of slots given to an expert outside the true top-k
	ResidentPct float64 `json:"resident_pct"` // % of chosen experts that were resident
}

// SpecStats describe speculative decoding over one generation; the
// timings and acceptance are measured over the loaded model's requests.
type SpecStats struct {
	Proposed   int                  `json:"drafts_proposed"`   // tokens drafters proposed
	Verified   int                  `json:"drafts_verified"`   // drafted tokens checked by the model
	Accepted   int                  `json:"drafts_accepted"`   // drafted tokens kept
	Declined   int                  `json:"drafts_declined"`   // proposed but not checked (not worth it)
	Verifies   int                  `json:"verify_steps"`      // steps that checked drafts
	PlainSteps int                  `json:"plain_steps"`       // steps of one token
	T1MS       float64              `json:"t1_ms"`             // time of a one-token step
	TRatio     []float64            `json:"t_ratio"`           // [n-1]: time of an n-token step / T(1); 0 unmeasured
	StallMS    float64              `json:"stall_ms_per_row"`  // of those times, waiting for expert reads per token checked
	Acceptance map[string][]float64 `json:"acceptance"`        // per drafter, by draft position
	Depths     []int                `json:"depths,omitempty"`  // [k-1]: verifies that checked k drafts
	Refills    int                  `json:"refills,omitempty"` // rollbacks done by forwarding the kept tokens again
}

// ModelEntry is one model of models.list.
type ModelEntry struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Arch        string `json:"arch,omitempty"`
	Quant       string `json:"quant,omitempty"`
	SizeBytes   int64  `json:"size_bytes,omitempty"`
	Installed   bool   `json:"installed"`
	Verified    bool   `json:"verified,omitempty"`
	Path        string `json:"path,omitempty"`
	Active      bool   `json:"active,omitempty"` // the selected model
}

// ModelsListResult lists catalog and installed models.
type ModelsListResult struct {
	Models []ModelEntry `json:"models"`
}

// Pull phases.
const (
	PhaseDownloading = "downloading"
	PhaseVerifying   = "verifying"
	PhaseDone        = "done"
)

// PullProgress reports a model download.
type PullProgress struct {
	Phase      string  `json:"phase"`
	BytesDone  int64   `json:"bytes_done"`
	BytesTotal int64   `json:"bytes_total"`
	Rate       float64 `json:"bytes_per_second"`
	ETASeconds float64 `json:"eta_seconds"`
}

// Telemetry is one periodic stats event.
type Telemetry struct {
	Time            time.Time `json:"time"`
	State           string    `json:"state"`
	TokensPerSecond float64   `json:"tokens_per_second"` // of the last generation
	QueueLength     int       `json:"queue_length"`
	Running         int       `json:"running"`
	MemoryBytes     int64     `json:"memory_bytes"`
	Connections     int       `json:"connections"`
	GeneratedTotal  int64     `json:"generated_total"` // tokens since start
	RequestsTotal   int64     `json:"requests_total"`
	// CacheHitRate (0..1, experts found in the RAM cache) and
	// SSDBytesPerSecond (expert weights read from the SSD over the
	// generation's time) are the last generation's, present only when
	// the engine streamed experts for it.
	CacheHitRate      *float64 `json:"cache_hit_rate,omitempty"`
	SSDBytesPerSecond *float64 `json:"ssd_bytes_per_second,omitempty"`
	// Speculation: as in EngineStatus (live during a generation).
	Speculation *SpecStats `json:"speculation,omitempty"`
}

// KeepAlive is how long the model stays loaded after a request: a number
// of seconds or a duration string ("5m"); negative keeps it forever, 0
// unloads at once.
type KeepAlive struct {
	D time.Duration
}

// Forever reports whether the model should never be unloaded.
func (k KeepAlive) Forever() bool { return k.D < 0 }

// MarshalJSON writes seconds.
func (k KeepAlive) MarshalJSON() ([]byte, error) {
	if k.D < 0 {
		return []byte("-1"), nil
	}
	return []byte(strconv.FormatFloat(k.D.Seconds(), 'f', -1, 64)), nil
}

// UnmarshalJSON reads seconds or a duration string.
func (k *KeepAlive) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "-1" {
			k.D = -1
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("keep_alive %q: want seconds or a duration like \"5m\"", s)
		}
		if d < 0 {
			d = -1
		}
		k.D = d
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("keep_alive: want seconds or a duration like \"5m\"")
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fmt.Errorf("keep_alive: not a number")
	case f < 0:
		k.D = -1
	case f > 365*24*3600:
		return fmt.Errorf("keep_alive %v s: at most a year (use -1 for forever)", f)
	default:
		k.D = time.Duration(f * float64(time.Second))
	}
	return nil
}

// Decode parses and validates one client message. It returns the envelope
// and the typed parameters (a pointer to the operation's params struct, or
// nil for operations without parameters). Every failure is an *Error with
// code bad_request; the envelope's ID is returned when it could be read,
// so the error can be addressed to it.
func Decode(data []byte) (Request, any, error) {
	var req Request
	if !utf8.Valid(data) {
		return req, nil, Errorf(CodeBadRequest, "message is not valid UTF-8")
	}
	if err := strictUnmarshal(data, &req); err != nil {
		if checkID(req.ID) != nil {
			req.ID = ""
		}
		return req, nil, Errorf(CodeBadRequest, "malformed message: %v", err)
	}
	if err := checkID(req.ID); err != nil {
		req.ID = ""
		return req, nil, err
	}
	var p any
	switch req.Type {
	case TypeHello:
		p = new(HelloParams)
	case TypeChat:
		p = new(ChatParams)
	case TypeComplete:
		p = new(CompleteParams)
	case TypeCancel:
		p = new(CancelParams)
	case TypeModelsPull, TypeModelsCancelPull, TypeModelsDelete, TypeModelsSelect:
		p = new(ModelParams)
	case TypeEngineLoad:
		p = new(EngineLoadParams)
	case TypeSettingsSet:
		p = new(SettingsSetParams)
	case TypeStatsSubscribe:
		p = new(StatsSubscribeParams)
	case TypeStatsUnsubscribe:
		p = new(StatsUnsubscribeParams)
	case TypeModelsList, TypeEngineUnload, TypeEngineStatus, TypeSettingsGet:
		if len(req.Params) > 0 && !isEmptyObject(req.Params) {
			return req, nil, Errorf(CodeBadRequest, "%s takes no params", req.Type)
		}
		return req, nil, nil
	case "":
		return req, nil, Errorf(CodeBadRequest, "message has no type")
	default:
		return req, nil, Errorf(CodeBadRequest, "unknown type %q", truncate(req.Type, 64))
	}
	if len(req.Params) > 0 && !bytes.Equal(bytes.TrimSpace(req.Params), []byte("null")) {
		if err := strictUnmarshal(req.Params, p); err != nil {
			return req, nil, Errorf(CodeBadRequest, "%s params: %v", req.Type, err)
		}
	}
	if err := validate(req.Type, p); err != nil {
		return req, nil, err
	}
	return req, p, nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func isEmptyObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	if s := bytes.TrimSpace(b); bytes.Equal(s, []byte("null")) {
		return true
	}
	return json.Unmarshal(b, &m) == nil && len(m) == 0
}

func checkID(id string) error {
	if id == "" {
		return Errorf(CodeBadRequest, "message has no id")
	}
	if len(id) > MaxIDLen {
		return Errorf(CodeBadRequest, "id longer than %d bytes", MaxIDLen)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return Errorf(CodeBadRequest, "id contains control characters")
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func validate(typ string, p any) error {
	switch p := p.(type) {
	case *HelloParams:
		if p.Protocol != 0 && p.Protocol != Version {
			return Errorf(CodeBadRequest, "protocol version %d is not supported (server speaks %d)", p.Protocol, Version)
		}
		if len(p.Token) > 256 || len(p.Client) > 256 {
			return Errorf(CodeBadRequest, "hello fields longer than 256 bytes")
		}
	case *ChatParams:
		if len(p.Messages) == 0 {
			return Errorf(CodeBadRequest, "chat needs at least one message")
		}
		if len(p.Messages) > MaxMessages {
			return Errorf(CodeBadRequest, "chat has %d messages, at most %d", len(p.Messages), MaxMessages)
		}
		total := 0
		for i, m := range p.Messages {
			switch m.Role {
			case "system", "user", "assistant", "tool":
			default:
				return Errorf(CodeBadRequest, "message %d: unknown role %q (system, user, assistant, tool)", i, truncate(m.Role, 32))
			}
			total += len(m.Content)
		}
		if total > MaxPromptBytes {
			return Errorf(CodeBadRequest, "messages hold %d bytes, at most %d", total, MaxPromptBytes)
		}
		return p.Options.Validate()
	case *CompleteParams:
		if (p.Prompt == "") == (len(p.Tokens) == 0) {
			return Errorf(CodeBadRequest, "complete needs exactly one of prompt or tokens")
		}
		if len(p.Prompt) > MaxPromptBytes {
			return Errorf(CodeBadRequest, "prompt of %d bytes, at most %d", len(p.Prompt), MaxPromptBytes)
		}
		if len(p.Tokens) > MaxTokenIDs {
			return Errorf(CodeBadRequest, "%d token ids, at most %d", len(p.Tokens), MaxTokenIDs)
		}
		for i, t := range p.Tokens {
			if t < 0 {
				return Errorf(CodeBadRequest, "token %d: negative id %d", i, t)
			}
		}
		return p.Options.Validate()
	case *CancelParams:
		if err := checkID(p.ID); err != nil {
			return Errorf(CodeBadRequest, "cancel: %s", err.(*Error).Message)
		}
	case *ModelParams:
		var err error
		if typ == TypeModelsPull {
			err = ValidPullName(p.Name)
		} else {
			err = ValidModelName(p.Name)
		}
		if err != nil {
			return err
		}
	case *EngineLoadParams:
		if p.Model != "" {
			return ValidModelName(p.Model)
		}
	case *SettingsSetParams:
		s := bytes.TrimSpace(p.Settings)
		if len(s) == 0 || s[0] != '{' {
			return Errorf(CodeBadRequest, "settings.set needs a settings object")
		}
	case *StatsSubscribeParams:
		if p.IntervalMS != 0 && (p.IntervalMS < 100 || p.IntervalMS > 60000) {
			return Errorf(CodeBadRequest, "interval_ms %d outside 100..60000", p.IntervalMS)
		}
	case *StatsUnsubscribeParams:
		if err := checkID(p.ID); err != nil {
			return Errorf(CodeBadRequest, "stats.unsubscribe: %s", err.(*Error).Message)
		}
	}
	return nil
}

// Validate checks every sampling option against its range.
func (o *Options) Validate() error {
	bad := func(f string, args ...any) error { return Errorf(CodeBadRequest, f, args...) }
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	switch {
	case o.MaxTokens < 0 || o.MaxTokens > 1<<20:
		return bad("max_tokens %d outside 0..%d", o.MaxTokens, 1<<20)
	case o.Temperature != nil && (!finite(*o.Temperature) || *o.Temperature < 0 || *o.Temperature > 5):
		return bad("temperature %v outside 0..5", *o.Temperature)
	case o.TopK < 0 || o.TopK > 1<<20:
		return bad("top_k %d outside 0..%d", o.TopK, 1<<20)
	case !finite(o.TopP) || o.TopP < 0 || o.TopP > 1:
		return bad("top_p %v outside 0..1", o.TopP)
	case !finite(o.MinP) || o.MinP < 0 || o.MinP > 1:
		return bad("min_p %v outside 0..1", o.MinP)
	case !finite(o.RepeatPenalty) || o.RepeatPenalty < 0 || o.RepeatPenalty > 10:
		return bad("repeat_penalty %v outside 0..10", o.RepeatPenalty)
	case o.RepeatLastN < 0 || o.RepeatLastN > 1<<16:
		return bad("repeat_last_n %d outside 0..%d", o.RepeatLastN, 1<<16)
	case !finite(o.PresencePenalty) || o.PresencePenalty < -2 || o.PresencePenalty > 2:
		return bad("presence_penalty %v outside -2..2", o.PresencePenalty)
	case !finite(o.FrequencyPenalty) || o.FrequencyPenalty < -2 || o.FrequencyPenalty > 2:
		return bad("frequency_penalty %v outside -2..2", o.FrequencyPenalty)
	case len(o.Stop) > MaxStops:
		return bad("%d stop strings, at most %d", len(o.Stop), MaxStops)
	}
	for _, s := range o.Stop {
		if len(s) > MaxStopLen {
			return bad("stop string of %d bytes, at most %d", len(s), MaxStopLen)
		}
	}
	return nil
}

// ValidModelName checks a model name from a client before it is used to
// find anything: a plain name ("qwen3-30b-a3b-q4") or REPO/FILE
// ("owner/repo/file.gguf"): 1 to 3 segments separated by "/", each
// starting with a letter or digit and made of letters, digits, '.', '_'
// and '-'. So no "..", no absolute paths, no backslashes, no empty
// segments, no control characters.
func ValidModelName(name string) error {
	if name == "" {
		return Errorf(CodeBadRequest, "model name is empty")
	}
	if len(name) > MaxNameLen {
		return Errorf(CodeBadRequest, "model name longer than %d bytes", MaxNameLen)
	}
	segs := strings.Split(name, "/")
	if len(segs) > 3 {
		return Errorf(CodeBadRequest, "model name %q has more than 3 parts", truncate(name, 64))
	}
	for _, s := range segs {
		if s == "" {
			return Errorf(CodeBadRequest, "model name %q has an empty part", truncate(name, 64))
		}
		for i, r := range s {
			alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
			if !alnum && (i == 0 || (r != '.' && r != '_' && r != '-')) {
				return Errorf(CodeBadRequest, "model name %q: invalid character %q (letters, digits, '.', '_', '-', parts separated by '/')", truncate(name, 64), r)
			}
		}
	}
	return nil
}

// ValidPullName accepts what ValidModelName accepts, a Hugging Face
// reference ("owner/repo[@revision]/path/file.gguf", optionally with an
// "hf://" prefix: up to 8 parts of letters, digits, '.', '_', '-', '@',
// each starting with a letter or digit), or an https URL without
// credentials.
func ValidPullName(name string) error {
	if strings.HasPrefix(name, "https://") || strings.HasPrefix(name, "http://") {
		if len(name) > MaxURLLen {
			return Errorf(CodeBadRequest, "URL longer than %d bytes", MaxURLLen)
		}
		u, err := url.Parse(name)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return Errorf(CodeBadRequest, "model URL must be https://host/path without credentials")
		}
		for _, r := range name {
			if r < 0x21 || r == 0x7f {
				return Errorf(CodeBadRequest, "model URL contains spaces or control characters")
			}
		}
		return nil
	}
	ref := strings.TrimPrefix(name, "hf://")
	if ValidModelName(ref) == nil {
		return nil
	}
	if ref == "" || len(ref) > MaxURLLen {
		return Errorf(CodeBadRequest, "model reference is empty or too long")
	}
	segs := strings.Split(ref, "/")
	if len(segs) > 8 {
		return Errorf(CodeBadRequest, "model reference %q has more than 8 parts", truncate(ref, 64))
	}
	for _, s := range segs {
		if s == "" {
			return Errorf(CodeBadRequest, "model reference %q has an empty part", truncate(ref, 64))
		}
		for i, r := range s {
			alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
			if !alnum && (i == 0 || (r != '.' && r != '_' && r != '-' && r != '@')) {
				return Errorf(CodeBadRequest, "model reference %q: invalid character %q", truncate(ref, 64), r)
			}
		}
	}
	return nil
}
