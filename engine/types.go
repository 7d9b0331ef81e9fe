package engine

import (
	"encoding/json"
	"time"

	"github.com/strata-llm/strata/engine/chat"
	"github.com/strata-llm/strata/engine/sample"
	"github.com/strata-llm/strata/engine/tokenizer"
)

// State is the engine's lifecycle state.
type State string

// Engine states.
const (
	StateStopped    State = "stopped"    // no model loaded
	StateLoading    State = "loading"    // a model is being opened and checked
	StateReady      State = "ready"      // a model is loaded and idle
	StateGenerating State = "generating" // a request is running
	StateError      State = "error"      // the last load failed; Status.Err says why
)

// Message is one chat turn, as in OpenAI's chat API.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant", "tool"
	Content string `json:"content"`
	// ToolCalls are the function calls of an assistant turn; ToolCallID
	// and Name say which call a "tool" turn answers.
	ToolCalls  []chat.ToolCall `json:"-"`
	ToolCallID string          `json:"-"`
	Name       string          `json:"-"`
}

// Sampling holds the decoding options of one request; see sample.Params.
type Sampling = sample.Params

// Request is one generation. Exactly one of Prompt, Messages or Tokens is set.
type Request struct {
	Prompt   string    // raw text, tokenized with the model's BOS rules and special tokens parsed
	Messages []Message // chat turns, rendered with the model's chat template
	Tokens   []int32   // token ids, used as they are
	Sampling Sampling
	// Tools are function definitions (OpenAI's {"type":"function",...}
	// objects) the chat template offers the model.
	Tools []json.RawMessage
	// Prefill is text appended to the rendered chat prompt: the start of
	// the assistant's reply, which the model continues (e.g. "<tool_call>\n"
	// to force a tool call).
	Prefill string
	// Constraint, when set, makes the constraint that restricts the
	// generated tokens (engine/grammar's JSON schemas); generation stops
	// when it is Done.
	Constraint ConstraintMaker
}

// ConstraintMaker builds a request's constraint for the loaded model's
// vocabulary (*tokenizer.Tokenizer).
type ConstraintMaker func(v *tokenizer.Tokenizer) (sample.Constraint, error)

// Token is one generated token as streamed to the caller.
type Token struct {
	ID   int32  `json:"id"`
	Text string `json:"text"` // the complete UTF-8 text this token finished (may be empty while a character is incomplete)
}

// FinishReason says why a generation ended.
type FinishReason string

// Finish reasons.
const (
	FinishStop      FinishReason = "stop"      // end-of-generation token or a stop string
	FinishLength    FinishReason = "length"    // max tokens or context end
	FinishCancelled FinishReason = "cancelled" // the context was cancelled
)

// Stats describes one finished (or cancelled) generation.
type Stats struct {
	PromptTokens     int           `json:"prompt_tokens"`
	GeneratedTokens  int           `json:"generated_tokens"`
	TimeToFirstToken time.Duration `json:"time_to_first_token_ns"`
	Duration         time.Duration `json:"duration_ns"`
	PromptPerSecond  float64       `json:"prompt_tokens_per_second"`
	TokensPerSecond  float64       `json:"tokens_per_second"` // decode rate, excluding prefill
	FinishReason     FinishReason  `json:"finish_reason"`
	PromptIDs        []int32       `json:"-"` // the prompt as tokenized
	// Experts is the expert cache's work during the generation; nil
	// unless experts are streamed.
	Experts *ExpertStats `json:"experts,omitempty"`
	// Speculation is speculative decoding's work; nil when it was off.
	Speculation *SpecStats `json:"speculation,omitempty"`
	// Routing describes cache-aware routing's choices; nil when it is off.
	Routing *RoutingStats `json:"routing,omitempty"`
}

// RoutingStats describe cache-aware routing over one generation, against
// exact routing of the same hidden states.
type RoutingStats struct {
	Agreement   float64 `json:"agreement"`    // mean |chosen ∩ true top-k| / k
	KL          float64 `json:"kl"`           // mean KL of the chosen weights from the true top-k ones
	SwappedPct  float64 `json:"swapped_pct"`  // % of slots given to an expert outside the true top-k
	ResidentPct float64 `json:"resident_pct"` // % of chosen experts that were resident
}

// ExpertStats describe expert streaming over one generation.
type ExpertStats struct {
	Hits         int64   `json:"hits"`               // experts found in the cache (or being read ahead)
	Misses       int64   `json:"misses"`             // experts read while a layer waited
	ReadAheads   int64   `json:"read_aheads"`        // experts queued for read-ahead
	AheadUsed    int64   `json:"read_aheads_used"`   // of them, used by the layer they were read for
	HitRate      float64 `json:"hit_rate"`           // hits / (hits + misses)
	BytesRead    int64   `json:"bytes_read"`         // from the SSD
	ReadMBps     float64 `json:"read_mb_per_second"` // bytes read / the generation's time
	StallSeconds float64 `json:"stall_seconds"`      // time layers waited for experts
	CacheBytes   int64   `json:"cache_bytes"`
	// With the Metal backend: experts its decode steps used where the
	// cache read them, and experts copied into its slots instead (an
	// arena part it cannot bind, or a layer choosing more experts than
	// the cache holds at once).
	InPlace int64 `json:"experts_in_place,omitempty"`
	Copied  int64 `json:"experts_copied,omitempty"`
}

// ModelInfo describes a loaded model.
type ModelInfo struct {
	Path          string `json:"path"`
	Name          string `json:"name"`
	Arch          string `json:"arch"`
	Layers        int    `json:"layers"`
	Embd          int    `json:"embd"`
	Vocab         int    `json:"vocab"`
	Experts       int    `json:"experts"`
	ExpertsUsed   int    `json:"experts_used"`
	ContextLength int    `json:"context_length"` // the model's trained context
	FileBytes     int64  `json:"file_bytes"`
	Demo          bool   `json:"demo"` // a demo model with random weights
	// Memory says how the weights are held: "in memory", "mapped" or
	// "streaming experts" (from the SSD into a cache of ExpertCacheBytes).
	Memory           string `json:"memory"`
	ExpertCacheBytes int64  `json:"expert_cache_bytes,omitempty"`
}

// Load phases (Progress.Phase).
const (
	PhaseReading = "reading" // reading the weights into memory
	PhaseWarming = "warming" // filling the expert cache from the usage history and profile
)

// Progress is how far a load has come, while Status.State is loading.
type Progress struct {
	Phase    string  `json:"phase"`    // PhaseReading or PhaseWarming
	Text     string  `json:"text"`     // what is happening, for a person
	Done     int64   `json:"done"`     // bytes read (reading) or experts in the cache (warming)
	Total    int64   `json:"total"`    // of how many
	Fraction float64 `json:"fraction"` // of the phase, 0..1
}

// Status is a snapshot of the engine.
type Status struct {
	State State `json:"state"`
	// Progress says how far the load has come while State is loading;
	// nil before its first phase starts and otherwise.
	Progress    *Progress  `json:"progress,omitempty"`
	Model       *ModelInfo `json:"model,omitempty"`
	Err         string     `json:"error,omitempty"`
	MemoryBytes int64      `json:"memory_bytes"` // bytes the engine holds (KV cache, buffers; mapped weights counted once resident)
	LastStats   *Stats     `json:"last_stats,omitempty"`
	// Backend runs the loaded model's ops ("cpu", "metal"), or will at the
	// next Load while none is loaded.
	Backend string `json:"backend"`
	// BackendReason says why (Options.BackendReason).
	BackendReason string `json:"backend_reason,omitempty"`
	// BackendFallback: Metal was wanted and the CPU runs the model.
	BackendFallback bool `json:"backend_fallback,omitempty"`
	// Speculation is the running generation's speculation so far (updated
	// every half second), else the last speculating generation's; nil
	// before any.
	Speculation *SpecStats `json:"speculation,omitempty"`
}
