package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

func init() {
	register(ggml.F32, Kernel{
		VecDotType: ggml.F32,
		Dequantize: dequantizeF32,
		Dot:        dotF32,
		Random:     randomF32,
		Quantize:   quantizeF32,
	})
}

func dequantizeF32(src []byte, dst []float32) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func quantizeF32(x []float32, dst []byte) {
	dst = dst[:4*len(x)]
	for i, v := range x {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func f32At(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// fma32 is a fused multiply-add in float32: the product of two float32
// values is exact in float64, so one float64 addition and the final
// conversion round as _mm256_fmadd_ps does (up to a double-rounding tie,
// which is rare).
func fma32(a, b, c float32) float32 {
	return float32(float64(a)*float64(b) + float64(c))
}

// dotF32 follows ggml_vec_dot_f32 as built for AVX2+FMA (GGML_F32_STEP 32,
// GGML_F32_EPR 8): 4 vectors of 8 float32 lanes accumulate with FMA over
// chunks of 32, are reduced as GGML_F32x8_REDUCE does, and the leftover
// elements are added one by one in float32.
func dotF32(n int, w, a []byte) float32 {
	w, a = w[:4*n], a[:4*n]
	np := n &^ 31
	var acc [32]float32
	for i := 0; i < np; i += 32 {
		x := (*[128]byte)(w[4*i:])
		y := (*[128]byte)(a[4*i:])
		for k := 0; k < 32; k++ {
			acc[k] = fma32(f32At(x[:], k), f32At(y[:], k), acc[k])
		}
	}
	sumf := reduceF32x8x4(&acc)
	for i := np; i < n; i++ {
		sumf += float32(f32At(w, i) * f32At(a, i))
	}
	return sumf
}

// reduceF32x8x4 is GGML_F32x8_REDUCE over 4 AVX vectors of 8 lanes
// (acc[8v+l] is lane l of vector v).
func reduceF32x8x4(acc *[32]float32) float32 {
	var v [8]float32
	for l := 0; l < 8; l++ {
		v0 := acc[l] + acc[16+l]
		v1 := acc[8+l] + acc[24+l]
		v[l] = v0 + v1
	}
	t0 := [4]float32{v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]}
	return (t0[0] + t0[1]) + (t0[2] + t0[3])
}

// randomF32 fills dst with normally distributed values of standard
// deviation scale.
func randomF32(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+4 <= len(dst); i += 4 {
		binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(float32(rng.NormFloat64())*scale))
	}
}
