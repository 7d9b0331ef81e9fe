package metal

import (
	"context"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/routing"
)

// One command buffer per decode step (engine/backend.Handshaker): a MoE
// layer of a few rows (a decode step, a speculative verification) records
// its router, Route (the choices and weights into device memory), a
// handshake, the experts through a location table and the combine with
// the weights read on the device. At the handshake the host (the MoE
// block) reads the choices, fetches the experts from its provider and
// gives each to the backend: Bind points the table at the expert where
// the provider read it, when that is an arena AllocHost made (the Mac's
// no-copy buffers, the emulator's shared memory), and Put copies it into
// a slot of device memory otherwise (a file-backed provider, an arena in
// other memory, an arena part beyond MaxBases, or a fetch whose experts
// do not all fit the arena at once, where the provider reuses a slot as
// soon as its expert is copied). The GPU then goes on. The step's only
// Sync is the one that reads the logits. Up to 4 rows per batch take this
// path (engine/model/blocks).

var _ backend.Handshaker = (*Backend)(nil)

// Handshake implements backend.Handshaker (Commands.Signal): the
// AfterRun functions of the handshake before it run first (the ops
// between them have completed).
func (b *Backend) Handshake(fn func(ctx context.Context) error) {
	b.cmds.Signal(func(ctx context.Context) error {
		b.runAfter()
		return fn(ctx)
	})
}

// Resume implements backend.Handshaker (Commands.Resume).
func (b *Backend) Resume() { b.cmds.Resume() }

// AfterRun implements backend.Handshaker.
func (b *Backend) AfterRun(fn func()) { b.after = append(b.after, fn) }

func (b *Backend) runAfter() {
	for len(b.after) > 0 {
		fns := b.after
		b.after = nil
		for _, fn := range fns {
			fn()
		}
	}
}

// ExpertLoads returns how the handshakes gave experts to the device since
// the Backend was made.
func (b *Backend) ExpertLoads() backend.ExpertLoads { return b.loads }

// expertSlots are n experts' weights in device memory: slot k at
// k·slotBytes holds gate, up and down at off[0..2] (256-byte aligned, as
// the Arena lays out its slots). The location table locs holds, per
// expert, where each of its three matrices is: base 0 (mem) at a slot's
// offset (Put), or an arena part of the backend (Bind).
type expertSlots struct {
	b                    *Backend
	experts, n, embd, ff int
	t                    [3]ggml.Type
	size                 [3]int // bytes of gate, up, down
	off                  [3]int
	slotBytes            int
	mem, locs            Buffer
}

type slotsKey struct {
	experts, n, embd, ff int
	t                    [3]ggml.Type
}

// ExpertSlots implements backend.Handshaker. Slots of one shape are made
// once per Backend and shared by every layer (and session) using that
// shape: a handshake refills them only after the ops before it, the
// previous layer's experts included, have completed.
func (b *Backend) ExpertSlots(experts, n, embd, ff int, t [3]ggml.Type) (backend.ExpertSlots, error) {
	key := slotsKey{experts, n, embd, ff, t}
	if s, ok := b.slots[key]; ok {
		return s, nil
	}
	if n < 1 || n > experts || embd <= 0 || ff <= 0 {
		return nil, fmt.Errorf("metal backend: expert slots: %d of %d experts, %d×%d", n, experts, embd, ff)
	}
	s := &expertSlots{b: b, experts: experts, n: n, embd: embd, ff: ff, t: t}
	for i, d := range [3][2]int{{ff, embd}, {ff, embd}, {embd, ff}} {
		wt, err := weightType(t[i])
		if err != nil {
			return nil, fmt.Errorf("metal backend: expert slots: %w", err)
		}
		if d[1]%32 != 0 || d[1]%wt.BlockVals != 0 {
			return nil, fmt.Errorf("metal backend: expert slots: %s rows of %d values", t[i], d[1])
		}
		s.size[i] = d[0] * wt.RowBytes(d[1])
		s.off[i] = s.slotBytes
		s.slotBytes += (s.size[i] + 255) &^ 255
	}
	var err error
	if s.mem, err = b.dev.Alloc(n * s.slotBytes); err != nil {
		return nil, fmt.Errorf("metal backend: expert slots: %w", err)
	}
	if s.locs, err = b.dev.Alloc(8 * 3 * experts); err != nil {
		return nil, fmt.Errorf("metal backend: expert location table: %w", err)
	}
	if b.slots == nil {
		b.slots = map[slotsKey]*expertSlots{}
	}
	b.slots[key] = s
	return s, nil
}

// Put implements backend.ExpertSlots.
func (s *expertSlots) Put(k int, expert int32, w backend.ExpertWeights) error {
	if k < 0 || k >= s.n || expert < 0 || int(expert) >= s.experts {
		return fmt.Errorf("metal backend: expert %d into slot %d (%d slots, %d experts)", expert, k, s.n, s.experts)
	}
	mem := s.mem.Bytes()[k*s.slotBytes:]
	for i, p := range s.mats(w) {
		if p.t != s.t[i] || len(p.b) != s.size[i] {
			return fmt.Errorf("metal backend: expert %d: matrix %d is %s of %d bytes, the slots hold %s of %d", expert, i, p.t, len(p.b), s.t[i], s.size[i])
		}
		copy(mem[s.off[i]:], p.b)
		binary.LittleEndian.PutUint64(s.locs.Bytes()[8*(3*int(expert)+i):], uint64(k*s.slotBytes+s.off[i]))
	}
	s.b.loads.Copied++
	return nil
}

// Bind implements backend.ExpertSlots: each matrix must lie whole in one
// of the parts of host memory the location table can point into (bases).
func (s *expertSlots) Bind(expert int32, w backend.ExpertWeights) bool {
	if expert < 0 || int(expert) >= s.experts {
		return false
	}
	var loc [3]uint64
	bases := s.b.bases()
	for i, p := range s.mats(w) {
		var ok bool
		if p.t != s.t[i] || len(p.b) != s.size[i] {
			return false // Put says why
		}
		if loc[i], ok = locate(bases, p.b); !ok {
			return false
		}
	}
	for i, l := range loc {
		binary.LittleEndian.PutUint64(s.locs.Bytes()[8*(3*int(expert)+i):], l)
	}
	s.b.loads.Bound++
	return true
}

type typedBytes struct {
	b []byte
	t ggml.Type
}

func (s *expertSlots) mats(w backend.ExpertWeights) [3]typedBytes {
	return [3]typedBytes{{w.Gate, w.GateT}, {w.Up, w.UpT}, {w.Down, w.DownT}}
}

// device binds mem, which the device must read when the op runs (written
// by an op or a handshake after recording): it must be device memory, as
// a staged copy would be taken now.
func (b *Backend) device(mem []byte, what string) BufRef {
	r, ok := b.find(uintptr(unsafe.Pointer(unsafe.SliceData(mem))), len(mem))
	if !ok {
		b.fail(fmt.Errorf("metal backend: %s is not backend memory", what))
	}
	return r
}

// SlotExpertsFFN implements backend.Handshaker: per row, the gate and up
// mat-vecs of its used experts in one dispatch each (matrix k of expert
// sel[r·used+k] where the location table says), SwiGLU, and the down
// mat-vecs of every row in one dispatch; the same kernels and arithmetic
// as ExpertsFFN's per-row mat-vecs.
func (b *Backend) SlotExpertsFFN(es backend.ExpertSlots, in []float32, rows, used int, sel []int32, out []float32) error {
	s, ok := es.(*expertSlots)
	if !ok {
		return fmt.Errorf("metal backend: expert slots of another backend")
	}
	e, ff, n := s.embd, s.ff, rows*used
	if rows < 1 || used < 1 || len(sel) < n || len(in) < rows*e || len(out) < n*e {
		return fmt.Errorf("metal backend: slot experts: %d choices, %d inputs, %d outputs for %d rows of %d experts of %d", len(sel), len(in), len(out), rows, used, e)
	}
	c := &b.cmds
	ids := b.device(unsafe.Slice((*byte)(unsafe.Pointer(&sel[0])), 4*n), "the experts' choices")
	locs := BufRef{Buf: s.locs}
	var bases []BufRef
	for _, p := range b.bases() {
		bases = append(bases, p.ref)
	}
	scratch := b.reserve(4 * 3 * n * ff)
	gate, up := scratch, BufRef{Buf: scratch.Buf, Off: scratch.Off + 4*n*ff}
	hidden := BufRef{Buf: scratch.Buf, Off: scratch.Off + 8*n*ff}
	w, x := BufRef{Buf: s.mem}, b.in(in[:rows*e])
	for r := 0; r < rows; r++ {
		xr := BufRef{Buf: x.Buf, Off: x.Off + 4*r*e}
		idr := BufRef{Buf: ids.Buf, Off: ids.Off + 4*r*used}
		at := func(y BufRef) BufRef { return BufRef{Buf: y.Buf, Off: y.Off + 4*r*used*ff} }
		MatVec{T: s.t[0], Rows: ff, Cols: e, N: used, W: w, X: xr, Y: at(gate), IDs: &idr, Locs: &locs, LocStride: 3, LocIndex: 0, Bases: bases}.Encode(c)
		MatVec{T: s.t[1], Rows: ff, Cols: e, N: used, W: w, X: xr, Y: at(up), IDs: &idr, Locs: &locs, LocStride: 3, LocIndex: 1, Bases: bases}.Encode(c)
	}
	c.Barrier()
	SwiGLU{N: n * ff, Gate: gate, Up: up, Out: hidden}.Encode(c)
	c.Barrier()
	MatVec{T: s.t[2], Rows: e, Cols: ff, N: n, W: w, X: hidden, XStride: ff, Y: b.out(out[:n*e]), IDs: &ids, Locs: &locs,
		LocStride: 3, LocIndex: 2, Bases: bases}.Encode(c)
	c.Barrier()
	return c.Err()
}

// CombineWeights implements backend.Handshaker with kernel_moe_combine per
// row (o = src₀·w₀, o += src_k·w_k, x += o: Combine's Axpy chain and Add,
// in the same order).
func (b *Backend) CombineWeights(x []float32, rows, embd, used int, wts, src []float32) {
	xb, sb := b.out(x[:rows*embd]), b.in(src[:rows*used*embd])
	wb := b.device(f32Bytes(wts[:rows*used]), "the experts' weights")
	for r := 0; r < rows; r++ {
		Combine{Embd: embd, K: used, X: BufRef{Buf: xb.Buf, Off: xb.Off + 4*r*embd}, Down: BufRef{Buf: sb.Buf, Off: sb.Off + 4*r*used*embd},
			Weights: BufRef{Buf: wb.Buf, Off: wb.Off + 4*r*used}}.Encode(&b.cmds)
	}
	b.cmds.Barrier()
}

// RouteResident implements backend.Handshaker: Route's kernels with the
// residency mask bound where it lies in device memory. Shapes the kernels
// do not take run on the host after a Sync (which runs the handshake that
// writes the mask).
func (b *Backend) RouteResident(p []float32, rows, experts, k int, scale float32, pol routing.CacheRoute, resident []int32, sel []int32, wts []float32) {
	if rows == 0 {
		return
	}
	if experts > 32*32 || k > 32 || k < 1 || k > experts || len(resident) < experts {
		if b.syncForHost() {
			res := make([]bool, experts)
			for i := range res {
				res[i] = i < len(resident) && resident[i] != 0
			}
			b.hostOps().Route(p, rows, experts, k, scale, pol, res, sel, wts)
		}
		return
	}
	sel = sel[:rows*k]
	op := Router{Experts: experts, K: k, Tokens: rows, Scale: scale, Logits: b.in(p[:rows*experts]), Probs: true,
		IDs: b.outRaw(unsafe.Slice((*byte)(unsafe.Pointer(&sel[0])), 4*len(sel))), Weights: b.out(wts[:rows*k])}
	if pol.Enabled {
		op.Cache = pol
		op.Resident = b.device(unsafe.Slice((*byte)(unsafe.Pointer(&resident[0])), 4*experts), "the residency mask")
	}
	op.Encode(&b.cmds)
	b.cmds.Barrier()
}
