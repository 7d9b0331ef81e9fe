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
// what Dot gives it: Gemm is column-invariant up to InvariantCols rows;
// prompts (more) go through unpacked records (gemmIQSUnpacked), as Q3_K's.
func init() {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasF16C {
		return
	}
	// Prompts take the VNNI quads where the CPU has them (gemmIQSUnpacked).
	name := "avx2"
	if iqHasVNNI() {
		name = "avx2+avx512vnni"
	}
	// Decode (one activation row without the quant -128) takes the
	// AVX-512 dots where the CPU has them.
	dot3S, dot2S := iq3sDotAVX2S, iq2sDotAVX2S
	if iqsHasAVX512() {
		dot3S, dot2S = iq3sDotAVX512S, iq2sDotAVX512S
		name += "+avx512"
	}
	simdGemms[ggml.IQ3_S] = simdGemm{name: name, gemm: gemmIQS(iq3SSize, iq3sDotAVX2, dot3S, q8KNoMin, iq3sGemm4AVX2, iq3sGemm4AVX2S, 4, 1, withFMA(gemmIQ3SUnpack))}
	simdGemms[ggml.IQ2_S] = simdGemm{name: name, gemm: gemmIQS(iq2SSize, iq2sDotAVX2, dot2S, q8KNoMin, iq2sGemm4AVX2, iq2sGemm4AVX2S, 4, 0.125, withFMA(gemmIQ2SUnpack))}
	// Q3_K (the IQ3 and Q3_K mixtures' attention and some FFN tensors) has
	// no tile: a prompt was a loop over its dot, 28 % of the 4-layer
	// IQ3_XXS mixture's 512-token prefill. Its values are signed bytes with
	// a scale per 16, which the unpacked records hold as they are.
	if cpu.X86.HasFMA {
		simdGemms[ggml.Q3_K] = simdGemm{name: name, gemm: gemmIQS(q3KBlockSize, dotQ3KQ8KAVX2, nil, nil, nil, nil, 0, 1, gemmQ3KUnpack)}
	}
}

// withFMA returns unpack if the CPU runs the unpacked kernels (FMA), else
// nil (no unpacked path: prompts go through the tiles).
func withFMA(unpack func(x *byte, nb int, buf *byte)) func(x *byte, nb int, buf *byte) {
	if !cpu.X86.HasFMA {
		return nil
	}
	return unpack
}

// iqsGemm4Fn is one weight row x of nb > 0 super-blocks against the
// (tile width) Q8_K activation rows at y, ystride bytes apart; column c's
// sum (before the type's final factor) goes to out[c*ostride].
type iqsGemm4Fn func(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func iq3sGemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func iq2sGemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)

// gemmIQ3SUnpack and gemmIQ2SUnpack expand nb > 0 super-blocks at x into
// the unpacked records of gemmIQUnpackedR2C1/C2 at buf.
//
//go:noescape
func gemmIQ3SUnpack(x *byte, nb int, buf *byte)

//go:noescape
func gemmIQ2SUnpack(x *byte, nb int, buf *byte)

// gemmQ3KUnpack is the same for Q3_K (simd_kquant_amd64.s).
//
//go:noescape
func gemmQ3KUnpack(x *byte, nb int, buf *byte)

// iq3sGemm4AVX2S and iq2sGemm4AVX2S are the tiles for activation rows
// without the quant -128 (see q8KHasMin): the signs go to the activations,
// one instruction fewer per column and group, the same bits.
//
//go:noescape
func iq3sGemm4AVX2S(w, a *byte, astride, nb int, out *float32, ostride int)

//go:noescape
func iq2sGemm4AVX2S(w, a *byte, astride, nb int, out *float32, ostride int)

// gemmIQS returns a Kernel.Gemm for a type of block size bs whose dot is
// post * dot(w, a, nb): columns in groups of width through g4 (if not nil),
// the rest through dot; dotS and g4S (the same bits, faster; nil if the
// type has none) take their place for activation rows for which sOK
// holds (rows as QuantizeQ8K writes them: q8KNoMin, q8KSumsMatch).
// With unpack (nil if the type has none) and more than InvariantCols
// activation rows (a prompt), rows go in pairs through unpacked records
// instead (see gemmIQSUnpacked).
func gemmIQS(bs int, dot, dotS func(w, a *byte, nb int) float32, sOK func(a []byte, nb int) bool, g4, g4S iqsGemm4Fn, width int, post float32, unpack func(x *byte, nb int, buf *byte)) func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	var gemm func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
	gemm = func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
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
		if unpack != nil && cols > InvariantCols && rows >= 2 {
			pairs := rows &^ 1
			gemmIQSUnpacked(unpack, iqHasVNNI(), nb, w, wStride, pairs, a, aStride, cols, out, outStride)
			if pairs < rows {
				gemm(n, w[pairs*wStride:], wStride, 1, a, aStride, cols, out[pairs:], outStride)
			}
			return
		}
		c := 0
		for ; g4 != nil && c+width <= cols; c += width {
			g := g4
			if g4S != nil {
				g = g4S
				for j := c; j < c+width; j++ {
					if !sOK(a[j*aStride:], nb) {
						g = g4
						break
					}
				}
			}
			for r := 0; r < rows; r++ {
				o := out[c*outStride+r:]
				g(&w[r*wStride], &a[c*aStride], aStride, nb, &o[0], outStride)
				if post != 1 {
					for j := 0; j < width; j++ {
						o[j*outStride] = post * o[j*outStride]
					}
				}
			}
		}
		for ; c < cols; c++ {
			d := dot
			if dotS != nil && sOK(a[c*aStride:], nb) {
				d = dotS
			}
			for r := 0; r < rows; r++ {
				v := d(&w[r*wStride], &a[c*aStride], nb)
				if post != 1 {
					v = post * v
				}
				out[c*outStride+r] = v
			}
		}
	}
	return gemm
}

// gemmIQSUnpacked is gemmIQS for prompts, on operands already checked:
// each pair of weight rows (rows even) is unpacked once into records of
// signed bytes, int16 group scales and a float scale, which the
// type-independent kernels multiply with two activation rows at a time,
// so a row's unpacking (grid lookups, signs, scales: most of a dot) is
// shared by all the columns, as llama.cpp's iqp panels share it. With
// vnni (AVX-512 VNNI), four rows at a time are widened (weights times
// their scales as int16) and multiplied by VPDPWSSD in 512-bit lanes, as
// the IQ2_XS family's quads kernels do. The integer sums are the dot's;
// the float steps are the unpacked kernels' (FMA in lanes), so a column's
// bits differ from Dot's in the last places (the IQ2_XS family's tiles do
// the same; TestGemmIQSExact and TestGemmQ3KPrompt bound it). The records
// take 544 bytes per super-block and row (2 narrow rows, or 1 narrow and
// 4 wide), allocated per call (a prompt's matrix, not a decode step).
func gemmIQSUnpacked(unpack func(x *byte, nb int, buf *byte), vnni bool, nb int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	rs := nb * iqUnpackedSize
	r := 0
	if vnni && cols >= iqVNNICols && rows >= 4 {
		buf := make([]byte, 5*rs)
		narrow, wide := buf[:rs], buf[rs:]
		for ; r+4 <= rows; r += 4 {
			for i := 0; i < 4; i++ {
				unpack(&w[(r+i)*wStride], nb, &narrow[0])
				gemmIQWiden(&narrow[0], nb, &wide[i*rs])
			}
			gemmIQWideQuadsVNNI(&wide[0], rs, &a[0], aStride, nb, cols, &out[r], outStride)
		}
	}
	if r == rows {
		return
	}
	buf := make([]byte, 2*rs)
	for ; r < rows; r += 2 {
		unpack(&w[r*wStride], nb, &buf[0])
		unpack(&w[(r+1)*wStride], nb, &buf[rs])
		c := 0
		for ; c+2 <= cols; c += 2 {
			gemmIQUnpackedR2C2(&buf[0], rs, &a[c*aStride], aStride, nb, &out[c*outStride+r], outStride)
		}
		if c < cols {
			gemmIQUnpackedR2C1(&buf[0], rs, &a[c*aStride], aStride, nb, &out[c*outStride+r], outStride)
		}
	}
}
