package cpu

import (
	"fmt"
	"math"
)

// The hyper-connection steps (qwen4exp): the grouped RMSNorm of the
// streams, the low-rank gate's scaled SiLU, the gated mean of the streams
// and the combine, each as llama.cpp's ggml ops round them (see
// backend.Backend). Elementwise sigmoids and SiLUs use expf (math.Exp
// rounded to float32), not the vector expf: these are the loops
// blocks.HyperConn ran on the host, bit for bit (ggml's AVX2/NEON silu may
// differ from them in the last bit).

// hyperTask is one hyper-connection step, one pool item per group (norm),
// chunk (SiLU) or row (mix, combine).
type hyperTask struct {
	kind             int
	out, x, w        []float32 // norm: out, x, w; SiLU: x; mix: out, x (xn)
	gate, y, inject  []float32 // mix: gate; combine: x, y, inject
	n, streams, span int
	eps, scale       float32
}

const (
	hyperNorm = iota
	hyperSiLU
	hyperMix
	hyperCombine
)

// siluChunk is how many values one pool item of ScaledSiLU takes.
const siluChunk = 4096

func (h *hyperTask) Run(_, item int) {
	switch h.kind {
	case hyperNorm:
		n := h.n
		j := item % h.span // the group's place in its row
		RMSNorm(h.out[item*n:(item+1)*n], h.x[item*n:(item+1)*n], h.w[j*n:(j+1)*n], h.eps)
	case hyperSiLU:
		x := h.x[item*siluChunk : min((item+1)*siluChunk, len(h.x))]
		for i, v := range x {
			v *= h.scale
			x[i] = v / (1 + float32(math.Exp(float64(-v))))
		}
	case hyperMix:
		n, hd := h.n, h.streams*h.n
		g, xn, o := h.gate[item*hd:(item+1)*hd], h.x[item*hd:(item+1)*hd], h.out[item*n:(item+1)*n]
		for i := range o {
			o[i] = xn[i] * sigmoid(g[i])
		}
		for c := 1; c < h.streams; c++ {
			gc, nc := g[c*n:(c+1)*n], xn[c*n:(c+1)*n]
			for i := range o {
				o[i] += float32(nc[i] * sigmoid(gc[i])) // no FMA: ggml rounds the product
			}
		}
		inv := 1 / float32(h.streams)
		for i := range o {
			o[i] *= inv
		}
	case hyperCombine:
		n, hd := h.n, h.streams*h.n
		inv := 1 / float32(h.streams)
		y := h.y[item*n : (item+1)*n]
		for c := 0; c < h.streams; c++ {
			w := 2 * sigmoid(h.inject[item*h.streams+c]*inv)
			xs := h.x[item*hd+c*n : item*hd+(c+1)*n]
			for i, v := range y {
				xs[i] += float32(v * w) // no FMA: ggml_mul, then ggml_add
			}
		}
	}
}

func (b *Backend) runHyper(items int, t hyperTask) {
	b.invalidate()
	b.hyper = t
	b.pool.Run(items, &b.hyper)
	b.hyper = hyperTask{} // drop references
}

// GroupRMSNorm implements backend.Backend: one pool item per group. With
// a weight of ones RMSNorm's x·scale·1 is x·scale exactly, so x·scale·w
// here is that product then ·w, as the two ggml ops round it.
func (b *Backend) GroupRMSNorm(out, x, w []float32, rows, n int, eps float32) {
	if n <= 0 || len(w)%n != 0 {
		panic(fmt.Sprintf("cpu: GroupRMSNorm: groups of %d values in rows of %d", n, len(w)))
	}
	span := len(w) / n
	b.runHyper(rows*span, hyperTask{kind: hyperNorm, out: out[:rows*len(w)], x: x[:rows*len(w)], w: w, n: n, span: span, eps: eps})
}

// ScaledSiLU implements backend.Backend.
func (b *Backend) ScaledSiLU(x []float32, scale float32) {
	b.runHyper((len(x)+siluChunk-1)/siluChunk, hyperTask{kind: hyperSiLU, x: x, scale: scale})
}

// HyperMix implements backend.Backend: one pool item per row.
func (b *Backend) HyperMix(out, xn, gate []float32, rows, streams, n int) {
	hd := streams * n
	b.runHyper(rows, hyperTask{kind: hyperMix, out: out[:rows*n], x: xn[:rows*hd], gate: gate[:rows*hd], n: n, streams: streams})
}

// HyperCombine implements backend.Backend: one pool item per row.
func (b *Backend) HyperCombine(x, y, inject []float32, rows, streams, n int) {
	b.runHyper(rows, hyperTask{kind: hyperCombine, x: x[:rows*streams*n], y: y[:rows*n], inject: inject[:rows*streams], n: n, streams: streams})
}
