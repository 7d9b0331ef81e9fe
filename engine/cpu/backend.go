package cpu

import (
	"fmt"
	"math"
	"sort"
	"sync/atomic"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
	"github.com/strata-llm/strata/engine/routing"
)

// Backend runs the blocks' operations on the CPU: every op runs when it is
// called, spread over a worker pool by rows (or by matrix rows, for
// products), so Sync has nothing to wait for. It is the reference
// implementation of backend.Backend: its numerics follow llama.cpp's x86
// CPU build (activations quantized to each weight type's dot format, an
// F16 KV cache, ggml's expf and sum orders).
type Backend struct {
	pool *Pool

	acts    Acts     // the last Linear input, converted
	actsIn  *float32 // which input acts holds (nil: none)
	actsLen int

	scratch [][]float32 // per thread: attention scores
	qf      [][]float32 // per thread: a query rounded to fp16

	rows    rowOp
	attn    attnTask
	experts expertsOp
	conv    convTask
	delta   deltaTask
	hyper   hyperTask
	rsc     routing.Scratch // Route's
	qsa     qsaOp

	mats []*backend.Matrix // every matrix made, for WarmUp
	warm warmTask
}

var _ backend.Backend = (*Backend)(nil)

// NewBackend starts a CPU backend with threads worker threads (0: 1).
func NewBackend(threads int) *Backend {
	p := NewPool(threads)
	b := &Backend{pool: p}
	b.scratch = make([][]float32, p.Threads())
	b.qf = make([][]float32, p.Threads())
	return b
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return "cpu" }

// Threads implements backend.Backend.
func (b *Backend) Threads() int { return b.pool.Threads() }

// Pool is the backend's worker pool.
func (b *Backend) Pool() *Pool { return b.pool }

// Alloc implements backend.Backend.
func (b *Backend) Alloc(n int) []float32 { return make([]float32, n) }

// Sync implements backend.Backend: CPU ops have finished when they return.
func (b *Backend) Sync() error { return nil }

// Close implements backend.Backend.
func (b *Backend) Close() error {
	b.pool.Close()
	return nil
}

// NewMatrix implements backend.Backend.
func (b *Backend) NewMatrix(t ggml.Type, data []byte, rows, cols int) (*backend.Matrix, error) {
	w, err := NewWeight(t, data, rows, cols)
	if err != nil {
		return nil, err
	}
	m := &backend.Matrix{Type: t, Data: data, Rows: rows, Cols: cols, Impl: &w}
	b.mats = append(b.mats, m)
	return m, nil
}

// weight is the CPU handle of m.
func weight(m *backend.Matrix) *Weight {
	w, ok := m.Impl.(*Weight)
	if !ok {
		panic(fmt.Sprintf("cpu: matrix %s %d×%d was not made by the CPU backend", m.Type, m.Rows, m.Cols))
	}
	return w
}

// NewKVCache implements backend.Backend.
func (b *Backend) NewKVCache(attn []bool, nCtx, kvDim int) *backend.KVCache {
	c := &backend.KVCache{K: make([][]uint16, len(attn)), V: make([][]uint16, len(attn)), NCtx: nCtx, KVDim: kvDim}
	for i, a := range attn {
		if a {
			c.K[i] = make([]uint16, nCtx*kvDim)
			c.V[i] = make([]uint16, nCtx*kvDim)
		}
	}
	return c
}

// invalidate forgets the converted Linear input: every op but Linear may
// write the memory it came from.
func (b *Backend) invalidate() { b.actsIn = nil }

// GetRows implements backend.Backend.
func (b *Backend) GetRows(m *backend.Matrix, ids []int32, out []float32) {
	b.invalidate()
	w := weight(m)
	for i, id := range ids {
		w.DequantizeRow(int(id), out[i*w.Cols:(i+1)*w.Cols])
	}
}

// Linear implements backend.Backend.
func (b *Backend) Linear(m *backend.Matrix, in []float32, rows int, out []float32) {
	w := weight(m)
	n := rows * w.Cols
	if b.actsIn != unsafe.SliceData(in) || b.actsLen != n || b.acts.Type != w.VecDotType() || b.acts.Cols != w.Cols {
		b.acts.Quantize(b.pool, w.VecDotType(), in[:n], rows, w.Cols)
		b.actsIn, b.actsLen = unsafe.SliceData(in), n
	}
	out = out[:rows*w.Rows]
	MatMul(b.pool, w, &b.acts, out)
	if overlaps(out, in[:n]) {
		b.invalidate()
	}
}

// overlaps reports whether a and b share memory.
func overlaps(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+4*uintptr(len(b)) && b0 < a0+4*uintptr(len(a))
}

// Add implements backend.Backend.
func (b *Backend) Add(x, y []float32) {
	b.invalidate()
	Add(x, y)
}

// rowOp is a per-row step, one pool item per row, so that a prompt's rows
// are spread over the threads (one row runs inline).
type rowOp struct {
	b    *Backend
	kind int

	x, out, w []float32
	cols      int
	eps       float32

	heads, headDim, ropeDims int
	cs                       []float32

	c    *backend.KVCache
	il   int
	k, v []float32
	pos0 int

	used int
	wts  []float32
	src  [][]float32
}

const (
	opRMSNorm = iota
	opNormRope
	opStoreKV
	opSoftmax
	opCombine
	opGatedNorm
)

func (r *rowOp) Run(_, t int) {
	switch r.kind {
	case opRMSNorm:
		c := r.cols
		RMSNorm(r.out[t*c:(t+1)*c], r.x[t*c:(t+1)*c], r.w, r.eps)
	case opNormRope:
		hd := r.headDim
		for h := 0; h < r.heads; h++ {
			o := (t*r.heads + h) * hd
			q := r.x[o : o+hd]
			if r.w != nil {
				RMSNorm(q, q, r.w, r.eps)
			}
			if r.ropeDims > 0 {
				ApplyNeox(q, r.cs[t*r.ropeDims:(t+1)*r.ropeDims], r.ropeDims)
			}
		}
	case opStoreKV:
		kv, pos := r.c.KVDim, r.pos0+t
		quant.Float32sToFP16(r.c.K[r.il][pos*kv:(pos+1)*kv], r.k[t*kv:(t+1)*kv])
		vc, n := r.c.V[r.il], r.c.NCtx
		for i, v := range r.v[t*kv : (t+1)*kv] {
			vc[i*n+pos] = quant.Float32ToFP16(v)
		}
	case opSoftmax:
		Softmax(r.x[t*r.cols : (t+1)*r.cols])
	case opCombine:
		e, nu := r.cols, r.used
		out := r.out[t*e : (t+1)*e]
		for k := 0; k < nu; k++ {
			slot := t*nu + k
			y := r.src[slot][:e]
			wk := r.wts[slot]
			if k == 0 {
				for i := range out {
					out[i] = y[i] * wk
				}
			} else {
				for i := range out {
					out[i] += float32(y[i] * wk) // no FMA on arm64: round as ggml's mul then add
				}
			}
		}
		Add(r.x[t*e:(t+1)*e], out)
	case opGatedNorm:
		c := r.cols
		gatedNorm(r.x[t*c:(t+1)*c], r.out[t*c:(t+1)*c], r.w, r.eps)
	}
}

func (b *Backend) runRows(rows int, op rowOp) {
	b.invalidate()
	op.b = b
	b.rows = op
	b.pool.Run(rows, &b.rows)
	b.rows = rowOp{} // drop references
}

// RMSNorm implements backend.Backend.
func (b *Backend) RMSNorm(out, x, w []float32, rows int, eps float32) {
	b.runRows(rows, rowOp{kind: opRMSNorm, out: out, x: x, w: w, cols: len(w), eps: eps})
}

// NormRope implements backend.Backend.
func (b *Backend) NormRope(x []float32, rows, heads, headDim int, w []float32, eps float32, cs []float32, ropeDims int) {
	b.runRows(rows, rowOp{kind: opNormRope, x: x, heads: heads, headDim: headDim, w: w, eps: eps, cs: cs, ropeDims: ropeDims})
}

// StoreKV implements backend.Backend.
func (b *Backend) StoreKV(c *backend.KVCache, il int, k, v []float32, rows, pos0 int) {
	b.runRows(rows, rowOp{kind: opStoreKV, c: c, il: il, k: k, v: v, pos0: pos0})
}

// Softmax implements backend.Backend.
func (b *Backend) Softmax(x []float32, rows, cols int) {
	b.runRows(rows, rowOp{kind: opSoftmax, x: x, cols: cols})
}

// Combine implements backend.Backend.
func (b *Backend) Combine(x, out []float32, rows, embd, used int, wts []float32, src [][]float32) {
	b.runRows(rows, rowOp{kind: opCombine, x: x, out: out, cols: embd, used: used, wts: wts, src: src})
}

// Attention implements backend.Backend: causal attention, one item per
// (row, head), as llama.cpp computes it without flash attention: Q rounded
// to F16 for the F16 dot with K, a softmax in F32, the probabilities
// rounded to F16 for the F16 dot with each channel of V.
func (b *Backend) Attention(c *backend.KVCache, il int, q []float32, rows, pos0 int, p backend.AttnParams, out []float32) {
	b.invalidate()
	b.attnScratch(p, pos0+rows, c.NCtx)
	b.attn = attnTask{b: b, c: c, kb: f16Bytes(c.K[il]), vb: f16Bytes(c.V[il]), q: q, out: out, pos0: pos0, p: p}
	_, gpk := attnGroups(p)
	b.pool.Run(rows*p.HeadsKV*gpk, &b.attn)
	b.attn = attnTask{}
}

// SparseAttention implements backend.Backend: Attention with the scores of
// the positions outside each row's mask set to -inf after the scale, as
// ggml_soft_max_ext adds llama.cpp's mask (their exponentials are exact
// zeros, so the softmax and the F16 P·V dot over all positions are the
// masked attention's).
func (b *Backend) SparseAttention(c *backend.KVCache, il int, q []float32, rows, pos0 int, p backend.AttnParams, sel []uint64, words int, out []float32) {
	b.invalidate()
	b.attnScratch(p, pos0+rows, c.NCtx)
	b.attn = attnTask{b: b, c: c, kb: f16Bytes(c.K[il]), vb: f16Bytes(c.V[il]), q: q, out: out, pos0: pos0, p: p, sel: sel, words: words}
	_, gpk := attnGroups(p)
	b.pool.Run(rows*p.HeadsKV*gpk, &b.attn)
	b.attn = attnTask{}
}

// attnTask is one layer's attention, one item per (row, head).
type attnTask struct {
	b      *Backend
	c      *backend.KVCache
	kb, vb []byte // the layer's K and V caches
	q, out []float32
	pos0   int
	p      backend.AttnParams
	sel    []uint64 // SparseAttention: per row, words of position bits
	words  int
}

func (a *attnTask) Run(w, item int) {
	p := a.p
	hd, qDim := p.HeadDim, p.Heads*p.HeadDim
	per, gpk := attnGroups(p)
	t, rest := item/(p.HeadsKV*gpk), item%(p.HeadsKV*gpk)
	kvh, gi := rest/gpk, rest%gpk
	h0 := kvh*per + gi*attnGroup
	g := min(attnGroup, per-gi*attnGroup)
	kvDim, nCtx := a.c.KVDim, a.c.NCtx
	npos := a.pos0 + t + 1
	sc := a.b.scratch[w][:g*npos]
	q16 := a.b.qf[w][:g*hd]
	quant.RoundFP16(q16, a.q[t*qDim+h0*hd:t*qDim+(h0+g)*hd])
	// K·Q over the positions, whose K rows are kvDim apart, then P·V over
	// the channels, whose V rows are nCtx apart; each output is the F16
	// Dot of its row with Q or P rounded to fp16, as llama.cpp's F16
	// mul_mat computes it. The g heads share the KV head: its rows are
	// read once for all of them.
	quant.DotF16RowsMulti(hd, a.kb[2*kvh*hd:], 2*kvDim, npos, q16, hd, g, sc, npos)
	for j := range sc {
		sc[j] *= p.Scale
	}
	for k := 0; k < g; k++ {
		s := sc[k*npos : (k+1)*npos]
		if a.sel != nil {
			m := a.sel[t*a.words:]
			for j := range s {
				if m[j/64]>>(j%64)&1 == 0 {
					s[j] = float32(math.Inf(-1))
				}
			}
		}
		Softmax(s)
	}
	quant.RoundFP16(sc, sc)
	quant.DotF16RowsMulti(npos, a.vb[2*kvh*hd*nCtx:], 2*nCtx, hd, sc, npos, g, a.out[t*qDim+h0*hd:t*qDim+(h0+g)*hd], hd)
}

// attnGroup is the most query heads one attention item computes: heads
// that share a KV head read its K and V rows once for up to four queries
// (quant.DotF16RowsMulti, four vectors at a time with AVX-512). Measured
// on Zen 5, one thread, 8 heads of 256 sharing a KV head over 512
// positions (BenchmarkDotF16RowsMulti): their K·Q took 29.5 µs one head
// at a time, 13.2 µs four at a time.
const attnGroup = 4

// attnGroups returns the query heads per KV head and the attention items
// per KV head (groups of at most attnGroup of them).
func attnGroups(p backend.AttnParams) (per, groups int) {
	per = p.Heads / p.HeadsKV
	return per, (per + attnGroup - 1) / attnGroup
}

// attnScratch makes every thread's scratch hold the queries and the
// scores of an item's heads over n positions, grown on demand (to the
// context's length at the first call; a cache made by another backend,
// Metal's host ops, may be longer).
func (b *Backend) attnScratch(p backend.AttnParams, n, nCtx int) {
	g := min(attnGroup, p.Heads/p.HeadsKV)
	for w := range b.qf {
		if len(b.qf[w]) < g*p.HeadDim {
			b.qf[w] = make([]float32, g*p.HeadDim)
		}
		if len(b.scratch[w]) < g*n {
			b.scratch[w] = make([]float32, g*max(n, nCtx))
		}
	}
}

// f16Bytes views F16 values as the bytes the dot kernels take.
func f16Bytes(h []uint16) []byte {
	if len(h) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*len(h))
}

// WarmUp keeps the worker threads awake, touching a byte of every page of
// the dense weights (so pages the kernel dropped are read back and the
// TLB and caches hold their tables), until stop is closed; it returns once
// the pool is free again. The engine runs it on a request after an idle
// spell, while the prompt is tokenized, so prefill starts on spinning
// threads instead of parked ones.
func (b *Backend) WarmUp(stop <-chan struct{}) {
	b.warm.b = b
	if len(b.warm.cum) != len(b.mats)+1 {
		b.warm.cum = make([]int64, len(b.mats)+1)
		for i, m := range b.mats {
			b.warm.cum[i+1] = b.warm.cum[i] + int64(len(m.Data)+4095)/4096
		}
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		b.pool.Run(b.pool.Threads(), &b.warm)
	}
}

// warmTask touches pages of the dense weights, a stretch per item.
type warmTask struct {
	b    *Backend
	cum  []int64 // cum[i]: pages of matrices before i; last: all pages
	next atomic.Int64
	sink atomic.Uint32
}

const warmPages = 256 // pages per item

func (t *warmTask) Run(_, _ int) {
	ms, cum := t.b.mats, t.cum
	total := cum[len(cum)-1]
	if total == 0 {
		return
	}
	p := (t.next.Add(warmPages) - warmPages) % total
	i := sort.Search(len(ms), func(i int) bool { return cum[i+1] > p })
	var acc uint32
	for n := 0; n < warmPages && i < len(ms); n++ {
		acc += uint32(ms[i].Data[(p-cum[i])*4096])
		if p++; p >= cum[i+1] {
			i++
		}
	}
	t.sink.Add(acc)
}
