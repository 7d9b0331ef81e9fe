package gate

import (
	"math"
)

// Constants of the probes, explorations and forced plain steps, and the
// measurements behind them.
const (
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
	// Under SSD streaming, while the gate drafts on, a grown row count is
	// probed there too, and nowhere else: a probe with no plain step near
	// is no sample, and a depth the gate left stays priced as it was
	// measured, in another phase of the text. BenchmarkSpeculation
	// streamed, replay 0.9, 64 tokens a request, traced (7 December): the
	// gate drafted 1 deep from its third request on, its 3-row verifies
	// priced from the three taken while it drafted 2 deep in its first
	// requests (T(3)/T(1) 2.46 of compute, where depth 2 kept up paid
	// 1.7); its 3-row probe runs, one every request or two, paired with
	// no plain step, and T(3) kept those three samples to the end (0.875
	// of depth 5).
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
)

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
	compute := tf - g.charge(f, nil) // the compute of f rows: its lower bound for more
	kx, bar := 0, ExploreMargin*bestV
	e, prod := 1.0, 1.0
	for k := 1; k <= len(a); k++ {
		prod *= a[k-1]
		e += prod
		if k+1 <= f {
			continue
		}
		c := (compute + g.charge(k+1, a)) / u
		if m := g.draft[src.Name]; m != nil && k > 1 {
			c += float64(k-1) * m.v / u
		}
		if v := e / c; v > bar {
			kx, bar = k, v
		}
	}
	return kx
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
