package speculation_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/speculation"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name  string
		ctx   []int32
		max   int
		want  []int32
		probs []float64
	}{
		{"no repetition", []int32{1, 2, 3, 4, 5, 6}, 5, nil, nil},
		{"a single repeated token is not enough", []int32{7, 1, 8, 1}, 5, nil, nil},
		{"bigram seen once", []int32{1, 2, 3, 4, 9, 1, 2}, 5, []int32{3, 4, 9, 1, 2}, []float64{2. / 3, 2. / 3, 2. / 3, 2. / 3, 2. / 3}},
		{"max caps the draft", []int32{1, 2, 3, 4, 9, 1, 2}, 2, []int32{3, 4}, []float64{2. / 3, 2. / 3}},
		{"at most 5 tokens", []int32{1, 2, 3, 4, 5, 6, 7, 8, 1, 2}, 9, []int32{3, 4, 5, 6, 7}, nil},
		{"the longest n-gram wins", []int32{5, 2, 3, 8, 1, 2, 3, 9, 0, 1, 2, 3}, 1, []int32{9}, []float64{2. / 3}},
		{"most recent occurrence, others lower the estimate", []int32{1, 2, 7, 1, 2, 8, 0, 1, 2}, 1, []int32{8}, []float64{2. / 4}},
		{"agreeing occurrences raise it", []int32{1, 2, 8, 1, 2, 8, 1, 2, 8, 1, 2}, 2,
			// the 4-gram 2 8 1 2 occurs twice before; both continue 8, 1
			[]int32{8, 1}, []float64{3. / 4, 3. / 4}},
		{"a repeated token continues into the draft", []int32{4, 4, 4}, 5, []int32{4, 4, 4, 4, 4}, []float64{2. / 3, 2. / 3, 2. / 3, 2. / 3, 2. / 3}},
		{"so does a period of 3, with its probabilities", []int32{1, 2, 3, 7, 1, 2, 3, 1, 2, 3}, 5,
			// 1 2 3 most recently ends at 7 (continuing 1, 2, 3), before at 3 (continuing 7)
			[]int32{1, 2, 3, 1, 2}, []float64{2. / 4, 2. / 3, 2. / 3, 2. / 4, 2. / 3}},
		{"a period of 2 stops at max", []int32{7, 8, 7, 8}, 3, []int32{7, 8, 7}, []float64{2. / 3, 2. / 3, 2. / 3}},
		{"too short", []int32{1, 1}, 5, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l speculation.Lookup
			var d speculation.Draft
			if err := l.Draft(context.Background(), tt.ctx, tt.max, &d); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Tokens, tt.want) {
				t.Fatalf("draft %v, want %v", d.Tokens, tt.want)
			}
			if tt.probs != nil {
				for j := range tt.probs {
					if math.Abs(d.Probs[j]-tt.probs[j]) > 1e-12 {
						t.Fatalf("probs %v, want %v", d.Probs, tt.probs)
					}
				}
			}
		})
	}
}

// head is a test DraftHead: it proposes next+1, next+2, ... with
// probability 0.9, or fails.
type head struct {
	depth int
	fail  error
	next  int32
}

func (h *head) DraftDepth() int      { return h.depth }
func (h *head) SetDrafting(bool) int { return 0 }
func (h *head) Draft(_ context.Context, next int32, n int, emit func(int32, float64)) error {
	h.next = next
	if h.fail != nil {
		return h.fail
	}
	for i := range n {
		emit(next+int32(i)+1, 0.9)
	}
	return nil
}

func TestMTPDrafter(t *testing.T) {
	h := &head{depth: 3}
	m := &speculation.MTP{Head: h}
	var d speculation.Draft
	if err := m.Draft(context.Background(), nil, 5, &d); err != nil || len(d.Tokens) != 0 {
		t.Fatalf("without a context: %v %v", d.Tokens, err)
	}
	if err := m.Draft(context.Background(), []int32{4, 5}, 5, &d); err != nil || !slices.Equal(d.Tokens, []int32{6, 7, 8}) || h.next != 5 {
		t.Fatalf("draft %v (next %d): %v", d.Tokens, h.next, err)
	}
	d.Reset()
	if err := m.Draft(context.Background(), []int32{4, 5}, 2, &d); err != nil || len(d.Tokens) != 2 {
		t.Fatalf("max 2: %v %v", d.Tokens, err)
	}
	d.Reset()
	h.fail = errors.New("boom")
	if err := m.Draft(context.Background(), []int32{4, 5}, 2, &d); err == nil {
		t.Fatal("head error lost")
	}
}
