//go:build !purego

package quant

import (
	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

// The simd_q8 group: AVX2+FMA+F16C dot products for Q8_0, Q4_0, F32, F16
// and BF16 weights, and the activation quantizers QuantizeQ8_0 and
// QuantizeQ8K, plus an AVX-512BW Q8_0 dot product where the CPU has it.
// Every kernel performs the float operations of its Go reference in the
// same order, so the results are bit-identical, except dotF32AVX2, which
// uses a real FMA where dotF32 emulates one in float64 (they differ only on
// a double-rounding tie).

// simdQ8HasAVX2 reports whether this CPU runs the kernels of this file.
var simdQ8HasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

func init() {
	if !simdQ8HasAVX2 {
		return
	}
	simdDots[ggml.Q8_0] = simdKernel{name: "avx2", dot: dotQ8_0AVX2}
	simdDots[ggml.Q4_0] = simdKernel{name: "avx2", dot: dotQ4_0AVX2}
	simdDots[ggml.F32] = simdKernel{name: "avx2", dot: dotF32AVX2}
	simdDots[ggml.F16] = simdKernel{name: "avx2", dot: dotF16AVX2}
	simdDots[ggml.BF16] = simdKernel{name: "avx2", dot: dotBF16AVX2}
	quantizeQ8_0Arch = quantizeQ8_0AVX2
	quantizeQ8KArch = quantizeQ8KAVX2
	if simdQ8HasAVX512 {
		simdDots[ggml.Q8_0] = simdKernel{name: "avx512", dot: dotQ8_0AVX512}
	}
}

// simdQ8HasAVX512 reports whether this CPU (and OS) runs the AVX-512BW
// variant of the Q8_0 dot product.
var simdQ8HasAVX512 = simdQ8HasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

//go:noescape
func dotQ8_0AVX2Asm(w, a *byte, groups int) float32

//go:noescape
func dotQ8_0AVX512Asm(w, a *byte, groups int) float32

//go:noescape
func dotQ4_0AVX2Asm(w, a *byte, groups int) float32

//go:noescape
func dotF32AVX2Asm(w, a *byte, chunks int) float32

//go:noescape
func dotF16AVX2Asm(w, a *byte, chunks int) float32

//go:noescape
func dotBF16AVX2Asm(w, a *byte, chunks int) float32

//go:noescape
func quantizeQ8_0AVX2Asm(x *float32, dst *byte, nb int) int

//go:noescape
func quantizeQ8KAVX2Asm(x *float32, dst *byte, nb int) int

// dotQ8_0AVX2 is dotQ8_0Q8_0 with the blocks taken 8 at a time in assembly
// (exact integer sums; the per-block float products and the running sum in
// the reference's order) and the last nb%8 blocks in Go.
func dotQ8_0AVX2(n int, w, a []byte) float32 {
	nb := n / qk8_0
	var sumf float32
	i := nb &^ 7
	if i > 0 {
		_, _ = w[i*q8_0BlockSize-1], a[i*q8_0BlockSize-1]
		sumf = dotQ8_0AVX2Asm(&w[0], &a[0], i/8)
	}
	for ; i < nb; i++ {
		x := (*[q8_0BlockSize]byte)(w[i*q8_0BlockSize:])
		y := (*[q8_0BlockSize]byte)(a[i*q8_0BlockSize:])
		sumf += float32(float32(dotQ8_0Block(x, y)) * float32(fp16At(x[:])*fp16At(y[:])))
	}
	return sumf
}

// dotQ8_0AVX512 is dotQ8_0AVX2 with the AVX-512BW assembly (same result).
func dotQ8_0AVX512(n int, w, a []byte) float32 {
	nb := n / qk8_0
	var sumf float32
	i := nb &^ 7
	if i > 0 {
		_, _ = w[i*q8_0BlockSize-1], a[i*q8_0BlockSize-1]
		sumf = dotQ8_0AVX512Asm(&w[0], &a[0], i/8)
	}
	for ; i < nb; i++ {
		x := (*[q8_0BlockSize]byte)(w[i*q8_0BlockSize:])
		y := (*[q8_0BlockSize]byte)(a[i*q8_0BlockSize:])
		sumf += float32(float32(dotQ8_0Block(x, y)) * float32(fp16At(x[:])*fp16At(y[:])))
	}
	return sumf
}

// dotQ4_0AVX2 is dotQ4_0Q8_0 with the blocks taken 8 at a time in assembly
// and the last nb%8 blocks in Go.
func dotQ4_0AVX2(n int, w, a []byte) float32 {
	nb := n / qk4_0
	var sumf float32
	i := nb &^ 7
	if i > 0 {
		_, _ = w[i*q4_0BlockSize-1], a[i*q8_0BlockSize-1]
		sumf = dotQ4_0AVX2Asm(&w[0], &a[0], i/8)
	}
	for ; i < nb; i++ {
		x := (*[q4_0BlockSize]byte)(w[i*q4_0BlockSize:])
		y := (*[q8_0BlockSize]byte)(a[i*q8_0BlockSize:])
		p := float32(float32(dotQ4_0Block(x, y)) * fp16At(x[:]))
		sumf += float32(p * fp16At(y[:]))
	}
	return sumf
}

// dotF32AVX2 is dotF32 with the chunks of 32 values in assembly.
func dotF32AVX2(n int, w, a []byte) float32 {
	np := n &^ 31
	var sumf float32
	if np > 0 {
		_, _ = w[4*np-1], a[4*np-1]
		sumf = dotF32AVX2Asm(&w[0], &a[0], np/32)
	}
	for i := np; i < n; i++ {
		sumf += float32(f32At(w, i) * f32At(a, i))
	}
	return sumf
}

// dotF16AVX2 is dotF16 with the chunks of 32 values in assembly.
func dotF16AVX2(n int, w, a []byte) float32 {
	np := n &^ 31
	var sumf float64
	if np > 0 {
		_, _ = w[2*np-1], a[2*np-1]
		sumf = float64(dotF16AVX2Asm(&w[0], &a[0], np/32))
	}
	for i := np; i < n; i++ {
		sumf += float64(fp16At(w[2*i:]) * fp16At(a[2*i:]))
	}
	return float32(sumf)
}

// dotBF16AVX2 is dotBF16 with the chunks of 32 values in assembly.
func dotBF16AVX2(n int, w, a []byte) float32 {
	np := n &^ 31
	var sumf float64
	if np > 0 {
		_, _ = w[2*np-1], a[2*np-1]
		sumf = float64(dotBF16AVX2Asm(&w[0], &a[0], np/32))
	}
	for i := np; i < n; i++ {
		sumf += float64(bf16At(w[2*i:]) * bf16At(a[2*i:]))
	}
	return float32(sumf)
}

// quantizeQ8_0AVX2 is quantizeQ8_0Go in assembly; a block holding a NaN
// (whose bytes depend on NaN payloads) is left to the Go code.
func quantizeQ8_0AVX2(x []float32, dst []byte) {
	nb := len(x) / qk8_0
	if nb == 0 {
		return
	}
	_ = dst[nb*q8_0BlockSize-1]
	for i := 0; i < nb; i++ {
		i += quantizeQ8_0AVX2Asm(&x[i*qk8_0], &dst[i*q8_0BlockSize], nb-i)
		if i < nb {
			quantizeQ8_0Go(x[i*qk8_0:(i+1)*qk8_0], dst[i*q8_0BlockSize:(i+1)*q8_0BlockSize])
		}
	}
}

// quantizeQ8KAVX2 is quantizeQ8KGo in assembly; a block holding a NaN is
// left to the Go code.
func quantizeQ8KAVX2(x []float32, dst []byte) {
	nb := len(x) / qkK
	if nb == 0 {
		return
	}
	_ = dst[nb*q8KBlockSize-1]
	for i := 0; i < nb; i++ {
		i += quantizeQ8KAVX2Asm(&x[i*qkK], &dst[i*q8KBlockSize], nb-i)
		if i < nb {
			quantizeQ8KGo(x[i*qkK:(i+1)*qkK], dst[i*q8KBlockSize:(i+1)*q8KBlockSize])
		}
	}
}
