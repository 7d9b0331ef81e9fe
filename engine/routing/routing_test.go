package routing

import (
	"math"
	"slices"
	"testing"
)

func TestTopK(t *testing.T) {
	for _, tc := range []struct {
		p    []float32
		k    int
		want []int
	}{
		{[]float32{0.1, 0.5, 0.2, 0.2}, 2, []int{1, 2}},
		{[]float32{0.3, 0.3, 0.3}, 3, []int{0, 1, 2}},
		{[]float32{0.9}, 1, []int{0}},
		{[]float32{0, 0, 1, 0}, 1, []int{2}},
	} {
		if got := TopK(tc.p, tc.k, nil); !slices.Equal(got, tc.want) {
			t.Errorf("TopK(%v, %d) = %v, want %v", tc.p, tc.k, got, tc.want)
		}
	}
}

func TestExact(t *testing.T) {
	p := []float32{0.05, 0.4, 0.1, 0.3, 0.15}
	sel := make([]int32, 3)
	wts := make([]float32, 3)
	Exact(p, 3, 0, make([]int, 0, 3), sel, wts)
	if !slices.Equal(sel, []int32{1, 3, 4}) {
		t.Fatalf("sel = %v", sel)
	}
	sum := float32(0.4 + 0.3 + 0.15)
	for j, e := range []float32{0.4 / sum, 0.3 / sum, 0.15 / sum} {
		if math.Abs(float64(wts[j]-e)) > 1e-6 {
			t.Errorf("wts[%d] = %g, want %g", j, wts[j], e)
		}
	}
	Exact(p, 3, 2.5, make([]int, 0, 3), sel, wts)
	if math.Abs(float64(wts[0]-2.5*0.4/sum)) > 1e-6 {
		t.Errorf("scaled weight %g", wts[0])
	}
	// All-zero probabilities: the clamp keeps the weights finite.
	Exact(make([]float32, 4), 2, 0, nil, sel[:2], wts[:2])
	for _, w := range wts[:2] {
		if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
			t.Fatalf("weight %g", w)
		}
	}
}
