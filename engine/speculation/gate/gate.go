// Package gate is SpecGate, the pure policy that picks how many drafted
// tokens one speculative verify should check: from measured acceptance by
// draft position and source, the measured wall time of n-row forwards, and
// the drafter's own per-token probabilities, it drafts the depth k with the
// best expected tokens per unit of time, and no draft when none beats a
// plain step. It does no I/O and knows nothing of the engine; the caller
// reports what happened (Forward, Drafted, Verified) and asks (Pick).
//
// The math (docs: ../../../shared/design/engine.md, issue 18):
//
//	E(k)     = 1 + a1 + a1·a2 + … + a1·…·ak        expected tokens of a k-draft verify
//	cost(k)  = (T(k+1) + (k−1)·d) / T(1)            in plain steps
//	value(k) = E(k) / cost(k)                       draft the best k with value > 1 (ties: smaller k)
//
// a_j is P(draft j accepted | drafts 1..j−1 accepted): a running mean that
// becomes an exponential moving average over 16 verifies, started from a
// per-source prior worth 2 verifies. When the drafter gives its own
// probability p_j for this step, a_j = c_j·p_j where c_j (the calibration,
// measured acceptance over the mean p_j of the same verifies) corrects the
// drafter's over- or under-confidence: a confident draft is taken and a
// doubtful one is not. T(1) is a running mean, then an EMA over 8, of the
// wall time of a plain step; T(n)/T(1) for n > 1 is measured the same way
// from n-row forwards against the plain steps near each of them in time
// (PairWindow: under SSD streaming a forward's time follows the text's
// phase, so times taken apart do not compare); an n not measured yet is
// priced T(1)·(1+(n−1)·ρ), with ρ fitted from the measured multi-row
// forwards (0.5 before any, clamped to 0..4). d is the measured drafting time per
// extra draft token (≈ 0 for prompt lookup; an MTP head's forward). A
// plain step right after a verify is charged to the verify (Forward).
//
// Under SSD streaming a forward's time is its compute plus what it
// waited for experts to be read (ForwardStalled). The times above are
// then the compute, and every row is charged the stall per row of the
// recent forwards where drafts were offered (StallWindow, IOSlopeMin):
// T(n) = compute(n) + n·stall, since a verify's rows each bring their
// own experts, accepted or not, and the stall follows the text; or more,
// where verifies measured stall more (a rejected draft's row brings
// experts the text does not use). A request's first forwards read the
// new text's experts whatever their rows: where the gate drafts, they
// are priced with what they took over T(n) before, shared by the rows
// (SettleSamples), and drafted deeper.
package gate

import (
	"math"
	"slices"
	"time"
)

// Constants of the policy and the measurements behind them.
const (
	// AcceptWindow: acceptance is a running mean for its first 16
	// verifies, then an EMA with weight 1/16. colibri uses 16: short
	// enough that a change of text (chat → code → chat) is seen within a
	// paragraph, long enough that one unlucky draft does not switch
	// drafting off.
	AcceptWindow = 16
	// PriorWeight: a position's prior counts as this many verifies, so
	// two real verifies already outweigh it. The prior of a position the
	// source lists no prior for is the estimate of the position before:
	// a deep position is decided only when every draft before it was
	// accepted and the gate drafts that deep, so it can go a whole run
	// with a sample or two. With the source's first prior repeated there
	// (lookup's 0.5), BenchmarkSpeculation's replay 0.9 (RAM) kept
	// a_5 near 0.6 from its probes while a_1..a_4 measured ~0.9, the
	// gate drafted 4 deep (29 of 31 verifies) and ran at 1.89× plain
	// where depth 5 ran at 2.05×.
	PriorWeight = 2
	// TimeWindow: T(n) is a running mean for 8 samples, then an EMA with
	// weight 1/8. Forward times on a loaded laptop drift by ±25 % over
	// minutes (bench-vs-llamacpp.sh's note); 8 samples follow a drift
	// within a sentence and average out single hiccups.
	TimeWindow = 8
	// Warmup: the first forward of each row count is not counted: it grows
	// the session's buffers for that many rows (measured on the synthetic
	// qwen3moe: the first 2- to 5-row forwards took 5–150× T(1), the next
	// ones 1.0–1.3×).
	Warmup = 1
	// Clip and Fence: from the third sample of T(n) on, a sample is
	// clipped before it enters the average to [lo, hi]: for T(1)
	// [m/Clip, m·Clip], for n > 1 hi the larger of m·Clip and
	// q3 + Fence·(q3−q1), lo the smaller of m/Clip and q1 − Fence·(q3−q1):
	// m, q1 and q3 the median and quartiles of the last TimeWindow raw
	// samples of that n. On the shared 2-core test
	// machine single forwards took up to 5× their neighbours (another
	// process's burst); BenchmarkSpeculation (RAM, replay 0.9) saw two
	// plain steps of 14 and 10.7 ms among ones of 3.6–3.8, and with the
	// former clip (2× the average, only after 8 samples) the gate's T(1)
	// stayed 30 % above the plain runs' time per token, its T(2)/T(1) at
	// 1.02, for the rest of the run. In memory forwards are that tight,
	// the quartiles close, and a spike is clipped to 1.25× the median: it
	// moves the average by at most 3 %; a real change (the cache starts
	// to thrash) moves the median within five samples and the average
	// follows. Under SSD streaming a forward's time is heavy-tailed by
	// nature: the rows whose experts miss the cache wait for the disk.
	// BenchmarkSpeculation streamed (replay 0.9): the gate's 5-row
	// verifies took 6–37 ms, median ~10, mean ~14, depth 5's 6-row ones
	// 7–49 ms, mean ~18. Clipped at 1.25× the median, each T(n) read near
	// its median, and the ratios were not what the verifies cost in
	// tokens per second: from their tok/s, continuous depth 1 paid 1.63
	// T(1) a verify and depth 5 3.03, where the gate priced T(2) at 1.42
	// and T(6) at 3.65; it drafted 1–2 deep (1.19–1.24× plain) where
	// depth 5 ran at 1.38–1.45×. Tukey's "far out" fence (3 interquartile
	// ranges past the quartile) keeps that tail, so T(n) is its mean (the
	// gate then drafted 4 deep, 1.27×), and still cuts a spike among
	// tight samples. Not for T(1): while the gate drafts, its samples are
	// the forced plain steps, one per 64 drafted steps, minutes apart,
	// and the host's drift between them widened the fence so that spikes
	// got in (RAM, replay 0.9: T(1) 3.61 ms where plain decoding ran at
	// 2.65 a token; deep verifies looked cheap, the gate drafted 6–8
	// where 5 was best, 1.50× plain against depth 5's 1.60). With T(1)
	// clipped at 1.25× the median: 2.64 ms, 1.60× against 1.61.
	Clip  = 1.25
	Fence = 3
	// ClipAfter is how many samples of T(n) there must be before the clip
	// applies (a median of fewer says little).
	ClipAfter = 3
	// ProbeEvery: a probe drafts one deeper than the best, so a depth
	// that looked too costly is measured again: every 4th pick while that
	// depth's row count has fewer than ProbeSamples samples, then every
	// 16th, or less often when a probe run is expected to cost more than
	// ProbeLoss of the decode time (see probeEvery), at most every
	// ProbeEveryHopeless picks.
	//
	// A young row count (fewer than ProbeSamples samples) is probed every
	// ProbeEveryYoung picks only where the probe can become a sample:
	// where the gate steps plainly (the plain steps around it pair it,
	// PairWindow); where it drafts on, right before the forced plain steps
	// (ForcePlainAfter), which then pair it, and otherwise as a grown one.
	// Probed every 4th pick while the gate drafted on, the probes were
	// never samples, the row count stayed young, and half the verifies
	// were probes: BenchmarkSpeculation in memory, replay 0.9, traced
	// (12 rounds): depths 5 and 6 alternating with probe runs of 6 and 7,
	// 0.98 of depth 5's speed.
	//
	// A row count with fewer than ProbeSamples samples is young: its
	// measured T(n) enters the fit shrunk towards the price the others
	// give it (interpolated between the measured ones, or continued with
	// their ρ), as if those were worth ProbeSamples samples. Under SSD
	// streaming single forwards range from 2.5 to 110 ms: one 4-row
	// sample of 6.6 T(1) among a T(3) of 3.2 and a T(5) of 2.4 (both from
	// a sample or two) was pooled with T(5) by the fit, priced depths 3
	// and 4 at ~4.5 plain steps, and the gate drafted 1 deep where 5 was
	// best (BenchmarkSpeculation streamed, replay 0.9, 64 tokens a
	// request: 1.10× plain against depth 5's 1.36×).
	ProbeEvery      = 16
	ProbeEveryYoung = 4
	ProbeSamples    = 3
	// ExploreMargin: an exploration (see Gate.explore) runs only where
	// the depth's value at the lower bound of its cost is this many times
	// the best estimated value (and 1): it then pays even if the deep
	// verify costs 1.5 times the deepest one measured. Under streaming a
	// failed exploration is dear: at replay 0.6 the 9-row verifies cost
	// 6.7 plain steps for 2.5 tokens, and exploring wherever the bound
	// merely beat the best (E(8) 2.57 against T(2)/T(1) 2.45) ran the
	// gate at 0.92× plain (BenchmarkSpeculation streamed, 64 tokens a
	// request; 0.70–0.95 in the rounds it explored).
	ExploreMargin = 1.5
	// ProbeLoss: probes are spaced so that their expected cost, priced by
	// the gate's own estimates, is at most 1 % of the time decoding takes.
	// Every 16 picks, a probe run cost more than the gate could win by
	// it where drafting loses: BenchmarkSpeculation streamed at replay 0.6
	// (T(2)/T(1) ≈ 1.9, acceptance 0.6, value 0.84) ran at 0.94× plain,
	// its control engine at 1.01×; a probe run's 2 verifies there cost
	// ~0.6 plain steps more than the tokens they gave, and its first,
	// after plain steps, more again.
	ProbeLoss = 0.01
	// ProbeRun: a probe drafts one deeper for this many picks in a row,
	// and its first forward is no sample (a change of depth, see
	// Forward): the step to a deeper verify
	// pays for rows whose experts the last steps did not bring close, the
	// next ones much less. Streaming the benchmark's model (replay 0.9,
	// 2 drafts a verify, runs of 4 at 3 every 16th pick), the runs'
	// 4-row verifies took 17.5, 10.3, 12.8 and 14.6 ms (medians) against
	// 9.7 for the 3-row ones; in RAM (15 rounds), the gate priced
	// T(6)/T(1) from lone probes at 3.31 where depth 5 drafted
	// continuously implied 3.05, drafted 4 deep and ran at 1.44× plain
	// against depth 5's 1.54×.
	ProbeRun = 2
	// RunPlain: an exploration's probe run (Gate.explore) is followed by
	// this many plain steps (the first charged to the run's last verify,
	// the second its T(1) reference, PairWindow), so that the run is a
	// sample. While the gate drafts on, a deep verify has no plain step
	// within PairWindow rows and is no sample: BenchmarkSpeculation
	// streamed (replay 0.9, 64 tokens a request), in the last round none
	// of the gate's 12 9-row verifies, all explorations, was a sample, so
	// it explored every 4th pick without end. Not after every young
	// probe run: in RAM (replay 0.9), where the gate drafts 4–5 deep at
	// 1.6× plain, the forced steps of the young runs of its first rounds
	// cost it 1.46× against depth 5's 1.56 (1.60 against 1.61 without).
	RunPlain = 2
	// A probe whose expected value is under ProbeHopeless plain steps
	// runs only every ProbeEveryHopeless picks: with a replay drafter at
	// a = 0.1 and T(2)/T(1) ≈ 2.5 (the synthetic qwen3moe in RAM, where
	// each row brings its own experts) probes every 16 picks cost ~9 % of
	// decode speed, more than they can teach.
	ProbeHopeless      = 0.5
	ProbeEveryHopeless = 64
	// ProbeEveryMax: where the gate decodes plainly, a probe run is
	// priced by what the recent ones lost (ProbeCost), and spaced up to
	// 256 picks apart to keep that at ProbeLoss. Its own estimate, from
	// T(n) measured on a run's second verify, misses what the first costs:
	// BenchmarkSpeculation streamed, replay 0.6, 64 tokens a request,
	// traced (7 December): the 2-row runs, due every request, took 44–82
	// ms a verify with a rejected draft, 18–27 with an accepted one,
	// where plain steps took 14–20; a run lost 27–92 ms, ~4 % of a
	// request, against the 1 % the estimate allowed.
	ProbeEveryMax = 256
	// ProbeCost: the loss of the last probe runs from plain decoding (an
	// EMA over this many): their forwards' time, and the plain step's
	// after them, in plain steps of T(1), less the tokens they gave.
	ProbeCost = 4
	// ForcePlainAfter: after 64 drafted steps without a T(1) sample,
	// plain steps are forced until one is measured (two: the first, right
	// after a verify, is charged to it) so that T(1), the unit of every
	// cost, stays measured, and the verifies just before them are
	// samples (PairWindow). Not while the forwards after a prompt settle
	// (Settle): they are no samples, and drafted steps among them do not
	// count.
	ForcePlainAfter = 64
	// ForcePlainYoung: while T(1) has fewer than TimeWindow samples, the
	// plain steps are forced after 16 drafted steps. A T(1) measured on a
	// load's first, cold steps is stale once drafting takes over:
	// BenchmarkSpeculation under streaming (replay 0.9, 64 tokens a
	// request, ~14 verifies each) kept a T(1) of 12.1 ms from its warm-up
	// while plain decoding ran at 6.5 ms a token, so 8-row verifies
	// looked like 2.3 plain steps, it drafted 7 deep at acceptance 0.5
	// and ran at 1.18× plain where depth 5 ran at 1.62×.
	ForcePlainYoung = 16
	// Settle: after forwards the gate did not time (a request's prompt),
	// the next Settle forwards are no samples. A new request's prompt and
	// text bring other experts into the cache (also when the prompt was
	// reused: the previous request ended elsewhere): streaming the
	// benchmark's 4-layer Qwen3-30B-A3B-shaped Q4_K_M through a cache of a
	// fifth of its experts, the first four plain steps of a request took
	// 14–21, 15–23, 6–7 and 7–9 ms where the later ones took 3.6–4.5.
	// BenchmarkSpeculation's gate took those as T(1) (10–12 ms against
	// the plain runs' 4.9 ms a token), so every verify looked cheap
	// (T(2)/T(1) 0.7): it drafted 7–8 deep where depth 5 was faster, and
	// at replay 0.6, 0.3 and 0.1, where every depth loses, it ran at
	// 0.91, 0.90 and 0.94× plain; with Settle, 0.97–1.00 (control
	// 0.97–1.03).
	Settle = 4
	// SettleSamples: under streaming, a request's first forwards read the
	// new text's experts whatever their rows, so a deeper verify adds
	// little to them. Where the gate drafts (its best depth kept up is
	// not plain) they are priced T(n) + X in plain steps of T(1) + X, X
	// the time the same forward of earlier requests (the first after the
	// prompt, the second …) took over T(n) of its rows, a running mean,
	// then an EMA over TimeWindow, once SettleSamples were measured; no
	// probe runs among them. BenchmarkSpeculation streamed, replay 0.9,
	// 64 tokens a request, traced (8 requests each, 7 December): depth
	// 5's first three verifies took 232, 115 and 85 ms (6 rows, 78 kept
	// up), the gate's at depth 2, where it drafted between requests, 168,
	// 102 and 85 (3 rows, 45 kept up): 432 ms for ~14 tokens against 355
	// for ~8, a quarter of a request's time; the gate ran at 1.35× plain,
	// depth 5 at 1.52×. Not from plain to drafting: at replay 0.6, where
	// the gate decodes plainly, first forwards priced so drafted 1–4 deep
	// and the gate ran at 0.92× plain (its control 1.02×): a rejected
	// row's experts, read for nothing, displace the text's. Not the first
	// forward after the prompt: its time grows with its rows, ~27 ms a
	// row against ~9 kept up (three traces of replay 0.9 streamed, 72
	// first forwards: 174, 195, 254 and 332 ms for 3, 4, 6 and 9 rows),
	// where the second's and third's did not (102–127 and 81–120 ms from
	// 3 to 7 rows); priced T(n) + X, the gate's first forwards were 8–9
	// rows deep at replay 0.9 (69.6 ms a token against depth 5's 59.7),
	// and at replay 0.6, where it drafted 1 deep at a request's end, 5
	// rows at the next one's start: 128–153 ms for 1–2 tokens, where a
	// plain step took ~50 (traced, 7 December).
	SettleSamples = 2
	// ProbeWait: no probe run or exploration starts among a request's
	// first 10 forwards (a due one waits for the 11th). Under streaming
	// the new text's experts are still coming in after the Settle
	// forwards: BenchmarkSpeculation streamed, replay 0.6, 64 tokens a
	// request, traced (12 requests, 7 December), plain decoding's
	// forwards took 49, 51, 53, 34, 41, 29, 28, 24 and 27 ms, then
	// 14–21 from the 10th on. The gate's probe, due from the picks of
	// the request before, ran at the 5th and 6th forwards in 10 of the
	// 12 requests: 44–75 ms each, where plain steps there took ~27.
	ProbeWait = 10
	// PairWindow and PairRefs: T(n)/T(1) is measured from forwards close
	// in the text: an n-row forward is a sample of it against the mean of
	// the 3 plain steps (T(1) samples) nearest to it, before or after, of
	// those within 8 rows of forwards (a verify of n rows counts n: it
	// moves the text on by up to n tokens); one with none that near is no
	// sample. Under SSD streaming a forward's
	// time follows the text's phase: BenchmarkSpeculation streamed with
	// 256 tokens a request, plain steps took 2.5–4 ms while the text
	// repeated itself (its experts in the cache) and 15–20 ms where it
	// did not, 7.8 ms a token on average. T(1) and T(n) averaged
	// separately came from different phases (T(1) 14–15 ms, read at the
	// plain steps of slow phases; verifies drafted in the fast ones): the
	// gate priced T(3)/T(1) at 1.66 where depth 2 paid 2.76 (its 1.96
	// tokens a verify at 0.71× plain), drafted at acceptance 0.6 and ran
	// replay 0.6 at 0.79× plain, lookup at 0.91×, where plain was best.
	// Near in the text the phase holds: against plain decoding at the
	// same positions, continuous depth 1, 2, 3 and 5 paid 1.77, 2.36,
	// 2.94 and 4.38 a verify, within 1.5–1.9, 1.8–2.6, 2.5–3.5, 3.1–5.9
	// over the phases. Counted in forwards, not rows, the window let a
	// 4-row verify of a slow phase (21.8 ms) pair with plain steps 21
	// tokens on, in a fast one (3.4 ms): T(4)/T(1) read 6.4.
	PairWindow = 8
	PairRefs   = 3
	// StallWindow: under SSD streaming a forward's time is its compute
	// plus the time it waited for experts to be read (ForwardStalled).
	// The compute of n rows against one is a property of the machine
	// and is measured as above; the stall follows the text (new text
	// misses the cache, repeated text hits it) and is paid per row: a
	// verify's rows bring their own experts, accepted or not. So a row
	// is charged the stall per row of the last StallWindow forwards where
	// drafts were offered, the phase in which the gate decides, and
	// T(n) = compute(n) + n·stall, T(1) = compute(1) + stall (n-row
	// verifies that stalled more are charged what they stalled: charge).
	// BenchmarkSpeculation streamed, flat T0.8, 256 tokens a request:
	// with each forward's whole time paired with the plain steps near
	// it, those were mostly steps where prompt lookup had nothing (new
	// text: 24 ms, where the plain engine's steps with drafts took 11.7),
	// the gate priced T(6)/T(1) at 1.25 where depth 5 paid 4.45, drafted
	// 5 deep and ran at 0.89–0.91× plain (three runs); with the stall
	// charged per row, 1.09 and 0.92, and with charge 1.09 (replay 0.6:
	// 0.99, where without charge 0.90 and 0.92), its T(1) within 20 % of
	// the plain runs' time per token at 64 tokens a request (21–25 ms
	// before, against 8.3–11.4).
	StallWindow = 8
	// IOSlopeMin..IOSlopeMax, IOWindow and IOSpread: a stall costs more
	// than itself: the forward computes while other reads are in flight,
	// and on a 2-core laptop the readers' work takes from the compute.
	// BenchmarkSpeculation streamed (lookup, 64 tokens a request, traced):
	// the plain engine's steps took 8.3 ms where lookup had drafts (1.6
	// of stall) and 20.0 where it had none (11.0 of stall), so their
	// time less the stall was 6.7 and 9.0 ms: a plain step's time grew
	// by 1.22 s per second of stall (least squares over 1,701 steps:
	// 6.3 ms + 1.22·stall). So the compute of a forward is its time less
	// slope·stall, the slope fitted over the last 32 plain steps (once 8
	// were measured and their stalls spread by at least 0.5 ms; before,
	// 1), and a row is charged slope·stall.
	IOSlopeMin = 1
	IOSlopeMax = 2
	IOWindow   = 32
	IOSpread   = 0.0005
	// RhoStart and RhoMax bound the fitted marginal cost of one more row
	// (in T(1) units). 0.5 is between what a dense CPU forward costs per
	// extra row (weights are read once: ~0.05–0.2) and what an MoE forward
	// under SSD streaming costs (each row brings its own experts: ~0.6
	// in the reference engine, colibri's 81 → 76 % hit rate with 2
	// drafts); 4 caps a pathological measurement.
	RhoStart = 0.5
	RhoMax   = 4
	// MaxRows is the largest verify batch (model.InvariantRows): rows of
	// a batch of at most 16 get bit-identical logits to a one-row step.
	MaxRows = 16
)

// Source describes a drafter to the gate: a name (the key of its
// statistics) and its prior acceptance by position (a deeper position's
// prior is the estimate of the position before it).
type Source struct {
	Name   string
	Priors []float64
}

// Sources the engine knows, with the priors of issue 18 (MTP: colibri
// measured 97 %, 83 %, 66 % on Qwen3.8 Flash Next and llama.cpp 86 % at 3
// drafts, so 0.8, 0.6, 0.5 is a cautious start; prompt lookup: 84–85 % on
// code edits, near 0 on free chat, so 0.5).
var (
	MTP    = Source{Name: "mtp", Priors: []float64{0.8, 0.6, 0.5}}
	Lookup = Source{Name: "lookup", Priors: []float64{0.5}}
)

// prior returns the prior of position j, and false past the positions
// the source lists (their prior is the estimate of the position before).
func (s Source) prior(j int) (float64, bool) {
	if len(s.Priors) == 0 {
		return 0.5, j == 0
	}
	return s.Priors[min(j, len(s.Priors)-1)], j < len(s.Priors)
}

// Config sets the user's knobs. The zero value drafts nothing (MaxDraft 0).
type Config struct {
	// MaxDraft is the most drafts per verify (capped at MaxRows−1).
	MaxDraft int
	// Fixed turns the gate off: every step with drafts drafts
	// min(MaxDraft, available) of them, whatever they cost.
	Fixed bool
	// MinProb stops a draft at the first position whose estimated
	// acceptance a_j is below it.
	MinProb float64
}

// mean is a running mean for its first n samples, then an EMA with
// weight 1/n.
type mean struct {
	v     float64
	count float64
}

func (m *mean) add(x float64, window float64) {
	m.count++
	if m.count <= window {
		m.v += (x - m.v) / m.count
	} else {
		m.v += (x - m.v) / window
	}
}

// position is one draft position's measurements for one source (no
// prior in them: see source.accProb).
type position struct {
	acc  mean // accepted (1) or not (0)
	prob mean // the drafter's own probability of the same verifies
}

// blend is m's value with PriorWeight samples of prior.
func blend(m mean, prior float64) float64 {
	return (m.count*m.v + PriorWeight*prior) / (m.count + PriorWeight)
}

// stamped is a raw T(1) sample and when it was taken (Gate.seq).
type stamped struct {
	seq int
	x   float64
}

// pending is a multi-row forward's time waiting to be paired with the
// plain steps around it; next is the plain step right after it, when
// there was one (carried).
type pending struct {
	n, seq  int
	x, next float64
	carried bool
}

type source struct {
	src Source
	pos []position
}

func (s *source) at(j int) *position {
	for len(s.pos) <= j {
		s.pos = append(s.pos, position{})
	}
	return &s.pos[j]
}

// accProb returns position j's acceptance and mean drafter probability,
// each blended with its prior: the source's, or position j−1's values
// where the source lists none.
func (s *source) accProb(j int) (acc, prob float64) {
	for i := 0; i <= j; i++ {
		p := s.at(i)
		if pr, ok := s.src.prior(i); ok {
			acc, prob = pr, pr
		}
		acc, prob = blend(p.acc, acc), blend(p.prob, prob)
	}
	return acc, prob
}

// Gate is SpecGate's state for one model. Not safe for concurrent use;
// the zero value is not usable: call New.
type Gate struct {
	cfg      Config
	seen     [MaxRows + 1]int // forwards per row count, warm-up included
	held     float64          // a multi-row forward's seconds, waiting for the next forward (Carry)
	heldRows int
	heldSeq  int
	seq      int                     // rows forwarded so far (the clock of PairWindow)
	ones     [2 * PairWindow]stamped // the last raw T(1) samples
	nOnes    int
	pend     []pending // multi-row samples waiting for their T(1) reference
	after    bool      // the last forward had several rows
	prev     int       // the last forward's rows
	streamed bool      // a forward stalled for expert reads (SSD streaming)
	sources  map[string]*source
	t        [MaxRows + 1]mean // T(1) in t[1], seconds; for n ≥ 2, n-row seconds (num) …
	ref      [MaxRows + 1]mean // … and their T(1) references (den): T(n)/T(1) = t[n].v/ref[n].v
	recent   [MaxRows + 1]ring // T(1)'s last raw samples, T(n)/T(1)'s for n ≥ 2, for the clip
	draft    map[string]*mean  // d per source: drafting seconds per draft token

	settle int // forwards left that are no samples (Unseen)
	wait   int // forwards left before a probe may start (ProbeWait)
	// A probe run from plain decoding being measured (ProbeEveryMax):
	// its forwards' seconds and its tokens so far, until the plain step
	// after it.
	prun      bool
	prunT     float64
	prunTok   int
	prunLoss  mean           // plain steps the recent runs lost (ProbeCost)
	since     int            // picks with drafts available since the last probe
	run       int            // the depth of the probe run in progress
	runLeft   int            // its picks left
	drafted   int            // drafted steps since the last T(1) sample
	xsince    int            // Budget calls that found a depth to explore since the last exploration
	xdue      bool           // an exploration is due: the next Pick runs it
	plainLeft int            // plain steps forced after an exploration (RunPlain)
	exploring bool           // the probe run in progress is an exploration
	asks      map[string]int // Budget calls per source that found drafting hopeless

	// The recent forwards' expert-read stall (StallWindow): [0] all of
	// them, [1] those where a drafter offered drafts (Pick was given
	// some), which price the rows.
	stalls  [2]stallRing
	offered bool   // Pick was given drafts since the last forward
	ones1   ioRing // plain steps' stalls and times (ioSlope)
	// stallN[n], n ≥ 2: the stall of n-row forwards, seconds (charge).
	stallN [MaxRows + 1]mean
	// settleX[i]: under streaming, the i-th forward after a prompt's
	// time over T(n) of its n rows, seconds (SettleSamples).
	settleX [Settle]mean
	// late: the stalls of the forwards after a prompt (Settle), which
	// enter the stall rings once those are over: the settling forwards
	// are priced, and their X measured, with the stall per row of the
	// text kept up before them; the forwards after them with theirs.
	// With every settling forward's stall in the rings at once, a
	// shallow first forward's (114 ms for 3 rows under streaming) made
	// the next ones' rows look dear and X small (a model of it:
	// TestSettleDeep); left out of the rings altogether, the forwards
	// after them looked cheap, where the text is still coming in:
	// BenchmarkSpeculation streamed, replay 0.6, the gate at 0.92–0.93
	// of plain decoding (7 December, docs/speculation.md).
	late []lateStall
}

// lateStall is a settling forward's rows and stall, and whether drafts
// were offered for it.
type lateStall struct {
	n       int
	s       float64
	offered bool
}

// addStall adds a forward's stall to the stall rings.
func (g *Gate) addStall(n int, s float64, offered bool) {
	g.stalls[0].add(n, s)
	if offered {
		g.stalls[1].add(n, s)
	}
}

// flushLate adds the settling forwards' stalls to the rings.
func (g *Gate) flushLate() {
	for _, l := range g.late {
		g.addStall(l.n, l.s, l.offered)
	}
	g.late = g.late[:0]
}

// ioRing holds the last IOWindow plain steps' stalls and wall times,
// seconds.
type ioRing struct {
	stall, t [IOWindow]float64
	n        int
}

func (r *ioRing) add(stall, t float64) {
	r.stall[r.n%IOWindow], r.t[r.n%IOWindow] = stall, t
	r.n++
}

// stallRing holds the rows and stall seconds of the last StallWindow
// forwards.
type stallRing struct {
	rows [StallWindow]int
	s    [StallWindow]float64
	n    int
}

func (r *stallRing) add(rows int, s float64) {
	r.rows[r.n%StallWindow], r.s[r.n%StallWindow] = rows, s
	r.n++
}

// perRow is the stall per row of the forwards held, and whether there
// are any.
func (r *stallRing) perRow() (float64, bool) {
	var rows int
	var s float64
	for i := range min(r.n, StallWindow) {
		rows += r.rows[i]
		s += r.s[i]
	}
	if rows == 0 {
		return 0, false
	}
	return s / float64(rows), true
}

// New returns a gate with no measurements.
func New(cfg Config) *Gate {
	g := &Gate{sources: map[string]*source{}, draft: map[string]*mean{}, asks: map[string]int{}}
	g.SetConfig(cfg)
	return g
}

// SetConfig changes the knobs, keeping what was measured.
func (g *Gate) SetConfig(cfg Config) {
	cfg.MaxDraft = max(0, min(cfg.MaxDraft, MaxRows-1))
	g.cfg = cfg
}

// Config returns the knobs in use.
func (g *Gate) Config() Config { return g.cfg }

func (g *Gate) source(s Source) *source {
	x := g.sources[s.Name]
	if x == nil {
		x = &source{src: s}
		g.sources[s.Name] = x
	}
	return x
}

// Forward records the wall time of an n-row forward (n ≥ 1).
//
// A plain step right after a verify is charged to the verify: its excess
// over the T(1) of the plain steps near the verify (positive or
// negative, PairWindow) is added to the verify's time, and it is not a
// T(1) sample. On an MoE a row's cost is mostly bringing its
// experts close, and that cost moves between steps: in RAM an isolated
// 2-row probe measured 2.5–4.8 T(1) while continuous 1-draft decoding
// implied ≈ 1.3 (the next steps found the experts in the CPU caches);
// under streaming a rejected row's experts evict others the next step
// reads again. A plain step after a verify that was not held (a warm-up,
// a settling forward or a change of depth) is no T(1) sample either.
//
// A verify is a sample of T(n) only right after a forward of the same
// rows, as in decoding at that depth; after a plain step or a verify of
// other rows it is none. What a verify costs depends on the one before
// it: a deep verify brings close the experts of the tokens the next
// verify checks (the drafts after a rejected one are mostly those
// tokens again), so a shallow verify right after it is cheap, and the
// next deep one after shallow ones is dear. BenchmarkSpeculation
// streamed (replay 0.9), where the gate moved between 1 and 5–7 drafts,
// priced T(2)/T(1) at 1.27 where depth 1 drafted continuously paid ~1.6.
// With only same-depth samples, over 12 rounds: streamed lookup and flat
// 1.65 and 1.46× plain (depth 5: 1.62 and 1.45), replay 0.9 1.22
// (depth 5 1.33; 1.13–1.27 against 1.40–1.45 in the runs before); in
// memory lookup, replay 0.9 and flat 1.87, 1.58 and 1.28 (best fixed
// depth 1.86, 1.61, 1.27).
//
// A verify right after a verify is not charged to it. Under streaming a
// probe one draft deeper cost more than the verifies around it
// (BenchmarkSpeculation's streamed model, replay 0.9, 5 drafts a verify
// and 6 every 8th: the 7-row probes took 23 ms, median, against 15.8),
// so charging the next verify's saving to the probe looked right; but
// measured side by side (two runs each of lookup, replay 0.9 and flat,
// 5 rounds of 64 tokens), the gate reached 0.82–1.01 of the best fixed
// depth with that charge and 0.88–1.01 without.
func (g *Gate) Forward(n int, d time.Duration) { g.ForwardStalled(n, d, 0) }

// ForwardStalled is Forward for a forward that spent stall of its wall
// time d waiting for expert weights to be read (SSD streaming; clamped
// to 0..d). The stall is priced apart from the compute (see StallWindow):
// T(n)/T(1) is measured from the compute, d less what the stall cost
// (IOSlopeMin), and every row is charged the stall per row of the recent
// forwards where the drafters offered drafts (charge).
func (g *Gate) ForwardStalled(n int, d, stall time.Duration) {
	if n < 1 || n > MaxRows || d <= 0 {
		return
	}
	stall = max(0, min(stall, d))
	if g.prun {
		g.prunT += d.Seconds()
		if n == 1 { // the plain step after the run: it pays for the run's rows too
			g.prun = false
			if u := g.unit(); u > 0 {
				g.prunLoss.add(g.prunT/u-float64(g.prunTok+1), ProbeCost)
			}
		}
	}
	if g.settle > 0 { // the stall rings take it once the settling forwards are over
		g.late = append(g.late, lateStall{n, stall.Seconds(), g.offered})
	} else {
		g.addStall(n, stall.Seconds(), g.offered)
	}
	g.offered = false
	if n == 1 && g.seen[1] >= Warmup && stall > 0 {
		g.ones1.add(stall.Seconds(), d.Seconds())
	}
	// The compute: d less what the stall cost (ioSlope), at least half
	// of d less the stall itself.
	io := time.Duration(g.ioSlope() * float64(stall))
	wall := d
	d = max(d-io, (d-stall)/2, time.Nanosecond)
	after, prev := g.after, g.prev
	g.after, g.prev = n > 1, n
	g.wait = max(0, g.wait-1)
	g.streamed = g.streamed || stall > 0
	g.seq += n // the text moves on by up to n tokens
	if n == 1 && g.plainLeft > 0 {
		g.plainLeft--
	}
	defer g.pair(false)
	if g.seen[n]++; g.seen[n] <= Warmup {
		g.flush() // a held verify is recorded as it was: this forward's time says nothing of it
		return
	}
	if g.settle > 0 {
		if t, _ := g.T(n); g.streamed && t > 0 {
			g.settleX[Settle-g.settle].add(wall.Seconds()-t, TimeWindow)
		}
		if g.settle--; g.settle == 0 {
			g.flushLate()
		}
		return
	}
	x := d.Seconds()
	if n > 1 && prev != n { // a change of depth (a probe run's first forward among them)
		g.flush()
		return
	}
	if n > 1 {
		// Its stall is a sample for charge where its time is one for
		// T(n): not while the forwards after a prompt settle, nor at a
		// change of depth (they read what the text before them did not
		// bring).
		g.stallN[n].add(stall.Seconds(), TimeWindow)
		// Held until the next forward: a plain step right after a verify
		// pays or saves for the verify's experts.
		g.flush()
		g.held, g.heldRows, g.heldSeq = x, n, g.seq
		return
	}
	if g.heldRows > 0 {
		g.pend = append(g.pend, pending{n: g.heldRows, seq: g.heldSeq, x: g.held, next: x, carried: true})
		g.heldRows = 0
		return
	}
	if !after { // a plain step after a verify is none: it pays for that verify
		g.record(x)
	}
}

// Unseen says the session ran forwards the gate did not time (a prompt):
// the next Settle forwards are not measured, whatever their rows, since
// they pay for bringing back what those forwards displaced.
func (g *Gate) Unseen() {
	g.flushLate()
	g.settle, g.wait, g.after, g.prun = Settle, ProbeWait, false, false
	// A probe run, or the plain steps that pair an exploration's, ends
	// with its request: nothing after a prompt pairs with it.
	g.runLeft, g.plainLeft, g.exploring = 0, 0, false
	g.flush()
	g.pair(true)
	g.seq += 2*PairWindow + 1 // another request's text: no pairs across it
}

// flush queues the held multi-row forward, with no plain step after it.
func (g *Gate) flush() {
	if g.heldRows > 0 {
		g.pend = append(g.pend, pending{n: g.heldRows, seq: g.heldSeq, x: g.held})
		g.heldRows = 0
	}
}

// pair records the multi-row forwards whose window has closed (all when
// force) as samples of T(n)/T(1): each against the mean of the PairRefs
// raw T(1) samples nearest to it, of those within PairWindow forwards,
// before or after; one with none is dropped. A carried plain step adds its excess over that
// reference.
func (g *Gate) pair(force bool) {
	kept := g.pend[:0]
	for _, p := range g.pend {
		if !force && g.seq < p.seq+PairWindow {
			kept = append(kept, p)
			continue
		}
		ref, ok := g.near(p.seq)
		if !ok {
			continue
		}
		x := p.x
		if p.carried {
			x += p.next - ref
		}
		g.recordRatio(p.n, max(x, 0)/ref, ref)
	}
	if len(kept) > 4*PairWindow { // a long run with no plain step: the oldest can no longer pair
		kept = append(kept[:0], kept[len(kept)-4*PairWindow:]...)
	}
	g.pend = kept
}

// near returns the mean of the PairRefs raw T(1) samples nearest to
// forward seq, of those within PairWindow forwards of it.
func (g *Gate) near(seq int) (float64, bool) {
	var best [PairRefs]stamped // nearest first
	k := 0
	dist := func(o stamped) int { return max(o.seq-seq, seq-o.seq) }
	for i := range min(g.nOnes, len(g.ones)) {
		o := g.ones[i]
		if dist(o) > PairWindow {
			continue
		}
		j := min(k, PairRefs-1) // insert o in order, dropping the farthest
		if k == PairRefs && dist(o) >= dist(best[j]) {
			continue
		}
		for j > 0 && dist(best[j-1]) > dist(o) {
			best[j] = best[j-1]
			j--
		}
		best[j] = o
		k = min(k+1, PairRefs)
	}
	if k == 0 {
		return 0, false
	}
	sum := 0.0
	for _, o := range best[:k] {
		sum += o.x
	}
	return sum / float64(k), true
}

// clip returns x clipped against r's last samples (see Clip), adding the
// raw x to them; fence widens the bounds to Tukey's far-out fence.
func (r *ring) clip(x float64, fence bool) float64 {
	if r.n < ClipAfter {
		r.add(x)
		return x
	}
	q1, m, q3 := r.quartiles()
	r.add(x)
	lo, hi := m/Clip, m*Clip
	if fence {
		lo, hi = min(lo, q1-Fence*(q3-q1)), max(hi, q3+Fence*(q3-q1))
	}
	return max(lo, min(hi, x))
}

// recordRatio adds a sample q of T(n)/T(1) whose T(1) reference was ref
// seconds: T(n)/T(1) is the ratio of the n-row seconds' average to their
// references' (each q·ref, clipped), so samples of slow phases weigh as
// much as the time they took.
func (g *Gate) recordRatio(n int, q, ref float64) {
	q = g.recent[n].clip(q, true)
	g.t[n].add(q*ref, TimeWindow)
	g.ref[n].add(ref, TimeWindow)
}

// record adds a sample of T(1), x seconds.
func (g *Gate) record(x float64) {
	g.ones[g.nOnes%len(g.ones)] = stamped{seq: g.seq, x: x}
	g.nOnes++
	x = g.recent[1].clip(x, false)
	g.t[1].add(x, TimeWindow)
	// T(1) is measured again: the forced plain steps are over. (A
	// plain step right after a verify is charged to the verify and is
	// no sample, so when every step drafts it takes two plain steps.
	// Resetting on that first one meant T(1) was never measured again
	// while drafts kept coming, and every cost was priced in a T(1)
	// from the load's first steps. BenchmarkSpeculation, replay 0.3,
	// in RAM: 100 verifies in 128 steps at acceptance 0.25 and 0.90×
	// plain before; 40 verifies and 0.94× after, the gate's T(1)
	// within 7 % of the plain runs' time per token in every regime.)
	g.drafted = 0
}

// Drafted records that src took d to draft n tokens.
func (g *Gate) Drafted(src Source, n int, d time.Duration) {
	if n <= 0 || d < 0 {
		return
	}
	m := g.draft[src.Name]
	if m == nil {
		m = &mean{}
		g.draft[src.Name] = m
	}
	m.add(d.Seconds()/float64(n), TimeWindow)
}

// Verified records a verify of k drafts of src with the drafter's own
// probabilities probs (nil, shorter than k or NaN: unknown) of which the first
// accepted were accepted. Only positions that were actually decided are
// counted: 1..accepted as accepted, accepted+1 as rejected (if ≤ k).
// A first draft the gate declined is reported too, as a verify of one
// draft decided by the token the plain step then gave (the engine does
// this): acceptance stays measured while the gate decodes plainly, where
// before a dip in its average could keep the gate plain until the next
// probe (BenchmarkSpeculation in RAM, replay 0.6, a_1 measured 0.40:
// 105 plain steps of 121 where depth 2 ran at 1.15× plain).
func (g *Gate) Verified(src Source, probs []float64, k, accepted int) {
	s := g.source(src)
	if g.prun && k > 0 {
		g.prunTok += min(accepted, k) + 1
	}
	for j := 0; j < k && j <= accepted; j++ {
		x := 0.0
		if j < accepted {
			x = 1
		}
		p := s.at(j)
		p.acc.add(x, AcceptWindow)
		if j < len(probs) && !math.IsNaN(probs[j]) {
			p.prob.add(clamp01(probs[j]), AcceptWindow)
		}
	}
}

// Acceptance returns src's measured acceptance a_j for positions
// 0..n−1 (priors where nothing was measured).
func (g *Gate) Acceptance(src Source, n int) []float64 {
	s := g.source(src)
	out := make([]float64, n)
	for j := range out {
		out[j], _ = s.accProb(j)
	}
	return out
}

// estimate is a_j for this step: the drafter's probability calibrated by
// measured acceptance when it gave one, else the measured acceptance.
func (s *source) estimate(j int, probs []float64) float64 {
	acc, prob := s.accProb(j)
	if j >= len(probs) || math.IsNaN(probs[j]) {
		return acc
	}
	c := 1.0
	if prob > 0 {
		c = acc / prob
	}
	return clamp01(c * clamp01(probs[j]))
}

// T returns the estimated wall time of an n-row forward, in seconds (0
// while T(1) is unmeasured), and whether it was measured. The estimate
// never falls as n grows (a forward of more rows is not faster; an
// average that does is noise, and it made deeper drafts look free): the
// measured T(n) are fitted by a non-decreasing curve (weighted isotonic
// regression, each n weighing its samples up to TimeWindow, none below
// T(1)), so a noisy high T(m) is pooled with the cheaper larger n
// measured after it rather than raising them all. (The running maximum
// used before did that: BenchmarkSpeculation streamed, replay 0.9, read
// T(3)/T(1) 3.01 from a few samples and priced T(4) and T(5) at 3.09 and
// 3.34, so the gate drafted 4 deep where 5 was faster.) An n not
// measured is priced on the straight line between the measured m
// nearest below and above it, or, above the largest measured m, from it:
// T(m) + (n−m)·ρ·T(1), so a cost curve that flattens (under streaming,
// rows share experts) is continued from its end, not from T(1).
func (g *Gate) T(n int) (float64, bool) {
	if n < 1 || n > MaxRows {
		return 0, false
	}
	if g.t[1].count == 0 { // nothing to price from
		return 0, false
	}
	fit := g.fit()
	return price(&fit, n, g.t[1].v, g.Rho()) + g.charge(n), fit[n] > 0
}

// charge is what an n-row forward is charged for expert reads, seconds:
// n times StallPerRow, or, if more, ioSlope times the measured stall of
// the forwards of m ≤ n rows (a verify's rows are not all of the text:
// a rejected draft's row brings experts the text does not use, and they
// miss the cache).
//
// The stall of n-row forwards is averaged over the verifies that are
// samples of T(n) (ForwardStalled): not a request's settling forwards,
// where the new text misses the cache at any depth, nor the first verify
// after a change of depth. Averaged over every verify,
// BenchmarkSpeculation streamed (replay 0.9, 64 tokens a request) read
// T(4)/T(1) at 3.01 and the gate drafted 2 deep in 19 of the last
// round's 22 verifies (1.35× plain, depth 5 1.51×); with these samples
// only, in the same hour, 2.22 and 3 deep in 14 of 17 (1.36×, depth 5
// 1.47×). Rows deeper than the gate drafts are still priced from its
// probes, whose verifies follow shallower ones: 43 and 55 ms of stall
// for 5 and 6 rows where continuous depth 5's 6-row verifies stalled
// ~26 (4.3 ms a row), so under streaming the gate drafts shallower than
// the best fixed depth.
//
// A row count with fewer than ProbeSamples such verifies is young: its
// stall enters shrunk towards its rows times StallPerRow, as if that
// were worth ProbeSamples verifies (as its T(n) enters the fit). Under
// streaming one verify's stall says little: the text's misses come in
// bursts, and single verifies of the same rows stalled 0 to 75 ms.
// BenchmarkSpeculation streamed, replay 0.9, 64 tokens a request,
// traced (7 December): one 6-row probe stalled 58 ms, against 24 for
// depth 5's 6-row verifies on average; taken as it was, it priced every
// verify of 6 rows or more at 58–85 ms of stall (StallPerRow 4.3 ms,
// 26 for 6 rows) for the rest of the run, the gate drafted 2–4 deep
// where depth 5 was best and ran at 0.93 of its speed. (Side by side
// with and without the shrink, 0.91–0.95 of depth 5 either way: the
// benchmark resolves no gain; docs/speculation.md.)
func (g *Gate) charge(n int) float64 {
	row := g.StallPerRow().Seconds()
	c := float64(n) * row
	if n < 2 {
		return c
	}
	k := g.ioSlope()
	for m := 2; m <= n; m++ {
		s := &g.stallN[m]
		if s.count == 0 {
			continue
		}
		x := k * s.v
		if s.count < ProbeSamples {
			x = young(x, s.count, float64(m)*row)
		}
		c = max(c, x)
	}
	return c
}

// ioSlope is what a plain step's time grows by per second of stall:
// the least-squares slope of the last IOWindow plain steps' times over
// their stalls, clamped to IOSlopeMin..IOSlopeMax; IOSlopeMin while
// fewer than IOWindow/4 were measured or their stalls hardly differ.
func (g *Gate) ioSlope() float64 {
	r := &g.ones1
	k := min(r.n, IOWindow)
	if k < IOWindow/4 {
		return IOSlopeMin
	}
	var mx, my float64
	for i := range k {
		mx += r.stall[i]
		my += r.t[i]
	}
	mx, my = mx/float64(k), my/float64(k)
	var sxx, sxy float64
	for i := range k {
		sxx += (r.stall[i] - mx) * (r.stall[i] - mx)
		sxy += (r.stall[i] - mx) * (r.t[i] - my)
	}
	if sxx/float64(k) < IOSpread*IOSpread {
		return IOSlopeMin
	}
	return max(IOSlopeMin, min(IOSlopeMax, sxy/sxx))
}

// StallPerRow is what a row is charged for expert reads: the stall per
// row of the last StallWindow forwards where drafts were offered (or of
// the last forwards of any kind before there were such), times what a
// plain step's time grows by per second of stall (see IOSlopeMin).
func (g *Gate) StallPerRow() time.Duration {
	x, ok := g.stalls[1].perRow()
	if !ok {
		x, _ = g.stalls[0].perRow()
	}
	return time.Duration(g.ioSlope() * x * float64(time.Second))
}

// unit is T(1) with its stall, in seconds: the plain step every cost is
// counted in (0 while T(1) is unmeasured).
func (g *Gate) unit() float64 {
	if g.t[1].count == 0 || g.t[1].v <= 0 {
		return 0
	}
	return g.t[1].v + g.StallPerRow().Seconds()
}

// price is T(n) from fitted times fit (fit[1] = T(1); 0: not measured):
// fit[n] where measured, else on the straight line between the measured
// m nearest below and above n, or, above the largest measured m,
// T(m) + (n−m)·ρ·T(1); never below the price of a smaller n.
func price(fit *[MaxRows + 1]float64, n int, t1, rho float64) float64 {
	up := 0 // the smallest measured m above n
	for m := n + 1; m <= MaxRows && up == 0; m++ {
		if fit[m] > 0 {
			up = m
		}
	}
	est, last := t1, 1 // the estimate for m, and the largest measured m
	for m := 2; m <= n; m++ {
		switch {
		case fit[m] > 0:
			est, last = max(est, fit[m]), m
		case up > 0:
			est = max(est, fit[last]+(fit[up]-fit[last])*float64(m-last)/float64(up-last))
		default:
			est = max(est, fit[last]+float64(m-last)*rho*t1)
		}
	}
	return est
}

// ratio is the measured T(n)/T(1), n ≥ 2, and its samples (0, 0: none).
func (g *Gate) ratio(n int) (float64, float64) {
	if g.ref[n].count == 0 || g.ref[n].v <= 0 {
		return 0, 0
	}
	return g.t[n].v / g.ref[n].v, g.ref[n].count
}

// fit returns the measured T(n), n ≥ 2, fitted non-decreasing and at
// least T(1) (pool adjacent violators, weights min(samples, TimeWindow));
// fit[1] is T(1), unmeasured n are 0. An n with fewer than ProbeSamples
// samples enters shrunk towards the price the others give it (see
// ProbeSamples).
func (g *Gate) fit() [MaxRows + 1]float64 {
	t1 := g.t[1].v
	var v, w [MaxRows + 1]float64
	// The n with ProbeSamples samples first: they price the others.
	for n := 2; n <= MaxRows; n++ {
		if r, c := g.ratio(n); c >= ProbeSamples {
			v[n], w[n] = max(r, 1)*t1, min(c, TimeWindow)
		}
	}
	rho := g.rho(ProbeSamples) // theirs
	mature := isotonic(&v, &w)
	mature[1] = t1
	// A young n (fewer samples) is its measurement shrunk towards what
	// the others price it at, those worth ProbeSamples samples (Young).
	for n := 2; n <= MaxRows; n++ {
		if r, c := g.ratio(n); c > 0 && c < ProbeSamples {
			ref := price(&mature, n, t1, rho)
			v[n], w[n] = young(max(r, 1)*t1, c, ref), c
		}
	}
	out := isotonic(&v, &w)
	out[1] = t1
	return out
}

// young is x, measured on count samples (fewer than ProbeSamples),
// shrunk towards what the other measurements price it at, as if that
// were worth ProbeSamples samples.
func young(x, count, price float64) float64 {
	return (count*x + ProbeSamples*price) / (count + ProbeSamples)
}

// isotonic fits v (n ≥ 2, weights w; w 0: not measured) by a
// non-decreasing curve, at least v[1] (pool adjacent violators); out[n]
// is 0 where w[n] is 0.
func isotonic(v, w *[MaxRows + 1]float64) [MaxRows + 1]float64 {
	type block struct {
		v, w   float64
		lo, hi int // the n it covers
	}
	var blocks [MaxRows]block // Pick prices every depth through T: no allocation
	st := blocks[:0]
	for n := 2; n <= MaxRows; n++ {
		if w[n] == 0 {
			continue
		}
		b := block{v: v[n], w: w[n], lo: n, hi: n}
		for len(st) > 0 && st[len(st)-1].v > b.v {
			p := st[len(st)-1]
			st = st[:len(st)-1]
			b = block{v: (p.v*p.w + b.v*b.w) / (p.w + b.w), w: p.w + b.w, lo: p.lo, hi: b.hi}
		}
		st = append(st, b)
	}
	var out [MaxRows + 1]float64
	for _, b := range st {
		for n := b.lo; n <= b.hi; n++ {
			if w[n] > 0 {
				out[n] = b.v
			}
		}
	}
	return out
}

// Samples is how many n-row forwards were measured.
func (g *Gate) Samples(n int) int {
	if n < 1 || n > MaxRows {
		return 0
	}
	if n == 1 {
		return int(g.t[1].count)
	}
	_, c := g.ratio(n)
	return int(c)
}

// Rho is the fitted marginal cost of one more row in units of T(1): the
// sample-weighted mean of (T(n)/T(1) − 1)/(n − 1) over the measured n > 1.
func (g *Gate) Rho() float64 {
	if g.t[1].count == 0 || g.t[1].v <= 0 {
		return RhoStart
	}
	return g.rho(1)
}

// rho is Rho over the n with at least least samples (RhoStart if none).
func (g *Gate) rho(least float64) float64 {
	var sum, w float64
	for n := 2; n <= MaxRows; n++ {
		if r, c := g.ratio(n); c >= least {
			w8 := min(c, TimeWindow)
			sum += w8 * (r - 1) / float64(n-1)
			w += w8
		}
	}
	if w == 0 {
		return RhoStart
	}
	return max(0, min(RhoMax, sum/w))
}

// Ratio is cost of an n-row forward in plain steps, T(n)/T(1).
func (g *Gate) Ratio(n int) float64 {
	if g.t[1].count == 0 || g.t[1].v <= 0 {
		return 1 + float64(n-1)*RhoStart
	}
	t, _ := g.T(n)
	return t / g.unit()
}

// ring holds the last TimeWindow samples of one T(n).
type ring struct {
	x [TimeWindow]float64
	n int // samples so far
}

func (r *ring) add(x float64) {
	r.x[r.n%TimeWindow] = x
	r.n++
}

// quartiles returns the lower quartile, the median and the upper
// quartile of the samples held (linear interpolation between order
// statistics).
func (r *ring) quartiles() (q1, m, q3 float64) {
	k := min(r.n, TimeWindow)
	s := r.x
	v := s[:k]
	slices.Sort(v)
	at := func(q float64) float64 {
		p := q * float64(k-1)
		i := int(p)
		if i+1 >= k {
			return v[k-1]
		}
		return v[i] + (p-float64(i))*(v[i+1]-v[i])
	}
	return at(0.25), at(0.5), at(0.75)
}

// Cost is cost(k) = (T(k+1) + (k−1)·d)/T(1) for src.
func (g *Gate) Cost(src Source, k int) float64 {
	return g.cost(src, k+1, k-1, 0)
}

// cost is the time of a forward of rows rows after drafting drafts
// tokens of src, in plain steps, that forward and a plain step both
// taking x seconds more (one of a request's first forwards:
// (T(rows) + X + drafts·d)/(T(1) + X), see SettleSamples).
func (g *Gate) cost(src Source, rows, drafts int, x float64) float64 {
	u := g.unit()
	if u <= 0 {
		return g.Ratio(rows)
	}
	c := g.Ratio(rows)*u + x
	if m := g.draft[src.Name]; m != nil && drafts > 0 {
		c += float64(drafts) * m.v
	}
	return c / (u + x)
}

// excess is X of the forward at hand, seconds: what it will take over
// T(n) as one of a request's first forwards under streaming but the
// first (SettleSamples), 0 for the others.
func (g *Gate) excess() float64 {
	if g.settle <= 0 || g.settle == Settle || !g.streamed {
		return 0
	}
	m := &g.settleX[Settle-g.settle]
	if m.count < SettleSamples {
		return 0
	}
	return max(0, m.v)
}

// Budget is how many tokens to ask src to draft at most (room: what the
// step can take), before drafting: drafting costs time even when Pick
// then declines every draft (the MTP head runs a whole block per draft;
// on the 4-layer synthetic qwen3next drafting 3 and declining them all
// ran at 0.60× plain). It is the best depth plus one (Pick's probe) among
// those whose value is above 1 even for fully confident drafts (a_j = c_j,
// the calibration at p = 1, or the measured a_j without probabilities)
// with every draft's time charged, k·d; 0 when none is, except every
// ProbeEveryHopeless-th such call, which asks for 1 so the source's
// acceptance stays measured. A probe run in progress asks for its depth,
// and a due exploration (see explore, judged with the measured
// acceptance) for its own. With a fixed depth it is room.
func (g *Gate) Budget(src Source, room int) int {
	room = min(room, g.cfg.MaxDraft)
	if room <= 0 || g.cfg.Fixed {
		return max(room, 0)
	}
	s := g.source(src)
	best, e, prod := 0, 1.0, 1.0
	bestA, eA, prodA := 0, 1.0, 1.0 // the same with the measured acceptance
	// … and both while a request's first forwards settle (Pick)
	bestS, bestAS, x := 0, 0, g.excess()
	noProbs := s.at(0).prob.count == 0
	for k := 1; k <= room; k++ {
		acc, prob := s.accProb(k - 1)
		c := acc
		if prob > 0 {
			c = clamp01(acc / prob)
		}
		// A source that never gave probabilities has no calibration (its
		// prob is the prior): whether to ask is decided as for the others,
		// but how many to ask follows its measured acceptance. At c,
		// acceptance 0.6 over the prior 0.5 read as fully confident: a
		// replay drafter was asked for 8 drafts a step and 6–7 declined.
		ca := c
		if noProbs {
			ca = acc
		}
		prod, prodA = prod*c, prodA*ca
		e, eA = e+prod, eA+prodA
		cost := g.cost(src, k+1, k, 0)
		if e/cost > 1 {
			best = k
		}
		if x > 0 {
			cs := g.cost(src, k+1, k, x)
			if e/cs > 1 {
				bestS = k
			}
			if eA/cs > 1 {
				bestAS = k
			}
		}
		if eA/cost > 1 {
			bestA = k
		}
	}
	ask := 0
	if best > 0 {
		g.asks[src.Name] = 0
		ask = min(best, bestA) + 1
	} else if g.asks[src.Name]++; g.asks[src.Name]%ProbeEveryHopeless == 0 {
		ask = 1
	}
	if x > 0 && best > 0 { // settling: deeper, no probes (see Pick)
		return min(room, max(ask, min(bestS, bestAS)+1))
	}
	if g.runLeft > 0 { // a probe run goes on
		ask = max(ask, g.run)
	}
	// An exploration past the measured depths, judged with the measured
	// acceptance (the step's probabilities are not known yet).
	var buf [MaxRows]float64 // Budget runs every step: no allocation
	a := buf[:0]
	for j := range room {
		acc, _ := s.accProb(j)
		a = append(a, acc)
	}
	if kx := g.explore(src, a); kx > 0 {
		if g.xsince++; g.xsince >= ProbeEveryYoung {
			g.xsince, g.xdue = 0, true
			ask = max(ask, kx)
		}
	}
	return min(room, ask)
}

// explore returns the depth to explore for drafts with acceptance a
// (len(a) the deepest available), 0 for none: the depth k, deeper than
// every verify measured with ProbeSamples samples, whose value is best
// with T(k+1) priced at its lower bound, the compute of that deepest
// measured verify of f rows (T(f) less its stall charge) and the stall
// charge of k+1 rows, when that value is ExploreMargin times every
// depth's estimated value and 1. (Priced at T(f) itself, BenchmarkSpeculation
// streamed at replay 0.6, traced on 7 December, explored 9 rows in one
// request of 12: four runs of two, 75–199 ms a verify where its plain
// steps took 13–20, 1.8 s for a request plain decoding made in 1.24, 4 %
// of the twelve; with every row's stall, none.) An exploration is a probe run at
// k, due every ProbeEveryYoung Budget calls that find one, until k+1
// rows have ProbeSamples samples (RunPlain pairs them).
//
// Beyond f, T(n) is continued as a straight line (see T), and an MoE's
// extra rows cost less the more there are (they share experts, and a
// verify's first extra row brings a whole token's): BenchmarkSpeculation
// streamed, replay 0.9, 64 tokens a request, measured T(2)/T(1) at 2.1,
// priced T(3) at 3.2 from it, and, probing only one deeper than its
// best, the gate stayed plain in 11 rounds of 12 (1.02× plain) where
// continuous depth 5 paid ~3.9 plain steps a verify (1.20×).
func (g *Gate) explore(src Source, a []float64) int {
	f := 0
	for m := MaxRows; m >= 2 && f == 0; m-- {
		if g.Samples(m) >= ProbeSamples {
			f = m
		}
	}
	if f == 0 || len(a) < f {
		return 0
	}
	bestV := 1.0
	for k := 1; k <= len(a); k++ {
		bestV = max(bestV, g.value(src, a, k))
	}
	u := g.unit()
	if u <= 0 {
		return 0
	}
	tf, _ := g.T(f)
	compute := tf - g.charge(f) // the compute of f rows: its lower bound for more
	kx, bar := 0, ExploreMargin*bestV
	e, prod := 1.0, 1.0
	for k := 1; k <= len(a); k++ {
		prod *= a[k-1]
		e += prod
		if k+1 <= f {
			continue
		}
		c := (compute + g.charge(k+1)) / u
		if m := g.draft[src.Name]; m != nil && k > 1 {
			c += float64(k-1) * m.v / u
		}
		if v := e / c; v > bar {
			kx, bar = k, v
		}
	}
	return kx
}

// Plan is the outcome of a pick: the depth and why.
type Plan struct {
	K     int       // drafts to verify; 0: a plain step
	Value float64   // E(K)/cost(K); 1 for a plain step
	A     []float64 // the a_j used, for the positions considered
	Probe bool      // K is one deeper than the best, to measure it
	Plain bool      // a plain step forced so T(1) stays measured
}

// Pick chooses how many of the available drafts of src to verify, given
// the drafter's probabilities probs (len = the drafts available; NaN or
// absent entries: unknown). It advances the probe schedule.
func (g *Gate) Pick(src Source, available int, probs []float64) Plan {
	g.offered = g.offered || available > 0
	s := g.source(src)
	n := min(available, g.cfg.MaxDraft)
	if n <= 0 {
		return Plan{Value: 1}
	}
	a := make([]float64, 0, n)
	for j := range n {
		aj := s.estimate(j, probs)
		if aj < g.cfg.MinProb {
			break
		}
		a = append(a, aj)
	}
	n = len(a)
	if n == 0 {
		return Plan{Value: 1, A: a}
	}
	if g.cfg.Fixed {
		return Plan{K: n, Value: g.value(src, a, n), A: a}
	}
	// Forced plain steps wait for a probe run in progress to end (the
	// young probe run just before them is theirs to pair: see Pick's
	// probe below) and for the forwards after a prompt that are no
	// samples (Settle): a plain step among those measures nothing, and
	// was forced again until one did (BenchmarkSpeculation in memory,
	// replay 0.9: five plain steps at a request's start).
	if g.plainLeft > 0 || (g.runLeft == 0 && g.settle == 0 && g.drafted >= g.forceAt()) {
		return Plan{Value: 1, A: a, Plain: true}
	}
	best, bestV := g.best(src, a, 0)
	plan := Plan{K: best, Value: bestV, A: a}
	if g.settle > 0 {
		// Among the forwards after a prompt: deeper where the gate drafts
		// (SettleSamples), and no probe: they are no samples, and a row
		// costs more there. BenchmarkSpeculation streamed, replay 0.6, 64
		// tokens a request, traced (7 December): the gate's 2-row probes
		// there, where it stepped plainly, took 64–112 ms against 46–76
		// for its plain steps, and kept the row count young (no sample),
		// so it probed again at the next request's start: 5 of 8
		// requests, 43–160 ms each, up to 8 % of a request; the gate ran
		// at 0.96 of plain decoding. Without them, side by side (10
		// rounds): its first round after the warm-up at 0.84 and 1.04 of
		// plain, against 0.64–0.70 in six runs before; the medians alike
		// (0.96, 0.96 against 0.96, 1.00; controls 0.98–1.02).
		if x := g.excess(); x > 0 && best > 0 {
			plan.K, plan.Value = g.best(src, a, x)
		}
		return plan
	}
	g.since++
	if g.wait > 0 { // no probe yet (ProbeWait); a due one waits
		if plan.K > 0 {
			g.drafted++
		}
		return plan
	}
	kx := 0
	if g.xdue {
		g.xdue = false
		kx = g.explore(src, a)
	}
	if g.runLeft == 0 {
		g.exploring = false
	}
	switch deeper := best + 1; {
	case kx > 0: // an exploration: a probe run at kx
		g.run, g.runLeft, g.exploring = kx, ProbeRun-1, true
		plan = Plan{K: kx, Value: g.value(src, a, kx), A: a, Probe: true}
	case g.runLeft > 0 && (g.run > best || g.exploring) && g.run <= n: // a probe run goes on
		if g.runLeft--; g.runLeft == 0 && g.exploring {
			g.plainLeft = RunPlain // so that the run's last verify pairs
		}
		plan = Plan{K: g.run, Value: g.value(src, a, g.run), A: a, Probe: true}
	case deeper <= n && g.could(src, a, deeper, bestV):
		g.runLeft = 0
		v := g.value(src, a, deeper)
		every, hopeless := g.probeEvery(src, best, bestV, deeper, v), v < ProbeHopeless
		if g.Samples(deeper+1) < ProbeSamples { // young: see ProbeEveryYoung
			switch {
			case best == 0: // plain steps around it pair it
				every, hopeless = ProbeEveryYoung, false
			case g.settle == 0 && g.drafted+ProbeRun >= g.forceAt(): // the forced plain steps next pair it
				every, hopeless = 0, false
			}
		}
		if g.since >= every {
			g.since = 0
			plan = Plan{K: deeper, Value: v, A: a, Probe: true}
			if best == 0 { // measured until the plain step after it (ProbeEveryMax)
				g.prun, g.prunT, g.prunTok = true, 0, 0
			}
			if !hopeless {
				g.run, g.runLeft = deeper, ProbeRun-1
			}
		}
	default:
		g.runLeft = 0
	}
	if g.prun && plan.K > 0 && !plan.Probe { // drafting took over: the run has no plain step after it
		g.prun = false
	}
	if plan.K > 0 && g.settle == 0 { // (a settling forward measures nothing either way)
		g.drafted++
	}
	return plan
}

// could reports whether k drafts with acceptance a could beat value
// bestV at the lowest price the gate's cost model allows a forward of
// k+1 rows: one row's compute, k+1 rows' stall (StallPerRow) and the
// drafting. Where they could not, whatever T(k+1) would measure, a probe
// of k is not run. In memory that is never (a row's price is at least
// T(1)); under streaming, where every row is charged its stall, drafts
// seldom accepted are not probed: BenchmarkSpeculation streamed, a
// replay drafter at acceptance 0.01 (E(1) = 1.01), traced (7 December):
// the gate's 2-row probe runs, every third request, took 67–82 ms a
// verify where its plain steps took ~20, 3–4 % of the time.
func (g *Gate) could(src Source, a []float64, k int, bestV float64) bool {
	u := g.unit()
	if u <= 0 {
		return true
	}
	e := expected(a, k)
	c := g.t[1].v + float64(k+1)*g.StallPerRow().Seconds()
	if m := g.draft[src.Name]; m != nil && k > 1 {
		c += float64(k-1) * m.v
	}
	return e*u/c > bestV
}

// forceAt is how many drafted steps without a T(1) sample force plain
// steps (ForcePlainAfter, ForcePlainYoung).
func (g *Gate) forceAt() int {
	if g.t[1].count < TimeWindow {
		return ForcePlainYoung
	}
	return ForcePlainAfter
}

// probeEvery is how many picks apart probes of depth deeper (value v)
// run when the best is depth best (value bestV): often enough to see a
// change, rarely enough that a probe run costs at most ProbeLoss of the
// time. A probe step spends cost(deeper) plain steps on tokens the best
// depth would have given in cost(deeper)·v/bestV: it loses
// cost(deeper)·(1 − v/bestV); the picks between probes take about
// cost(best) each. A hopeless probe (v < ProbeHopeless) is a single
// verify, the others a run of ProbeRun. Where the gate decodes plainly
// a run loses at least what the recent ones lost, measured
// (ProbeEveryMax).
func (g *Gate) probeEvery(src Source, best int, bestV float64, deeper int, v float64) int {
	if v < ProbeHopeless {
		return ProbeEveryHopeless
	}
	steps := float64(ProbeRun)
	loss := steps * g.Cost(src, deeper) * max(0, 1-v/bestV)
	per, most := 1.0, ProbeEveryHopeless
	if best > 0 {
		per = g.Cost(src, best)
	} else if g.prunLoss.count > 0 { // what the runs lost (ProbeEveryMax)
		loss, most = max(loss, g.prunLoss.v), ProbeEveryMax
	}
	n := loss / (ProbeLoss * per)
	if !(n < float64(most)) { // NaN too
		return most
	}
	return max(ProbeEvery, int(math.Ceil(n)))
}

// value is E(k)/cost(k) with the step's a_j.
func (g *Gate) value(src Source, a []float64, k int) float64 {
	return g.valueAt(src, a, k, 0)
}

// valueAt is value with the forward and a plain step x seconds dearer
// (see cost).
func (g *Gate) valueAt(src Source, a []float64, k int, x float64) float64 {
	return expected(a, k) / g.cost(src, k+1, k-1, x)
}

// expected is E(k) = 1 + a1 + a1·a2 + … + a1·…·ak.
func expected(a []float64, k int) float64 {
	e, prod := 1.0, 1.0
	for j := range k {
		prod *= a[j]
		e += prod
	}
	return e
}

// best is the depth of the best value above 1 (the smaller on a tie),
// and that value; 0 and 1 for none (see valueAt).
func (g *Gate) best(src Source, a []float64, x float64) (int, float64) {
	best, bestV := 0, 1.0
	for k := 1; k <= len(a); k++ {
		if v := g.valueAt(src, a, k, x); v > bestV {
			best, bestV = k, v
		}
	}
	return best, bestV
}

// Snapshot is what the gate has measured, for telemetry.
type Snapshot struct {
	T1         time.Duration        `json:"t1_ns"`       // T(1), its stall included; 0 unmeasured
	Ratios     []float64            `json:"t_ratio"`     // T(n)/T(1), stall included, for n = 1..; 0 where n was not measured
	Samples    []int                `json:"t_samples"`   // forwards measured per n
	Rho        float64              `json:"rho"`         // fitted marginal row compute, in T(1)'s compute
	Stall      time.Duration        `json:"stall_ns"`    // stall per row (StallPerRow)
	Acceptance map[string][]float64 `json:"acceptance"`  // by source, a_j by position (measured or prior)
	Calibrated map[string][]float64 `json:"calibration"` // by source, c_j by position
}

// Snapshot reports the measurements.
func (g *Gate) Snapshot() Snapshot {
	sn := Snapshot{Rho: g.Rho(), Stall: g.StallPerRow(), Acceptance: map[string][]float64{}, Calibrated: map[string][]float64{}}
	u := g.unit()
	if u > 0 {
		sn.T1 = time.Duration(u * float64(time.Second))
	}
	last := 0
	for n := 1; n <= MaxRows; n++ {
		if g.Samples(n) > 0 {
			last = n
		}
	}
	for n := 1; n <= last; n++ {
		r := 0.0
		if n == 1 && g.t[1].count > 0 {
			r = 1
		} else if rc, _ := g.ratio(n); n > 1 && rc > 0 && u > 0 {
			r = (rc*g.t[1].v + g.charge(n)) / u
		}
		sn.Ratios = append(sn.Ratios, r)
		sn.Samples = append(sn.Samples, g.Samples(n))
	}
	for name, s := range g.sources {
		for j := range s.pos {
			acc, prob := s.accProb(j)
			sn.Acceptance[name] = append(sn.Acceptance[name], acc)
			c := 1.0
			if prob > 0 {
				c = acc / prob
			}
			sn.Calibrated[name] = append(sn.Calibrated[name], c)
		}
	}
	return sn
}

func clamp01(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return max(0, min(1, x))
}
