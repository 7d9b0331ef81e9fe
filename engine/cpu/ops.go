package cpu

import (
	"math"
)

// RMSNorm writes x·w/sqrt(mean(x²)+eps) to out, summing squares in float64
// as ggml does. out may alias x.
func RMSNorm(out, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// Softmax replaces x by its softmax as ggml_soft_max computes it: the
// maximum subtracted, exponentials summed in float64, then scaled by the
// inverse of the sum. Where ggml has a vector expf (amd64 with AVX2+FMA,
// 8 values at a time; arm64 NEON, 4 at a time) the same one is used, in
// ggml's sum order, and the rest with expf (math.Exp rounded to float32).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		if v > mx {
			mx = v
		}
	}
	i, sum := expSumArch(x, mx)
	for ; i < len(x); i++ {
		e := float32(math.Exp(float64(x[i] - mx)))
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// SwiGLU writes silu(gate)·up to out (out may alias gate or up), as
// ggml_vec_swiglu_f32: silu(x) = x/(1+expf(-x)), with ggml's vector expf
// where it has one (see Softmax).
func SwiGLU(out, gate, up []float32) {
	up = up[:len(gate)]
	out = out[:len(gate)]
	for i := siluMulArch(out, gate, up); i < len(gate); i++ {
		g := gate[i]
		out[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
	}
}

// Add adds b into a.
func Add(a, b []float32) {
	b = b[:len(a)]
	for i := range a {
		a[i] += b[i]
	}
}

// ApplyNeox rotates one head x (len ≥ Dims) in place with the cos/sin
// cache cs from Cache: pairs (x[i], x[i+Dims/2]).
func ApplyNeox(x, cs []float32, dims int) {
	half := dims / 2
	for i := 0; i < half; i++ {
		c, s := cs[2*i], cs[2*i+1]
		x0, x1 := x[i], x[i+half]
		// Explicit conversions keep Go from fusing these into FMAs on
		// arm64, so every platform rounds as llama.cpp's x86 build does.
		x[i] = float32(x0*c) - float32(x1*s)
		x[i+half] = float32(x0*s) + float32(x1*c)
	}
}
