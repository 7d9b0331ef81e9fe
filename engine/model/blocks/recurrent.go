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
// The ring is the state: the state after n tokens, if kept, is in slot
// n % Checkpoints, and the present (Len() tokens) always is. A batch reads
// From (the present's slot, in place) and writes its last row's state into
// State, a spare set of buffers that Commit swaps into that row's slot
// (the slot's old buffers become the spare); the states after its other
// last rows go into their slots through Snaps. A decode step so copies no
// state (it copied all of it, 79 MB per token at Qwen3-Next-80B-A3B's
// shapes, when a live state was updated in place and then checkpointed),
// a rollback is a slot index, and a failed pass leaves From untouched.
//
// A forward pass of nt rows at pos0: Begin(pos0, nt), then each layer
// advances From(il) into State(il) and fills Snaps(il) (the states after
// the batch's last len(Snaps) rows, oldest first; nil entries are skipped);
// Commit on success. On error nothing needs undoing.
type Recurrent struct {
	Checkpoints int
	sets        [][][][]float32 // [set][layer][row]: Checkpoints+1 sets
	// ring[c] is the set of slot c, holding the state after ringPos[c]
	// tokens (-1: none); spare is the set no slot holds.
	ring    []int
	ringPos []int
	spare   int
	pos0    int   // the current batch's start
	end     int   // its end (pos0 + rows)
	slots   []int // ring slots the current batch fills, the last row's last
	slotPos []int // the positions their states are after
	snaps   [][][]float32
	any     bool
}

// NewRecurrent allocates zero state for layers whose buffers have the
// lengths sizes[il] (nil: a layer without state) and checkpoints slots.
func NewRecurrent(be backend.Backend, sizes [][]int, checkpoints int) *Recurrent {
	r := &Recurrent{Checkpoints: checkpoints, sets: make([][][][]float32, checkpoints+1),
		ring: make([]int, checkpoints), ringPos: make([]int, checkpoints), spare: checkpoints}
	for il := range sizes {
		if len(sizes[il]) > 0 {
			r.any = true
		}
	}
	for c := range r.sets {
		r.sets[c] = make([][][]float32, len(sizes))
		for il := range sizes {
			bs := make([][]float32, len(sizes[il]))
			for j, n := range sizes[il] {
				bs[j] = be.Alloc(n)
			}
			r.sets[c][il] = bs
		}
	}
	for c := range r.ring {
		r.ring[c], r.ringPos[c] = c, -1
	}
	r.ringPos[0] = 0 // the start: zero state
	return r
}

// Any reports whether some layer has state (else any rollback works).
func (r *Recurrent) Any() bool { return r.any }

// From is layer il's state before the current batch (the present's slot;
// read in place, never written by the batch).
func (r *Recurrent) From(il int) [][]float32 {
	return r.sets[r.ring[r.pos0%r.Checkpoints]][il]
}

// State is the buffers the current batch writes layer il's state after
// its last row into (the spare set).
func (r *Recurrent) State(il int) [][]float32 { return r.sets[r.spare][il] }

// Sets are the indices of the state sets the current batch reads (From)
// and writes (State): every layer's buffers are those of the same sets.
func (r *Recurrent) Sets() (from, spare int) { return r.ring[r.pos0%r.Checkpoints], r.spare }

// Present is layer il's state after the tokens so far (outside a batch).
func (r *Recurrent) Present(il int) [][]float32 {
	return r.sets[r.ring[r.end%r.Checkpoints]][il]
}

// Snaps are the buffers to fill with layer il's state after each of the
// current batch's last len(Snaps) rows, oldest first (valid until the next
// Snaps call); nil entries (the last row's, which goes to State, and any
// row whose slot is From's) are to be skipped.
func (r *Recurrent) Snaps(il int) [][][]float32 {
	r.snaps = r.snaps[:0]
	k := min(r.end-r.pos0, r.Checkpoints-1)
	for p := r.end - k + 1; p <= r.end; p++ {
		if p == r.end || p%r.Checkpoints == r.pos0%r.Checkpoints {
			r.snaps = append(r.snaps, nil)
		} else {
			r.snaps = append(r.snaps, r.sets[r.ring[p%r.Checkpoints]][il])
		}
	}
	return r.snaps
}

// Kept reports whether the state after n of cur tokens is available: the
// start, the present, or a checkpoint in the ring.
func (r *Recurrent) Kept(n, cur int) bool {
	return !r.any || n == 0 || n == cur || r.ringPos[n%r.Checkpoints] == n
}

// Truncate goes back from cur to n tokens (Kept(n, cur) must hold): the
// present becomes n's slot, cleared when n is 0 and the slot holds a
// later position. No state is copied.
func (r *Recurrent) Truncate(n, cur int) {
	if n == 0 && r.ringPos[0] != 0 {
		for _, bs := range r.sets[r.ring[0]] {
			for _, b := range bs {
				clear(b)
			}
		}
		r.ringPos[0] = 0
	}
	for c, p := range r.ringPos {
		if p > n {
			r.ringPos[c] = -1
		}
	}
	r.pos0, r.end = n, n
}

// Begin picks the checkpoints of a batch of nt rows at pos0: the states
// after its last k = min(nt, Checkpoints-1) rows, in the slots of
// positions pos0+nt-k+1 .. pos0+nt, except pos0's own slot (From, which
// the batch reads and a failed pass must leave as it was; only the last
// row's state may take that slot, at Commit). The last row's slot keeps
// its old checkpoint until Commit; the others are invalid from here on.
func (r *Recurrent) Begin(pos0, nt int) {
	k := min(nt, r.Checkpoints-1)
	r.pos0, r.end = pos0, pos0+nt
	r.slots, r.slotPos = r.slots[:0], r.slotPos[:0]
	for p := pos0 + nt - k + 1; p <= pos0+nt; p++ {
		c := p % r.Checkpoints
		if p < pos0+nt {
			if c == pos0%r.Checkpoints {
				continue
			}
			r.ringPos[c] = -1
		}
		r.slots = append(r.slots, c)
		r.slotPos = append(r.slotPos, p)
	}
}

// Slots are the ring slots the current batch (since Begin) fills, oldest
// first, the last row's last: slot i holds the state after position
// SlotPos(i) — a session keeps what belongs to each checkpoint beside it
// (qwen3next's MTP hidden state).
func (r *Recurrent) Slots() []int { return r.slots }

// SlotPos is the position (tokens so far) whose state Slots()[i] holds.
func (r *Recurrent) SlotPos(i int) int { return r.slotPos[i] }

// Commit records the batch's checkpoints after a successful pass: the
// spare set, holding the last row's state, takes that row's slot.
func (r *Recurrent) Commit() {
	for i, c := range r.slots {
		r.ringPos[c] = r.slotPos[i]
	}
	last := r.slots[len(r.slots)-1]
	r.ring[last], r.spare = r.spare, r.ring[last]
	r.pos0 = r.end
}

// Abort ends a failed batch: its intermediate checkpoints were cleared by
// Begin, From is as it was and stays the present.
func (r *Recurrent) Abort() { r.end = r.pos0 }

// Bytes is what the state and its checkpoints hold.
func (r *Recurrent) Bytes() int64 {
	var n int64
	for _, ls := range r.sets {
		for _, bs := range ls {
			for _, b := range bs {
				n += 4 * int64(len(b))
			}
		}
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
// (nil: a skipped snapshot).
func DeltaStateOf(bs [][]float32) DeltaState {
	if bs == nil {
		return DeltaState{}
	}
	return DeltaState{Conv: bs[0], S: bs[1]}
}
