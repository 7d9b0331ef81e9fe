package blocks

import (
	"github.com/strata-llm/strata/engine/backend"
)

// Attention is one grouped-query attention layer with Q/K RMSNorm and NEOX
// RoPE over a KV cache (llama.cpp's qwen3 attention).
type Attention struct {
	Q, K, V, O   *backend.Matrix
	QNorm, KNorm []float32 // per head; nil: no norm
	P            backend.AttnParams
	RopeDims     int // rotated dimensions per head (≤ HeadDim)
	Eps          float32
}

// AttnBuf is a session's scratch for attention layers.
type AttnBuf struct {
	rows         int
	q, k, v, att []float32
}

func (a *Attention) size(be backend.Backend, buf *AttnBuf, rows int) {
	if rows <= buf.rows && len(buf.q) >= rows*a.P.Heads*a.P.HeadDim && len(buf.k) >= rows*a.P.HeadsKV*a.P.HeadDim {
		return
	}
	qd, kd := a.P.Heads*a.P.HeadDim, a.P.HeadsKV*a.P.HeadDim
	buf.q, buf.att = be.Alloc(rows*qd), be.Alloc(rows*qd)
	buf.k, buf.v = be.Alloc(rows*kd), be.Alloc(rows*kd)
	buf.rows = rows
}

// Forward computes the attention output projection of rows rows of the
// normed input xn (row r at position pos0+r, with RoPE cos/sin cs) into out
// ([rows][embd]), storing their K and V in layer il of kv.
func (a *Attention) Forward(be backend.Backend, kv *backend.KVCache, il int, xn []float32, rows, pos0 int, cs []float32, buf *AttnBuf, out []float32) {
	a.size(be, buf, rows)
	p := a.P
	qd, kd := p.Heads*p.HeadDim, p.HeadsKV*p.HeadDim
	q, k, v, att := buf.q[:rows*qd], buf.k[:rows*kd], buf.v[:rows*kd], buf.att[:rows*qd]
	// Q, K and V share the converted input (the backend's Linear contract).
	be.Linear(a.Q, xn, rows, q)
	be.Linear(a.K, xn, rows, k)
	be.Linear(a.V, xn, rows, v)
	be.NormRope(q, rows, p.Heads, p.HeadDim, a.QNorm, a.Eps, cs, a.RopeDims)
	be.NormRope(k, rows, p.HeadsKV, p.HeadDim, a.KNorm, a.Eps, cs, a.RopeDims)
	be.StoreKV(kv, il, k, v, rows, pos0)
	be.Attention(kv, il, q, rows, pos0, p, att)
	be.Linear(a.O, att, rows, out)
}
