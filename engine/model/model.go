// Package model defines what every architecture offers the engine: a
// registry of architectures (name → Open), a loaded Model that describes
// itself and opens Sessions, a Session that runs batches with per-row
// output flags and says how far it can roll back, and the ExpertProvider
// through which MoE layers receive expert weights (the file's mapping, or
// an SSD-backed expert cache).
package model

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/routing"
)

// Info describes a loaded model's shape.
type Info struct {
	Arch          string
	Layers        int
	Embd          int
	Vocab         int
	Experts       int // per MoE layer; 0 for dense models
	ExpertsUsed   int
	ContextLength int // the trained context
}

// Model is a loaded set of weights of one architecture.
type Model interface {
	Info() Info
	// NewSession makes an empty sequence able to hold nCtx positions.
	NewSession(nCtx int) (Session, error)
	// Experts is the byte layout of the model's experts in its file (nil
	// for a model without experts), for providers that read them.
	Experts() *ExpertLayout
	// Close frees the model; sessions must be closed first.
	Close() error
}

// Batch is the input of one forward pass and, after it, its outputs.
type Batch struct {
	// Tokens are appended at positions Len()..Len()+len(Tokens)-1.
	Tokens []int32
	// Logits marks the rows whose logits are wanted; nil means the last
	// row's only.
	Logits []bool
	// Hidden marks the rows whose final hidden state (the residual stream
	// after the last layer, before the output norm) is wanted; nil: none.
	Hidden []bool

	// Out holds, after Forward, one row of logits per row marked in
	// Logits, in row order; HiddenOut likewise for Hidden. The slices are
	// owned by the session and valid until its next Forward.
	Out       [][]float32
	HiddenOut [][]float32
}

// WantsLogits reports whether row i's logits are wanted.
func (b *Batch) WantsLogits(i int) bool {
	if b.Logits == nil {
		return i == len(b.Tokens)-1
	}
	return b.Logits[i]
}

// WantsHidden reports whether row i's hidden state is wanted.
func (b *Batch) WantsHidden(i int) bool { return b.Hidden != nil && b.Hidden[i] }

// InvariantRows is the largest batch whose rows every backend computes
// exactly as it computes them one at a time. Larger batches (prompt
// prefill) may use matrix tiles that round differently, for speed.
const InvariantRows = 16

// ErrRollback is wrapped by Truncate when the session cannot go back that
// far (recurrent state keeps only its last few steps); the caller then
// resets the session and forwards the tokens again.
var ErrRollback = errors.New("cannot roll back that far")

// Session is one sequence: its tokens, KV cache and recurrent state. A
// Session is not safe for concurrent use.
type Session interface {
	// Forward runs one batched forward pass. In a batch of up to
	// InvariantRows rows each row's results are bit-identical to the same
	// row computed alone (speculative verification relies on it). Cancellation is
	// checked between layers; on error the session is unchanged.
	Forward(ctx context.Context, b *Batch) error
	// Tokens are the tokens the session holds, in order (owned by the
	// session: copy to keep).
	Tokens() []int32
	// Len is len(Tokens()).
	Len() int
	// Cap is the most positions the session can hold.
	Cap() int
	// CanTruncate reports whether Truncate(n) would succeed.
	CanTruncate(n int) bool
	// Truncate drops positions from n on (n ≤ Len()), e.g. after rejected
	// drafts or for prefix reuse; an error wrapping ErrRollback means it
	// cannot, and the session is unchanged.
	Truncate(n int) error
	// MemoryBytes is what the session holds (caches, state, buffers).
	MemoryBytes() int64
	// Close frees the session's buffers.
	Close() error
}

// DraftHead is implemented by a Session whose model carries a
// multi-token-prediction (nextn) head, for speculative decoding (qwen3next,
// qwen4exp). The head reads the trunk's final hidden state of every
// position (after the output norm, llama.cpp's h_nextn) inside the
// session, so the caller passes no hidden rows.
type DraftHead interface {
	// DraftDepth is the most tokens one Draft can propose (0: none).
	DraftDepth() int
	// SetDrafting turns the head's cache on or off. While on, every
	// Forward also runs part of the head over its rows (about one
	// attention layer's K/V per row), so the head attends to every earlier
	// position; off, plain decoding pays nothing. It returns how many
	// leading positions the cache covers: a session holding more was
	// forwarded while drafting was off, and Draft proposes nothing until
	// it is truncated to at most that many and forwarded again.
	SetDrafting(on bool) int
	// Draft proposes up to n tokens to follow the session's tokens and
	// next (the token about to be forwarded), calling emit for each in
	// order with the head's probability of it. It changes nothing a
	// Forward computes; the head's cache follows the session's Truncate.
	Draft(ctx context.Context, next int32, n int, emit func(tok int32, p float64)) error
}

// Prefetcher is implemented by a Session that can start reading what the
// next Forward will need before it is called (qwen4exp: the PLE table's
// rows of the batch's tokens, when the table is streamed). Speculative
// decoding calls it as soon as it knows a verify's tokens, so the reads
// overlap drafting and the start of that forward.
type Prefetcher interface {
	// Prefetch hints that the next Forward's batch starts with tokens
	// (after the session's tokens). It never waits for I/O and changes
	// nothing a Forward computes: a wrong guess costs only its reads.
	Prefetch(tokens []int32)
}

// TensorRef names one tensor of the file: a 3-D expert tensor
// [cols, rows, experts] whose expert e occupies bytes
// [e·PerExpert, (e+1)·PerExpert) of the tensor's data.
type TensorRef struct {
	Name       string
	Type       ggml.Type
	Rows, Cols int
	PerExpert  int64
}

// LayerExperts are one MoE layer's expert tensors.
type LayerExperts struct {
	Gate, Up, Down TensorRef
}

// ExpertLayout is where a model's experts are in its file: per layer (nil
// entries for layers without routed experts), so that a provider needs no
// per-architecture code.
type ExpertLayout struct {
	Experts int
	Layers  []*LayerExperts
}

// ExpertWeights is one expert's projections; see backend.ExpertWeights.
type ExpertWeights = backend.ExpertWeights

// ExpertProvider makes expert weights available to MoE layers. A layer
// asks for every expert it needs at once and computes them in the order
// they arrive; results never depend on that order. Implementations are
// used by one forward pass at a time.
type ExpertProvider interface {
	// Fetch starts making experts (distinct ids) of layer available and
	// returns the fetch to collect them from; the fetch is valid until
	// its Release (the provider may reuse it afterwards).
	Fetch(ctx context.Context, layer int, experts []int32) (Fetch, error)
	// Prefetch hints that layer's experts will be wanted soon (read-ahead);
	// it never blocks and may be ignored.
	Prefetch(layer int, experts []int32)
	// Streaming reports whether Prefetch does anything, so the MoE block
	// predicts the next layer's experts only when it pays.
	Streaming() bool
	// Resident fills dst (grown to the layer's expert count) with which of
	// layer's experts are resident now, or returns nil when all always are.
	// The answer depends only on the logical order of fetches, never on
	// I/O timing, so a routing policy that reads it stays deterministic.
	Resident(layer int, dst []bool) []bool
}

// Fetch is one layer's request for experts.
type Fetch interface {
	// Ready waits until at least one requested expert that Ready has not
	// returned yet is available, and appends the indices (into the
	// requested list) of all such experts available now to dst. It
	// returns an error when a read failed or ctx ended.
	Ready(ctx context.Context, dst []int) ([]int, error)
	// Weights are the weights of requested expert i once Ready returned
	// it; they stay valid until Done or Release.
	Weights(i int) ExpertWeights
	// Done says the layer has finished with the given experts (their
	// results are computed), so a provider with less room than the layer
	// needs may reuse their memory for the experts still to come.
	Done(idx []int)
	// Release gives the experts back (they may be evicted afterwards).
	Release()
}

// Placer is a Fetch that says whether every requested expert has memory
// of its own now (none waits for another's Done): only then may a caller
// hold them all until its Release, as a device using them in place does.
type Placer interface {
	Placed() bool
}

// Options are what an architecture's Open is given.
type Options struct {
	// Backend runs the model's ops; required.
	Backend backend.Backend
	// NewExperts makes the provider of the model's expert weights from
	// their layout in the file; nil: straight from the file's data.
	NewExperts func(*ExpertLayout) (ExpertProvider, error)
	// Routing is the routing policy the MoE layers apply and where they
	// record its telemetry; nil: exact routing.
	Routing *routing.State
	// Usage, if set, is told every token's chosen experts per layer (the
	// learned usage history).
	Usage UsageRecorder
}

// UsageRecorder records expert selections: once per token per layer.
type UsageRecorder interface {
	Add(layer int, experts []int32)
}

// RouteRecorder is a UsageRecorder that is also told how each choice was
// made: a route trace. Before Add, AddRoute receives the row's router
// probabilities over all experts (after the softmax, before the routing
// policy) and the experts chosen, best first; probs is valid only during
// the call. How close the last chosen and the first left-out expert were
// tells whether two implementations whose rounding differs may choose
// differently there.
type RouteRecorder interface {
	UsageRecorder
	AddRoute(layer int, probs []float32, experts []int32)
}

// Architecture is one GGUF general.architecture the engine can run.
type Architecture struct {
	Name string
	Open func(f *gguf.File, opts Options) (Model, error)
}

// Registry is a fixed set of architectures, looked up by name.
type Registry struct {
	archs map[string]Architecture
}

// NewRegistry returns a registry of archs; names must be distinct.
func NewRegistry(archs ...Architecture) *Registry {
	r := &Registry{archs: map[string]Architecture{}}
	for _, a := range archs {
		if _, dup := r.archs[a.Name]; dup || a.Name == "" || a.Open == nil {
			panic(fmt.Sprintf("model: bad or duplicate architecture %q", a.Name))
		}
		r.archs[a.Name] = a
	}
	return r
}

// Lookup returns the architecture called name.
func (r *Registry) Lookup(name string) (Architecture, bool) {
	a, ok := r.archs[name]
	return a, ok
}

// Names lists the registered architectures, sorted.
func (r *Registry) Names() []string {
	var n []string
	for k := range r.archs {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
