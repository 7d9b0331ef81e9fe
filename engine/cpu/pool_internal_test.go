package cpu

import (
	"sync/atomic"
	"testing"
)

// TestPoolRunsLongLoopsInParts covers loops of more items than one packed
// word can hand out (maxItems, 2^24-1): they run in parts, the later ones
// with shifted item numbers. The part size is lowered so that the test is
// quick.
func TestPoolRunsLongLoopsInParts(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		p.part = 7
		for _, n := range []int{6, 7, 8, 50} {
			hits := make([]atomic.Int32, n)
			p.Run(n, hitTask(hits))
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("threads %d n %d: item %d ran %d times", threads, n, i, h)
				}
			}
		}
		p.Close()
	}
}

type hitTask []atomic.Int32

func (h hitTask) Run(_, i int) { h[i].Add(1) }
