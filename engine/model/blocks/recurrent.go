package blocks

import (
	"github.com/strata-llm/strata/engine/backend"
)

// Recurrent is a session's recurrent state (DeltaNet layers, qwen4exp's
// PLE convolution history) with a ring of checkpoints of its recent
// positions, so that the session can roll back up to Checkpoints-1
// positions (a speculative verification of that many drafts) or to the
// start. Each layer holds a list of float32 buffers (its "rows", e.g. a
// DeltaNet's convolution and delta-rule state); layers without state hold
// none.
//
// A forward pass of nt rows at pos0: Begin(pos0, nt), then each layer
// advances Live(il) and fills Snaps(il) (the states after the batch's last
// len(Snaps) rows, oldest first); Commit(pos0, nt) on success, or
// Restore(pos0) on error.
type Recurrent struct {
	Checkpoints int
	live        [][][]float32 // [layer][row]
	// ring[c][il] is layer il's state after ringPos[c] tokens (-1: none);
	// the state after n tokens, if kept, is in slot n % Checkpoints.
	ring    [][][][]float32
	ringPos []int
	slots   []int // ring slots the current batch fills
	snaps   [][][]float32
	any     bool
}

// NewRecurrent allocates zero state for layers whose buffers have the
// lengths sizes[il] (nil: a layer without state) and checkpoints slots.
func NewRecurrent(be backend.Backend, sizes [][]int, checkpoints int) *Recurrent {
	r := &Recurrent{Checkpoints: checkpoints, live: make([][][]float32, len(sizes)),
		ring: make([][][][]float32, checkpoints), ringPos: make([]int, checkpoints)}
	alloc := func(il int) [][]float32 {
		bs := make([][]float32, len(sizes[il]))
		for j, n := range sizes[il] {
			bs[j] = be.Alloc(n)
		}
		return bs
	}
	for il := range sizes {
		if len(sizes[il]) > 0 {
			r.any = true
		}
		r.live[il] = alloc(il)
	}
	for c := range r.ring {
		r.ring[c] = make([][][]float32, len(sizes))
		for il := range sizes {
			r.ring[c][il] = alloc(il)
		}
		r.ringPos[c] = -1
	}
	return r
}

// Any reports whether some layer has state (else any rollback works).
func (r *Recurrent) Any() bool { return r.any }

// Live is layer il's current state buffers.
func (r *Recurrent) Live(il int) [][]float32 { return r.live[il] }

// Snaps are the buffers to fill with layer il's state after each of the
// current batch's last len(Snaps) rows, oldest first (valid until the next
// Snaps call).
func (r *Recurrent) Snaps(il int) [][][]float32 {
	r.snaps = r.snaps[:0]
	for _, c := range r.slots {
		r.snaps = append(r.snaps, r.ring[c][il])
	}
	return r.snaps
}

// Kept reports whether the state after n of cur tokens is available: the
// start, the present, or a checkpoint in the ring.
func (r *Recurrent) Kept(n, cur int) bool {
	return !r.any || n == 0 || n == cur || r.ringPos[n%r.Checkpoints] == n
}

// Truncate goes back from cur to n tokens (Kept(n, cur) must hold).
func (r *Recurrent) Truncate(n, cur int) {
	if n != cur {
		r.Restore(n)
	}
	for c, p := range r.ringPos {
		if p > n {
			r.ringPos[c] = -1
		}
	}
}

// Restore sets the live state to the state after n tokens, which must be
// kept (n = 0 or a ring checkpoint).
func (r *Recurrent) Restore(n int) {
	for il, bs := range r.live {
		for j, b := range bs {
			if n == 0 {
				clear(b)
			} else {
				copy(b, r.ring[n%r.Checkpoints][il][j])
			}
		}
	}
}

// Begin picks the checkpoints of a batch of nt rows at pos0: the states
// after its last k rows, in the slots of positions pos0+nt-k+1 .. pos0+nt,
// never pos0's own slot, which Restore needs if the pass fails: k =
// min(nt, Checkpoints-1), less when a batch of Checkpoints rows or more
// would reach pos0+j·Checkpoints (then k = nt mod Checkpoints: a failed
// prefill of 9 rows at 38 used to overwrite slot 6 with the state after
// 46 and restore that).
func (r *Recurrent) Begin(pos0, nt int) {
	k := min(nt, r.Checkpoints-1)
	if nt >= r.Checkpoints {
		k = min(k, nt%r.Checkpoints)
	}
	r.slots = r.slots[:0]
	for i := 0; i < k; i++ {
		c := (pos0 + nt - k + 1 + i) % r.Checkpoints
		r.ringPos[c] = -1
		r.slots = append(r.slots, c)
	}
}

// Commit records the batch's checkpoints after a successful pass.
func (r *Recurrent) Commit(pos0, nt int) {
	k := len(r.slots)
	for i, c := range r.slots {
		r.ringPos[c] = pos0 + nt - k + 1 + i
	}
}

// Bytes is what the state and its checkpoints hold.
func (r *Recurrent) Bytes() int64 {
	var n int64
	add := func(ls [][][]float32) {
		for _, bs := range ls {
			for _, b := range bs {
				n += 4 * int64(len(b))
			}
		}
	}
	add(r.live)
	for _, ls := range r.ring {
		add(ls)
	}
	return n
}

// StateSizes are the lengths of a DeltaNet layer's state buffers in a
// Recurrent: the convolution's and the delta rule's.
func (d *DeltaNet) StateSizes() []int {
	return []int{d.Channels() * (d.Taps - 1), d.P.ValueHeads * d.P.Dim * d.P.Dim}
}

// DeltaStateOf views the first two buffers of a layer's Recurrent state
// as a DeltaState.
func DeltaStateOf(bs [][]float32) DeltaState { return DeltaState{Conv: bs[0], S: bs[1]} }
