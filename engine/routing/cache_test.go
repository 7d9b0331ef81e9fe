package routing

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func probs(v ...float32) []float32 {
	var s float32
	for _, x := range v {
		s += x
	}
	for i := range v {
		v[i] /= s
	}
	return v
}

func res(n int, ids ...int) []bool {
	r := make([]bool, n)
	for _, i := range ids {
		r[i] = true
	}
	return r
}

// p ranks experts 0 > 1 > 2 > ... > 7.
var ranked = probs(30, 20, 15, 10, 9, 8, 5, 3)

func TestCacheRoute(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        CacheRoute
		resident []bool
		k        int
		want     []int32
		swapped  int
	}{
		{"off", CacheRoute{}, res(8, 5, 6), 3, []int32{0, 1, 2}, 0},
		{"none resident", CacheRoute{Enabled: true, Lambda: 4, MaxRank: 8}, res(8), 3, []int32{0, 1, 2}, 0},
		{"all resident", CacheRoute{Enabled: true, Lambda: 4, MaxRank: 8}, res(8, 0, 1, 2, 3, 4, 5, 6, 7), 3, []int32{0, 1, 2}, 0},
		{"unbounded MoCE lets a deep resident in", CacheRoute{Enabled: true, Lambda: 4}, res(8, 6), 3, []int32{0, 1, 6}, 1},
		{"window M=5 keeps it out", CacheRoute{Enabled: true, Lambda: 4, MaxRank: 5}, res(8, 6), 3, []int32{0, 1, 2}, 0},
		{"window M=5 lets rank 4 in", CacheRoute{Enabled: true, Lambda: 2, MaxRank: 5}, res(8, 4), 3, []int32{0, 1, 4}, 1},
		{"J = k keeps the true top-k", CacheRoute{Enabled: true, Lambda: 100, AlwaysKept: 3}, res(8, 3, 4), 3, []int32{0, 1, 2}, 0},
		{"J = 0 may replace the top-1", CacheRoute{Enabled: true, Lambda: 100}, res(8, 3, 4, 5), 3, []int32{3, 4, 5}, 3},
		{"protected ranks are not scaled", CacheRoute{Enabled: true, Lambda: 1.6, ProtectedTop: 8}, res(8, 3), 3, []int32{0, 1, 2}, 0},
		{"λ 1 is exact", CacheRoute{Enabled: true, Lambda: 1}, res(8, 7), 3, []int32{0, 1, 2}, 0},
		{"mass window", CacheRoute{Enabled: true, Lambda: 4, MaxMass: 0.8}, res(8, 4, 6), 3, []int32{0, 1, 4}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.c.Validate(tc.k, 8); err != nil {
				t.Fatal(err)
			}
			sel, wts := make([]int32, tc.k), make([]float32, tc.k)
			var sc Scratch
			d := tc.c.Route(ranked, tc.k, 0, tc.resident, &sc, sel, wts)
			if !slices.Equal(sel, tc.want) {
				t.Fatalf("chose %v, want %v", sel, tc.want)
			}
			if d.Swapped != tc.swapped || math.Abs(d.Agreement-float64(tc.k-tc.swapped)/float64(tc.k)) > 1e-9 {
				t.Fatalf("decision %+v", d)
			}
			var sum, mass float32
			for i, e := range sel {
				sum += wts[i]
				mass += ranked[e]
			}
			if math.Abs(float64(sum-1)) > 1e-6 {
				t.Fatalf("weights sum to %g", sum)
			}
			trueMass := ranked[0] + ranked[1] + ranked[2]
			if wantKL := math.Log(float64(trueMass / mass)); math.Abs(d.KL-wantKL) > 1e-6 {
				t.Fatalf("KL %g, want %g", d.KL, wantKL)
			}
		})
	}
}

// TestCacheRouteOffIsExact: with the policy off (or no residency) the
// choice and weights are Exact's bit for bit.
func TestCacheRouteOffIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var sc Scratch
	for trial := 0; trial < 200; trial++ {
		n, k := 8+rng.IntN(120), 1+rng.IntN(8)
		p := make([]float32, n)
		for i := range p {
			p[i] = rng.Float32()
		}
		r := make([]bool, n)
		for i := range r {
			r[i] = rng.IntN(2) == 0
		}
		s1, w1 := make([]int32, k), make([]float32, k)
		s2, w2 := make([]int32, k), make([]float32, k)
		Exact(p, k, 2.5, nil, s1, w1)
		CacheRoute{Lambda: 3}.Route(p, k, 2.5, r, &sc, s2, w2)
		for i := range s1 {
			if s1[i] != s2[i] || math.Float32bits(w1[i]) != math.Float32bits(w2[i]) {
				t.Fatalf("trial %d: off differs from Exact", trial)
			}
		}
	}
}

// TestCacheRouteWindowBound: whatever is resident, the chosen experts keep
// the true top-J and rank inside the true top-M.
func TestCacheRouteWindowBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var sc Scratch
	for trial := 0; trial < 500; trial++ {
		n, k := 16+rng.IntN(100), 2+rng.IntN(8)
		c := CacheRoute{Enabled: true, Lambda: 1 + 5*rng.Float64(), AlwaysKept: rng.IntN(k + 1), MaxRank: k + rng.IntN(12), ProtectedTop: rng.IntN(3)}
		p := make([]float32, n)
		for i := range p {
			p[i] = rng.Float32() + 1e-3
		}
		r := make([]bool, n)
		for i := range r {
			r[i] = rng.IntN(3) == 0
		}
		sel, wts := make([]int32, k), make([]float32, k)
		c.Route(p, k, 0, r, &sc, sel, wts)
		order := TopK(p, n, nil)
		rankOf := make([]int, n)
		for i, e := range order {
			rankOf[e] = i
		}
		seen := map[int32]bool{}
		for _, e := range sel {
			if seen[e] {
				t.Fatalf("trial %d: expert %d chosen twice", trial, e)
			}
			seen[e] = true
			if rankOf[e] >= c.MaxRank {
				t.Fatalf("trial %d: expert of rank %d outside the window M=%d", trial, rankOf[e], c.MaxRank)
			}
		}
		for _, e := range order[:c.AlwaysKept] {
			if !seen[int32(e)] {
				t.Fatalf("trial %d: true top-%d expert %d dropped", trial, c.AlwaysKept, e)
			}
		}
	}
}

func TestCacheRouteValidate(t *testing.T) {
	for _, c := range []CacheRoute{
		{Enabled: true, Lambda: 0.5},
		{Enabled: true, Lambda: 2, AlwaysKept: 9},
		{Enabled: true, Lambda: 2, MaxRank: 3},
		{Enabled: true, Lambda: 2, MaxMass: 1.5},
		{Enabled: true, Lambda: math.NaN()},
	} {
		if c.Validate(4, 16) == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestDescribeMatchesRoute: the telemetry of a choice made elsewhere
// (Describe) is what Route reported when it made it, policy on or off,
// with and without residency.
func TestDescribeMatchesRoute(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var sc Scratch
	for trial := 0; trial < 300; trial++ {
		n, k := 16+rng.IntN(100), 2+rng.IntN(8)
		c := CacheRoute{Enabled: trial%3 != 0, Lambda: 1 + 5*rng.Float64(), AlwaysKept: rng.IntN(k + 1), MaxRank: k + rng.IntN(12)}
		p := make([]float32, n)
		for i := range p {
			p[i] = rng.Float32() + 1e-3
		}
		var r []bool
		if trial%5 != 0 {
			r = make([]bool, n)
			for i := range r {
				r[i] = rng.IntN(3) == 0
			}
		}
		sel, wts := make([]int32, k), make([]float32, k)
		want := c.Route(p, k, 0, r, &sc, sel, wts)
		if got := c.Describe(p, k, sel, r); got != want {
			t.Fatalf("trial %d: Describe %+v, Route %+v", trial, got, want)
		}
	}
}
