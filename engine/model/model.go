// Package model defines what every architecture's forward pass offers the
// engine: a loaded Model that opens Sessions (one sequence's KV and recurrent
// state each), and the ExpertSource through which MoE layers reach expert
// weights (the file's mmap today, an SSD-backed cache later).
package model

import (
	"context"

	"github.com/strata-llm/strata/engine/ggml"
)

// Model is a loaded set of weights of one architecture.
type Model interface {
	// Arch is the GGUF general.architecture, e.g. "qwen3moe".
	Arch() string
	// NVocab is the number of logits per row.
	NVocab() int
	// ContextLength is the model's trained context length.
	ContextLength() int
	// NewSession makes an empty sequence able to hold nCtx positions.
	NewSession(nCtx int) (Session, error)
	// Close frees the model; sessions must be closed first.
	Close() error
}

// Session is one sequence: its KV cache (and recurrent state, for hybrid
// architectures). A Session is not safe for concurrent use.
type Session interface {
	// Forward appends tokens at positions Len()..Len()+len(tokens)-1 in one
	// batched forward pass and returns logits. With all false only the last
	// row's logits are returned (one row); with all true one row per token
	// (speculative verification needs k+1 rows). The returned slices are
	// owned by the session and valid until the next call.
	// Cancellation is checked between layers; on error the session's length
	// is unchanged.
	Forward(ctx context.Context, tokens []int32, all bool) ([][]float32, error)
	// Len is the number of positions held.
	Len() int
	// Cap is the most positions the session can hold.
	Cap() int
	// Truncate drops positions from n on (n ≤ Len()), e.g. after rejected drafts.
	Truncate(n int) error
	// Close frees the session's buffers.
	Close() error
}

// ExpertWeights is one expert's three projections in a MoE layer, as raw
// ggml blocks: Gate and Up are [nFF rows × nEmbd], Down is [nEmbd rows × nFF].
type ExpertWeights struct {
	Gate, Up, Down    []byte
	GateT, UpT, DownT ggml.Type
}

// ExpertSource gives MoE layers their expert weights. Acquire returns the
// weights of expert e of layer l; the bytes stay valid until Release is
// called with the same arguments. Implementations must be safe for
// concurrent use.
type ExpertSource interface {
	Acquire(ctx context.Context, layer, expert int) (ExpertWeights, error)
	Release(layer, expert int)
}
