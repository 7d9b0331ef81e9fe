package quant

import (
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

func init() {
	register(ggml.F16, Kernel{
		VecDotType: ggml.F16,
		Dequantize: dequantizeF16,
		Dot:        dotF16,
		Random:     randomF16,
		Quantize:   quantizeF16,
	})
}

func dequantizeF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = fp16At(src[2*i:])
	}
}

// quantizeF16 is ggml_cpu_fp32_to_fp16 (F16C, round to nearest even).
func quantizeF16(x []float32, dst []byte) {
	dst = dst[:2*len(x)]
	for i, v := range x {
		h := Float32ToFP16(v)
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}

// dotF16 follows ggml_vec_dot_f16 as built for AVX2+F16C+FMA
// (GGML_F16_STEP 32, GGML_F16_EPR 8): values are widened to float32, 4
// vectors of 8 lanes accumulate over chunks of 32 and are reduced as
// GGML_F32x8_REDUCE does; leftovers are added in float64 (ggml_float).
// The product of two fp16 values is exact in float32, so FMA and a
// multiply followed by an add give the same result here.
func dotF16(n int, w, a []byte) float32 {
	w, a = w[:2*n], a[:2*n]
	np := n &^ 31
	var acc [32]float32
	for i := 0; i < np; i += 32 {
		x := (*[64]byte)(w[2*i:])
		y := (*[64]byte)(a[2*i:])
		for k := 0; k < 32; k++ {
			acc[k] += float32(fp16At(x[2*k:]) * fp16At(y[2*k:]))
		}
	}
	sumf := float64(reduceF32x8x4(&acc))
	for i := np; i < n; i++ {
		sumf += float64(fp16At(w[2*i:]) * fp16At(a[2*i:]))
	}
	return float32(sumf)
}

// randomF16 fills dst with normally distributed fp16 values of standard
// deviation scale.
func randomF16(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+2 <= len(dst); i += 2 {
		putFP16(dst[i:], float32(rng.NormFloat64())*scale)
	}
}

// DotF16Rows computes out[r] = the F16 Dot of n values of row r of w (rows
// wStride bytes apart) with a, where a holds fp16 values already widened
// to float32 (as FP16sToFloat32 gives): the same sums as the F16 Kernel's
// Dot, bit for bit, without widening a again for every row. It is
// attention's K·Q and P·V.
func DotF16Rows(n int, w []byte, wStride, rows int, a []float32, out []float32) {
	if rows <= 0 {
		return
	}
	a, out = a[:n], out[:rows]
	if n > 0 {
		_ = w[(rows-1)*wStride+2*n-1]
	}
	r := dotF16RowsArch(n, w, wStride, rows, a, out)
	for ; r < rows; r++ {
		out[r] = dotF16F32(n, w[r*wStride:r*wStride+2*n], a)
	}
}

// DotF16RowsMulti is DotF16Rows for m vectors at once: out[q·outStride+r]
// = the F16 Dot of row r of w with a[q·aStride:q·aStride+n], for q < m,
// bit for bit as DotF16Rows gives it. Each row of w is read once for all
// the vectors where the assembly takes them (four at a time with
// AVX-512): attention's K·Q and P·V for the query heads that share a KV
// head.
func DotF16RowsMulti(n int, w []byte, wStride, rows int, a []float32, aStride, m int, out []float32, outStride int) {
	if rows <= 0 || m <= 0 {
		return
	}
	_ = out[(m-1)*outStride+rows-1]
	if n > 0 {
		_ = a[(m-1)*aStride+n-1]
		_ = w[(rows-1)*wStride+2*n-1]
	}
	q := dotF16RowsMultiArch(n, w, wStride, rows, a, aStride, m, out, outStride)
	for ; q < m; q++ {
		DotF16Rows(n, w, wStride, rows, a[q*aStride:q*aStride+n], out[q*outStride:q*outStride+rows])
	}
}

// dotF16F32 is dotF16 with the second operand widened.
func dotF16F32(n int, w []byte, a []float32) float32 {
	np := n &^ 31
	var acc [32]float32
	for i := 0; i < np; i += 32 {
		x := (*[64]byte)(w[2*i:])
		y := (*[32]float32)(a[i:])
		for k := 0; k < 32; k++ {
			acc[k] += float32(fp16At(x[2*k:]) * y[k])
		}
	}
	sumf := float64(reduceF32x8x4(&acc))
	for i := np; i < n; i++ {
		sumf += float64(fp16At(w[2*i:]) * a[i])
	}
	return float32(sumf)
}

// RoundFP16 sets dst[i] to src[i] rounded to fp16 and widened back
// (FP16ToFloat32(Float32ToFP16(src[i]))), len(dst) ≥ len(src): the
// operands DotF16Rows takes. amd64 uses F16C (8 at a time), arm64
// FCVTN/FCVTL (4 at a time).
func RoundFP16(dst, src []float32) {
	dst = dst[:len(src)]
	i := roundFP16Arch(dst, src)
	for ; i < len(src); i++ {
		dst[i] = FP16ToFloat32(Float32ToFP16(src[i]))
	}
}
