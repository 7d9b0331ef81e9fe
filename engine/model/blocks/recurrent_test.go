package blocks

import (
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
)

// TestRecurrentRing drives a Recurrent as a session does, with a fake
// layer whose state after n tokens is n: every kept checkpoint and the
// present must read back their own position; a failed batch (no Commit)
// leaves the present as it was, also for batches of Checkpoints rows or
// more whose positions wrap onto the present's slot.
func TestRecurrentRing(t *testing.T) {
	be := cpu.NewBackend(1)
	const C = 8
	r := NewRecurrent(be, [][]int{{1}}, C)
	cur := 0
	step := func(nt int, fail bool) {
		t.Helper()
		r.Begin(cur, nt)
		from := r.From(0)[0][0]
		if int(from) != cur {
			t.Fatalf("batch at %d reads state %v", cur, from)
		}
		snaps := r.Snaps(0)
		for i, s := range snaps {
			if s != nil {
				s[0][0] = float32(cur + nt - len(snaps) + 1 + i)
			}
		}
		r.State(0)[0][0] = float32(cur + nt)
		if fail {
			r.Abort()
			return
		}
		r.Commit()
		cur += nt
	}
	check := func() {
		t.Helper()
		if got := r.Present(0)[0][0]; int(got) != cur {
			t.Fatalf("present after %d tokens holds %v", cur, got)
		}
		for n := 0; n <= cur; n++ {
			if n > 0 && n != cur && r.Kept(n, cur) && int(r.sets[r.ring[n%C]][0][0][0]) != n {
				t.Fatalf("checkpoint %d holds %v", n, r.sets[r.ring[n%C]][0][0][0])
			}
		}
	}
	for _, b := range []struct {
		nt   int
		fail bool
	}{{5, false}, {1, false}, {9, true}, {8, true}, {16, false}, {3, false}, {8, false}, {1, true}, {1, false}, {7, false}} {
		step(b.nt, b.fail)
		check()
	}
	if !r.Kept(cur-C+1, cur) {
		t.Fatalf("after a batch of 7, position %d is not kept", cur-C+1)
	}
	for _, n := range []int{cur - 3, cur - 5, 0} {
		if !r.Kept(n, cur) {
			t.Fatalf("%d not kept at %d", n, cur)
		}
		r.Truncate(n, cur)
		cur = n
		check()
	}
	step(2, false)
	check()
}
