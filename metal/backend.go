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
)

// Backend runs the engine's model blocks (engine/backend.Backend) on a
// Device: each op is recorded into a command list at once, and Sync runs
// the list (on a GPU, one command buffer) and returns when it completed.
// Float32 tensors from Alloc, KV caches and matrices live in device
// memory; other host slices an op reads (norm weights, cos/sin rows, expert
// weights outside device memory) are staged at the call, and host slices
// it writes are copied back at Sync.
type Backend struct {
	dev     Device
	ctx     context.Context
	regions []region // device memory, sorted by start
	cmds    Commands
	stage   []*stageBuf
	back    []copyBack
	err     error
	warm    *Commands    // WarmUp's dispatches
	host    *cpu.Backend // runs the ops without Metal kernels (recurrent steps)
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
	n := (len(src) + 255) &^ 255
	for _, s := range b.stage {
		if s.off+n <= len(s.buf.Bytes()) {
			ref := BufRef{Buf: s.buf, Off: s.off}
			copy(s.buf.Bytes()[s.off:], src)
			s.off += n
			return ref
		}
	}
	buf, err := b.dev.Alloc(max(n, 4<<20))
	if err != nil {
		b.fail(err)
		return BufRef{}
	}
	s := &stageBuf{buf: buf, off: n}
	b.stage = append(b.stage, s)
	copy(buf.Bytes(), src)
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
func (b *Backend) out(x []float32) BufRef {
	if r, ok := b.find(uintptr(unsafe.Pointer(&x[0])), 4*len(x)); ok {
		return r
	}
	r := b.stageBytes(f32Bytes(x))
	b.back = append(b.back, copyBack{host: f32Bytes(x), dev: r.Buf.Bytes()[r.Off : r.Off+4*len(x)]})
	return r
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

func (b *Backend) i32(v int32) BufRef {
	var a [4]byte
	binary.LittleEndian.PutUint32(a[:], uint32(v))
	return b.stageBytes(a[:])
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
	ref, err := Upload(b.dev, data)
	if err != nil {
		return nil, err
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
	ib := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(ib[4*i:], uint32(id))
	}
	GetRows{T: m.Type, Cols: m.Cols, N: len(ids), W: m.Impl.(BufRef), IDs: b.stageBytes(ib), Out: b.out(out[:len(ids)*m.Cols])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// RMSNorm implements backend.Backend.
func (b *Backend) RMSNorm(out, x, w []float32, rows int, eps float32) {
	n := len(w)
	RMSNorm{N: n, Rows: rows, Eps: eps, X: b.in(x[:rows*n]), W: b.in(w), Out: b.out(out[:rows*n])}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// Linear implements backend.Backend.
func (b *Backend) Linear(m *backend.Matrix, in []float32, rows int, out []float32) {
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
		KC: b.kv(c.K[il]), VC: b.kv(c.V[il]), Pos: b.i32(int32(pos0))}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// Attention implements backend.Backend.
func (b *Backend) Attention(c *backend.KVCache, il int, q []float32, rows, pos0 int, p backend.AttnParams, out []float32) {
	qd := p.Heads * p.HeadDim
	scores := b.stageBytes(make([]byte, 4*rows*p.Heads*c.NCtx))
	Attention{HeadDim: p.HeadDim, Heads: p.Heads, HeadsKV: p.HeadsKV, NCtx: c.NCtx, Rows: rows, VTrans: c.NCtx, Scale: p.Scale,
		Q: b.in(q[:rows*qd]), KC: b.kv(c.K[il]), VC: b.kv(c.V[il]), Scores: scores, Out: b.out(out[:rows*qd]), Pos: b.i32(int32(pos0))}.Encode(&b.cmds)
	b.cmds.Barrier()
}

// SparseAttention implements backend.Backend on the host (the caches are
// shared memory): qwen4exp's QSA has no Metal kernel yet.
func (b *Backend) SparseAttention(c *backend.KVCache, il int, q []float32, rows, pos0 int, p backend.AttnParams, sel []uint64, words int, out []float32) {
	if b.syncForHost() {
		b.hostOps().SparseAttention(c, il, q, rows, pos0, p, sel, words, out)
	}
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
		for r, row := range j.Rows {
			if int(row) < 0 || int(row) >= rows {
				return fmt.Errorf("metal backend: expert row %d of %d", row, rows)
			}
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

// Sync implements backend.Backend: it runs what was recorded.
func (b *Backend) Sync() error {
	defer func() {
		b.cmds = Commands{}
		b.back = b.back[:0]
		for _, s := range b.stage {
			s.off = 0
		}
	}()
	if b.err != nil {
		err := b.err
		b.err = nil
		return err
	}
	if err := b.dev.Run(b.ctx, &b.cmds); err != nil {
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

// The recurrent (gated DeltaNet) ops have no Metal kernels yet: they run on
// the host, on the same memory, after the ops recorded before them (Sync),
// with the CPU backend's code, so a qwen3next graph runs on this backend
// exactly as on the CPU for those steps.

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

// SplitHeads implements backend.Backend on the host.
func (b *Backend) SplitHeads(dst0, dst1, x []float32, rows, heads, d0, d1 int) {
	if b.syncForHost() {
		b.hostOps().SplitHeads(dst0, dst1, x, rows, heads, d0, d1)
	}
}

// SigmoidMul implements backend.Backend on the host.
func (b *Backend) SigmoidMul(x, g []float32, rows int) {
	if b.syncForHost() {
		b.hostOps().SigmoidMul(x, g, rows)
	}
}

// GatedRMSNorm implements backend.Backend on the host.
func (b *Backend) GatedRMSNorm(x, z, w []float32, rows int, eps float32) {
	if b.syncForHost() {
		b.hostOps().GatedRMSNorm(x, z, w, rows, eps)
	}
}

// CausalConv implements backend.Backend on the host.
func (b *Backend) CausalConv(out, x, state, w []float32, rows, channels, taps int, snaps [][]float32) {
	if b.syncForHost() {
		b.hostOps().CausalConv(out, x, state, w, rows, channels, taps, snaps)
	}
}

// GatedDeltaNet implements backend.Backend on the host.
func (b *Backend) GatedDeltaNet(p backend.DeltaNetParams, qkv, beta, alpha []float32, rows int, state []float32, snaps [][]float32, out []float32) {
	if b.syncForHost() {
		b.hostOps().GatedDeltaNet(p, qkv, beta, alpha, rows, state, snaps, out)
	}
}
