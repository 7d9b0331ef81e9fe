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
// batch size). With AVX-512 VNNI/VBMI, the row kernels of
// simd_gemm_legacy512_amd64.go take every activation row instead: also
// bit-identical to GoDot, and faster for one activation row (decode) and
// for prompts (BenchmarkGemmLegacyPaths, Zen 5, one thread, 16 MiB of
// weights in 64-row slices; GB/s of weights, AVX2 -> AVX-512: one
// activation row Q5_0 10.6 -> 18.4, IQ4_NL 10.6 -> 18.0, MXFP4 10.1 ->
// 22.1, Q4_1 13.7 -> 22.4, Q5_1 11.1 -> 18.9; 64 activation rows, passes
// over the weights per second, Q5_0 0.29 -> 0.41, IQ4_NL 0.27 -> 0.43,
// MXFP4 0.24 -> 0.38, Q4_1 0.34 -> 0.43, Q5_1 0.28 -> 0.41 GB/s).
func init() {
	if !simdQ8HasAVX2 {
		return
	}
	for t, s := range legacyGemmSpecs {
		name, rk := "avx2", lvNone
		if gemmLegacyHasVNNI {
			name, rk = "avx512vnni", s.rk
		}
		simdGemms[t] = simdGemm{name: name, gemm: gemmLegacy(s, rk)}
	}
}

// legacyGemmSpec is what gemmLegacy needs of a type: bs-byte blocks
// against ys-byte activation blocks, its AVX2 dot and 4-column tile, and
// its AVX-512 row kernel.
type legacyGemmSpec struct {
	bs, ys int
	dot    func(n int, w, a []byte) float32
	g4     iqsGemm4Fn
	rk     legacyRows
}

var legacyGemmSpecs = map[ggml.Type]legacyGemmSpec{
	ggml.Q5_0:   {q5_0BlockSize, q8_0BlockSize, dotQ5_0AVX2, q5_0Gemm4AVX2, lvQ5_0},
	ggml.IQ4_NL: {iq4NLBlockSize, q8_0BlockSize, dotIQ4NLAVX2, iq4nlGemm4AVX2, lvIQ4NL},
	ggml.MXFP4:  {mxfp4BlockSize, q8_0BlockSize, dotMXFP4AVX2, mxfp4Gemm4AVX2, lvMXFP4},
	ggml.Q4_1:   {q4_1BlockSize, q8_1BlockSize, dotQ4_1AVX2, q4_1Gemm4AVX2, lvQ4_1},
	ggml.Q5_1:   {q5_1BlockSize, q8_1BlockSize, dotQ5_1AVX2, q5_1Gemm4AVX2, lvQ5_1},
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

// gemmLegacy returns a Kernel.Gemm for the type of s: every activation
// row through the row kernel rk, or (rk == lvNone) columns in groups of 4
// through the tile (nb > 0 whole blocks; a partial last block is ignored,
// as Dot does), the rest through the dot.
func gemmLegacy(s legacyGemmSpec, rk legacyRows) func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	bs, ys, dot, g4 := s.bs, s.ys, s.dot, s.g4
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
		if rk != lvNone {
			for c := 0; c < cols; c++ {
				rk.col(nb, w, wStride, rows, a[c*aStride:], out[c*outStride:])
			}
			return
		}
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
