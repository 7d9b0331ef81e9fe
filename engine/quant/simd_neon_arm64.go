//go:build !purego

package quant

import (
	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

//go:generate go run ./internal/neongen -out simd_neon_arm64.s -gemm simd_neon_gemm_arm64.s

// NEON dot products with the dot-product extension (SDOT), ports of
// llama.cpp's ggml-cpu/arch/arm/quants.c. Every Apple M-series chip has
// it; elsewhere the portable Go kernels stay.
//
// Q8_0 and Q4_0 accumulate block sums in float32x4 lanes as llama.cpp
// does, so they differ from GoDot by float rounding only. The K and IQ
// kernels (and IQ4_NL, MXFP4, Q5_0, Q4_1, Q5_1, IQ3_S, IQ2_S, IQ1_S,
// IQ1_M, TQ1_0, TQ2_0) compute each block's integer sums exactly and
// accumulate floats in GoDot's order, so they are bit-identical to it.
//
// The F32, F16 and BF16 dot products (plain NEON) follow their Go
// references' float order, that of llama.cpp's AVX2 build (see
// internal/neongen/floats.go): F16 and BF16 are bit-identical to GoDot, F32
// differs only where dotF32's emulated FMA double-rounds. The activation
// quantizers QuantizeQ8_0 and QuantizeQ8K (plain NEON too) write the same
// bytes as the Go code, which does the blocks they leave (NaNs, tiny
// amax).

func init() {
	if !cpu.ARM64.HasASIMD {
		return
	}
	for t, f := range neonFloatDots {
		simdDots[t] = simdKernel{name: "neon", dot: f}
	}
	quantizeQ8_0Arch = quantizeQ8_0NEON
	quantizeQ8KArch = quantizeQ8KNEON
	if !cpu.ARM64.HasASIMDDP {
		return
	}
	for t, f := range neonDots {
		simdDots[t] = simdKernel{name: "neon", dot: f}
	}
}

// neonDots are the NEON dot products by weight type.
var neonDots = map[ggml.Type]func(n int, w, a []byte) float32{
	ggml.Q8_0: neonDot(qk8_0, q8_0BlockSize, q8_0BlockSize, dotQ8_0NEON),
	ggml.Q4_0: neonDot(qk4_0, q4_0BlockSize, q8_0BlockSize, dotQ4_0NEON),
	ggml.Q4_K: neonDot(qkK, q4KBlockSize, q8KBlockSize, dotQ4KNEON),
	ggml.Q5_K: neonDot(qkK, q5KBlockSize, q8KBlockSize, dotQ5KNEON),
	ggml.Q6_K: neonDot(qkK, q6KBlockSize, q8KBlockSize, dotQ6KNEON),
	ggml.Q2_K: neonDot(qkK, q2KBlockSize, q8KBlockSize, dotQ2KNEON),
	ggml.Q3_K: neonDot(qkK, q3KBlockSize, q8KBlockSize, dotQ3KNEON),

	ggml.IQ4_XS: neonIQDot(iq4XSSize, func(x, y *byte, nb int) float32 {
		return dotIQ4XSNEON(x, y, nb, &kvaluesIQ4NL[0])
	}),
	ggml.IQ4_NL: neonDot(qk4NL, iq4NLBlockSize, q8_0BlockSize, func(x, y *byte, nb int) float32 {
		return dotIQ4NLNEON(x, y, nb, &kvaluesIQ4NL[0])
	}),
	ggml.MXFP4: neonDot(qk4NL, mxfp4BlockSize, q8_0BlockSize, func(x, y *byte, nb int) float32 {
		return dotMXFP4NEON(x, y, nb, &kvaluesFP4[0])
	}),
	ggml.Q5_0: neonDot(qk4_1, q5_0BlockSize, q8_0BlockSize, func(x, y *byte, nb int) float32 {
		return dotQ5_0NEON(x, y, nb, &q5NEONTable[0])
	}),
	ggml.IQ3_S: neonIQDot(iq3SSize, func(x, y *byte, nb int) float32 {
		return dotIQ3SNEON(x, y, nb, &iq3sGrid[0], &q5NEONTable[0])
	}),
	ggml.Q4_1: neonDot(qk4_1, q4_1BlockSize, q8_1BlockSize, func(x, y *byte, nb int) float32 {
		return dotQ4_1NEON(x, y, nb, &q5NEONTable[0])
	}),
	ggml.Q5_1: neonDot(qk4_1, q5_1BlockSize, q8_1BlockSize, func(x, y *byte, nb int) float32 {
		return dotQ5_1NEON(x, y, nb, &q5NEONTable[0])
	}),
	ggml.IQ2_XS: neonIQDot(iq2XSSize, func(x, y *byte, nb int) float32 {
		return dotIQ2XSNEON(x, y, nb, &iq2xsGrid[0], &ksigns64[0])
	}),
	ggml.IQ2_XXS: neonIQDot(iq2XXSSize, func(x, y *byte, nb int) float32 {
		return dotIQ2XXSNEON(x, y, nb, &iq2xxsGrid[0], &ksigns64[0])
	}),
	ggml.IQ3_XXS: neonIQDot(iq3XXSSize, func(x, y *byte, nb int) float32 {
		return dotIQ3XXSNEON(x, y, nb, &iq3xxsGrid[0], &ksigns64[0])
	}),
	ggml.IQ2_S: neonIQDot(iq2SSize, func(x, y *byte, nb int) float32 {
		return dotIQ2SNEON(x, y, nb, &iq2sGrid[0], &q5NEONTable[0])
	}),
	ggml.IQ1_S: neonIQDot(iq1SSize, func(x, y *byte, nb int) float32 {
		return dotIQ1SNEON(x, y, nb, &iq1sGrid[0])
	}),
	ggml.IQ1_M: neonIQDot(iq1MSize, func(x, y *byte, nb int) float32 {
		return dotIQ1MNEON(x, y, nb, &iq1sGrid[0])
	}),
	ggml.TQ1_0: neonIQDot(tq1Size, dotTQ1NEON),
	ggml.TQ2_0: neonIQDot(tq2Size, dotTQ2NEON),
}

// neonFloatDots are the NEON dot products of the float types, which need
// no dot-product extension.
var neonFloatDots = map[ggml.Type]func(n int, w, a []byte) float32{
	ggml.F32:  neonF32,
	ggml.F16:  neonF16,
	ggml.BF16: neonBF16,
}

// Assembly routines: x and y point at nb whole blocks of weights and
// activations.

//go:noescape
func dotQ3KNEON(x, y *byte, nb int) float32

//go:noescape
func dotIQ4NLNEON(x, y *byte, nb int, values *int8) float32

//go:noescape
func dotMXFP4NEON(x, y *byte, nb int, values *int8) float32

//go:noescape
func dotQ5_0NEON(x, y *byte, nb int, tab *byte) float32

//go:noescape
func dotIQ3SNEON(x, y *byte, nb int, grid *uint32, tab *byte) float32

//go:noescape
func dotIQ2SNEON(x, y *byte, nb int, grid *uint64, tab *byte) float32

//go:noescape
func dotIQ1SNEON(x, y *byte, nb int, grid *uint64) float32

//go:noescape
func dotIQ1MNEON(x, y *byte, nb int, grid *uint64) float32

//go:noescape
func dotTQ1NEON(x, y *byte, nb int) float32

//go:noescape
func dotTQ2NEON(x, y *byte, nb int) float32

//go:noescape
func dotQ4_1NEON(x, y *byte, nb int, tab *byte) float32

//go:noescape
func dotQ5_1NEON(x, y *byte, nb int, tab *byte) float32

// q5NEONTable is the constants of dotQ5_0NEON, dotQ5_1NEON, dotIQ3SNEON and
// dotIQ2SNEON
// (dotQ4_1NEON ignores it): the TBL indices spreading qh
// bytes 0, 1 (values 0..15) and 2, 3 (values 16..31) over 8 lanes each,
// and the bit of each lane.
var q5NEONTable = [48]byte{
	0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
	2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
	1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
}

// The float routines take nb > 0 whole chunks of 32 values.

//go:noescape
func dotF32NEON(x, y *byte, nb int) float32

//go:noescape
func dotF16NEON(x, y *byte, nb int) float32

//go:noescape
func dotBF16NEON(x, y *byte, nb int) float32

// The quantizers do up to nb blocks and return how many they did (see
// internal/neongen/quantize.go).

//go:noescape
func quantizeQ8_0NEONAsm(x *float32, dst *byte, nb int) int

//go:noescape
func quantizeQ8KNEONAsm(x *float32, dst *byte, nb int) int

//go:noescape
func dotQ8_0NEON(x, y *byte, nb int) float32

//go:noescape
func dotQ4_0NEON(x, y *byte, nb int) float32

//go:noescape
func dotQ4KNEON(x, y *byte, nb int) float32

//go:noescape
func dotQ5KNEON(x, y *byte, nb int) float32

//go:noescape
func dotQ6KNEON(x, y *byte, nb int) float32

//go:noescape
func dotQ2KNEON(x, y *byte, nb int) float32

//go:noescape
func dotIQ4XSNEON(x, y *byte, nb int, values *int8) float32

//go:noescape
func dotIQ2XSNEON(x, y *byte, nb int, grid, signs *uint64) float32

//go:noescape
func dotIQ2XXSNEON(x, y *byte, nb int, grid, signs *uint64) float32

//go:noescape
func dotIQ3XXSNEON(x, y *byte, nb int, grid *uint32, signs *uint64) float32

// neonDot wraps a NEON kernel over whole blocks of qk values, wsize-byte
// weight blocks against asize-byte activation blocks.
func neonDot(qk, wsize, asize int, f func(x, y *byte, nb int) float32) func(n int, w, a []byte) float32 {
	return func(n int, w, a []byte) float32 {
		nb := n / qk
		x, y := neonRows(nb, w, a, wsize, asize)
		if nb == 0 {
			return 0
		}
		return f(x, y, nb)
	}
}

// neonIQDot is neonDot for an i-quant: it panics on a row length that is
// not a multiple of 256, as its GoDot does.
func neonIQDot(wsize int, f func(x, y *byte, nb int) float32) func(n int, w, a []byte) float32 {
	return func(n int, w, a []byte) float32 {
		nb, _, _ := iqBlocks(n, w, a, wsize)
		x, y := neonRows(nb, w, a, wsize, iqQ8KSize)
		if nb == 0 {
			return 0
		}
		return f(x, y, nb)
	}
}

// neonRows cuts w and a to nb blocks of wsize and asize bytes (panicking,
// as GoDot's indexing does, if either is short) and returns pointers to
// their starts, or nil if nb is 0.
func neonRows(nb int, w, a []byte, wsize, asize int) (*byte, *byte) {
	if nb == 0 {
		return nil, nil
	}
	// Index, not reslice: a reslice may reach past len into cap.
	_, _ = w[nb*wsize-1], a[nb*asize-1]
	return &w[0], &a[0]
}

// neonF32 is dotF32 with the chunks of 32 values in assembly.
func neonF32(n int, w, a []byte) float32 {
	w, a = w[:4*n], a[:4*n]
	np := n &^ 31
	var sumf float32
	if np > 0 {
		sumf = dotF32NEON(&w[0], &a[0], np/32)
	}
	for i := np; i < n; i++ {
		sumf += float32(f32At(w, i) * f32At(a, i))
	}
	return sumf
}

// neonF16 is dotF16 with the chunks of 32 values in assembly.
func neonF16(n int, w, a []byte) float32 {
	w, a = w[:2*n], a[:2*n]
	np := n &^ 31
	var sumf float64
	if np > 0 {
		sumf = float64(dotF16NEON(&w[0], &a[0], np/32))
	}
	for i := np; i < n; i++ {
		sumf += float64(fp16At(w[2*i:]) * fp16At(a[2*i:]))
	}
	return float32(sumf)
}

// neonBF16 is dotBF16 with the chunks of 32 values in assembly.
func neonBF16(n int, w, a []byte) float32 {
	w, a = w[:2*n], a[:2*n]
	np := n &^ 31
	var sumf float64
	if np > 0 {
		sumf = float64(dotBF16NEON(&w[0], &a[0], np/32))
	}
	for i := np; i < n; i++ {
		sumf += float64(bf16At(w[2*i:]) * bf16At(a[2*i:]))
	}
	return float32(sumf)
}

// quantizeQ8_0NEON is quantizeQ8_0Go in assembly; the blocks the assembly
// leaves (a NaN, or amax so small that 127/amax overflows) are done by the
// Go code.
func quantizeQ8_0NEON(x []float32, dst []byte) {
	nb := len(x) / qk8_0
	if nb == 0 {
		return
	}
	_ = dst[nb*q8_0BlockSize-1]
	for i := 0; i < nb; i++ {
		i += quantizeQ8_0NEONAsm(&x[i*qk8_0], &dst[i*q8_0BlockSize], nb-i)
		if i < nb {
			quantizeQ8_0Go(x[i*qk8_0:(i+1)*qk8_0], dst[i*q8_0BlockSize:(i+1)*q8_0BlockSize])
		}
	}
}

// quantizeQ8KNEON is quantizeQ8KGo in assembly, with the same fallback.
func quantizeQ8KNEON(x []float32, dst []byte) {
	nb := len(x) / qkK
	if nb == 0 {
		return
	}
	_ = dst[nb*q8KBlockSize-1]
	for i := 0; i < nb; i++ {
		i += quantizeQ8KNEONAsm(&x[i*qkK], &dst[i*q8KBlockSize], nb-i)
		if i < nb {
			quantizeQ8KGo(x[i*qkK:(i+1)*qkK], dst[i*q8KBlockSize:(i+1)*q8KBlockSize])
		}
	}
}
