package metal

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/routing"
)

// Backend runs the engine's model blocks (engine/backend.Backend) on a
// Device: each op is recorded into a command list at once, and Sync runs
// the list (on a GPU, one command buffer) and returns when it completed.
// Float32 tensors from Alloc, KV caches and matrices live in device
// memory; other host slices an op reads (norm weights, cos/sin rows, expert
// weights outside device memory) are staged at the call, and host slices
// it writes are copied back at Sync.
type Backend struct {
	// PartLen is the largest buffer AllocHost and MapHost wrap host
	// memory in (zero: the device's largest, or 1.25 GiB where it does
	// not say).
	PartLen int
	// NoReplay makes Record a no-op: every step is recorded anew.
	NoReplay bool

	dev                  Device
	ctx                  context.Context
	regions              []region // device memory, sorted by start
	cmds                 Commands
	stage                []*stageBuf
	back                 []copyBack
	err                  error
	warm                 *Commands    // WarmUp's dispatches
	host                 *cpu.Backend // runs the ops without Metal kernels (recurrent steps)
	syncs                int          // Sync calls, each a command buffer and a host wait
	slots                map[slotsKey]*expertSlots
	parts                []hostPart // memory AllocHost and MapHost wrapped, in the order made
	after                []func()   // AfterRun's, for the ops after the last handshake
	loads                backend.ExpertLoads
	rec                  *recording                // the step being recorded (replay.go)
	steps                map[backend.StepKey]*step // recorded steps by key
	replays, notRecorded int
	inRedo               int // inside a Redo's function
}

type region struct {
	start, end uintptr
	buf        Buffer
}

type stageBuf struct {
	buf Buffer
	off int
}

type copyBack struct {
	host []byte
	dev  []byte
}

var _ backend.Backend = (*Backend)(nil)

// NewBackend returns a Backend on dev; Close closes dev.
func NewBackend(dev Device) *Backend { return &Backend{dev: dev, ctx: context.Background()} }

// Name implements backend.Backend.
func (b *Backend) Name() string { return "metal" }

// Threads implements backend.Backend: the host side uses one thread.
func (b *Backend) Threads() int { return 1 }

func (b *Backend) fail(err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
}

func (b *Backend) addRegion(buf Buffer, mem []byte) {
	if len(mem) == 0 {
		return
	}
	s := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	r := region{start: s, end: s + uintptr(len(mem)), buf: buf}
	i := sort.Search(len(b.regions), func(i int) bool { return b.regions[i].start >= s })
	b.regions = append(b.regions, region{})
	copy(b.regions[i+1:], b.regions[i:])
	b.regions[i] = r
}

// find returns the device buffer holding [p, p+n), if any.
func (b *Backend) find(p uintptr, n int) (BufRef, bool) {
	i := sort.Search(len(b.regions), func(i int) bool { return b.regions[i].start > p }) - 1
	if i >= 0 {
		if r := b.regions[i]; p+uintptr(n) <= r.end {
			return BufRef{Buf: r.buf, Off: int(p-r.start) + bufferBase(r.buf, r.start)}, true
		}
	}
	return BufRef{}, false
}

// bufferBase is the offset of region start within the buffer (0 except
// for no-copy buffers, whose Bytes start inside the wrapped pages).
func bufferBase(buf Buffer, start uintptr) int {
	if o, ok := buf.(interface{ baseOffset() int }); ok {
		return o.baseOffset()
	}
	return 0
}

// stageBytes copies src into staging memory for the current command list.
func (b *Backend) stageBytes(src []byte) BufRef {
	r := b.reserve(len(src))
	if r.Buf != nil {
		copy(r.Buf.Bytes()[r.Off:], src)
		if rec := b.capturing(); rec != nil { // a replay copies it again
			rec.s.restage = append(rec.s.restage, restage{src: src, dst: r})
		}
	}
	return r
}

// reserve returns n bytes of staging memory (contents undefined) for the
// current command list.
func (b *Backend) reserve(n int) BufRef {
	n = (n + 255) &^ 255
	stage, least := &b.stage, 4<<20
	if rec := b.capturing(); rec != nil { // a recorded step keeps its staging memory
		stage, least = &rec.s.stage, 64<<10
	}
	for _, s := range *stage {
		if s.off+n <= len(s.buf.Bytes()) {
			ref := BufRef{Buf: s.buf, Off: s.off}
			s.off += n
			return ref
		}
	}
	buf, err := b.dev.Alloc(max(n, least))
	if err != nil {
		b.fail(err)
		return BufRef{}
	}
	*stage = append(*stage, &stageBuf{buf: buf, off: n})
	return BufRef{Buf: buf}
}

func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// in binds x for reading.
func (b *Backend) in(x []float32) BufRef {
	if len(x) == 0 {
		return b.stageBytes(make([]byte, 4))
	}
	if r, ok := b.find(uintptr(unsafe.Pointer(&x[0])), 4*len(x)); ok {
		return r
	}
	return b.stageBytes(f32Bytes(x))
}

// out binds x for writing (and reading: ops may update in place).
func (b *Backend) out(x []float32) BufRef { return b.outRaw(f32Bytes(x)) }

// Host memory wrapped by MapHost or AllocHost is cut into buffers of at
// most the device's maxBufferLength (M-series GPUs cap a buffer at about
// half the RAM, so a 50 GB model file cannot be one buffer), or
// mapChunk+mapOverlap bytes where the device does not say, starting every
// that length less the overlap, so that any slice of at most mapOverlap
// bytes lies whole inside one of them (arenaParts). An expert slice of
// Qwen3.8 Flash Next is a few MB; a dense tensor goes through NewMatrix.
const (
	mapChunk   = 1 << 30
	mapOverlap = 256 << 20
)

// MapHost wraps mem (a file's memory map; page-aligned, not Go heap
// memory) in no-copy device buffers once, so that every weight slice
// inside it is bound as one of those buffers at an offset instead of being
// wrapped (or copied) one by one, and a handshake binds the experts in it
// in place (ExpertSlots.Bind). On a device without no-copy buffers (the
// emulator) it does nothing and slices are staged; memory AllocHost made
// is wrapped already. It returns how many buffers it made.
func (b *Backend) MapHost(mem []byte) (int, error) {
	nc, ok := b.dev.(NoCopier)
	if !ok || len(mem) == 0 || b.wrapped(mem) {
		return 0, nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	n := 0
	for _, c := range arenaParts(len(mem), b.partLen()) {
		part := mem[c[0]:c[1]]
		r, err := nc.NoCopy(part)
		if err != nil {
			return n, fmt.Errorf("metal backend: wrap %d bytes of host memory: %w", len(part), err)
		}
		b.addRegion(r.Buf, part)
		b.parts = append(b.parts, hostPart{start: base + uintptr(c[0]), end: base + uintptr(c[1]), ref: r})
		n++
	}
	return n, nil
}

// weights binds weight bytes: device memory, a no-copy wrap, or a copy.
func (b *Backend) weights(w []byte) BufRef {
	if len(w) == 0 {
		b.fail(fmt.Errorf("metal backend: empty weights"))
		return BufRef{}
	}
	if r, ok := b.find(uintptr(unsafe.Pointer(&w[0])), len(w)); ok {
		return r
	}
	if nc, ok := b.dev.(NoCopier); ok {
		r, err := nc.NoCopy(w)
		if err != nil {
			b.fail(err)
			return BufRef{}
		}
		b.addRegion(r.Buf, w)
		return BufRef{Buf: r.Buf, Off: r.Off}
	}
	return b.stageBytes(w)
}

// Alloc implements backend.Backend.
func (b *Backend) Alloc(n int) []float32 {
	buf, err := b.dev.Alloc(4 * max(n, 1))
	if err != nil {
		b.fail(err)
		return make([]float32, n) // staged: ops still run, Sync reports the error
	}
	b.addRegion(buf, buf.Bytes())
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), n)
}

// NewMatrix implements backend.Backend.
func (b *Backend) NewMatrix(t ggml.Type, data []byte, rows, cols int) (*backend.Matrix, error) {
	wt, err := weightType(t)
	if err != nil {
		return nil, err
	}
	if cols%wt.BlockVals != 0 || cols%32 != 0 || len(data) != rows*wt.RowBytes(cols) {
		return nil, fmt.Errorf("metal: %s matrix %d×%d: %d bytes, or columns not a multiple of 32 and %d", t, rows, cols, len(data), wt.BlockVals)
	}
	// Inside memory MapHost wrapped: that buffer at the offset; else a
	// no-copy wrap of its own (or a copy on the emulator).
	ref, ok := b.find(uintptr(unsafe.Pointer(unsafe.SliceData(data))), len(data))
	if !ok {
		var err error
		if ref, err = Upload(b.dev, data); err != nil {
			return nil, err
		}
	}
	return &backend.Matrix{Type: t, Data: data, Rows: rows, Cols: cols, Impl: ref}, nil
}

// NewKVCache implements backend.Backend: the caches live in device memory.
func (b *Backend) NewKVCache(attn []bool, nCtx, kvDim int) *backend.KVCache {
	c := &backend.KVCache{K: make([][]uint16, len(attn)), V: make([][]uint16, len(attn)), NCtx: nCtx, KVDim: kvDim}
	for i, a := range attn {
		if !a {
			continue
		}
		for _, dst := range []*[]uint16{&c.K[i], &c.V[i]} {
			buf, err := b.dev.Alloc(2 * nCtx * kvDim)
			if err != nil {
				b.fail(err)
				*dst = make([]uint16, nCtx*kvDim)
				continue
			}
			b.addRegion(buf, buf.Bytes())
			*dst = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), nCtx*kvDim)
		}
	}
	return c
}

func (b *Backend) kv(x []uint16) BufRef {
	r, ok := b.find(uintptr(unsafe.Pointer(&x[0])), 2*len(x))
	if !ok {
		b.fail(fmt.Errorf("metal backend: KV cache not made by NewKVCache"))
	}
	return r
}

// GetRows implements backend.Backend.
func (b *Backend) GetRows(m *backend.Matrix, ids []int32, out []float32) {
	// The ids as they lie (every target is little-endian): read in
	// device memory, or staged from the slice itself (a replay stages it
	// again).
	ib := b.inRaw(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ids))), 4*len(ids)))
	GetRows{T: m.Type, Cols: m.Cols, N: len(ids), W: m.Impl.(BufRef), IDs: ib, Out: b.out(out[:len(ids)*m.Cols])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// RMSNorm implements backend.Backend.
func (b *Backend) RMSNorm(out, x, w []float32, rows int, eps float32) {
	n := len(w)
	RMSNorm{N: n, Rows: rows, Eps: eps, X: b.in(x[:rows*n]), W: b.in(w), Out: b.out(out[:rows*n])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// Linear implements backend.Backend: a mat-mat for a batch of at least
// MatMulMinRows rows (prefill), else one mat-vec per row.
func (b *Backend) Linear(m *backend.Matrix, in []float32, rows int, out []float32) {
	if rows >= MatMulMinRows {
		MatMul{T: m.Type, Rows: m.Rows, Cols: m.Cols, NTok: rows, W: m.Impl.(BufRef), X: b.in(in[:rows*m.Cols]), XStride: m.Cols,
			Y: b.out(out[:rows*m.Rows]), YStride: m.Rows}.Encode(&b.cmds)
		b.cmds.Barrier()
		return
	}
	MatVec{T: m.Type, Rows: m.Rows, Cols: m.Cols, N: rows, W: m.Impl.(BufRef), X: b.in(in[:rows*m.Cols]), XStride: m.Cols,
		Y: b.out(out[:rows*m.Rows]), YStride: m.Rows}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// Add implements backend.Backend.
func (b *Backend) Add(x, y []float32) {
	Add{N: len(x), X: b.out(x), Y: b.in(y[:len(x)])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// NormRope implements backend.Backend.
func (b *Backend) NormRope(x []float32, rows, heads, headDim int, w []float32, eps float32, cs []float32, ropeDims int) {
	op := NormRope{HeadDim: headDim, Heads: heads, Rows: rows, RopeDims: ropeDims, Eps: eps, X: b.out(x[:rows*heads*headDim])}
	if w != nil {
		op.W = b.in(w[:headDim])
	}
	if ropeDims > 0 {
		op.CS = b.in(cs[:rows*ropeDims])
	}
	op.Encode(&b.cmds)
	b.cmds.Barrier()
}

// StoreKV implements backend.Backend.
func (b *Backend) StoreKV(c *backend.KVCache, il int, k, v []float32, rows, pos0 int) {
	KVStore{KVDim: c.KVDim, Rows: rows, VTrans: c.NCtx, K: b.in(k[:rows*c.KVDim]), V: b.in(v[:rows*c.KVDim]),
		KC: b.kv(c.K[il]), VC: b.kv(c.V[il]), Pos: b.posRef(pos0)}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// Attention implements backend.Backend: flash attention (no score rows:
// any context, prefill without a rows×heads×context buffer) for head
// sizes it supports, else the kernel with score rows.
func (b *Backend) Attention(c *backend.KVCache, il int, q []float32, rows, pos0 int, p backend.AttnParams, out []float32) {
	b.attention(c, il, q, rows, pos0, p, Mask{}, out)
}

func (b *Backend) attention(c *backend.KVCache, il int, q []float32, rows, pos0 int, p backend.AttnParams, m Mask, out []float32) {
	qd := p.Heads * p.HeadDim
	if FlashHeadDim(p.HeadDim) {
		FlashAttention{HeadDim: p.HeadDim, Heads: p.Heads, HeadsKV: p.HeadsKV, Rows: rows, VTrans: c.NCtx, Scale: p.Scale,
			Q: b.in(q[:rows*qd]), KC: b.kv(c.K[il]), VC: b.kv(c.V[il]), Out: b.out(out[:rows*qd]), Pos: b.posRef(pos0), Mask: m}.Encode(&b.cmds)
		b.cmds.Barrier()
		return
	}
	scores := b.stageBytes(make([]byte, 4*rows*p.Heads*c.NCtx))
	Attention{HeadDim: p.HeadDim, Heads: p.Heads, HeadsKV: p.HeadsKV, NCtx: c.NCtx, Rows: rows, VTrans: c.NCtx, Scale: p.Scale,
		Q: b.in(q[:rows*qd]), KC: b.kv(c.K[il]), VC: b.kv(c.V[il]), Scores: scores, Out: b.out(out[:rows*qd]), Pos: b.posRef(pos0), Mask: m}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// SparseAttention implements backend.Backend: the attention kernels with
// the rows' masks (in device memory, as QSASelect writes them, or staged
// from the host).
func (b *Backend) SparseAttention(c *backend.KVCache, il int, q []float32, rows, pos0 int, p backend.AttnParams, sel []uint64, words int, out []float32) {
	if rows == 0 {
		return
	}
	if words <= 0 || words*64 < pos0+rows || len(sel) < rows*words {
		b.fail(fmt.Errorf("metal backend: sparse attention: %d mask words per row for positions up to %d (%d words given)", words, pos0+rows, len(sel)))
		return
	}
	m := Mask{Sel: b.inRaw(u64Bytes(sel[:rows*words])), Words: words}
	b.attention(c, il, q, rows, pos0, p, m, out)
}

// Softmax implements backend.Backend.
func (b *Backend) Softmax(x []float32, rows, cols int) {
	Softmax{N: cols, Rows: rows, X: b.out(x[:rows*cols])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// ExpertsFFN implements backend.Backend: per job and row, the gate and up
// mat-vecs, SwiGLU, and the down mat-vec into the job's Out.
func (b *Backend) ExpertsFFN(in []float32, rows, embd, ff int, jobs []backend.ExpertJob, _ bool) error {
	x := b.in(in[:rows*embd])
	c := &b.cmds
	type pending struct {
		job              *backend.ExpertJob
		gate, up, hidden BufRef
		down             BufRef
	}
	var ps []pending
	for i := range jobs {
		j := &jobs[i]
		n := len(j.Rows)
		scratch := b.stageBytes(make([]byte, 4*3*n*ff))
		p := pending{job: j, gate: scratch, up: BufRef{Buf: scratch.Buf, Off: scratch.Off + 4*n*ff},
			hidden: BufRef{Buf: scratch.Buf, Off: scratch.Off + 8*n*ff}, down: b.weights(j.W.Down)}
		g, u := b.weights(j.W.Gate), b.weights(j.W.Up)
		for _, row := range j.Rows {
			if int(row) < 0 || int(row) >= rows {
				return fmt.Errorf("metal backend: expert row %d of %d", row, rows)
			}
		}
		if n >= MatMulMinRows {
			ib := make([]byte, 4*n)
			for r, row := range j.Rows {
				binary.LittleEndian.PutUint32(ib[4*r:], uint32(row))
			}
			ids := b.stageBytes(ib)
			MatMul{T: j.W.GateT, Rows: ff, Cols: embd, NTok: n, W: g, X: x, XStride: embd, IDs: &ids, Y: p.gate, YStride: ff}.Encode(c)
			MatMul{T: j.W.UpT, Rows: ff, Cols: embd, NTok: n, W: u, X: x, XStride: embd, IDs: &ids, Y: p.up, YStride: ff}.Encode(c)
			ps = append(ps, p)
			continue
		}
		for r, row := range j.Rows {
			xr := BufRef{Buf: x.Buf, Off: x.Off + 4*int(row)*embd}
			MatVec{T: j.W.GateT, Rows: ff, Cols: embd, W: g, X: xr, Y: BufRef{Buf: p.gate.Buf, Off: p.gate.Off + 4*r*ff}}.Encode(c)
			MatVec{T: j.W.UpT, Rows: ff, Cols: embd, W: u, X: xr, Y: BufRef{Buf: p.up.Buf, Off: p.up.Off + 4*r*ff}}.Encode(c)
		}
		ps = append(ps, p)
	}
	c.Barrier()
	for _, p := range ps {
		SwiGLU{N: len(p.job.Rows) * ff, Gate: p.gate, Up: p.up, Out: p.hidden}.Encode(c)
	}
	c.Barrier()
	for _, p := range ps {
		n := len(p.job.Rows)
		if n >= MatMulMinRows {
			MatMul{T: p.job.W.DownT, Rows: embd, Cols: ff, NTok: n, W: p.down, X: p.hidden, XStride: ff,
				Y: b.out(p.job.Out[:n*embd]), YStride: embd}.Encode(c)
			continue
		}
		MatVec{T: p.job.W.DownT, Rows: embd, Cols: ff, N: n, W: p.down, X: p.hidden, XStride: ff,
			Y: b.out(p.job.Out[:n*embd]), YStride: embd}.Encode(c)
	}
	c.Barrier()
	return c.Err()
}

// Combine implements backend.Backend.
func (b *Backend) Combine(x, out []float32, rows, embd, used int, wts []float32, src [][]float32) {
	c := &b.cmds
	ob := b.out(out[:rows*embd])
	for k := 0; k < used; k++ {
		for r := 0; r < rows; r++ {
			w := wts[r*used+k]
			if math.IsNaN(float64(w)) {
				b.fail(fmt.Errorf("metal backend: NaN expert weight"))
			}
			Axpy{N: embd, W: w, Accumulate: k > 0, Y: BufRef{Buf: ob.Buf, Off: ob.Off + 4*r*embd}, X: b.in(src[r*used+k][:embd])}.Encode(c)
		}
		c.Barrier()
	}
	Add{N: rows * embd, X: b.out(x[:rows*embd]), Y: ob}.Encode(c)
	c.Barrier()
}

// Syncs is how many times Sync has been called: each runs one command
// buffer and waits for it, the cost a one-buffer decode step removes.
func (b *Backend) Syncs() int { return b.syncs }

// Sync implements backend.Backend: it runs what was recorded.
func (b *Backend) Sync() error {
	b.syncs++
	if r := b.rec; r != nil {
		// The first Sync runs the recorded step; the step keeps the list
		// (a later Sync in the same step voids the recording).
		if r.syncs++; r.syncs == 1 {
			r.s.cmds, r.s.back = b.cmds, append([]copyBack(nil), b.back...)
		}
	}
	defer func() {
		b.runAfter()
		b.cmds = Commands{}
		b.back = b.back[:0]
		for _, s := range b.stage {
			s.off = 0
		}
	}()
	if b.err != nil {
		err := b.err
		b.err = nil
		b.voidRecording("an op failed")
		return err
	}
	if err := b.dev.Run(b.ctx, &b.cmds); err != nil {
		b.voidRecording("the run failed")
		return err
	}
	for _, cb := range b.back {
		copy(cb.host, cb.dev)
	}
	return nil
}

// Close implements backend.Backend.
func (b *Backend) Close() error {
	if b.host != nil {
		b.host.Close()
	}
	return b.dev.Close()
}

// The recurrent (gated DeltaNet) ops run as kernels (recurrent.go); shapes
// the kernels do not take (a DeltaNet head size that is not a multiple of
// 32 or above 1024, an empty half of a split) run on the host, on the same
// memory, after the ops recorded before them (Sync), with the CPU
// backend's code.

// HostOps reports whether any op ran on the host (a shape the kernels do
// not take).
func (b *Backend) HostOps() bool { return b.host != nil }

func (b *Backend) hostOps() *cpu.Backend {
	if b.host == nil {
		b.host = cpu.NewBackend(1)
	}
	return b.host
}

func (b *Backend) syncForHost() bool {
	if err := b.Sync(); err != nil {
		b.fail(err)
		return false
	}
	return true
}

// SplitHeads implements backend.Backend.
func (b *Backend) SplitHeads(dst0, dst1, x []float32, rows, heads, d0, d1 int) {
	if rows*heads == 0 || d0 == 0 || d1 == 0 {
		if b.syncForHost() {
			b.hostOps().SplitHeads(dst0, dst1, x, rows, heads, d0, d1)
		}
		return
	}
	SplitHeads{Rows: rows, Heads: heads, D0: d0, D1: d1, X: b.in(x[:rows*heads*(d0+d1)]),
		Dst0: b.out(dst0[:rows*heads*d0]), Dst1: b.out(dst1[:rows*heads*d1])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// SigmoidMul implements backend.Backend.
func (b *Backend) SigmoidMul(x, g []float32, rows int) {
	if rows == 0 || len(x) == 0 {
		return
	}
	op := SigmoidMul{N: len(x), Per: 1, X: b.out(x)}
	if len(g) == rows {
		op.Per, op.G = len(x)/rows, b.in(g)
	} else {
		op.G = b.in(g[:len(x)])
	}
	op.Encode(&b.cmds)
	b.cmds.Barrier()
}

// GatedRMSNorm implements backend.Backend.
func (b *Backend) GatedRMSNorm(x, z, w []float32, rows int, eps float32) {
	n := len(w)
	if rows == 0 || n == 0 {
		return
	}
	GatedRMSNorm{N: n, Groups: rows, Eps: eps, X: b.out(x[:rows*n]), Z: b.in(z[:rows*n]), W: b.in(w)}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// copySnaps copies the staged snapshots (each n floats, consecutive from
// st) into snaps (x·1 is exact), skipping nil ones.
func (b *Backend) copySnaps(st BufRef, snaps [][]float32, n int) {
	for i, sn := range snaps {
		if sn == nil {
			continue // a row whose state the caller does not keep
		}
		Axpy{N: n, W: 1, Y: b.out(sn[:n]), X: BufRef{Buf: st.Buf, Off: st.Off + 4*i*n}}.Encode(&b.cmds)
	}
	b.cmds.Barrier()
}

// copyState makes state[:n] a copy of from[:n] on the GPU (x·1 is exact),
// for the recurrent ops' from argument; nothing when from is nil or state.
func (b *Backend) copyState(from, state []float32, n int) {
	if from == nil || n == 0 || &from[0] == &state[0] {
		return
	}
	Axpy{N: n, W: 1, Y: b.out(state[:n]), X: b.in(from[:n])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// CausalConv implements backend.Backend.
// With from set, the window is read from from and the new one written to
// state (copied on the GPU first, then updated in place).
func (b *Backend) CausalConv(out, x, from, state, w []float32, rows, channels, taps int, snaps [][]float32) {
	if taps < 1 || rows == 0 || channels == 0 || len(snaps) > rows {
		if b.syncForHost() {
			b.hostOps().CausalConv(out, x, from, state, w, rows, channels, taps, snaps)
		}
		return
	}
	k := taps - 1
	op := CausalConv{Rows: rows, Channels: channels, Taps: taps, NSnap: len(snaps), Out: b.out(out[:rows*channels]),
		X: b.in(x[:rows*channels]), W: b.in(w[:channels*taps])}
	if k == 0 {
		op.State = op.Out // no state: bound, never read or written
	} else {
		b.copyState(from, state, channels*k)
		op.State = b.out(state[:channels*k])
	}
	if len(snaps) > 0 && k > 0 {
		op.Snaps = b.reserve(4 * len(snaps) * channels * k)
	} else {
		op.NSnap = 0 // a one-tap convolution's snapshots are empty
	}
	op.Encode(&b.cmds)
	b.cmds.Barrier()
	if op.NSnap > 0 {
		b.copySnaps(op.Snaps, snaps, channels*k)
	}
}

// GatedDeltaNet implements backend.Backend.
// With from set, the state is read from from and the new one written to
// state (copied on the GPU first, then updated in place).
func (b *Backend) GatedDeltaNet(p backend.DeltaNetParams, qkv, beta, alpha []float32, rows int, from, state []float32, snaps [][]float32, out []float32) {
	if !DeltaNetDim(p.Dim) || rows == 0 || len(snaps) > rows || p.KeyHeads <= 0 || p.ValueHeads%p.KeyHeads != 0 {
		if b.syncForHost() {
			b.hostOps().GatedDeltaNet(p, qkv, beta, alpha, rows, from, state, snaps, out)
		}
		return
	}
	hv, d := p.ValueHeads, p.Dim
	b.copyState(from, state, hv*d*d)
	conv := 2*p.KeyHeads*d + hv*d
	op := GatedDeltaNet{KeyHeads: p.KeyHeads, ValueHeads: hv, Dim: d, Rows: rows, NSnap: len(snaps), KeyTiled: p.KeyTiled, Eps: p.Eps,
		QKV: b.in(qkv[:rows*conv]), B: b.in(beta[:rows*hv]), A: b.in(alpha[:rows*hv]), State: b.out(state[:hv*d*d]),
		Out: b.out(out[:rows*hv*d]), DtBias: b.in(p.DtBias[:hv]), Decay: b.in(p.A[:hv])}
	if len(snaps) > 0 {
		op.Snaps = b.reserve(4 * len(snaps) * hv * d * d)
	}
	op.Encode(&b.cmds)
	b.cmds.Barrier()
	if len(snaps) > 0 {
		b.copySnaps(op.Snaps, snaps, hv*d*d)
	}
}

// GroupRMSNorm implements backend.Backend.
func (b *Backend) GroupRMSNorm(out, x, w []float32, rows, n int, eps float32) {
	if rows == 0 || len(w) == 0 {
		return
	}
	if n <= 0 || len(w)%n != 0 {
		b.fail(fmt.Errorf("metal backend: group rms norm: groups of %d values in rows of %d", n, len(w)))
		return
	}
	d := len(w)
	GroupRMSNorm{N: n, Span: d / n, Rows: rows, Eps: eps, X: b.in(x[:rows*d]), W: b.in(w), Out: b.out(out[:rows*d])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// ScaledSiLU implements backend.Backend.
func (b *Backend) ScaledSiLU(x []float32, scale float32) {
	if len(x) == 0 {
		return
	}
	ScaledSiLU{N: len(x), Scale: scale, X: b.out(x)}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// HyperMix implements backend.Backend.
func (b *Backend) HyperMix(out, xn, gate []float32, rows, streams, n int) {
	if rows == 0 {
		return
	}
	hd := streams * n
	HyperMix{N: n, Streams: streams, Rows: rows, XN: b.in(xn[:rows*hd]), Gate: b.in(gate[:rows*hd]), Out: b.out(out[:rows*n])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// HyperCombine implements backend.Backend.
func (b *Backend) HyperCombine(x, y, inject []float32, rows, streams, n int) {
	if rows == 0 {
		return
	}
	HyperCombine{N: n, Streams: streams, Rows: rows, X: b.out(x[:rows*streams*n]), Y: b.in(y[:rows*n]), Inject: b.in(inject[:rows*streams])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// outRaw binds mem (host or device memory) for writing, as out does for
// float32s: non-device memory is staged and copied back at Sync.
func (b *Backend) outRaw(mem []byte) BufRef {
	if r, ok := b.find(uintptr(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)); ok {
		return r
	}
	r := b.stageBytes(mem)
	if r.Buf != nil {
		b.back = append(b.back, copyBack{host: mem, dev: r.Buf.Bytes()[r.Off : r.Off+len(mem)]})
	}
	return r
}

// Route implements backend.Backend: the router kernels on the softmaxed
// probabilities (exact, or cache-aware with the residency staged as one
// int32 per expert); sel and wts are copied back at Sync when they are
// host memory. Shapes the kernels do not take (more than 1024 experts or
// 32 choices) run on the host.
func (b *Backend) Route(p []float32, rows, experts, k int, scale float32, pol routing.CacheRoute, resident []bool, sel []int32, wts []float32) {
	if rows == 0 {
		return
	}
	if pol.Enabled && resident != nil {
		b.voidRecording("cache-aware routing reads a residency snapshot taken at record time")
	}
	if experts > 32*32 || k > 32 || k < 1 || k > experts {
		if b.syncForHost() {
			b.hostOps().Route(p, rows, experts, k, scale, pol, resident, sel, wts)
		}
		return
	}
	sel = sel[:rows*k]
	op := Router{Experts: experts, K: k, Tokens: rows, Scale: scale, Logits: b.in(p[:rows*experts]), Probs: true,
		IDs: b.outRaw(unsafe.Slice((*byte)(unsafe.Pointer(&sel[0])), 4*len(sel))), Weights: b.out(wts[:rows*k])}
	if pol.Enabled && resident != nil {
		ri := make([]byte, 4*experts)
		for i, r := range resident[:experts] {
			if r {
				ri[4*i] = 1
			}
		}
		op.Cache, op.Resident = pol, b.stageBytes(ri)
	}
	op.Encode(&b.cmds)
	b.cmds.Barrier()
}

// Fill implements backend.Backend.
func (b *Backend) Fill(x []float32, v float32) {
	if len(x) == 0 {
		return
	}
	Fill{N: len(x), V: v, X: b.out(x)}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// Repeat implements backend.Backend.
func (b *Backend) Repeat(dst, src []float32, rows, copies, n int) {
	if rows*copies*n == 0 {
		return
	}
	Repeat{Rows: rows, Copies: copies, Width: n, Dst: b.out(dst[:rows*copies*n]), Src: b.in(src[:rows*n])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// PLEGate implements backend.Backend.
func (b *Backend) PLEGate(gate, key, qry []float32, groups, n int) {
	if groups == 0 {
		return
	}
	PLEGate{N: n, Groups: groups, Gate: b.out(gate[:groups]), Key: b.in(key[:groups*n]), Qry: b.in(qry[:groups*n])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// inRaw binds mem for reading: device memory where it is, else staged.
func (b *Backend) inRaw(mem []byte) BufRef {
	if r, ok := b.find(uintptr(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)); ok {
		return r
	}
	return b.stageBytes(mem)
}

func u16Bytes(x []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x))
}

func u64Bytes(x []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x))
}

// StoreF16 implements backend.Backend.
func (b *Backend) StoreF16(dst []uint16, src []float32) {
	if b.inRedo == 0 {
		b.voidRecording("a key store follows the position (outside a Redo)")
	}
	if len(src) == 0 {
		return
	}
	StoreF16{N: len(src), Dst: b.outRaw(u16Bytes(dst[:len(src)])), Src: b.in(src)}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// QSAPool implements backend.Backend.
func (b *Backend) QSAPool(dst []float32, raw []uint16, blocks, r, dim int) {
	if b.inRedo == 0 {
		b.voidRecording("the QSA indexer's ops follow the position (outside a Redo)")
	}
	if blocks == 0 {
		return
	}
	QSAPool{Blocks: blocks, R: r, Dim: dim, Dst: b.out(dst[:blocks*dim]), Raw: b.inRaw(u16Bytes(raw[:blocks*r*dim]))}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// QSASelect implements backend.Backend: the scores and the selection
// kernels, with their scratch in staging memory.
func (b *Backend) QSASelect(sel []uint64, q, keys []float32, rows, pos0, heads, dim, r, width, words int) {
	if b.inRedo == 0 {
		b.voidRecording("the QSA indexer's ops follow the position (outside a Redo)")
	}
	if rows == 0 {
		return
	}
	if r <= 0 || width <= 0 {
		b.fail(fmt.Errorf("metal backend: qsa select: ratio %d, width %d", r, width))
		return
	}
	op := QSASelect{Rows: rows, Pos0: pos0, Heads: heads, Dim: dim, R: r, Width: width, Words: words,
		Sel: b.outRaw(u64Bytes(sel[:rows*words])), Q: b.in(q[:rows*heads*dim]), Heap: b.reserve(4 * rows * width)}
	nb := (pos0 + rows) / r
	if nb > 0 {
		op.Keys = b.in(keys[:nb*dim])
	} else {
		op.Keys = op.Q // no block: bound, never read
	}
	op.Scores = b.reserve(4 * rows * op.ScoreStride())
	op.Encode(&b.cmds)
	b.cmds.Barrier()
}
