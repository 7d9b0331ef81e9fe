//go:build !purego

package quant

import (
	"fmt"

	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

// The simd_gemm_q8 group: tiled matrix products (Kernel.Gemm) for Q8_0 and
// Q4_0 weights against Q8_0 activations, in 4-weight-row tiles sharing each
// activation load, with software prefetch for decode (one activation row)
// and 4×3 register blocking for prefill. Integer block sums are exact for
// every byte value (including -128 quants); the float order is llama.cpp's
// (per-block FMA into 8-lane accumulators, one reduction per output), not
// GoDot's serial sum, so results differ from Dot by rounding only.
//
// Two instruction sets: AVX-512 VNNI (VPDPBUSD on 256-bit registers, with
// AVX-512BW/VL) where the CPU has it, else AVX2+FMA+F16C.

var (
	// gemmQ8HasAVX2 reports whether this CPU runs the AVX2 tile kernels.
	gemmQ8HasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C
	// gemmQ8HasVNNI reports whether it runs the AVX-512 VNNI ones.
	gemmQ8HasVNNI = gemmQ8HasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW &&
		cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI
)

func init() {
	switch {
	case gemmQ8HasVNNI:
		simdGemms[ggml.Q8_0] = simdGemm{name: "avx512vnni", gemm: gemmQ8_0VNNI}
		simdGemms[ggml.Q4_0] = simdGemm{name: "avx512vnni", gemm: gemmQ4_0VNNI}
	case gemmQ8HasAVX2:
		simdGemms[ggml.Q8_0] = simdGemm{name: "avx2", gemm: gemmQ8_0AVX2}
		simdGemms[ggml.Q4_0] = simdGemm{name: "avx2", gemm: gemmQ4_0AVX2}
	}
}

// Tile kernels (simd_gemm_q8_amd64.s): 4 weight rows w0..w3 (of nb >= 1
// blocks) times 1 or 3 activation rows of nb Q8_0 blocks; res receives
// the 4×C results row by row (res[r*C+c]).

//go:noescape
func gemmQ8_0VNNI4x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32)

//go:noescape
func gemmQ8_0VNNI4x3(w0, w1, w2, w3, a0, a1, a2 *byte, nb int, res *float32)

//go:noescape
func gemmQ4_0VNNI4x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32)

//go:noescape
func gemmQ4_0VNNI4x3(w0, w1, w2, w3, a0, a1, a2 *byte, nb int, res *float32)

// Row kernels: out[r] = (row r at w + r*wStride) · a for r < rows, one
// weight row after the other (decode: one sequential weight stream).

//go:noescape
func gemmQ8_0VNNIRx1(w *byte, wStride, rows int, a *byte, nb int, out *float32)

//go:noescape
func gemmQ4_0VNNIRx1(w *byte, wStride, rows int, a *byte, nb int, out *float32)

//go:noescape
func gemmQ8_0AVX24x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32)

//go:noescape
func gemmQ4_0AVX24x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32)

// gemmTiles names the tile kernels of one weight type and instruction
// set. The kernels are called directly (a switch, not function values) so
// that the tile's result array stays on the stack: through a func value
// escape analysis assumes it escapes, and every tile call allocated (243
// allocations per decoded token of the qwen3next fixture on an AVX2 CPU
// without VNNI).
type gemmTiles int

const (
	tilesQ8_0VNNI gemmTiles = iota
	tilesQ4_0VNNI
	tilesQ8_0AVX2
	tilesQ4_0AVX2
)

func (g gemmTiles) blockSize() int {
	if g == tilesQ4_0VNNI || g == tilesQ4_0AVX2 {
		return q4_0BlockSize
	}
	return q8_0BlockSize
}

func (g gemmTiles) vnni() bool { return g == tilesQ8_0VNNI || g == tilesQ4_0VNNI }

func (g gemmTiles) x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32) {
	switch g {
	case tilesQ8_0VNNI:
		gemmQ8_0VNNI4x1(w0, w1, w2, w3, a0, nb, res)
	case tilesQ4_0VNNI:
		gemmQ4_0VNNI4x1(w0, w1, w2, w3, a0, nb, res)
	case tilesQ8_0AVX2:
		gemmQ8_0AVX24x1(w0, w1, w2, w3, a0, nb, res)
	default:
		gemmQ4_0AVX24x1(w0, w1, w2, w3, a0, nb, res)
	}
}

func (g gemmTiles) x3(w0, w1, w2, w3, a0, a1, a2 *byte, nb int, res *float32) {
	if g == tilesQ8_0VNNI {
		gemmQ8_0VNNI4x3(w0, w1, w2, w3, a0, a1, a2, nb, res)
	} else {
		gemmQ4_0VNNI4x3(w0, w1, w2, w3, a0, a1, a2, nb, res)
	}
}

func (g gemmTiles) seq(w *byte, wStride, rows int, a *byte, nb int, out *float32) {
	if g == tilesQ8_0VNNI {
		gemmQ8_0VNNIRx1(w, wStride, rows, a, nb, out)
	} else {
		gemmQ4_0VNNIRx1(w, wStride, rows, a, nb, out)
	}
}

func gemmQ8_0VNNI(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	tilesQ8_0VNNI.run(n, w, wStride, rows, a, aStride, cols, out, outStride)
}

func gemmQ4_0VNNI(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	tilesQ4_0VNNI.run(n, w, wStride, rows, a, aStride, cols, out, outStride)
}

func gemmQ8_0AVX2(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	tilesQ8_0AVX2.run(n, w, wStride, rows, a, aStride, cols, out, outStride)
}

func gemmQ4_0AVX2(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	tilesQ4_0AVX2.run(n, w, wStride, rows, a, aStride, cols, out, outStride)
}

// run checks that every row, activation row and output of the tile lies in
// its slice (the assembly reads exactly nb blocks per row), then runs the
// row kernel for a single activation row, or else walks the tile 4 weight
// rows at a time; a last group of fewer than 4 rows repeats its last row
// and drops the extra results.
func (g gemmTiles) run(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	nb := n / 32
	if n < 0 || n%32 != 0 || wStride < 0 || aStride < 0 || outStride < 0 ||
		(rows-1)*wStride+nb*g.blockSize() > len(w) ||
		(cols-1)*aStride+nb*q8_0BlockSize > len(a) ||
		(cols-1)*outStride+rows > len(out) {
		panic(fmt.Sprintf("quant: Gemm tile out of range: n=%d, %d rows of stride %d in %d bytes, %d activation rows of stride %d in %d bytes, out stride %d in %d",
			n, rows, wStride, len(w), cols, aStride, len(a), outStride, len(out)))
	}
	if nb == 0 {
		for c := 0; c < cols; c++ {
			clear(out[c*outStride : c*outStride+rows])
		}
		return
	}
	if cols == 1 && g.vnni() {
		g.seq(&w[0], wStride, rows, &a[0], nb, &out[0])
		return
	}
	var res [12]float32
	for r0 := 0; r0 < rows; r0 += 4 {
		var wp [4]*byte
		for i := range wp {
			wp[i] = &w[min(r0+i, rows-1)*wStride]
		}
		nr := min(4, rows-r0)
		c := 0
		if g.vnni() {
			for ; c+3 <= cols; c += 3 {
				g.x3(wp[0], wp[1], wp[2], wp[3], &a[c*aStride], &a[(c+1)*aStride], &a[(c+2)*aStride], nb, &res[0])
				for r := 0; r < nr; r++ {
					out[c*outStride+r0+r] = res[3*r]
					out[(c+1)*outStride+r0+r] = res[3*r+1]
					out[(c+2)*outStride+r0+r] = res[3*r+2]
				}
			}
		}
		for ; c < cols; c++ {
			g.x1(wp[0], wp[1], wp[2], wp[3], &a[c*aStride], nb, &res[0])
			copy(out[c*outStride+r0:c*outStride+r0+nr], res[:nr])
		}
	}
}
