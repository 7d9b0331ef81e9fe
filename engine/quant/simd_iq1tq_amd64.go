//go:build !purego

package quant

import (
	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

// AVX2 dot products for IQ1_S, IQ1_M, TQ1_0 and TQ2_0 (simd_iq1tq_amd64.s),
// and their Gemm tiles, bit-identical to the Go versions: exact integer sums per super-block and
// the Go float steps in the same order.
func init() {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasF16C {
		return
	}
	simdDots[ggml.IQ1_S] = simdKernel{name: "avx2", dot: dotIQ1SAVX2}
	simdDots[ggml.IQ1_M] = simdKernel{name: "avx2", dot: dotIQ1MAVX2}
	simdDots[ggml.TQ1_0] = simdKernel{name: "avx2", dot: dotTQ1AVX2}
	simdDots[ggml.TQ2_0] = simdKernel{name: "avx2", dot: dotTQ2AVX2}
	simdGemms[ggml.TQ1_0] = simdGemm{name: "avx2", gemm: gemmIQS(tq1Size, tq1DotAVX2, nil, nil, tq1Gemm4AVX2, nil, 4, 1, withFMA(gemmTQ1Unpack))}
	simdGemms[ggml.TQ2_0] = simdGemm{name: "avx2", gemm: gemmIQS(tq2Size, tq2DotAVX2, nil, nil, tq2Gemm4AVX2, nil, 4, 1, withFMA(gemmTQ2Unpack))}
	simdGemms[ggml.IQ1_S] = simdGemm{name: "avx2", gemm: gemmIQS(iq1SSize, iq1sDotAVX2, iq1sDotAVX2V, q8KSumsMatch, iq1sGemm2AVX2, nil, 2, 1, withFMA(gemmIQ1SUnpack))}
	simdGemms[ggml.IQ1_M] = simdGemm{name: "avx2", gemm: gemmIQS(iq1MSize, iq1mDotAVX2, iq1mDotAVX2V, q8KSumsMatch, iq1mGemm2AVX2, nil, 2, 1, withFMA(gemmIQ1MUnpack))}
}

// Gemm tiles (see gemmIQS): one weight row against 4 (TQ) or 2 (IQ1: two
// sums per column) activation rows.

//go:noescape
func iq1sGemm2AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func iq1mGemm2AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func tq1Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func tq2Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

// The assembly routines take nb >= 1 whole blocks of weights at w and of
// Q8_K activations at a.

//go:noescape
func iq1sDotAVX2(w, a *byte, nb int) float32

//go:noescape
func iq1mDotAVX2(w, a *byte, nb int) float32

//go:noescape
func tq1DotAVX2(w, a *byte, nb int) float32

//go:noescape
func tq2DotAVX2(w, a *byte, nb int) float32

func dotIQ1SAVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, iq1SSize)
	if nb == 0 {
		return 0
	}
	return iq1sDotAVX2(&w[0], &a[0], nb)
}

func dotIQ1MAVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, iq1MSize)
	if nb == 0 {
		return 0
	}
	return iq1mDotAVX2(&w[0], &a[0], nb)
}

func dotTQ1AVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, tq1Size)
	if nb == 0 {
		return 0
	}
	return tq1DotAVX2(&w[0], &a[0], nb)
}

func dotTQ2AVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, tq2Size)
	if nb == 0 {
		return 0
	}
	return tq2DotAVX2(&w[0], &a[0], nb)
}

// gemmIQ1SUnpack and gemmIQ1MUnpack expand nb > 0 IQ1_S or IQ1_M blocks
// at x into the unpacked records of gemmIQSUnpacked at buf (weights
// 8g ± 1, the float d/8), for prompts.
//
//go:noescape
func gemmIQ1SUnpack(x *byte, nb int, buf *byte)

//go:noescape
func gemmIQ1MUnpack(x *byte, nb int, buf *byte)

// gemmTQ1Unpack and gemmTQ2Unpack are the same for TQ1_0 and TQ2_0
// (weights -1..1, scales 1, the float d).
//
//go:noescape
func gemmTQ1Unpack(x *byte, nb int, buf *byte)

//go:noescape
func gemmTQ2Unpack(x *byte, nb int, buf *byte)

//go:noescape
func iq1sDotAVX2V(w, a *byte, nb int) float32

//go:noescape
func iq1mDotAVX2V(w, a *byte, nb int) float32

// iq1sGridU is iq1sGrid with 1 added to every byte (-1, 0, 1 -> 0, 1, 2):
// unsigned operands for VPMADDUBSW (see iq1sDotAVX2V).
var iq1sGridU = func() (t [len(iq1sGrid)]uint64) {
	for i, g := range iq1sGrid {
		for b := 0; b < 64; b += 8 {
			t[i] |= uint64(uint8(g>>b)+1) << b
		}
	}
	return t
}()
