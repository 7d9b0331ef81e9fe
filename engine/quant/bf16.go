package quant

import (
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

func init() {
	register(ggml.BF16, Kernel{
		VecDotType: ggml.BF16,
		Dequantize: dequantizeBF16,
		Dot:        dotBF16,
		Random:     randomBF16,
		Quantize:   quantizeBF16,
	})
}

func bf16At(b []byte) float32 { return BF16ToFloat32(uint16(b[0]) | uint16(b[1])<<8) }

func dequantizeBF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = bf16At(src[2*i:])
	}
}

// quantizeBF16 is ggml's fp32 to bf16 conversion (round to nearest even,
// NaN quieted).
func quantizeBF16(x []float32, dst []byte) {
	dst = dst[:2*len(x)]
	for i, v := range x {
		h := Float32ToBF16(v)
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}

// dotBF16 follows ggml_vec_dot_bf16 as built for AVX2: 4 vectors c1..c4 of
// 8 float32 lanes accumulate products over chunks of 32 (products of two
// bf16 values are exact in float32), are reduced as (c1+c3)+(c2+c4) and
// then across lanes, and leftovers are added in float64 (ggml_float).
func dotBF16(n int, w, a []byte) float32 {
	w, a = w[:2*n], a[:2*n]
	np := n &^ 31
	var acc [32]float32
	for i := 0; i < np; i += 32 {
		x := (*[64]byte)(w[2*i:])
		y := (*[64]byte)(a[2*i:])
		for k := 0; k < 32; k++ {
			acc[k] += float32(bf16At(x[2*k:]) * bf16At(y[2*k:]))
		}
	}
	var sumf float64
	if np > 0 {
		var c [8]float32
		for l := 0; l < 8; l++ {
			c[l] = (acc[l] + acc[16+l]) + (acc[8+l] + acc[24+l])
		}
		g := [4]float32{c[4] + c[0], c[5] + c[1], c[6] + c[2], c[7] + c[3]}
		sumf = float64((g[0] + g[2]) + (g[1] + g[3]))
	}
	for i := np; i < n; i++ {
		sumf += float64(bf16At(w[2*i:]) * bf16At(a[2*i:]))
	}
	return float32(sumf)
}

// randomBF16 fills dst with normally distributed bf16 values of standard
// deviation scale.
func randomBF16(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+2 <= len(dst); i += 2 {
		h := Float32ToBF16(float32(rng.NormFloat64()) * scale)
		dst[i], dst[i+1] = byte(h), byte(h>>8)
	}
}
