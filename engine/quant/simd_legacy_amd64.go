//go:build !purego

package quant

import "github.com/strata-llm/strata/engine/ggml"

// AVX2 dot products for Q5_0, IQ4_NL, MXFP4 (Q8_0 activations), Q4_1 and Q5_1
// (Q8_1 activations), in simd_q8_amd64.s: 8 blocks at a time in assembly,
// the last nb%8 blocks in Go, the float steps of the Go references in the
// same order, so the results are bit-identical to them.
func init() {
	if !simdQ8HasAVX2 {
		return
	}
	simdDots[ggml.Q5_0] = simdKernel{name: "avx2", dot: dotQ5_0AVX2}
	simdDots[ggml.IQ4_NL] = simdKernel{name: "avx2", dot: dotIQ4NLAVX2}
	simdDots[ggml.Q4_1] = simdKernel{name: "avx2", dot: dotQ4_1AVX2}
	simdDots[ggml.Q5_1] = simdKernel{name: "avx2", dot: dotQ5_1AVX2}
	simdDots[ggml.MXFP4] = simdKernel{name: "avx2", dot: dotMXFP4AVX2}
}

//go:noescape
func dotQ5_0AVX2Asm(w, a *byte, groups int) float32

//go:noescape
func dotIQ4NLAVX2Asm(w, a *byte, groups int) float32

//go:noescape
func dotMXFP4AVX2Asm(w, a *byte, groups int) float32

//go:noescape
func dotQ4_1AVX2Asm(w, a *byte, groups int) (sumf, summs float32)

//go:noescape
func dotQ5_1AVX2Asm(w, a *byte, groups int) (sumf, summs float32)

// legacyGroups returns the number of whole 8-block groups of n values
// after checking that rows of wsize- and asize-byte blocks hold them.
func legacyGroups(n int, w, a []byte, wsize, asize int) int {
	g := n / 32 / 8
	if g > 0 {
		_, _ = w[g*8*wsize-1], a[g*8*asize-1]
	}
	return g
}

func dotQ5_0AVX2(n int, w, a []byte) float32 {
	var sumf float32
	g := legacyGroups(n, w, a, q5_0BlockSize, q8_0BlockSize)
	if g > 0 {
		sumf = dotQ5_0AVX2Asm(&w[0], &a[0], g)
	}
	return dotQ5_0Blocks(w, a, 8*g, n/32, sumf)
}

func dotIQ4NLAVX2(n int, w, a []byte) float32 {
	var sumf float32
	g := legacyGroups(n, w, a, iq4NLBlockSize, q8_0BlockSize)
	if g > 0 {
		sumf = dotIQ4NLAVX2Asm(&w[0], &a[0], g)
	}
	return dotIQ4NLBlocks(w, a, 8*g, n/32, sumf)
}

func dotMXFP4AVX2(n int, w, a []byte) float32 {
	var sumf float32
	g := legacyGroups(n, w, a, mxfp4BlockSize, q8_0BlockSize)
	if g > 0 {
		sumf = dotMXFP4AVX2Asm(&w[0], &a[0], g)
	}
	return dotMXFP4Blocks(w, a, 8*g, n/32, sumf)
}

func dotQ4_1AVX2(n int, w, a []byte) float32 {
	var sumf, summs float32
	g := legacyGroups(n, w, a, q4_1BlockSize, q8_1BlockSize)
	if g > 0 {
		sumf, summs = dotQ4_1AVX2Asm(&w[0], &a[0], g)
	}
	sumf, summs = dotQ4_1Blocks(w, a, 8*g, n/32, sumf, summs)
	return sumf + summs
}

func dotQ5_1AVX2(n int, w, a []byte) float32 {
	var sumf, summs float32
	g := legacyGroups(n, w, a, q5_1BlockSize, q8_1BlockSize)
	if g > 0 {
		sumf, summs = dotQ5_1AVX2Asm(&w[0], &a[0], g)
	}
	sumf, summs = dotQ5_1Blocks(w, a, 8*g, n/32, sumf, summs)
	return sumf + summs
}
