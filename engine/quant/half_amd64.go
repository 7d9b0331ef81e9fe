//go:build !purego

package quant

import "golang.org/x/sys/cpu"

// float32sToFP16Arch converts the first len(src)&^7 values with F16C
// (round to nearest even, as Float32ToFP16) and returns how many it did.
func float32sToFP16Arch(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if n == 0 || !simdQ8HasAVX2 {
		return 0
	}
	_ = dst[n-1]
	float32sToFP16F16C(&dst[0], &src[0], n/8)
	return n
}

//go:noescape
func float32sToFP16F16C(dst *uint16, src *float32, groups int)

// dotF16RowsArch runs every row of DotF16Rows in one assembly call (the
// caller has checked the bounds).
func dotF16RowsArch(n int, w []byte, wStride, rows int, a, out []float32) int {
	if n == 0 || !simdQ8HasAVX2 {
		return 0
	}
	dotF16RowsAVX2(&w[0], wStride, rows, &a[0], n, &out[0])
	return rows
}

//go:noescape
func dotF16RowsAVX2(w *byte, wStride, rows int, a *float32, n int, out *float32)

// dotF16RowsHasAVX512 says whether dotF16Rows4AVX512 can run.
var dotF16RowsHasAVX512 = simdQ8HasAVX2 && cpu.X86.HasAVX512F

// dotF16RowsMultiArch runs DotF16RowsMulti's vectors four at a time with
// AVX-512 (the caller has checked the bounds) and returns how many it did.
// Measured on Zen 5 (one thread, attention of 8 query heads per KV head
// over 512 positions): see BenchmarkDotF16RowsMulti.
func dotF16RowsMultiArch(n int, w []byte, wStride, rows int, a []float32, aStride, m int, out []float32, outStride int) int {
	if n == 0 || !dotF16RowsHasAVX512 {
		return 0
	}
	q := 0
	for ; q+4 <= m; q += 4 {
		dotF16Rows4AVX512(&w[0], wStride, rows, &a[q*aStride], 4*aStride, n, &out[q*outStride], 4*outStride)
	}
	return q
}

// dotF16Rows4AVX512 is dotF16RowsAVX2 for the four vectors a, a+aStride,
// a+2·aStride, a+3·aStride (aStride in bytes), writing row r's dot with
// vector q at out + q·outStride + 4r (outStride in bytes).
//
//go:noescape
func dotF16Rows4AVX512(w *byte, wStride, rows int, a *float32, aStride, n int, out *float32, outStride int)

// roundFP16Arch rounds the first len(src)&^7 values with F16C.
func roundFP16Arch(dst, src []float32) int {
	n := len(src) &^ 7
	if n == 0 || !simdQ8HasAVX2 {
		return 0
	}
	_ = dst[n-1]
	roundFP16F16C(&dst[0], &src[0], n/8)
	return n
}

//go:noescape
func roundFP16F16C(dst, src *float32, groups int)
