package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Sampler picks tokens for one generation. It keeps its buffers between
// calls, so sampling allocates nothing per token. Not safe for concurrent use.
type Sampler struct {
	p      Params
	rng    *rand.Rand
	cands  []cand
	counts map[int32]int
}

type cand struct {
	id    int32
	logit float32
	p     float32
}

// New returns a Sampler for a vocabulary of nVocab tokens. A zero Seed
// draws one from the clock.
func New(p Params, nVocab int) *Sampler {
	seed := p.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return &Sampler{
		p:      p,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		cands:  make([]cand, 0, nVocab),
		counts: map[int32]int{},
	}
}

// Sample returns the next token for logits (len nVocab), given the tokens so
// far (prompt and generated; used by the penalties). logits is not changed.
// The order of the filters follows llama.cpp's default chain: penalties,
// top-k, top-p, min-p, temperature, then a draw.
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	c, greedy := s.dist(logits, history)
	if greedy >= 0 {
		return greedy
	}
	r := s.rng.Float64()
	var acc float64
	for i := range c {
		acc += float64(c[i].p)
		if r < acc {
			return c[i].id
		}
	}
	return c[len(c)-1].id
}

// dist computes the distribution Sample draws from: the greedy token
// (≥ 0) at temperature 0, else the candidates with their probabilities.
func (s *Sampler) dist(logits []float32, history []int32) ([]cand, int32) {
	c := s.cands[:0]
	for i, l := range logits {
		c = append(c, cand{id: int32(i), logit: l})
	}
	s.cands = c
	s.penalize(c, history)
	if s.p.Temperature <= 0 {
		best := 0
		for i := range c {
			if c[i].logit > c[best].logit {
				best = i
			}
		}
		return nil, c[best].id
	}
	c = prune(c, s.p.Temperature)
	c = topK(c, s.p.TopK)
	c = topP(c, s.p.TopP)
	c = minP(c, s.p.MinP)
	for i := range c {
		c[i].logit /= s.p.Temperature
	}
	softmax(c)
	return c, -1
}

// Verify decides a drafted token (speculative decoding) against the
// distribution p that Sample would draw from for the same logits and
// history, and returns the token to emit and whether it is the draft.
// Greedy: the draft is accepted exactly when it is Sample's token, which is
// returned either way. Sampling: standard speculative rejection sampling
// with the draft as a point-mass proposal: accepted with probability
// p(draft), else a token drawn from p with the draft removed and the rest
// renormalised. The returned token is then distributed exactly as
// Sample's: p(x) = p(draft)·[x = draft] + (1 − p(draft))·p(x)/(1 − p(draft))
// for x ≠ draft. (The random stream differs from plain sampling's, so a
// seeded run gives other tokens with the same distribution.)
func (s *Sampler) Verify(logits []float32, history []int32, draft int32) (int32, bool) {
	c, greedy := s.dist(logits, history)
	if greedy >= 0 {
		return greedy, greedy == draft
	}
	var pd float64
	for i := range c {
		if c[i].id == draft {
			pd = float64(c[i].p)
		}
	}
	if pd > 0 && s.rng.Float64() < pd {
		return draft, true
	}
	r := s.rng.Float64() * (1 - pd)
	var acc float64
	last := int32(-1)
	for i := range c {
		if c[i].id == draft {
			continue
		}
		last = c[i].id
		acc += float64(c[i].p)
		if r < acc {
			return c[i].id, false
		}
	}
	if last < 0 { // the draft was the only candidate (p(draft) rounds below 1)
		return draft, true
	}
	return last, false
}

// penalize applies llama.cpp's repetition, frequency and presence penalties
// over the last RepeatLastN tokens of history.
func (s *Sampler) penalize(c []cand, history []int32) {
	rp, fp, pp := s.p.RepeatPenalty, s.p.FrequencyPenalty, s.p.PresencePenalty
	if (rp == 0 || rp == 1) && fp == 0 && pp == 0 {
		return
	}
	n := s.p.RepeatLastN
	if n <= 0 {
		n = 64
	}
	if len(history) > n {
		history = history[len(history)-n:]
	}
	clear(s.counts)
	for _, id := range history {
		s.counts[id]++
	}
	for id, cnt := range s.counts {
		if id < 0 || int(id) >= len(c) {
			continue
		}
		l := &c[id].logit
		if rp != 0 && rp != 1 {
			if *l <= 0 {
				*l *= rp
			} else {
				*l /= rp
			}
		}
		*l -= float32(cnt)*fp + pp
	}
}

func sortDesc(c []cand) {
	slices.SortFunc(c, func(a, b cand) int {
		switch {
		case a.logit > b.logit:
			return -1
		case a.logit < b.logit:
			return 1
		}
		return int(a.id - b.id)
	})
}

// softmax sets p from logit over c.
func softmax(c []cand) {
	mx := float32(math.Inf(-1))
	for _, x := range c {
		mx = max(mx, x.logit)
	}
	var sum float64
	for i := range c {
		e := math.Exp(float64(c[i].logit - mx))
		c[i].p = float32(e)
		sum += e
	}
	for i := range c {
		c[i].p = float32(float64(c[i].p) / sum)
	}
}

// topK keeps the k most likely candidates (k ≤ 0: all), sorted by logit.
func topK(c []cand, k int) []cand {
	sortDesc(c)
	if k > 0 && k < len(c) {
		c = c[:k]
	}
	return c
}

// topP keeps the smallest prefix (by probability) whose mass reaches p
// (p ≤ 0 or ≥ 1: all). c must be sorted.
func topP(c []cand, p float32) []cand {
	if p <= 0 || p >= 1 {
		return c
	}
	softmax(c)
	var acc float32
	for i := range c {
		acc += c[i].p
		if acc >= p {
			return c[:i+1]
		}
	}
	return c
}

// minP keeps candidates whose probability is at least p times the top one's
// (p ≤ 0: all). c must be sorted.
func minP(c []cand, p float32) []cand {
	if p <= 0 || len(c) == 0 {
		return c
	}
	// In logit space: keep l ≥ l_max + ln p.
	thr := c[0].logit + float32(math.Log(float64(p)))
	for i := range c {
		if c[i].logit < thr {
			return c[:max(i, 1)]
		}
	}
	return c
}

// pruneBelow is how far (in logits divided by the temperature) under the
// best a candidate may be and still be considered: e^-40 ≈ 4e-18 relative
// probability, so even 10^6 such tokens change no probability by more than
// 1e-11, while sorting 150k candidates per token would cost milliseconds.
const pruneBelow = 40

// prune drops candidates that cannot matter before the filters sort.
func prune(c []cand, temp float32) []cand {
	mx := float32(math.Inf(-1))
	for _, x := range c {
		mx = max(mx, x.logit)
	}
	thr := mx - pruneBelow*temp
	n := 0
	for _, x := range c {
		if x.logit >= thr {
			c[n] = x
			n++
		}
	}
	return c[:n]
}
