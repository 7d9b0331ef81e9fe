package blocks

import (
	"math"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
)

// TestMTPCache drives an MTPCache beside a Recurrent as a session does,
// with h_p = p+1 in every value: after batches of 1..5 rows, the h a batch
// at the present or at any kept checkpoint starts from is h_{pos−1};
// Truncate to a checkpoint restores that h as the present.
func TestMTPCache(t *testing.T) {
	be := cpu.NewBackend(1)
	defer be.Close()
	const C, embd = 8, 3
	r := NewRecurrent(be, [][]int{{1}}, C)
	var c MTPCache
	c.Enable(be, 2, 64, 4, embd, 2, C)
	if c.Valid != 0 || c.Bytes() <= 0 || c.KV.K[2] == nil || c.KV.K[0] != nil {
		t.Fatalf("enabled: valid %d, %d bytes", c.Valid, c.Bytes())
	}
	h := func(p int) float32 { return float32(p + 1) } // h_p
	cur := 0
	batch := func(nt int) {
		r.Begin(cur, nt)
		hn := make([]float32, nt*embd)
		for i := range hn {
			hn[i] = h(cur + i/embd)
		}
		c.Keep(r, hn, cur, nt, embd)
		r.Commit()
		cur += nt
	}
	for _, nt := range []int{5, 1, 2, 1, 1, 3, 1} {
		batch(nt)
		if c.Valid != cur || c.HPrev(cur)[0] != h(cur-1) || c.HPrev(0)[0] != 0 {
			t.Fatalf("at %d: valid %d, h %v", cur, c.Valid, c.HPrev(cur))
		}
	}
	checked := 0
	for n := cur - 1; n > cur-C && n > 0; n-- {
		if !r.Kept(n, cur) {
			continue
		}
		checked++
		if got := c.HPrev(n); got[0] != h(n-1) || got[embd-1] != h(n-1) {
			t.Fatalf("checkpoint %d of %d: h %v, want %v", n, cur, got, h(n-1))
		}
	}
	if checked < C-2 {
		t.Fatalf("%d checkpoints kept of the last %d positions", checked, C-1)
	}
	back := cur - 3
	r.Truncate(back, cur)
	c.Truncate(back)
	cur = back
	if c.Valid != back || c.HPrev(back)[0] != h(back-1) {
		t.Fatalf("truncated to %d: valid %d, h %v", back, c.Valid, c.HPrev(back))
	}
	c.Truncate(0)
	if c.Valid != 0 || c.HPrev(0)[0] != 0 {
		t.Fatalf("truncated to 0: valid %d", c.Valid)
	}
}

// TestArgmaxProb: the first most likely token and its softmax probability.
func TestArgmaxProb(t *testing.T) {
	for _, tt := range []struct {
		l    []float32
		best int32
		p    float64
	}{
		{[]float32{0, 0}, 0, 0.5},
		{[]float32{1, 3, 3}, 1, 1 / (2 + math.Exp(-2))}, // a tie: the first
		{[]float32{-1, 2, 0}, 1, 1 / (1 + math.Exp(-3) + math.Exp(-2))},
	} {
		best, p := ArgmaxProb(tt.l)
		if best != tt.best || math.Abs(p-tt.p) > 1e-12 {
			t.Errorf("ArgmaxProb(%v) = %d, %v; want %d, %v", tt.l, best, p, tt.best, tt.p)
		}
	}
}
