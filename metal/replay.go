package metal

import (
	"encoding/binary"
	"fmt"

	"github.com/strata-llm/strata/engine/backend"
)

// Replaying a recorded step (engine/backend.Replayer): a session records a
// decode step's ops once per step shape (its key) and afterwards replays
// the recorded command list, so the graph code, the dispatches' building
// and their checks run once per shape instead of once per token.
//
// A replay is the recorded list run again with what varies between
// steps written where the kernels read it:
//   - every host slice the recording staged (the token ids, the rope rows,
//     norm weights a device without no-copy buffers is given) is copied
//     into its staging memory again, from the same slice: a session
//     replays only over buffers it owns;
//   - the positions (StoreKV's and Attention's, read by the kernels from
//     device memory) are rewritten for the step's pos0;
//   - the copies back to host slices are made again after the run;
//   - the handshakes' host functions run again (they read their inputs
//     from device memory when they run);
//   - the functions given to Redo (work whose ops follow the position in
//     more ways, or host work each step needs) run again and their ops
//     take the place of those they queued when recorded.
//
// A recording is kept only if the step ran as one command list (exactly
// one Sync: a step with a host op, a prompt-sized MoE, ... is not) and no
// op read something at record time that a replay would not renew: a QSA
// op outside a Redo, or a router given a host residency snapshot, makes a
// recording void.

var _ backend.Replayer = (*Backend)(nil)

// maxSteps bounds the recorded steps a Backend keeps (a qwen3next session
// cycles through 9 decode shapes, its recurrent state's sets; qwen4exp's
// through up to 36, with its indexer's pooling and scoring).
const maxSteps = 64

// step is a recorded command list.
type step struct {
	cmds    Commands
	stage   []*stageBuf // its own staging memory
	restage []restage
	pos     []posSlot
	back    []copyBack
	redo    []redo
}

// redo is a Redo's function and the items it queued, [i0, i1).
type redo struct {
	i0, i1, rel int
	fn          func(pos0 int) error
}

type restage struct {
	src []byte
	dst BufRef
}

// posSlot is a staged position: pos0 + rel at dst.
type posSlot struct {
	dst BufRef
	rel int
}

// recording is the step being recorded.
type recording struct {
	pos0  int
	syncs int // Syncs since Record
	void  string
	s     step
}

// Record implements backend.Replayer.
func (b *Backend) Record(key backend.StepKey, pos0 int) func(ok bool) {
	if b.NoReplay || len(b.steps) >= maxSteps || len(b.cmds.items) > 0 || b.err != nil {
		return func(bool) {}
	}
	b.rec = &recording{pos0: pos0}
	rec := b.rec
	return func(ok bool) {
		if b.rec != rec {
			return
		}
		b.rec = nil
		if len(b.cmds.items) > 0 {
			rec.void = "ops after its Sync"
		}
		if !ok || rec.syncs != 1 || rec.void != "" {
			b.notRecorded++
			return
		}
		if b.steps == nil {
			b.steps = map[backend.StepKey]*step{}
		}
		b.steps[key] = &rec.s
	}
}

// capturing is the recording ops are part of now: none after its Sync.
func (b *Backend) capturing() *recording {
	if b.rec != nil && b.rec.syncs == 0 {
		return b.rec
	}
	return nil
}

// voidRecording marks the step being recorded as not replayable.
func (b *Backend) voidRecording(why string) {
	if b.rec != nil && b.rec.void == "" {
		b.rec.void = why
	}
}

// Replay implements backend.Replayer.
func (b *Backend) Replay(key backend.StepKey, pos0 int) (bool, error) {
	s := b.steps[key]
	if s == nil || len(b.cmds.items) > 0 || b.err != nil || b.rec != nil {
		return false, nil
	}
	b.syncs++
	b.replays++
	defer func() {
		b.runAfter()
		b.back = b.back[:0]
		for _, st := range b.stage { // what the Redo functions staged
			st.off = 0
		}
	}()
	for _, r := range s.restage {
		copy(r.dst.Buf.Bytes()[r.dst.Off:], r.src)
	}
	if err := b.redoAll(s, pos0); err != nil || b.err != nil {
		delete(b.steps, key) // half redone
		if err == nil {
			err = b.err
		}
		b.err = nil
		return true, err
	}
	for _, p := range s.pos {
		binary.LittleEndian.PutUint32(p.dst.Buf.Bytes()[p.dst.Off:], uint32(int32(pos0+p.rel)))
	}
	if err := b.dev.Run(b.ctx, &s.cmds); err != nil {
		return true, fmt.Errorf("metal backend: replayed step: %w", err)
	}
	for _, cb := range b.back { // the Redo functions' copies back
		copy(cb.host, cb.dev)
	}
	for _, cb := range s.back {
		copy(cb.host, cb.dev)
	}
	return true, nil
}

// Forget implements backend.Replayer.
func (b *Backend) Forget(owner any) {
	for k := range b.steps {
		if k.Owner == owner {
			delete(b.steps, k)
		}
	}
}

// Redo implements backend.Replayer.
func (b *Backend) Redo(pos0 int, fn func(pos0 int) error) error {
	rec := b.capturing()
	if rec == nil {
		b.inRedo++
		defer func() { b.inRedo-- }()
		return fn(pos0)
	}
	b.cmds.Barrier() // so that the items fn queues start the same way at a replay
	i0 := len(b.cmds.items)
	b.inRedo++
	err := fn(pos0)
	b.inRedo--
	rec.s.redo = append(rec.s.redo, redo{i0: i0, i1: len(b.cmds.items), rel: pos0 - rec.pos0, fn: fn})
	return err
}

// redoAll runs s's Redo functions for pos0 and puts the items they queue
// in place of those they queued when recorded.
func (b *Backend) redoAll(s *step, pos0 int) error {
	saved := b.cmds
	defer func() { b.cmds = saved }()
	b.inRedo++
	defer func() { b.inRedo-- }()
	for _, r := range s.redo {
		b.cmds = Commands{items: []item{{barrier: true}}} // as after the Barrier Redo queued
		if err := r.fn(pos0 + r.rel); err != nil {
			return err
		}
		if err := b.cmds.Err(); err != nil {
			return err
		}
		items := b.cmds.items[1:]
		if len(items) != r.i1-r.i0 {
			return fmt.Errorf("metal backend: a replayed step's ops changed shape (%d items where %d were recorded)", len(items), r.i1-r.i0)
		}
		copy(s.cmds.items[r.i0:r.i1], items)
	}
	return nil
}

// ReplayStats count the recorded steps kept, the replays run and the
// recordings dropped (not one command list, or void).
type ReplayStats struct{ Steps, Replays, Dropped int }

// ReplayStats returns the counts since the Backend was made.
func (b *Backend) ReplayStats() ReplayStats {
	return ReplayStats{Steps: len(b.steps), Replays: b.replays, Dropped: b.notRecorded}
}

// posRef stages a position read by a kernel: a recording rewrites it at
// each replay.
func (b *Backend) posRef(pos0 int) BufRef {
	var a [4]byte
	binary.LittleEndian.PutUint32(a[:], uint32(int32(pos0)))
	r := b.reserve(4)
	if r.Buf == nil {
		return r
	}
	copy(r.Buf.Bytes()[r.Off:], a[:])
	if rec := b.capturing(); rec != nil {
		rec.s.pos = append(rec.s.pos, posSlot{dst: r, rel: pos0 - rec.pos0})
	}
	return r
}
