package qwen4exp

import (
	"fmt"

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
// cache, in backend memory: every position's raw key (index_k_proj of the
// layer input, stored as F16 as llama.cpp's indexer cache holds it) and
// the pooled, normed, rotated key of every complete block. A block's key
// depends only on its members, so rolling back to n positions only
// forgets the blocks that are no longer complete.
type qsaCache struct {
	raw     []uint16  // [nCtx][Dim]
	pooled  []float32 // [nCtx/Ratio][Dim]
	nPooled int       // complete blocks pooled (or queued to be)
}

func newQSACache(be backend.Backend, ix *qsaIndexer, nCtx int) *qsaCache {
	return &qsaCache{raw: backend.AllocU16(be, nCtx*ix.Dim), pooled: be.Alloc(max(1, nCtx/ix.Ratio) * ix.Dim)}
}

// Truncate forgets what positions n… contributed.
func (c *qsaCache) Truncate(n, ratio int) { c.nPooled = min(c.nPooled, n/ratio) }

// Bytes is the memory the cache holds.
func (c *qsaCache) Bytes() int64 { return 2*int64(len(c.raw)) + 4*int64(len(c.pooled)) }

// qsaBuf is a session's scratch for the indexers.
type qsaBuf struct {
	rows int
	q, k []float32 // [rows][Heads·Dim], [rows][Dim]
	bcs  []float32 // block rope cos/sin
	sel  []uint64  // [rows][words], backend memory
}

// Bytes is what the buffers hold.
func (b *qsaBuf) Bytes() int64 {
	return 4*int64(cap(b.q)+cap(b.k)+cap(b.bcs)) + 8*int64(cap(b.sel))
}

// Select runs the indexer on rows rows of the layer input xn (row r at
// position pos0+r, with the layer's RoPE cos/sin cs), caches their keys
// and returns each row's mask of kept positions (words uint64s per row,
// valid until the next call), for backend.SparseAttention. Every step is
// a backend op: nothing waits for the device.
func (ix *qsaIndexer) Select(be backend.Backend, rope *backend.Rope, xn []float32, rows, pos0 int, cs []float32, c *qsaCache, buf *qsaBuf) (sel []uint64, words int) {
	d, r := ix.Dim, ix.Ratio
	if rows > buf.rows || len(buf.q) < rows*ix.Heads*d {
		buf.q, buf.k, buf.rows = be.Alloc(rows*ix.Heads*d), be.Alloc(rows*d), rows
	}
	q, k := buf.q[:rows*ix.Heads*d], buf.k[:rows*d]
	be.Linear(ix.QProj, xn, rows, q)
	be.Linear(ix.KProj, xn, rows, k)
	be.NormRope(q, rows, ix.Heads, d, ix.QNorm, ix.Eps, cs, ix.RopeDims)
	be.StoreF16(c.raw[pos0*d:(pos0+rows)*d], k)
	// Pool the blocks this batch completes, then norm and rotate them at
	// their first position (ggml_rope_multi with every section at b·r).
	if nb := (pos0 + rows) / r; nb > c.nPooled {
		n := nb - c.nPooled
		if len(buf.bcs) < n*ix.RopeDims {
			buf.bcs = make([]float32, n*ix.RopeDims)
		}
		for b := c.nPooled; b < nb; b++ {
			i := b - c.nPooled
			rope.Cache(b*r, buf.bcs[i*ix.RopeDims:(i+1)*ix.RopeDims])
		}
		be.QSAPool(c.pooled[c.nPooled*d:nb*d], c.raw[c.nPooled*r*d:nb*r*d], n, r, d)
		be.NormRope(c.pooled[c.nPooled*d:nb*d], n, 1, d, ix.KNorm, ix.Eps, buf.bcs[:n*ix.RopeDims], ix.RopeDims)
		c.nPooled = nb
	}
	// Sized for the session's context, so that decoding allocates nothing
	// as the context grows.
	nCtx := len(c.raw) / d
	words = (nCtx + 63) / 64
	if len(buf.sel) < rows*words {
		buf.sel = backend.AllocU64(be, rows*words)
	}
	be.QSASelect(buf.sel[:rows*words], q, c.pooled, rows, pos0, ix.Heads, d, r, ix.TopK+r-1, words)
	return buf.sel[:rows*words], words
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
	// The indexer's ops follow the position (the key's slot, the block
	// pooled, the blocks scored) and it advances its cache's pooled
	// count: a replayed step runs it again (backend.Redo). Its mask is
	// the same backend memory at every position.
	if rp, ok := s.m.be.(backend.Replayer); ok {
		return s.qsaRedo(rp, l, il, xn, nt, pos0, cs, y)
	}
	sel, words := l.ix.Select(s.m.be, &s.m.rope, xn, nt, pos0, cs, s.idx[il], &s.qsab)
	l.attn.ForwardSparse(s.m.be, s.kv, il, xn, nt, pos0, cs, &s.attn, y, sel, words)
	return nil
}

// qsaRedo is qsaAttention on a Replayer (apart, so that the CPU's decode
// step allocates nothing for the closure's variables).
func (s *Session) qsaRedo(rp backend.Replayer, l *layer, il int, xn []float32, nt, pos0 int, cs, y []float32) error {
	var sel []uint64
	var words int
	if err := rp.Redo(pos0, func(pos0 int) error {
		sel, words = l.ix.Select(s.m.be, &s.m.rope, xn, nt, pos0, cs, s.idx[il], &s.qsab)
		return nil
	}); err != nil {
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
