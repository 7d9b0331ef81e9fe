package gate

import (
	"slices"
	"time"
)

// Constants of the forward times, and the measurements behind them.
const (
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
	// plain step took ~50 (traced, 7 December). Nor to more rows than the
	// gate has measured (a sample of T(n) for n rows): past them a
	// settling forward's time grows with its rows, ~27 ms a row from 6
	// to 9 rows at replay 0.9, and X, measured at other depths, does not
	// show it. At replay 0.6 (traced, 7 December, 16:36, 9 requests) the
	// gate drafted 1 deep at one request's end, where 1 draft was worth
	// ~1.0 plain step, measured to 3 rows, and 6 deep at the next one's
	// second to fourth forwards: 7-row forwards of 205, 268 and 144 ms,
	// 1 token each, where plain steps there took ~50; that request ran
	// at 33.6 tok/s, the round's plain runs at 40.0 and 47.1.
	SettleSamples = 2
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
	probe   bool // taken in a probe run (Gate.kept)
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
	g.heldStall = 0 // a verdict after this forward is not the last one's
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
		g.heldStall, g.heldStallS = n, stall.Seconds() // clean or dirty: Verified
		// Held until the next forward: a plain step right after a verify
		// pays or saves for the verify's experts.
		g.flush()
		g.held, g.heldRows, g.heldSeq, g.heldProbe = x, n, g.seq, g.probing
		if !g.probing {
			g.keptStall[n]++
		}
		return
	}
	if g.heldRows > 0 {
		g.pend = append(g.pend, pending{n: g.heldRows, seq: g.heldSeq, x: g.held, next: x, carried: true, probe: g.heldProbe})
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
		g.pend = append(g.pend, pending{n: g.heldRows, seq: g.heldSeq, x: g.held, probe: g.heldProbe})
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
		if !p.probe {
			g.kept[p.n]++
		}
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
func (g *Gate) T(n int) (float64, bool) { return g.tAt(n, nil) }

// tAt is T(n) for drafts accepted with probabilities a (a_j of this
// step, nil: the last verified source's measured; see stallOf).
func (g *Gate) tAt(n int, a []float64) (float64, bool) {
	if n < 1 || n > MaxRows {
		return 0, false
	}
	if g.t[1].count == 0 { // nothing to price from
		return 0, false
	}
	fit := g.fit()
	return price(&fit, n, g.t[1].v, g.Rho()) + g.charge(n, a), fit[n] > 0
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
	g.capProbed(&out)
	return out
}

// capProbed, under SSD streaming, lowers the fitted T(n) of row counts
// measured only in probe runs (Gate.kept), deeper than the deepest count
// measured kept up, to the straight line through that count and the
// measured one below it: an MoE's extra rows cost less the more there
// are (they share experts), and a probe's verify, after shallower ones,
// reads experts they did not bring (Forward). (charge caps their stall
// alike.) Measured kept up, a row count is priced as measured. Without
// it, BenchmarkSpeculation streamed (replay 0.9, 64 tokens a request,
// 7 December, three runs of 10 rounds) priced 4 rows at 3.2–5.6 T(1)
// from probes where 3 kept up cost 2.1–2.2, and the gate drafted 1 deep
// (28 of 31 and 25 of 29 verifies of the last rounds; none in the
// third); with it, 4–6 deep and 3 deep in two runs of three, the gate at
// 0.918 [0.848, 0.994] of depth 5 over the 30 rounds against 0.889
// [0.828, 0.954], and at replay 0.6 at 0.985 of plain decoding against
// 1.022 (controls 0.996 and 1.028): no difference the benchmark
// resolves. In memory, where probes read nothing from an SSD, the fit is
// left as measured: one run there, replay 0.9, read 0.970 of depth 5
// with the cap, 0.982 without.
func (g *Gate) capProbed(fit *[MaxRows + 1]float64) {
	k := keptTop(&g.kept)
	if !g.streamed || k == 0 || fit[k] <= 0 {
		return
	}
	lo := 1
	for m := k - 1; m >= 2; m-- {
		if fit[m] > 0 {
			lo = m
			break
		}
	}
	slope := max(0, (fit[k]-fit[lo])/float64(k-lo))
	for n := k + 1; n <= MaxRows; n++ {
		if fit[n] > 0 && g.kept[n] == 0 {
			fit[n] = max(fit[n-1], fit[k], min(fit[n], fit[k]+float64(n-k)*slope))
		}
	}
}

// keptTop is the deepest row count with ProbeSamples samples in c
// (samples taken kept up, not in a probe run), 0 for none.
func keptTop(c *[MaxRows + 1]int) int {
	for n := MaxRows; n >= 2; n-- {
		if c[n] >= ProbeSamples {
			return n
		}
	}
	return 0
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
	return g.cost(src, k+1, k-1, 0, nil)
}

// cost is the time of a forward of rows rows after drafting drafts
// tokens of src, in plain steps, that forward and a plain step both
// taking x seconds more (one of a request's first forwards:
// (T(rows) + X + drafts·d)/(T(1) + X), see SettleSamples).
func (g *Gate) cost(src Source, rows, drafts int, x float64, a []float64) float64 {
	u := g.unit()
	if u <= 0 {
		return g.Ratio(rows)
	}
	t, _ := g.tAt(rows, a)
	c := t + x
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
