package blocks

import (
	"math"

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
// The elementwise steps run on the host after a Sync (they are O(HC·Embd)
// per token beside the O(HC·Embd·LowRank) projections), in float32 in
// ggml's order: ggml_scale multiplies by 1/HC, ggml_sigmoid is
// 1/(1+expf(-x)), ggml_silu x/(1+expf(-x)) (ggml's AVX2/NEON silu may
// differ from it in the last bit), the stream sum is ((s0+s1)+s2)+… then
// scaled.
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
	xn, lo, gate, inject, ones []float32
}

// Bytes is what the buffers hold.
func (buf *HCBuf) Bytes() int64 {
	return 4 * int64(cap(buf.xn)+cap(buf.lo)+cap(buf.gate)+cap(buf.inject)+cap(buf.ones))
}

func grow(be backend.Backend, b []float32, n int) []float32 {
	if len(b) < n {
		return be.Alloc(n)
	}
	return b
}

func sigmoid32(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// Mix writes the mixed input of rows rows of the residual x
// ([rows][HC·Embd]) into out ([rows][Embd]), and keeps the rows' inject
// weights in buf for Combine (when the module has Inject).
//
// The host writes out and buf's vectors between backend ops; every backend
// Linear here reads a buffer the host wrote only after a backend op that
// drops the backend's cached activation conversion (RMSNorm) or a buffer
// no earlier Linear read, so no stale conversion is reused.
func (h *HyperConn) Mix(be backend.Backend, x []float32, rows int, buf *HCBuf, out []float32) error {
	hd, e := h.HC*h.Embd, h.Embd
	buf.xn = grow(be, buf.xn, rows*hd)
	buf.lo = grow(be, buf.lo, rows*h.LowRank)
	buf.gate = grow(be, buf.gate, rows*hd)
	buf.inject = grow(be, buf.inject, rows*h.HC)
	if len(buf.ones) < e {
		buf.ones = be.Alloc(e)
		for i := range buf.ones {
			buf.ones[i] = 1
		}
	}
	xn, lo, gate := buf.xn[:rows*hd], buf.lo[:rows*h.LowRank], buf.gate[:rows*hd]
	// ggml_rms_norm over each stream (x·scale·1 is exact), then the
	// elementwise Norm.
	be.RMSNorm(xn, x[:rows*hd], buf.ones[:e], rows*h.HC, h.Eps)
	if err := be.Sync(); err != nil {
		return err
	}
	for r := 0; r < rows; r++ {
		row := xn[r*hd : (r+1)*hd]
		for i, w := range h.Norm[:hd] {
			row[i] *= w
		}
	}
	be.Linear(h.Down, xn, rows, lo)
	if h.Inject != nil {
		be.Linear(h.Inject, xn, rows, buf.inject[:rows*h.HC])
	}
	if err := be.Sync(); err != nil {
		return err
	}
	inv := 1 / float32(h.HC)
	for i, v := range lo {
		v *= inv
		lo[i] = v / (1 + float32(math.Exp(float64(-v))))
	}
	be.Linear(h.Up, lo, rows, gate)
	if err := be.Sync(); err != nil {
		return err
	}
	for r := 0; r < rows; r++ {
		g, n, o := gate[r*hd:(r+1)*hd], xn[r*hd:(r+1)*hd], out[r*e:(r+1)*e]
		for i := range o {
			o[i] = n[i] * sigmoid32(g[i])
		}
		for c := 1; c < h.HC; c++ {
			gc, nc := g[c*e:(c+1)*e], n[c*e:(c+1)*e]
			for i := range o {
				o[i] += float32(nc[i] * sigmoid32(gc[i])) // no FMA: ggml rounds the product
			}
		}
		for i := range o {
			o[i] *= inv
		}
	}
	return nil
}

// Combine adds the block output y ([rows][Embd]) into every stream of the
// residual x ([rows][HC·Embd]), stream c of row r scaled by
// 2·sigmoid(inject[r][c]/HC) from the last Mix. It runs on the host: the
// caller has synced after the op that wrote y.
func (h *HyperConn) Combine(be backend.Backend, x, y []float32, rows int, buf *HCBuf) error {
	if err := be.Sync(); err != nil {
		return err
	}
	hd, e := h.HC*h.Embd, h.Embd
	inv := 1 / float32(h.HC)
	for r := 0; r < rows; r++ {
		yr := y[r*e : (r+1)*e]
		for c := 0; c < h.HC; c++ {
			w := 2 * sigmoid32(buf.inject[r*h.HC+c]*inv)
			xs := x[r*hd+c*e : r*hd+(c+1)*e]
			for i, v := range yr {
				xs[i] += float32(v * w) // no FMA: ggml_mul, then ggml_add
			}
		}
	}
	return nil
}
