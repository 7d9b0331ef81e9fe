package cpu

import (
	"github.com/strata-llm/strata/engine/quant"
)

// QSA: qwen4exp's block-sparse attention selection, as llama.cpp's
// qwen4exp.cpp (build_qsa_top_k) and llama-memory-hybrid-idx.cpp
// (set_input_qsa) compute it, moved here from the model's host code so
// that it is a backend op (QSAPool, QSASelect; see engine/backend and
// engine/model/qwen4exp's qsa.go for the model's side). An indexer's
// query scores every complete block of r positions by the sum over its
// heads of ReLU(q_h·k_block); the cells of the query's incomplete tail
// block are always kept; the attention keeps min(n, top_k + r − 1) cells,
// chosen by ggml's CPU top_k, which is libstdc++'s std::partial_sort with
// a > b: since the cut does not fall on block boundaries, which cells of
// a tied block are kept is decided by partial_sort's heap, reproduced
// here exactly.

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

// QSAScratch is one query's selection scratch.
type QSAScratch struct {
	vals []float32
	idx  []int32
}

// QSASelectRow sets in sel (bit j of sel[j/64] for position j; sel must hold
// q+1 bits and is cleared first) the cells a query at position q keeps,
// given its scores of the complete blocks before its tail
// (blockScores[b] for b < (q+1)/r), the ratio r and the width
// (top_k + r − 1). It is llama.cpp's selection with the whole sequence in
// cells 0..n in position order: future cells, masked to −inf, never enter
// partial_sort's heap once it is full of visible cells, and when it is
// not (q+1 ≤ width) every visible cell is kept.
func QSASelectRow(sel []uint64, blockScores []float32, q, r, width int, sc *QSAScratch) {
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

// QSAScores writes into dst[b], for each complete block b < len(dst), the
// query's score: the sum over heads (in head order, in float32, as
// ggml_add of the head views) of ReLU(q_h · key_b). q holds heads×dim
// values, keys[b*dim:] block b's pooled, normed, rotated key. Each dot
// product is accumulated in float64 and rounded once: ggml's F32 mat-mul
// rounds in its own lane order, which no order here reproduces on every
// platform; the difference only matters between blocks whose scores tie
// to within a rounding.
func QSAScores(dst, q, keys []float32, heads, dim int) {
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

// QSAPool writes into dst (dim values) the mean of r raw F16 keys
// (raw[m*dim:] for m < r), as build_qsa_top_k pools them: the members
// summed in order in float32, then scaled by 1/r (ggml_scale).
func QSAPool(dst []float32, raw []uint16, r, dim int) {
	for i := range dst[:dim] {
		dst[i] = quant.FP16ToFloat32(raw[i])
	}
	for m := 1; m < r; m++ {
		row := raw[m*dim : (m+1)*dim]
		for i := range dst[:dim] {
			dst[i] += quant.FP16ToFloat32(row[i])
		}
	}
	inv := 1 / float32(r)
	for i := range dst[:dim] {
		dst[i] *= inv
	}
}

// PartialSort is std::partial_sort(idx, idx+k, idx+len(idx), cmp_top_k)
// over the values vals[idx[i]]: afterwards idx[:k] holds the k largest,
// best first, ties ordered as libstdc++ orders them.
func PartialSort(vals []float32, idx []int32, k int) { topKLess(vals).partialSort(idx, k) }

// qsaOp is the CPU backend's selection scratch.
type qsaOp struct {
	scores []float32
	sc     QSAScratch
}

// StoreF16 implements backend.Backend.
func (b *Backend) StoreF16(dst []uint16, src []float32) {
	b.invalidate()
	for i, v := range src {
		dst[i] = quant.Float32ToFP16(v)
	}
}

// QSAPool implements backend.Backend.
func (b *Backend) QSAPool(dst []float32, raw []uint16, blocks, r, dim int) {
	b.invalidate()
	for i := 0; i < blocks; i++ {
		QSAPool(dst[i*dim:(i+1)*dim], raw[i*r*dim:(i+1)*r*dim], r, dim)
	}
}

// QSASelect implements backend.Backend: per row, the block scores (when
// the row sees more cells than the width) and the selection.
func (b *Backend) QSASelect(sel []uint64, q, keys []float32, rows, pos0, heads, dim, r, width, words int) {
	b.invalidate()
	// Sized for the masks' positions (the session's context), so that
	// decoding allocates nothing as the context grows.
	if n := 64 * words; cap(b.qsa.sc.vals) < n {
		b.qsa.sc.vals, b.qsa.sc.idx = make([]float32, n), make([]int32, n)
		b.qsa.scores = make([]float32, n/r+1)
	}
	for t := 0; t < rows; t++ {
		qp := pos0 + t
		nb := (qp + 1) / r
		if cap(b.qsa.scores) < nb {
			b.qsa.scores = make([]float32, nb)
		}
		s := b.qsa.scores[:nb]
		if qp+1 > width {
			QSAScores(s, q[t*heads*dim:(t+1)*heads*dim], keys, heads, dim)
		}
		QSASelectRow(sel[t*words:(t+1)*words], s, qp, r, width, &b.qsa.sc)
	}
}
