package gate

import (
	"math"
	"time"
)

// Constants of the acceptance estimates, and the measurements behind them.
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
		var p position // nothing measured (read only: Snapshot lists the measured)
		if i < len(s.pos) {
			p = s.pos[i]
		}
		if pr, ok := s.src.prior(i); ok {
			acc, prob = pr, pr
		}
		acc, prob = blend(p.acc, acc), blend(p.prob, prob)
	}
	return acc, prob
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
	g.last = s
	if k > 0 && k+1 == g.heldStall { // the verdict of a stall sample (stallOf)
		if accepted >= k {
			g.clean[k+1].add(g.heldStallS, TimeWindow)
		} else {
			g.dirty[k+1].add(g.heldStallS, TimeWindow)
		}
		g.heldStall = 0
	}
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

func clamp01(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return max(0, min(1, x))
}
