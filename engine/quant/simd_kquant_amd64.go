//go:build !purego

package quant

import (
	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

// AVX2 dot products of the K-quant weight types with Q8_K activations
// (simd_kquant_amd64.s), ports of llama.cpp's ggml_vec_dot_q*_K_q8_K AVX2
// code. Each super-block's integer sums are computed exactly in vector
// registers and reduced to one int32; the float part (scale products and
// the running sums) then follows the Go kernel's order operation by
// operation, so the results are bit-identical to GoDot.
//
// Q6_K, as in llama.cpp, subtracts the -32 offset through the activation's
// bsums, so it assumes bsums are the sums of qs (always true for
// QuantizeQ8K output); the Go kernel computes q-32 directly.

func init() {
	// F16C converts the fp16 block scales; every AVX2 CPU has it, but check.
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpu.X86.HasF16C {
		return
	}
	simdDots[ggml.Q4_K] = simdKernel{name: "avx2", dot: dotQ4KAVX2}
	simdDots[ggml.Q6_K] = simdKernel{name: "avx2", dot: dotQ6KAVX2}
	simdDots[ggml.Q5_K] = simdKernel{name: "avx2", dot: dotQ5KAVX2}
	simdDots[ggml.Q2_K] = simdKernel{name: "avx2", dot: dotQ2KAVX2}
	simdDots[ggml.Q3_K] = simdKernel{name: "avx2", dot: dotQ3KAVX2}
}

// kquantBlocks returns the number of whole super-blocks in n values after
// checking (with a panic, as the Go kernels' slice indexing would) that w
// and a hold them, so the assembly never reads past either slice.
func kquantBlocks(n int, w, a []byte, wBlock int) int {
	nb := n / qkK
	if nb <= 0 {
		return 0
	}
	_ = w[nb*wBlock-1]
	_ = a[nb*q8KBlockSize-1]
	return nb
}

func dotQ4KAVX2(n int, w, a []byte) float32 {
	nb := kquantBlocks(n, w, a, q4KBlockSize)
	if nb == 0 {
		return 0
	}
	return dotQ4KQ8KAVX2(&w[0], &a[0], nb)
}

func dotQ6KAVX2(n int, w, a []byte) float32 {
	nb := kquantBlocks(n, w, a, q6KBlockSize)
	if nb == 0 {
		return 0
	}
	return dotQ6KQ8KAVX2(&w[0], &a[0], nb)
}

func dotQ5KAVX2(n int, w, a []byte) float32 {
	nb := kquantBlocks(n, w, a, q5KBlockSize)
	if nb == 0 {
		return 0
	}
	return dotQ5KQ8KAVX2(&w[0], &a[0], nb)
}

func dotQ2KAVX2(n int, w, a []byte) float32 {
	nb := kquantBlocks(n, w, a, q2KBlockSize)
	if nb == 0 {
		return 0
	}
	return dotQ2KQ8KAVX2(&w[0], &a[0], nb)
}

func dotQ3KAVX2(n int, w, a []byte) float32 {
	nb := kquantBlocks(n, w, a, q3KBlockSize)
	if nb == 0 {
		return 0
	}
	return dotQ3KQ8KAVX2(&w[0], &a[0], nb)
}

// The assembly kernels: x points at nb weight super-blocks, y at nb Q8_K
// blocks; nb > 0.

//go:noescape
func dotQ4KQ8KAVX2(x, y *byte, nb int) float32

//go:noescape
func dotQ6KQ8KAVX2(x, y *byte, nb int) float32

//go:noescape
func dotQ5KQ8KAVX2(x, y *byte, nb int) float32

//go:noescape
func dotQ2KQ8KAVX2(x, y *byte, nb int) float32

//go:noescape
func dotQ3KQ8KAVX2(x, y *byte, nb int) float32
