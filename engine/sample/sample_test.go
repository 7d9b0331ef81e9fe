package sample

import (
	"math"
	"testing"
)

func cands(logits ...float32) []cand {
	c := make([]cand, len(logits))
	for i, l := range logits {
		c[i] = cand{id: int32(i), logit: l}
	}
	return c
}

func ids(c []cand) []int32 {
	out := make([]int32, len(c))
	for i, x := range c {
		out[i] = x.id
	}
	return out
}

func eq(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// logit of probability p (up to a constant).
func lg(p float64) float32 { return float32(math.Log(p)) }

func TestFilters(t *testing.T) {
	// Probabilities 0.5, 0.25, 0.15, 0.1 in shuffled order.
	base := []float32{lg(0.15), lg(0.5), lg(0.1), lg(0.25)}
	tests := []struct {
		name string
		f    func([]cand) []cand
		want []int32
	}{
		{"top-k 2", func(c []cand) []cand { return topK(c, 2) }, []int32{1, 3}},
		{"top-k 0 keeps all, sorted", func(c []cand) []cand { return topK(c, 0) }, []int32{1, 3, 0, 2}},
		{"top-p 0.5 keeps the first", func(c []cand) []cand { return topP(topK(c, 0), 0.5) }, []int32{1}},
		{"top-p 0.7", func(c []cand) []cand { return topP(topK(c, 0), 0.7) }, []int32{1, 3}},
		{"top-p 0.8", func(c []cand) []cand { return topP(topK(c, 0), 0.8) }, []int32{1, 3, 0}},
		{"top-p 1 off", func(c []cand) []cand { return topP(topK(c, 0), 1) }, []int32{1, 3, 0, 2}},
		{"min-p 0.3", func(c []cand) []cand { return minP(topK(c, 0), 0.3) }, []int32{1, 3, 0}},
		{"min-p 0.5", func(c []cand) []cand { return minP(topK(c, 0), 0.5) }, []int32{1, 3}},
		{"min-p 0.9", func(c []cand) []cand { return minP(topK(c, 0), 0.9) }, []int32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(tt.f(cands(base...))); !eq(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPenalties(t *testing.T) {
	tests := []struct {
		name    string
		p       Params
		history []int32
		want    []float32
	}{
		{"repeat divides positive, multiplies negative", Params{RepeatPenalty: 2}, []int32{0, 1}, []float32{1, -4, 3}},
		{"frequency counts", Params{FrequencyPenalty: 0.5}, []int32{2, 2, 0}, []float32{1.5, -2, 2}},
		{"presence once", Params{PresencePenalty: 1}, []int32{2, 2}, []float32{2, -2, 2}},
		{"window", Params{PresencePenalty: 1, RepeatLastN: 1}, []int32{0, 2}, []float32{2, -2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.p, 3)
			c := cands(2, -2, 3)
			s.penalize(c, tt.history)
			for i := range c {
				if math.Abs(float64(c[i].logit-tt.want[i])) > 1e-6 {
					t.Fatalf("logits %v, want %v", c, tt.want)
				}
			}
		})
	}
}

func TestGreedyAndSeeded(t *testing.T) {
	logits := []float32{0.1, 3, 0.2, 2.9}
	if got := New(Params{}, 4).Sample(logits, nil); got != 1 {
		t.Errorf("greedy picked %d", got)
	}
	// Greedy with a repeat penalty moves off the repeated token.
	if got := New(Params{RepeatPenalty: 1.5}, 4).Sample(logits, []int32{1}); got != 3 {
		t.Errorf("greedy with penalty picked %d", got)
	}
	draw := func(seed uint64) []int32 {
		s := New(Params{Temperature: 1, Seed: seed}, 4)
		var out []int32
		for i := 0; i < 50; i++ {
			out = append(out, s.Sample(logits, nil))
		}
		return out
	}
	a, b, c := draw(42), draw(42), draw(43)
	if !eq(a, b) {
		t.Error("same seed gave different draws")
	}
	if eq(a, c) {
		t.Error("different seeds gave identical 50-token draws")
	}
	// Temperature draws follow the distribution: token 0 and 2 are rare.
	s := New(Params{Temperature: 1, Seed: 1}, 4)
	counts := make([]int, 4)
	for i := 0; i < 4000; i++ {
		counts[s.Sample(logits, nil)]++
	}
	p1 := math.Exp(3) / (math.Exp(0.1) + math.Exp(3) + math.Exp(0.2) + math.Exp(2.9))
	if got := float64(counts[1]) / 4000; math.Abs(got-p1) > 0.03 {
		t.Errorf("token 1 drawn %.3f of the time, want %.3f", got, p1)
	}
	// top-k 1 is greedy whatever the temperature.
	s = New(Params{Temperature: 5, TopK: 1, Seed: 3}, 4)
	for i := 0; i < 20; i++ {
		if got := s.Sample(logits, nil); got != 1 {
			t.Fatalf("top-k 1 picked %d", got)
		}
	}
}

func TestSampleAllocs(t *testing.T) {
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(i%37) / 10
	}
	s := New(Params{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, Seed: 9}, len(logits))
	s.Sample(logits, nil)
	if n := testing.AllocsPerRun(20, func() { s.Sample(logits, nil) }); n > 0 {
		t.Errorf("%v allocations per token", n)
	}
}

// chi2Crit999 are the χ² critical values at p = 0.001 by degrees of freedom.
var chi2Crit999 = map[int]float64{1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 6: 22.46, 7: 24.32}

// TestVerifyDistribution: the token Verify returns for a draft is
// distributed as Sample's (χ² goodness of fit against the sampler's own
// probabilities, 40k seeded draws per case), whichever token is drafted
// (likely, unlikely, filtered out), and greedy verification accepts
// exactly Sample's token.
func TestVerifyDistribution(t *testing.T) {
	logits := []float32{2, 1.5, 0.2, -1, 0.9, -3, 1.1}
	params := []Params{
		{Temperature: 0.8, Seed: 1},
		{Temperature: 0.8, TopK: 4, Seed: 2},
		{Temperature: 1.3, TopP: 0.9, RepeatPenalty: 1.3, Seed: 3},
	}
	history := []int32{0, 4}
	for pi, p := range params {
		for _, draft := range []int32{0, 2, 5} {
			s := New(p, len(logits))
			c, _ := s.dist(logits, history)
			want := map[int32]float64{}
			for _, x := range c {
				want[x.id] = float64(x.p)
			}
			const n = 40000
			got := map[int32]float64{}
			accepted := 0
			for range n {
				tok, ok := s.Verify(logits, history, draft)
				if ok != (tok == draft) {
					t.Fatalf("params %d draft %d: token %d, accepted %v", pi, draft, tok, ok)
				}
				if ok {
					accepted++
				}
				got[tok]++
			}
			chi2 := 0.0
			for id, pw := range want {
				e := pw * n
				chi2 += (got[id] - e) * (got[id] - e) / e
			}
			for id := range got {
				if want[id] == 0 {
					t.Fatalf("params %d draft %d: token %d has no probability but was returned", pi, draft, id)
				}
			}
			if crit := chi2Crit999[len(want)-1]; chi2 > crit {
				t.Errorf("params %d draft %d: χ² %.1f > %.1f (df %d): got %v, want %v", pi, draft, chi2, crit, len(want)-1, got, want)
			}
			if a := float64(accepted) / n; math.Abs(a-want[draft]) > 0.01 {
				t.Errorf("params %d draft %d: accepted %.3f, want p(draft) %.3f", pi, draft, a, want[draft])
			}
		}
	}
	g := New(Params{}, len(logits))
	if tok, ok := g.Verify(logits, nil, 0); tok != 0 || !ok {
		t.Fatalf("greedy verify of the argmax: %d %v", tok, ok)
	}
	if tok, ok := g.Verify(logits, nil, 1); tok != 0 || ok {
		t.Fatalf("greedy verify of another token: %d %v", tok, ok)
	}
}
