package blocks

import (
	"github.com/strata-llm/strata/engine/backend"
)

// Attention is one grouped-query attention layer with Q/K RMSNorm and NEOX
// RoPE over a KV cache (llama.cpp's qwen3 attention). With Gated, Q's
// projection packs per head the query and an output gate (qwen3next): the
// attention output is multiplied by sigmoid(gate) before O.
type Attention struct {
	Q, K, V, O   *backend.Matrix
	QNorm, KNorm []float32 // per head; nil: no norm
	P            backend.AttnParams
	RopeDims     int // rotated dimensions per head (≤ HeadDim)
	Eps          float32
	Gated        bool
}

// AttnBuf is a session's scratch for attention layers.
type AttnBuf struct {
	rows         int
	q, k, v, att []float32
	qg, gate     []float32 // gated attention: packed query and gate, the gate
}

func (a *Attention) size(be backend.Backend, buf *AttnBuf, rows int) {
	if rows <= buf.rows && len(buf.q) >= rows*a.P.Heads*a.P.HeadDim && len(buf.k) >= rows*a.P.HeadsKV*a.P.HeadDim &&
		(!a.Gated || len(buf.gate) >= rows*a.P.Heads*a.P.HeadDim) {
		return
	}
	qd, kd := a.P.Heads*a.P.HeadDim, a.P.HeadsKV*a.P.HeadDim
	buf.q, buf.att = be.Alloc(rows*qd), be.Alloc(rows*qd)
	buf.k, buf.v = be.Alloc(rows*kd), be.Alloc(rows*kd)
	if a.Gated {
		buf.qg, buf.gate = be.Alloc(2*rows*qd), be.Alloc(rows*qd)
	}
	buf.rows = rows
}

// Forward computes the attention output projection of rows rows of the
// normed input xn (row r at position pos0+r, with RoPE cos/sin cs) into out
// ([rows][embd]), storing their K and V in layer il of kv.
func (a *Attention) Forward(be backend.Backend, kv *backend.KVCache, il int, xn []float32, rows, pos0 int, cs []float32, buf *AttnBuf, out []float32) {
	a.ForwardSparse(be, kv, il, xn, rows, pos0, cs, buf, out, nil, 0)
}

// ForwardSparse is Forward with each row attending only to the positions
// set in its mask (sel, words per row, as backend.SparseAttention takes
// it); sel nil: causal attention to all.
func (a *Attention) ForwardSparse(be backend.Backend, kv *backend.KVCache, il int, xn []float32, rows, pos0 int, cs []float32, buf *AttnBuf, out []float32, sel []uint64, words int) {
	a.size(be, buf, rows)
	p := a.P
	qd, kd := p.Heads*p.HeadDim, p.HeadsKV*p.HeadDim
	q, k, v, att := buf.q[:rows*qd], buf.k[:rows*kd], buf.v[:rows*kd], buf.att[:rows*qd]
	// Q, K and V share the converted input (the backend's Linear contract).
	if a.Gated {
		be.Linear(a.Q, xn, rows, buf.qg[:2*rows*qd])
	} else {
		be.Linear(a.Q, xn, rows, q)
	}
	be.Linear(a.K, xn, rows, k)
	be.Linear(a.V, xn, rows, v)
	var gate []float32
	if a.Gated {
		gate = buf.gate[:rows*qd]
		be.SplitHeads(q, gate, buf.qg[:2*rows*qd], rows, p.Heads, p.HeadDim, p.HeadDim)
	}
	be.NormRope(q, rows, p.Heads, p.HeadDim, a.QNorm, a.Eps, cs, a.RopeDims)
	be.NormRope(k, rows, p.HeadsKV, p.HeadDim, a.KNorm, a.Eps, cs, a.RopeDims)
	be.StoreKV(kv, il, k, v, rows, pos0)
	if sel != nil {
		be.SparseAttention(kv, il, q, rows, pos0, p, sel, words, att)
	} else {
		be.Attention(kv, il, q, rows, pos0, p, att)
	}
	if a.Gated {
		be.SigmoidMul(att, gate, rows)
	}
	be.Linear(a.O, att, rows, out)
}

// Store computes only the K and V of rows rows of xn (row r at position
// pos0+r) and stores them in layer il of kv, as Forward does, without the
// attention itself: a cache that only later rows read (the MTP head's pass
// over the trunk's rows, whose outputs nothing reads).
func (a *Attention) Store(be backend.Backend, kv *backend.KVCache, il int, xn []float32, rows, pos0 int, cs []float32, buf *AttnBuf) {
	a.size(be, buf, rows)
	p := a.P
	kd := p.HeadsKV * p.HeadDim
	k, v := buf.k[:rows*kd], buf.v[:rows*kd]
	be.Linear(a.K, xn, rows, k)
	be.Linear(a.V, xn, rows, v)
	be.NormRope(k, rows, p.HeadsKV, p.HeadDim, a.KNorm, a.Eps, cs, a.RopeDims)
	be.StoreKV(kv, il, k, v, rows, pos0)
}
