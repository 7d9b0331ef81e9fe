//go:build !purego

package quant

import (
	"fmt"

	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

// AVX2 dot products for the i-quants (simd_iq_amd64.s). They need AVX2 and
// F16C (the fp16 block scales are converted with VCVTPH2PS); every AVX2 CPU
// has F16C, but both are checked.
func init() {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasF16C {
		return
	}
	simdDots[ggml.IQ2_XXS] = simdKernel{name: "avx2", dot: dotIQ2XXSAVX2}
	simdDots[ggml.IQ2_XS] = simdKernel{name: "avx2", dot: dotIQ2XSAVX2}
	simdDots[ggml.IQ3_XXS] = simdKernel{name: "avx2", dot: dotIQ3XXSAVX2}
	simdDots[ggml.IQ4_XS] = simdKernel{name: "avx2", dot: dotIQ4XSAVX2}
	simdDots[ggml.IQ3_S] = simdKernel{name: "avx2", dot: dotIQ3SAVX2}
	simdDots[ggml.IQ2_S] = simdKernel{name: "avx2", dot: dotIQ2SAVX2}
}

// The assembly routines take nb >= 1 whole blocks of weights at w and of
// Q8_K activations at a and return sum over blocks of d_w*d_a*bsum.

//go:noescape
func iq2xxsDotAVX2(w, a *byte, nb int) float32

//go:noescape
func iq2xsDotAVX2(w, a *byte, nb int) float32

//go:noescape
func iq3xxsDotAVX2(w, a *byte, nb int) float32

//go:noescape
func iq4xsDotAVX2(w, a *byte, nb int) float32

//go:noescape
func iq3sDotAVX2(w, a *byte, nb int) float32

//go:noescape
func iq2sDotAVX2(w, a *byte, nb int) float32

// iq3sDotAVX2S and iq2sDotAVX2S are the dots for activations without the
// quant -128 (see q8KHasMin): the signs go to the activations, two
// instructions fewer per 32 weights, the same bits.
//
//go:noescape
func iq3sDotAVX2S(w, a *byte, nb int) float32

//go:noescape
func iq2sDotAVX2S(w, a *byte, nb int) float32

// simdIQBlocks returns the number of blocks in n elements after checking
// that w (blocks of wsize bytes) and a (Q8_K blocks) hold them all within
// their lengths; it panics like an out-of-range index otherwise (iqBlocks
// alone would accept rows short of len but not of cap).
func simdIQBlocks(n int, w, a []byte, wsize int) int {
	if n < 0 || n%iqQK != 0 {
		panic("quant: row length is not a multiple of 256")
	}
	nb := n / iqQK
	if len(w) < nb*wsize || len(a) < nb*iqQ8KSize {
		panic(fmt.Sprintf("quant: dot of %d values with a %d-byte weight row and a %d-byte activation row", n, len(w), len(a)))
	}
	return nb
}

func dotIQ2XSAVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, iq2XSSize)
	if nb == 0 {
		return 0
	}
	return 0.125 * iq2xsDotAVX2(&w[0], &a[0], nb)
}

func dotIQ2XXSAVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, iq2XXSSize)
	if nb == 0 {
		return 0
	}
	return 0.125 * iq2xxsDotAVX2(&w[0], &a[0], nb)
}

func dotIQ3XXSAVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, iq3XXSSize)
	if nb == 0 {
		return 0
	}
	return 0.25 * iq3xxsDotAVX2(&w[0], &a[0], nb)
}

func dotIQ4XSAVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, iq4XSSize)
	if nb == 0 {
		return 0
	}
	return iq4xsDotAVX2(&w[0], &a[0], nb)
}

// iq2sDotAVX512S and iq3sDotAVX512S are the S kernels (activations
// without the quant -128) with AVX-512 F/BW: the same bits.
//
//go:noescape
func iq2sDotAVX512S(w, a *byte, nb int) float32

//go:noescape
func iq3sDotAVX512S(w, a *byte, nb int) float32

// iqsHasAVX512 reports whether the CPU (and OS) run iq2sDotAVX512S and
// iq3sDotAVX512S.
func iqsHasAVX512() bool {
	return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW
}

func dotIQ3SAVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, iq3SSize)
	if nb == 0 {
		return 0
	}
	return iq3sDotAVX2(&w[0], &a[0], nb)
}

func dotIQ2SAVX2(n int, w, a []byte) float32 {
	nb := simdIQBlocks(n, w, a, iq2SSize)
	if nb == 0 {
		return 0
	}
	return 0.125 * iq2sDotAVX2(&w[0], &a[0], nb)
}
