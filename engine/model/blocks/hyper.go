package blocks

import (
	"github.com/strata-llm/strata/engine/backend"
)

// HyperConn is one hyper-connection module (llama.cpp's qwen4exp
// build_hc_mix and build_hc_combine): the residual is HC parallel streams
// of Embd values per token ([rows][HC][Embd]); Mix collapses them into the
// block's input and Combine scatters the block's output back.
//
// Mix: a grouped RMSNorm (each stream normalised alone, then scaled by the
// [HC·Embd] Norm), a low-rank gate sigmoid(Up·silu(Down·xn / HC)) over the
// normed streams, and the mean of the gated streams; Inject·xn ([HC] per
// token) is kept for Combine. Combine adds the block output to every
// stream c scaled by 2·sigmoid(inject[c] / HC). The final head's module
// has no Inject.
//
// Every step is a backend op (GroupRMSNorm, Linear, ScaledSiLU, HyperMix,
// HyperCombine), queued without a Sync; the backend's ops define the
// float32 rounding (ggml's: ggml_scale multiplies by 1/HC, ggml_sigmoid is
// 1/(1+expf(-x)), ggml_silu x/(1+expf(-x)), the stream sum is
// ((s0+s1)+s2)+… then scaled).
type HyperConn struct {
	HC, Embd, LowRank int
	Norm              []float32       // [HC·Embd] (hc_*_norm, the converter's 1+w)
	Down              *backend.Matrix // [LowRank × HC·Embd]
	Up                *backend.Matrix // [HC·Embd × LowRank]
	Inject            *backend.Matrix // [HC × HC·Embd]; nil for the head
	Eps               float32
}

// HCBuf is a session's scratch for hyper-connection modules, grown to the
// largest batch and reused.
type HCBuf struct {
	xn, lo, gate, inject []float32
}

// Bytes is what the buffers hold.
func (buf *HCBuf) Bytes() int64 {
	return 4 * int64(cap(buf.xn)+cap(buf.lo)+cap(buf.gate)+cap(buf.inject))
}

func grow(be backend.Backend, b []float32, n int) []float32 {
	if len(b) < n {
		return be.Alloc(n)
	}
	return b
}

// Mix queues the ops that write the mixed input of rows rows of the
// residual x ([rows][HC·Embd]) into out ([rows][Embd]) and keep the rows'
// inject weights in buf for Combine (when the module has Inject). Like
// every backend op's, out is the host's to read (and x and out the host's
// to write) only after a Sync; the ops report their errors there, so Mix
// returns none of its own.
func (h *HyperConn) Mix(be backend.Backend, x []float32, rows int, buf *HCBuf, out []float32) error {
	hd := h.HC * h.Embd
	buf.xn = grow(be, buf.xn, rows*hd)
	buf.lo = grow(be, buf.lo, rows*h.LowRank)
	buf.gate = grow(be, buf.gate, rows*hd)
	buf.inject = grow(be, buf.inject, rows*h.HC)
	xn, lo, gate := buf.xn[:rows*hd], buf.lo[:rows*h.LowRank], buf.gate[:rows*hd]
	be.GroupRMSNorm(xn, x[:rows*hd], h.Norm[:hd], rows, h.Embd, h.Eps)
	be.Linear(h.Down, xn, rows, lo)
	if h.Inject != nil {
		be.Linear(h.Inject, xn, rows, buf.inject[:rows*h.HC])
	}
	be.ScaledSiLU(lo, 1/float32(h.HC))
	be.Linear(h.Up, lo, rows, gate)
	be.HyperMix(out[:rows*h.Embd], xn, gate, rows, h.HC, h.Embd)
	return nil
}

// Combine queues the op that adds the block output y ([rows][Embd]) into
// every stream of the residual x ([rows][HC·Embd]), stream c of row r
// scaled by 2·sigmoid(inject[r][c]/HC) from the last Mix. As with Mix,
// x and y are the host's again after a Sync.
func (h *HyperConn) Combine(be backend.Backend, x, y []float32, rows int, buf *HCBuf) error {
	be.HyperCombine(x[:rows*h.HC*h.Embd], y[:rows*h.Embd], buf.inject[:rows*h.HC], rows, h.HC, h.Embd)
	return nil
}
