package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/sample"
	"github.com/strata-llm/strata/engine/speculation"
	"github.com/strata-llm/strata/engine/speculation/gate"
)

// Speculation configures speculative decoding: drafters propose the next
// tokens, one batched forward of at most model.InvariantRows rows checks
// them, and the accepted prefix is kept. Tokens never change because of
// it: greedy decoding gives exactly plain decoding's tokens (every verify
// row gets the logits a one-row step would), sampling keeps plain
// sampling's distribution (speculative rejection sampling; a seeded run
// draws other tokens from the same distribution). The zero value is off.
//
// Not drafted: requests with a structured-output constraint (each token's
// mask depends on the tokens before it; such requests decode plainly).
type Speculation struct {
	Enabled bool
	// Gate: SpecGate picks the depth per step from measured acceptance and
	// forward times; false: always MaxDraft drafts when there are some.
	Gate bool
	// MaxDraft is the most drafts per verify (at most
	// model.InvariantRows−1); 0: off.
	MaxDraft int
	// MinDraftProb stops a draft at the first token whose estimated
	// acceptance is below it.
	MinDraftProb float64
	// Lookup: prompt-lookup drafts (n-grams of the context).
	Lookup bool
	// MTP: drafts from the model's multi-token-prediction head, where its
	// session offers one (model.DraftHead).
	MTP bool
	// Drafter, if set, is tried before the others (benchmarks and tests:
	// e.g. a drafter replaying known tokens).
	Drafter speculation.Drafter
}

func (s Speculation) on() bool { return s.Enabled && s.MaxDraft > 0 }

// SpecStats describe one generation's speculation; the timings and
// acceptance are SpecGate's measurements for the loaded model so far.
type SpecStats struct {
	Proposed   int `json:"drafts_proposed"` // tokens drafters proposed
	Verified   int `json:"drafts_verified"` // drafted tokens checked in a verify forward
	Accepted   int `json:"drafts_accepted"` // drafted tokens kept
	Declined   int `json:"drafts_declined"` // proposed but not checked (the gate found them too costly or doubtful)
	Verifies   int `json:"verify_steps"`    // forwards with drafts
	PlainSteps int `json:"plain_steps"`     // one-row forwards
	Refills    int `json:"refills"`         // rollbacks the session could not do, forwarded again instead
	// Depths[k-1] is how many verifies checked k drafts (the depths the
	// gate chose, or the fixed depth where drafts were that long).
	Depths []int `json:"depths"`
	// T1MS is T(1), the measured time of a one-row forward; TRatio[n-1]
	// is T(n)/T(1) (0 where n rows were never measured).
	T1MS   float64   `json:"t1_ms"`
	TRatio []float64 `json:"t_ratio"`
	// StallMS is what the gate charges a forward's row for waiting on
	// expert reads (SSD streaming), included in T1MS and TRatio.
	StallMS float64 `json:"stall_ms_per_row"`
	// Acceptance is a_j by draft position, per drafter ("lookup", "mtp", …).
	Acceptance map[string][]float64 `json:"acceptance"`
}

// speculator is one generation's speculative decoding state.
type speculator struct {
	lm       *loaded
	gate     *gate.Gate
	drafters []speculation.Drafter
	mtp      *speculation.MTP
	draft    speculation.Draft
	st       SpecStats
	log      *slog.Logger // Debug: every forward and verdict (debugForwards)
	debug    bool
	toks     []int32 // the forward's tokens
	flags    []bool  // all true: every row's outputs

	// The verify in progress: pending[i] is the draft to check against
	// rows[i]; src, probs, k and accepted describe it for the gate.
	pending  []int32
	rows     [][]float32
	src      gate.Source
	probs    []float64
	k        int
	accepted int
	row      []float32 // the logits that follow an accepted draft

	// A first draft the gate declined, scored against the plain step's
	// token (shadowOK): the token a verify would have accepted.
	shadow     int32
	shadowOK   bool
	shadowSrc  gate.Source
	shadowProb [1]float64
}

// speculation is the engine's speculation settings now.
func (e *Engine) speculation() Speculation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.opts.Speculation
}

// mtpOn reports whether a request with settings o drafts with lm's MTP
// head.
func mtpOn(lm *loaded, o Speculation, req Request) (model.DraftHead, bool) {
	h, ok := lm.sess.(model.DraftHead)
	return h, ok && o.on() && o.MTP && req.Constraint == nil && h.DraftDepth() > 0
}

// drafting turns the session's MTP head cache on for a request that
// drafts with it and off for one that does not (plain decoding then pays
// nothing for it), before the prompt is forwarded. It returns how many
// leading positions of the session the request may reuse: those the head
// covers when it drafts.
func drafting(lm *loaded, o Speculation, req Request) int {
	h, on := mtpOn(lm, o, req)
	if h == nil {
		return lm.sess.Len()
	}
	if n := h.SetDrafting(on); on {
		return n
	}
	return lm.sess.Len()
}

// newSpeculator returns the generation's speculator, or nil when it
// decodes plainly. With log at Debug it logs the gate's prices, every
// forward and every verify's verdict (debugForwards).
func newSpeculator(ctx context.Context, lm *loaded, o Speculation, req Request, log *slog.Logger) *speculator {
	// A structured-output constraint's mask depends on every token before,
	// so constrained requests decode plainly.
	if !o.on() || req.Constraint != nil {
		return nil
	}
	cfg := gate.Config{MaxDraft: min(o.MaxDraft, model.InvariantRows-1), Fixed: !o.Gate, MinProb: o.MinDraftProb}
	if lm.gate == nil {
		lm.gate = gate.New(cfg)
	}
	lm.gate.SetConfig(cfg)
	// The first steps of a request pay for experts its prompt and its new
	// context bring in (also when the prompt was reused: the text moved on).
	lm.gate.Unseen()
	sp := &speculator{lm: lm, gate: lm.gate, log: log, debug: log.Enabled(ctx, debugForwards)}
	if o.Drafter != nil {
		sp.drafters = append(sp.drafters, o.Drafter)
	}
	if o.Lookup {
		sp.drafters = append(sp.drafters, &speculation.Lookup{})
	}
	if h, ok := mtpOn(lm, o, req); ok {
		sp.mtp = &speculation.MTP{Head: h}
		sp.drafters = append(sp.drafters, sp.mtp)
	}
	if len(sp.drafters) == 0 {
		return nil
	}
	if sp.debug && !cfg.Fixed {
		sn := sp.gate.Snapshot()
		log.Debug("speculation: gate", "t1_ms", ms(sn.T1), "t_ratio", sn.Ratios, "stall_ms_per_row", ms(sn.Stall))
	}
	return sp
}

// debugForwards: with the engine's Logger at slog.LevelDebug, every
// decode forward is logged ("forward": rows, ms, stall_ms, and when
// speculating drafts, probe, forced_plain), and every verify's verdict
// ("speculation: verified": drafts, accepted); each request the gate
// drafts for starts with its prices ("speculation: gate").
// BenchmarkSpeculation's STRATA_BENCH_TRACE prints them per request.
const debugForwards = slog.LevelDebug

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// next returns the token that follows history given logits: the verdict on
// the pending draft if there is one, else a plain sample.
func (sp *speculator) next(smp *sample.Sampler, logits []float32, history []int32) int32 {
	sp.row = nil
	if len(sp.pending) == 0 {
		tok := smp.Sample(logits, history)
		if sp.shadowOK {
			// A declined first draft is accepted by a verify exactly when
			// it is the token plain decoding gives: greedy, the argmax;
			// sampling, a draft of one token is accepted with the
			// probability that sampling draws it.
			acc := 0
			if tok == sp.shadow {
				acc = 1
			}
			sp.gate.Verified(sp.shadowSrc, sp.shadowProb[:], 1, acc)
			sp.shadowOK = false
		}
		return tok
	}
	tok, ok := smp.Verify(logits, history, sp.pending[0])
	if ok {
		sp.accepted++
		sp.st.Accepted++
		sp.row = sp.rows[1]
		sp.pending, sp.rows = sp.pending[1:], sp.rows[1:]
		if len(sp.pending) == 0 {
			sp.settle()
		}
		return tok
	}
	sp.settle()
	return tok
}

// settle reports the verify in progress to the gate.
func (sp *speculator) settle() {
	if sp.k > 0 {
		sp.gate.Verified(sp.src, sp.probs, sp.k, sp.accepted)
		if sp.debug {
			sp.log.Debug("speculation: verified", "drafts", sp.k, "accepted", sp.accepted)
		}
	}
	sp.pending, sp.rows, sp.k, sp.accepted = nil, nil, 0, 0
}

// step forwards id (just emitted, the last of history) with the drafts the
// gate picks and returns the logits that follow id; room is how many more
// tokens the generation may emit after id.
func (sp *speculator) step(ctx context.Context, id int32, history []int32, room int) ([]float32, error) {
	if sp.row != nil { // id was an accepted draft: the verify computed what follows it
		r := sp.row
		sp.row = nil
		return r, nil
	}
	lm := sp.lm
	keep := len(history) - 1 // what the session must hold before id
	if lm.sess.Len() > keep {
		if err := sp.rollback(ctx, history[:keep]); err != nil {
			return nil, err
		}
	}
	room = min(room-1, lm.sess.Cap()-keep-1, sp.gate.Config().MaxDraft)
	// What the forward will need for id can be read while drafting, and
	// the drafts' as soon as they are known (qwen4exp's streamed PLE rows).
	pf, _ := lm.sess.(model.Prefetcher)
	if pf != nil {
		sp.toks = append(sp.toks[:0], id)
		pf.Prefetch(sp.toks)
	}
	sp.draft.Reset()
	var plan gate.Plan
	var src gate.Source
	for _, d := range sp.drafters {
		if room <= 0 {
			break
		}
		n := sp.gate.Budget(d.Source(), room)
		if n <= 0 {
			continue
		}
		t0 := time.Now()
		if err := d.Draft(ctx, history, n, &sp.draft); err != nil {
			return nil, fmt.Errorf("draft: %w", err)
		}
		if n := len(sp.draft.Tokens); n > 0 {
			src = d.Source()
			sp.gate.Drafted(src, n, time.Since(t0))
			sp.st.Proposed += n
			plan = sp.gate.Pick(src, n, sp.draft.Probs)
			sp.st.Declined += n - plan.K
			if plan.K == 0 {
				sp.shadow, sp.shadowOK, sp.shadowSrc = sp.draft.Tokens[0], true, src
				sp.shadowProb[0] = math.NaN()
				if len(sp.draft.Probs) > 0 {
					sp.shadowProb[0] = sp.draft.Probs[0]
				}
			}
			break
		}
	}
	k := plan.K
	sp.toks = append(append(sp.toks[:0], id), sp.draft.Tokens[:k]...)
	if pf != nil && k > 0 {
		pf.Prefetch(sp.toks)
	}
	sp.flags = sp.flags[:0]
	for range k + 1 {
		sp.flags = append(sp.flags, true)
	}
	b := &lm.batch
	*b = model.Batch{Tokens: sp.toks}
	if k > 0 {
		b.Logits = sp.flags
	}
	stall0 := lm.stall()
	t0 := time.Now()
	if err := lm.sess.Forward(ctx, b); err != nil {
		return nil, err
	}
	took, stalled := time.Since(t0), lm.stall()-stall0
	sp.gate.ForwardStalled(k+1, took, stalled)
	if sp.debug {
		sp.log.Debug("forward", "rows", k+1, "ms", ms(took), "stall_ms", ms(stalled),
			"drafts", len(sp.draft.Tokens), "probe", plan.Probe, "forced_plain", plan.Plain)
	}
	if k == 0 {
		sp.st.PlainSteps++
		return b.Out[0], nil
	}
	sp.st.Verifies++
	sp.st.Verified += k
	for len(sp.st.Depths) < k {
		sp.st.Depths = append(sp.st.Depths, 0)
	}
	sp.st.Depths[k-1]++
	sp.pending = append(sp.pending[:0], sp.draft.Tokens[:k]...)
	sp.rows = append(sp.rows[:0], b.Out...)
	sp.src, sp.probs, sp.k, sp.accepted = src, append(sp.probs[:0], sp.draft.Probs[:k]...), k, 0
	return b.Out[0], nil
}

// stall is how long the model's forwards have waited for expert reads
// so far (0 when its experts are not streamed).
func (lm *loaded) stall() time.Duration {
	if lm.stream == nil {
		return 0
	}
	return lm.stream.Stats().Stall
}

// rollback drops the session's positions after kept (rejected drafts).
// When the session cannot roll back that far (recurrent state keeps only a
// few steps) it is reset and kept is forwarded again, in batches small
// enough that each row is computed as a one-row step would compute it.
func (sp *speculator) rollback(ctx context.Context, kept []int32) error {
	lm := sp.lm
	err := lm.sess.Truncate(len(kept))
	if err == nil || !errors.Is(err, model.ErrRollback) {
		return err
	}
	sp.st.Refills++
	if err := lm.sess.Truncate(0); err != nil {
		return fmt.Errorf("reset the session after a failed rollback: %w", err)
	}
	for i := 0; i < len(kept); i += model.InvariantRows {
		chunk := kept[i:min(i+model.InvariantRows, len(kept))]
		lm.batch = model.Batch{Tokens: chunk, Logits: make([]bool, len(chunk))}
		if err := lm.sess.Forward(ctx, &lm.batch); err != nil {
			return err
		}
	}
	return nil
}

// stats ends the generation's speculation and reports it.
func (sp *speculator) stats() *SpecStats {
	if sp.k > 0 { // ended inside a verify: count only what was decided
		sp.gate.Verified(sp.src, sp.probs, sp.accepted, sp.accepted)
		sp.k = 0
	}
	return sp.snapshot()
}

// snapshot reports the generation's speculation so far (a copy).
func (sp *speculator) snapshot() *SpecStats {
	st := sp.st
	st.Depths = slices.Clone(st.Depths)
	sn := sp.gate.Snapshot()
	st.T1MS = ms(sn.T1)
	st.TRatio = sn.Ratios
	st.StallMS = ms(sn.Stall)
	st.Acceptance = sn.Acceptance
	return &st
}

// liveEvery is how often a generation publishes its speculation figures to
// the engine's Status (the API's telemetry reads them).
const liveEvery = 500 * time.Millisecond

// publish makes st the engine's live speculation figures.
func (e *Engine) publishSpec(st *SpecStats) {
	e.mu.Lock()
	e.liveSpec = st
	e.mu.Unlock()
}
