package qwen4exp

import (
	"fmt"
	"math"

	"github.com/strata-llm/strata/engine/backend"
)

// QSA: qwen4exp's block-sparse attention, as llama.cpp's qwen4exp.cpp
// (build_qsa_top_k, build_attn_qsa) and llama-memory-hybrid-idx.cpp
// (set_input_qsa) compute it. An attention layer with a compress ratio r
// has an indexer: its own query heads (index_q_proj, RMSNorm, RoPE at the
// token's position) and one raw key per token (index_k_proj), cached as
// F16 beside the KV cache. The keys of every complete block of r
// positions are mean-pooled, RMS-normed and rotated at the block's first
// position; a query's score of a block is the sum over indexer heads of
// ReLU(q_h·k_block) (no scale, no head weights). Every cell of a block
// carries its block's score; the cells of the query's incomplete tail
// block (positions (q+1)/r·r … q) carry 1e9 and so are always kept. The
// attention then keeps min(n_kv, top_k + r − 1) cells, chosen by ggml's
// CPU top_k, which is libstdc++'s std::partial_sort with a > b: since the
// cut does not fall on block boundaries, which cells of a tied block are
// kept is decided by partial_sort's heap, reproduced here exactly. The
// layer's attention is dense attention masked to the kept cells.

// topKLess is ggml-cpu's cmp_top_k: a before b when v[a] > v[b].
type topKLess []float32

func (v topKLess) less(a, b int32) bool { return v[a] > v[b] }

// adjustHeap is libstdc++'s std::__adjust_heap followed by its
// std::__push_heap, on h[:n] with the hole at hole.
func (v topKLess) adjustHeap(h []int32, hole, n int, value int32) {
	top := hole
	child := hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if v.less(h[child], h[child-1]) {
			child--
		}
		h[hole] = h[child]
		hole = child
	}
	if n&1 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		h[hole] = h[child-1]
		hole = child - 1
	}
	parent := (hole - 1) / 2
	for hole > top && v.less(h[parent], value) {
		h[hole] = h[parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	h[hole] = value
}

// heapSelect is libstdc++'s std::__heap_select(idx, idx+k, idx+len(idx)):
// afterwards idx[:k] holds (as a heap) the k entries std::partial_sort
// keeps, ties decided as libstdc++ decides them.
func (v topKLess) heapSelect(idx []int32, k int) {
	if k <= 0 {
		return
	}
	if k >= 2 { // std::__make_heap
		for parent := (k - 2) / 2; ; parent-- {
			v.adjustHeap(idx, parent, k, idx[parent])
			if parent == 0 {
				break
			}
		}
	}
	for i := k; i < len(idx); i++ {
		if v.less(idx[i], idx[0]) { // std::__pop_heap(first, middle, i)
			value := idx[i]
			idx[i] = idx[0]
			v.adjustHeap(idx, 0, k, value)
		}
	}
}

// partialSort is std::partial_sort(idx, idx+k, idx+len(idx), cmp_top_k):
// heap selection, then std::__sort_heap of the first k.
func (v topKLess) partialSort(idx []int32, k int) {
	v.heapSelect(idx, k)
	for last := k - 1; last > 0; last-- {
		value := idx[last]
		idx[last] = idx[0]
		v.adjustHeap(idx, 0, last, value)
	}
}

// qsaTail is the value of a tail cell: llama.cpp gives them the block's
// score + 1e9. Any value above every block score selects the same cells:
// the tail cells are fewer than the width, so all are kept, and in
// libstdc++'s heap a comparison between two tail cells only moves tail
// cells among the positions tail cells hold, so which other cells are
// kept does not depend on how the tail values compare among themselves.
const qsaTail = float32(1e9)

// qsaScratch is one query's selection scratch.
type qsaScratch struct {
	vals []float32
	idx  []int32
}

// qsaSelect sets in sel (bit j of sel[j/64] for position j; sel must hold
// q+1 bits and is cleared first) the cells a query at position q keeps,
// given its scores of the complete blocks before its tail
// (blockScores[b] for b < (q+1)/r), the ratio r and the width
// (top_k + r − 1). It is llama.cpp's selection with the whole sequence in
// cells 0..n in position order: future cells, masked to −inf, never enter
// partial_sort's heap once it is full of visible cells, and when it is
// not (q+1 ≤ width) every visible cell is kept.
func qsaSelect(sel []uint64, blockScores []float32, q, r, width int, sc *qsaScratch) {
	n := q + 1
	clear(sel[:(n+63)/64]) // the attention reads no bit past q
	if n <= width {
		for j := 0; j < n; j++ {
			sel[j/64] |= 1 << (j % 64)
		}
		return
	}
	tail := n / r * r
	if cap(sc.vals) < n {
		sc.vals = make([]float32, n)
		sc.idx = make([]int32, n)
	}
	vals, idx := sc.vals[:n], sc.idx[:n]
	for j := 0; j < tail; j++ {
		vals[j] = blockScores[j/r]
	}
	for j := tail; j < n; j++ {
		vals[j] = qsaTail
	}
	for j := range idx {
		idx[j] = int32(j)
	}
	topKLess(vals).heapSelect(idx, width)
	for _, j := range idx[:width] {
		sel[j/64] |= 1 << (j % 64)
	}
}

// qsaScores writes into dst[b], for each complete block b < len(dst), the
// query's score: the sum over heads (in head order, in float32, as
// ggml_add of the head views) of ReLU(q_h · key_b). q holds heads×dim
// values, keys[b*dim:] block b's pooled, normed, rotated key. Each dot
// product is accumulated in float64 and rounded once: ggml's F32 mat-mul
// rounds in its own lane order, which no order here reproduces on every
// platform; the difference only matters between blocks whose scores tie
// to within a rounding.
func qsaScores(dst, q, keys []float32, heads, dim int) {
	for b := range dst {
		k := keys[b*dim : (b+1)*dim]
		var s float32
		for h := 0; h < heads; h++ {
			qh := q[h*dim : (h+1)*dim]
			var d float64
			for i, x := range qh {
				d += float64(x) * float64(k[i])
			}
			if v := float32(d); v > 0 {
				if h == 0 {
					s = v
				} else {
					s += v
				}
			}
		}
		dst[b] = s
	}
}

// qsaPool writes into dst (dim values) the mean of r raw F16 keys
// (raw[m*dim:] for m < r), as build_qsa_top_k pools them: the members
// summed in order in float32, then scaled by 1/r (ggml_scale).
func qsaPool(dst []float32, raw []uint16, r, dim int) {
	for i := range dst[:dim] {
		dst[i] = halfToFloat(raw[i])
	}
	for m := 1; m < r; m++ {
		row := raw[m*dim : (m+1)*dim]
		for i := range dst[:dim] {
			dst[i] += halfToFloat(row[i])
		}
	}
	inv := 1 / float32(r)
	for i := range dst[:dim] {
		dst[i] *= inv
	}
}

// floatToHalf is IEEE binary16 rounding to nearest even (ggml's
// GGML_FP32_TO_FP16 with F16C): how llama.cpp stores the indexer's keys in
// its F16 cache.
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - e)
		h := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the correct rounding, up to infinity
	}
	return sign | uint16(h)
}

// halfToFloat converts IEEE binary16 to float32 exactly.
func halfToFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// qsaIndexer is one full-attention layer's indexer (blk.N.indexer.*).
type qsaIndexer struct {
	QProj    *backend.Matrix // [Heads·Dim × embd]
	KProj    *backend.Matrix // [Dim × embd]
	QNorm    []float32       // [Dim]
	KNorm    []float32       // [Dim]
	Ratio    int
	Heads    int
	Dim      int
	TopK     int
	RopeDims int
	Eps      float32
}

// qsaCache is a session's indexer cache for one layer, beside its KV
// cache: every position's raw key (index_k_proj of the layer input,
// stored as F16 as llama.cpp's indexer cache holds it) and the pooled,
// normed, rotated key of every complete block. A block's key depends only
// on its members, so rolling back to n positions only forgets the blocks
// that are no longer complete.
type qsaCache struct {
	raw     []uint16  // [nCtx][Dim]
	pooled  []float32 // [nCtx/Ratio][Dim], backend memory
	nPooled int       // complete blocks pooled
}

func newQSACache(be backend.Backend, ix *qsaIndexer, nCtx int) *qsaCache {
	return &qsaCache{raw: make([]uint16, nCtx*ix.Dim), pooled: be.Alloc(max(1, nCtx/ix.Ratio) * ix.Dim)}
}

// Truncate forgets what positions n… contributed.
func (c *qsaCache) Truncate(n, ratio int) { c.nPooled = min(c.nPooled, n/ratio) }

// Bytes is the memory the cache holds.
func (c *qsaCache) Bytes() int64 { return 2*int64(len(c.raw)) + 4*int64(len(c.pooled)) }

// qsaBuf is a session's scratch for the indexers.
type qsaBuf struct {
	rows   int
	q, k   []float32 // [rows][Heads·Dim], [rows][Dim]
	bcs    []float32 // block rope cos/sin
	scores []float32
	sel    []uint64
	sc     qsaScratch
}

// Bytes is what the buffers hold.
func (b *qsaBuf) Bytes() int64 {
	return 4*int64(cap(b.q)+cap(b.k)+cap(b.bcs)+cap(b.scores)+cap(b.sc.vals)+cap(b.sc.idx)) + 8*int64(cap(b.sel))
}

// Select runs the indexer on rows rows of the layer input xn (row r at
// position pos0+r, with the layer's RoPE cos/sin cs), caches their keys
// and returns each row's mask of kept positions (words uint64s per row,
// valid until the next call), for backend.SparseAttention.
func (ix *qsaIndexer) Select(be backend.Backend, rope *backend.Rope, xn []float32, rows, pos0 int, cs []float32, c *qsaCache, buf *qsaBuf) (sel []uint64, words int, err error) {
	d, r := ix.Dim, ix.Ratio
	if rows > buf.rows || len(buf.q) < rows*ix.Heads*d {
		buf.q, buf.k, buf.rows = be.Alloc(rows*ix.Heads*d), be.Alloc(rows*d), rows
	}
	q, k := buf.q[:rows*ix.Heads*d], buf.k[:rows*d]
	be.Linear(ix.QProj, xn, rows, q)
	be.Linear(ix.KProj, xn, rows, k)
	be.NormRope(q, rows, ix.Heads, d, ix.QNorm, ix.Eps, cs, ix.RopeDims)
	if err := be.Sync(); err != nil {
		return nil, 0, err
	}
	for t := 0; t < rows; t++ {
		dst := c.raw[(pos0+t)*d : (pos0+t+1)*d]
		for i, v := range k[t*d : (t+1)*d] {
			dst[i] = floatToHalf(v)
		}
	}
	// Pool the blocks this batch completes, then norm and rotate them at
	// their first position (ggml_rope_multi with every section at b·r).
	if nb := (pos0 + rows) / r; nb > c.nPooled {
		n := nb - c.nPooled
		if len(buf.bcs) < n*ix.RopeDims {
			buf.bcs = make([]float32, n*ix.RopeDims)
		}
		for b := c.nPooled; b < nb; b++ {
			qsaPool(c.pooled[b*d:(b+1)*d], c.raw[b*r*d:(b+1)*r*d], r, d)
			i := b - c.nPooled
			rope.Cache(b*r, buf.bcs[i*ix.RopeDims:(i+1)*ix.RopeDims])
		}
		be.NormRope(c.pooled[c.nPooled*d:nb*d], n, 1, d, ix.KNorm, ix.Eps, buf.bcs[:n*ix.RopeDims], ix.RopeDims)
		if err := be.Sync(); err != nil {
			return nil, 0, err
		}
		c.nPooled = nb
	}
	// Sized for the session's context, so that decoding allocates nothing
	// as the context grows.
	nCtx := len(c.raw) / d
	words = (nCtx + 63) / 64
	if len(buf.sel) < rows*words {
		buf.sel = make([]uint64, rows*words)
	}
	if len(buf.scores) < nCtx/r+1 {
		buf.scores = make([]float32, nCtx/r+1)
	}
	if cap(buf.sc.vals) < nCtx {
		buf.sc.vals, buf.sc.idx = make([]float32, nCtx), make([]int32, nCtx)
	}
	width := ix.TopK + r - 1
	for t := 0; t < rows; t++ {
		qp := pos0 + t
		s := buf.scores[:(qp+1)/r]
		if qp+1 > width {
			qsaScores(s, q[t*ix.Heads*d:(t+1)*ix.Heads*d], c.pooled, ix.Heads, d)
		}
		qsaSelect(buf.sel[t*words:(t+1)*words], s, qp, r, width, &buf.sc)
	}
	return buf.sel[:rows*words], words, nil
}

// initQSA makes the indexers of the layers whose compress ratio is
// positive, checking what the backend's ops need.
func (m *Model) initQSA() error {
	hp := m.hp
	for il := range m.layers {
		l := &m.layers[il]
		if l.recurrent || l.qsa.Ratio <= 0 {
			continue
		}
		switch {
		case l.qsa.Ratio > qsaMaxRatio:
			return fmt.Errorf("%s: layer %d: %s.attention.compress_ratios %d is above %d", Arch, il, Arch, l.qsa.Ratio, qsaMaxRatio)
		case hp.RopeDims > hp.IndexerDim || hp.IndexerDim%2 != 0:
			return fmt.Errorf("%s: the indexer's key length %d must be even and hold the %d rotated dimensions", Arch, hp.IndexerDim, hp.RopeDims)
		}
		l.ix = &qsaIndexer{QProj: l.qsa.QProj, KProj: l.qsa.KProj, QNorm: l.qsa.QNorm, KNorm: l.qsa.KNorm,
			Ratio: l.qsa.Ratio, Heads: hp.IndexerHeads, Dim: hp.IndexerDim, TopK: hp.IndexerTopK, RopeDims: hp.RopeDims, Eps: hp.Eps}
	}
	return nil
}

// qsaAttention is layer il's attention with QSA: the indexer picks each
// row's cells, the attention attends to them only.
func (s *Session) qsaAttention(l *layer, il int, xn []float32, nt, pos0 int, cs, y []float32) error {
	sel, words, err := l.ix.Select(s.m.be, &s.m.rope, xn, nt, pos0, cs, s.idx[il], &s.qsab)
	if err != nil {
		return err
	}
	l.attn.ForwardSparse(s.m.be, s.kv, il, xn, nt, pos0, cs, &s.attn, y, sel, words)
	return nil
}

// qsaMaxRatio is the largest compress ratio llama.cpp accepts
// (set_input_qsa keeps a block's cells in a 64-bit mask).
const qsaMaxRatio = 64

// qsaTruncate makes the indexer caches forget positions n….
func (s *Session) qsaTruncate(n int) {
	for il, c := range s.idx {
		if c != nil {
			c.Truncate(n, s.m.layers[il].ix.Ratio)
		}
	}
}
