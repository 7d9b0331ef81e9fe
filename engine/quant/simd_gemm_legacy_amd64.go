//go:build !purego

package quant

import (
	"fmt"

	"github.com/strata-llm/strata/engine/ggml"
)

// Gemm tiles of Q5_0, IQ4_NL, MXFP4, Q4_1 and Q5_1 for AVX2
// (simd_gemm_legacy_amd64.s): each weight block is unpacked once for 4
// activation rows and the 4 block sums reduced together; every column keeps
// the dot's exact integer sums and float steps, so the tile gives each
// activation row bit for bit what Dot gives it (column-invariant for every
// batch size).
func init() {
	if !simdQ8HasAVX2 {
		return
	}
	simdGemms[ggml.Q5_0] = simdGemm{name: "avx2", gemm: gemmLegacy(q5_0BlockSize, q8_0BlockSize, dotQ5_0AVX2, q5_0Gemm4AVX2)}
	simdGemms[ggml.IQ4_NL] = simdGemm{name: "avx2", gemm: gemmLegacy(iq4NLBlockSize, q8_0BlockSize, dotIQ4NLAVX2, iq4nlGemm4AVX2)}
	simdGemms[ggml.MXFP4] = simdGemm{name: "avx2", gemm: gemmLegacy(mxfp4BlockSize, q8_0BlockSize, dotMXFP4AVX2, mxfp4Gemm4AVX2)}
	simdGemms[ggml.Q4_1] = simdGemm{name: "avx2", gemm: gemmLegacy(q4_1BlockSize, q8_1BlockSize, dotQ4_1AVX2, q4_1Gemm4AVX2)}
	simdGemms[ggml.Q5_1] = simdGemm{name: "avx2", gemm: gemmLegacy(q5_1BlockSize, q8_1BlockSize, dotQ5_1AVX2, q5_1Gemm4AVX2)}
}

//go:noescape
func q5_0Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func iq4nlGemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func mxfp4Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4_1Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q5_1Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

// gemmLegacy returns a Kernel.Gemm for a 32-value type of bs-byte blocks
// against ys-byte activation blocks: columns in groups of 4 through g4
// (nb > 0 whole blocks; a partial last block is ignored, as Dot does), the
// rest through dot.
func gemmLegacy(bs, ys int, dot func(n int, w, a []byte) float32, g4 iqsGemm4Fn) func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	return func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
		if rows <= 0 || cols <= 0 {
			return
		}
		if wStride < 0 || aStride < 0 || outStride < 0 {
			panic(fmt.Sprintf("quant: Gemm with negative stride (w %d, a %d, out %d)", wStride, aStride, outStride))
		}
		nb := max(n, 0) / 32
		// Bounds: every slice the loop over Dot would touch, checked once
		// so the assembly never reads or writes outside them.
		_ = out[(cols-1)*outStride+rows-1]
		if nb == 0 {
			for c := 0; c < cols; c++ {
				clear(out[c*outStride : c*outStride+rows])
			}
			return
		}
		_ = w[(rows-1)*wStride+nb*bs-1]
		_ = a[(cols-1)*aStride+nb*ys-1]
		c := 0
		for ; c+4 <= cols; c += 4 {
			for r := 0; r < rows; r++ {
				g4(&w[r*wStride], &a[c*aStride], aStride, nb, &out[c*outStride+r], outStride)
			}
		}
		for ; c < cols; c++ {
			for r := 0; r < rows; r++ {
				out[c*outStride+r] = dot(n, w[r*wStride:], a[c*aStride:])
			}
		}
	}
}
