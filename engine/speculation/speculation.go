// Package speculation holds the drafters of speculative decoding: each
// proposes the tokens that will probably follow the context, with its own
// estimate of each token's probability, for the engine to verify in one
// batched forward (SpecGate, package gate, picks how many).
//
// Drafters here: prompt lookup (Lookup: the longest recent suffix n-gram
// found earlier in the context, and what followed it) and the model's own
// multi-token-prediction head (MTP, over a model.DraftHead).
package speculation

import (
	"context"

	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/speculation/gate"
)

// Draft is a drafter's proposal: Tokens to follow the context, in order,
// and Probs[j], the drafter's own probability that Tokens[j] is right
// given Tokens[:j] are (NaN when it has none).
type Draft struct {
	Tokens []int32
	Probs  []float64
}

// Reset empties d, keeping its buffers.
func (d *Draft) Reset() {
	d.Tokens, d.Probs = d.Tokens[:0], d.Probs[:0]
}

// Add appends one token.
func (d *Draft) Add(tok int32, p float64) {
	d.Tokens = append(d.Tokens, tok)
	d.Probs = append(d.Probs, p)
}

// Drafter proposes tokens. Implementations are used by one generation at
// a time.
type Drafter interface {
	// Source names the drafter to SpecGate (its statistics) with its
	// priors.
	Source() gate.Source
	// Draft appends to d (reset by the caller) at most max tokens that
	// follow context (the prompt and every token generated so far,
	// including the last one, which the model has not seen yet).
	Draft(ctx context.Context, context []int32, max int, d *Draft) error
}

// MTP drafts with a model's multi-token-prediction head. The session runs
// the head from its own final hidden states (model.DraftHead); the head's
// cache must be on (SetDrafting) before the prompt is forwarded.
type MTP struct {
	Head model.DraftHead
}

// Source implements Drafter.
func (m *MTP) Source() gate.Source { return gate.MTP }

// Draft implements Drafter: the head's greedy tokens, chained, up to its
// depth.
func (m *MTP) Draft(ctx context.Context, context []int32, max int, d *Draft) error {
	if len(context) == 0 {
		return nil
	}
	max = min(max, m.Head.DraftDepth())
	if max <= 0 {
		return nil
	}
	return m.Head.Draft(ctx, context[len(context)-1], max, func(tok int32, p float64) { d.Add(tok, p) })
}
