// Package sample picks the next token from logits: greedy, or temperature
// with top-k, top-p and min-p filters and repetition, presence and frequency
// penalties, seeded for reproducibility.
package sample

// Params holds the decoding options of one request. The zero value means
// greedy decoding with no penalties and the engine's default max tokens.
type Params struct {
	MaxTokens        int      `json:"max_tokens,omitempty"`     // 0: engine default; generation also stops at the context end
	Temperature      float32  `json:"temperature"`              // 0: greedy
	TopK             int      `json:"top_k,omitempty"`          // 0: off
	TopP             float32  `json:"top_p,omitempty"`          // 0 or 1: off
	MinP             float32  `json:"min_p,omitempty"`          // 0: off
	RepeatPenalty    float32  `json:"repeat_penalty,omitempty"` // 0 or 1: off
	RepeatLastN      int      `json:"repeat_last_n,omitempty"`  // window for penalties; 0: 64
	PresencePenalty  float32  `json:"presence_penalty,omitempty"`
	FrequencyPenalty float32  `json:"frequency_penalty,omitempty"`
	Seed             uint64   `json:"seed,omitempty"` // 0: random
	Stop             []string `json:"stop,omitempty"` // stop strings; never emitted
}

// Constraint restricts which tokens may come next (structured output): Mask
// sets the logits of the tokens it forbids to -Inf before a draw, Accept
// advances it past the drawn token, and Done reports that the constrained
// text is complete, so generation stops there.
type Constraint interface {
	Mask(logits []float32)
	Accept(tok int32) error
	Done() bool
}
