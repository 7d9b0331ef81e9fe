package usage

import (
	"math"
	"slices"
	"testing"
)

// TestBlend: the blended score is the history's count plus the profile's
// per-token rate × Prior, so the ranking follows the profile on a fresh
// history and the history once it holds many more tokens than Prior; the
// history's share is T/(T+Prior).
func TestBlend(t *testing.T) {
	prof := New(testID, 1, 4)
	for i := 0; i < 1000; i++ { // a corpus of 1,000 tokens preferring expert 3, then 2
		prof.Token()
		prof.Add(0, []int32{3})
		if i%2 == 0 {
			prof.Add(0, []int32{2})
		}
	}
	user := func(tokens int) *History { // this user's traffic prefers expert 0, then 1
		h := New(testID, 1, 4)
		for i := 0; i < tokens; i++ {
			h.Token()
			h.Add(0, []int32{0})
			if i%2 == 0 {
				h.Add(0, []int32{1})
			}
		}
		return h
	}
	for _, tc := range []struct {
		name   string
		b      Blend
		order  []Expert
		weight float64
		score0 float32 // expert 3's score
	}{
		{"profile alone", Blend{Profile: prof}, []Expert{{0, 3}, {0, 2}}, 0, PriorTokens},
		{"empty history", Blend{History: user(0), Profile: prof}, []Expert{{0, 3}, {0, 2}}, 0, PriorTokens},
		{"a little history", Blend{History: user(100), Profile: prof}, []Expert{{0, 3}, {0, 2}, {0, 0}, {0, 1}}, 100.0 / 612, PriorTokens},
		{"much history", Blend{History: user(5000), Profile: prof}, []Expert{{0, 0}, {0, 1}, {0, 3}, {0, 2}}, 5000.0 / 5512, PriorTokens},
		{"history alone", Blend{History: user(10)}, []Expert{{0, 0}, {0, 1}}, 1, 0},
		{"prior 10", Blend{History: user(100), Profile: prof, Prior: 10}, []Expert{{0, 0}, {0, 1}, {0, 3}, {0, 2}}, 100.0 / 110, 10},
		{"neither", Blend{}, nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Hottest(); !slices.Equal(got, tc.order) {
				t.Errorf("order %v, want %v", got, tc.order)
			}
			if w := tc.b.HistoryWeight(); math.Abs(w-tc.weight) > 1e-9 {
				t.Errorf("history weight %g, want %g", w, tc.weight)
			}
			if tc.b.History == nil && tc.b.Profile == nil {
				return
			}
			if s := tc.b.Score(0, 3); math.Abs(float64(s-tc.score0)) > 1e-3 {
				t.Errorf("expert 3 scores %g, want %g", s, tc.score0)
			}
			if s, f := tc.b.Score(0, 1), tc.b.Scorer()(0, 1); s != f {
				t.Errorf("Score %g, Scorer %g", s, f)
			}
		})
	}
}

// TestBlendProfileWithoutTokens: a profile that recorded no token count
// is read as rates per selection (its counts over the layer's tokens).
func TestBlendProfileWithoutTokens(t *testing.T) {
	prof := New(testID, 2, 2)
	for i := 0; i < 10; i++ {
		prof.Add(0, []int32{1})
		prof.Add(1, []int32{0})
	}
	b := Blend{Profile: prof}
	if s := b.Score(0, 1); math.Abs(float64(s)-PriorTokens) > 1e-3 {
		t.Fatalf("score %g, want %d", s, PriorTokens)
	}
	empty := Blend{Profile: New(testID, 2, 2)}
	if s, w := empty.Score(0, 0), empty.HistoryWeight(); s != 0 || w != 0 {
		t.Fatalf("empty profile: score %g, weight %g", s, w)
	}
}
