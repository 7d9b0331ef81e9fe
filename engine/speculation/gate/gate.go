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
// where verifies measured stall more: a rejected draft's row brings
// experts the text does not use, so their stall is measured apart by
// verdict (every draft accepted, or one rejected) and priced at the
// step's chance of a rejection (stallOf). A request's first forwards read the
// new text's experts whatever their rows: where the gate drafts, they
// are priced with what they took over T(n) before, shared by the rows
// (SettleSamples), and drafted deeper. A row count measured only in probe
// runs, deeper than those measured kept up, is priced no higher than the
// line through the kept-up costs (capProbed), and while the gate drafts
// on, every probe runs right before the forced plain steps, which pair
// it (ProbeEvery).
//
// The parts: accept.go estimates a_j per source and position; timing.go
// measures T(n) (pairs, clips, the fit); stall.go prices the expert-read
// stall; probe.go schedules probes, explorations and forced plain steps;
// gate.go holds the state and picks (Budget, Pick, Snapshot).
package gate

import (
	"math"
	"time"
)

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

	// heldProbe: the held forward was a probe's. probing: the last Pick
	// was a probe (Plan.Probe). kept, keptStall: per row count, the
	// samples of T(n) and of its stall taken kept up, not in a probe run
	// (capProbed).
	heldProbe bool
	probing   bool
	kept      [MaxRows + 1]int
	keptStall [MaxRows + 1]int

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
	// clean[n] and dirty[n]: the same samples apart by the verify's
	// verdict, every draft accepted or one rejected (stallOf); the last
	// sample waits for its verdict in heldStall (rows) and heldStallS
	// (seconds). last: the source verified last, whose acceptance prices
	// a rejection where no step's is given (T).
	clean, dirty [MaxRows + 1]mean
	heldStall    int
	heldStallS   float64
	last         *source
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
	var as [MaxRows]float64 // the measured a_j, which price the stall (stallOf)
	for k := 1; k <= room; k++ {
		acc, prob := s.accProb(k - 1)
		as[k-1] = acc
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
		cost := g.cost(src, k+1, k, 0, as[:k])
		if e/cost > 1 {
			best = k
		}
		if x > 0 {
			cs := g.cost(src, k+1, k, x, as[:k])
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
	plan := g.pick(src, available, probs)
	g.probing = plan.Probe
	return plan
}

// pick is Pick, but for remembering whether the plan is a probe's.
func (g *Gate) pick(src Source, available int, probs []float64) Plan {
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
			deep := best // no deeper than the rows measured (SettleSamples)
			for n := best + 2; n <= len(a)+1; n++ {
				if g.Samples(n) > 0 {
					deep = n - 1
				}
			}
			plan.K, plan.Value = g.best(src, a[:deep], x)
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
		// paired: the forced plain steps next pair it.
		paired := g.settle == 0 && g.drafted+ProbeRun >= g.forceAt()
		if g.Samples(deeper+1) < ProbeSamples { // young: see ProbeEveryYoung
			switch {
			case best == 0: // plain steps around it pair it
				every, hopeless = ProbeEveryYoung, false
			case paired:
				every, hopeless = 0, false
			}
		} else if g.streamed && best > 0 && !paired {
			every = math.MaxInt // grown, streamed, drafting on: see ProbeEvery
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

// value is E(k)/cost(k) with the step's a_j.
func (g *Gate) value(src Source, a []float64, k int) float64 {
	return g.valueAt(src, a, k, 0)
}

// valueAt is value with the forward and a plain step x seconds dearer
// (see cost).
func (g *Gate) valueAt(src Source, a []float64, k int, x float64) float64 {
	return expected(a, k) / g.cost(src, k+1, k-1, x, a)
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
			r = (rc*g.t[1].v + g.charge(n, nil)) / u
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
