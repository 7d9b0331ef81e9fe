//go:build !purego

package quant

import (
	"fmt"

	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

// Gemm tiles of IQ3_S and IQ2_S for AVX2 (iq3sGemm4AVX2, iq2sGemm4AVX2 in
// simd_iq_amd64.s): each weight row is unpacked once per group of 32 for 4
// activation rows, about half the work of four dots (the grid lookups and
// sign spreading are most of a dot). Every column keeps the dot's integer
// sums and float steps, so the tile gives each activation row bit for bit
// what Dot gives it: Gemm is column-invariant for every batch size.
func init() {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasF16C {
		return
	}
	simdGemms[ggml.IQ3_S] = simdGemm{name: "avx2", gemm: gemmIQS(iq3SSize, iq3sDotAVX2, iq3sGemm4AVX2, 4, 1)}
	simdGemms[ggml.IQ2_S] = simdGemm{name: "avx2", gemm: gemmIQS(iq2SSize, iq2sDotAVX2, iq2sGemm4AVX2, 4, 0.125)}
}

// iqsGemm4Fn is one weight row x of nb > 0 super-blocks against the
// (tile width) Q8_K activation rows at y, ystride bytes apart; column c's
// sum (before the type's final factor) goes to out[c*ostride].
type iqsGemm4Fn func(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func iq3sGemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func iq2sGemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

// gemmIQS returns a Kernel.Gemm for a type of block size bs whose dot is
// post * dot(w, a, nb): columns in groups of width through g4, the rest
// through dot.
func gemmIQS(bs int, dot func(w, a *byte, nb int) float32, g4 iqsGemm4Fn, width int, post float32) func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	return func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
		if rows <= 0 || cols <= 0 {
			return
		}
		if n < 0 || n%iqQK != 0 {
			panic("quant: row length is not a multiple of 256")
		}
		if wStride < 0 || aStride < 0 || outStride < 0 {
			panic(fmt.Sprintf("quant: Gemm with negative stride (w %d, a %d, out %d)", wStride, aStride, outStride))
		}
		nb := n / iqQK
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
		_ = a[(cols-1)*aStride+nb*iqQ8KSize-1]
		c := 0
		for ; c+width <= cols; c += width {
			for r := 0; r < rows; r++ {
				o := out[c*outStride+r:]
				g4(&w[r*wStride], &a[c*aStride], aStride, nb, &o[0], outStride)
				if post != 1 {
					for j := 0; j < width; j++ {
						o[j*outStride] = post * o[j*outStride]
					}
				}
			}
		}
		for ; c < cols; c++ {
			for r := 0; r < rows; r++ {
				v := dot(&w[r*wStride], &a[c*aStride], nb)
				if post != 1 {
					v = post * v
				}
				out[c*outStride+r] = v
			}
		}
	}
}
