package gate

import (
	"math"
	"time"
)

// Constants of the expert-read stall, and the measurements behind them.
const (
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
)

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

// charge is what an n-row forward is charged for expert reads, seconds,
// for drafts accepted with probabilities a (nil: the last verified
// source's measured acceptance): n times StallPerRow, or, if more,
// ioSlope times the stall expected of the forwards of m ≤ n rows at that
// acceptance (stallOf: a verify's rows are not all of the text, and a
// rejected draft's row brings experts the text does not use, which miss
// the cache).
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
// ~26 (4.3 ms a row), so under streaming the gate drafted shallower than
// the best fixed depth; a row count with no sample taken kept up, deeper
// than the deepest with ProbeSamples such samples, is now charged at most
// that count's stall plus StallPerRow for each row more (capProbed).
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
func (g *Gate) charge(n int, a []float64) float64 {
	row := g.StallPerRow().Seconds()
	c := float64(n) * row
	if n < 2 {
		return c
	}
	k := g.ioSlope()
	top := keptTop(&g.keptStall) // capProbed
	j, jok := g.reject()
	var rej [MaxRows + 1]float64 // P(an m-row verify rejects a draft)
	keep := 1.0
	for m := 2; m <= n; m++ {
		keep *= g.accept(a, m-2)
		rej[m] = 1 - keep
		s := &g.stallN[m]
		if s.count == 0 {
			continue
		}
		x := k * g.stallOf(m, rej[m], j, jok)
		if s.count < ProbeSamples {
			x = young(x, s.count, float64(m)*row)
		}
		if top > 0 && m > top && g.keptStall[m] == 0 {
			x = min(x, k*g.stallOf(top, rej[top], j, jok)+float64(m-top)*row)
		}
		c = max(c, x)
	}
	return c
}

// accept is a_j: a[j] where given, else the measured acceptance of the
// source verified last (NaN before any).
func (g *Gate) accept(a []float64, j int) float64 {
	if j < len(a) {
		return a[j]
	}
	if g.last == nil {
		return math.NaN()
	}
	x, _ := g.last.accProb(j)
	return x
}

// reject is what a verify with a rejected draft stalls more than one
// whose drafts were all accepted, seconds: the difference of their
// means, pooled over the row counts measured both ways (weights: the
// fewer samples, up to TimeWindow); false where none was.
func (g *Gate) reject() (float64, bool) {
	var sum, w float64
	for n := 2; n <= MaxRows; n++ {
		c, d := &g.clean[n], &g.dirty[n]
		if c.count == 0 || d.count == 0 {
			continue
		}
		wn := min(c.count, d.count, TimeWindow)
		sum += wn * (d.v - c.v)
		w += wn
	}
	if w == 0 {
		return 0, false
	}
	return max(0, sum/w), true
}

// stallOf is the stall expected of an n-row verify whose drafts are
// rejected with probability p (one or more), seconds: its row count's
// mean stall with every draft accepted (or with one rejected) plus (less)
// the pooled difference j (reject). Where that is not measured, or p is
// unknown (NaN), the mean stall of its verifies (stallN).
//
// A verify stalls much more when a draft is rejected (the rejected
// token's experts are not the text's, and miss the cache), whatever its
// rows, and its mean over a few verifies follows how many of those were
// rejected more than its rows. BenchmarkSpeculation streamed (12 layers,
// 64 tokens a request, traced, 7 December): the fixed depths' verifies
// with every draft accepted stalled 6.3, 8.2, 9.3 and 9.4 ms for 2, 3, 4
// and 6 rows at replay 0.9 (6.5, 8.2, 8.8, 12.3 at replay 0.6), those
// with one rejected ~30 more at 0.9 and 23–25 more at 0.6 at every
// depth; the mean stall of all of them, 9.3, 13.4, 19.8 and 20.5 (16.5,
// 23.2, 28.4, 34.0), is that with the rejections' rate. The gate's
// own means, from a handful of verifies each, priced 3 rows at 6.1 ms
// of stall (all accepted) and 4 at 36.3 (two of four rejected), so it
// drafted 2 deep where depth 5 was best.
func (g *Gate) stallOf(n int, p, j float64, jok bool) float64 {
	if jok && !math.IsNaN(p) {
		if c := &g.clean[n]; c.count > 0 {
			return c.v + p*j
		}
		if d := &g.dirty[n]; d.count > 0 {
			return max(0, d.v-(1-p)*j)
		}
	}
	return g.stallN[n].v
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
