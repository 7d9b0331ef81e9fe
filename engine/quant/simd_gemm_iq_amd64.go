//go:build !purego

package quant

import (
	"bytes"
	"fmt"

	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

//go:generate go run ./internal/gemmiqgen -out simd_gemm_iq_amd64.s

// Tiled matrix products (Kernel.Gemm) of IQ2_XS, IQ2_XXS, IQ3_XXS and
// IQ4_XS weights with Q8_K activations (simd_gemm_iq_amd64.s, generated
// by internal/gemmiqgen), for AVX2 (with FMA, F16C and BMI1), and for
// prefill with AVX-512 VNNI where the CPU has it. The float sums are kept
// in 8- or 16-lane registers with FMA (llama.cpp's order) and added once
// per output, so results differ from GoDot by float rounding only: the
// integer block sums are exact for every input byte string (activation
// quants of -128 included).

func init() {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpu.X86.HasF16C || !cpu.X86.HasBMI1 {
		return
	}
	name, vnni := "avx2", iqHasVNNI()
	if vnni {
		name = "avx2+avx512vnni"
	}
	if iqHasAVX512C1S() {
		// Decode of IQ2_XS and IQ2_XXS (see kernel512 in gemmiqgen), the
		// same bits; one thread, 16 MiB of rows, Zen 5: 6.76 -> 7.52 and
		// 5.71 -> 7.03 GB/s.
		iqGemmIQ2XS.dotS = gemmIQ2XSAVX512C1S
		iqGemmIQ2XXS.dotS = gemmIQ2XXSAVX512C1S
	}
	simdGemms[ggml.IQ2_XS] = simdGemm{name: name, gemm: gemmIQ(iq2XSSize, iqGemmIQ2XS, vnni)}
	simdGemms[ggml.IQ2_XXS] = simdGemm{name: name, gemm: gemmIQ(iq2XXSSize, iqGemmIQ2XXS, vnni)}
	simdGemms[ggml.IQ3_XXS] = simdGemm{name: name, gemm: gemmIQ(iq3XXSSize, iqGemmIQ3XXS, vnni)}
	simdGemms[ggml.IQ4_XS] = simdGemm{name: name, gemm: gemmIQ(iq4XSSize, iqGemmIQ4XS, vnni)}
}

// iqHasVNNI reports whether the CPU (and OS) run the VNNI pairs kernels:
// 512-bit registers, VPMOVSXBW and VPDPWSSD.
func iqHasVNNI() bool {
	return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI
}

// iqHasAVX512C1S reports whether the CPU (and OS) run the AVX-512 C1S
// kernels (F, BW, VL).
func iqHasAVX512C1S() bool {
	return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
}

// iqGemmFn is one assembly kernel: one weight row x (nb > 0 super-blocks)
// against C activation rows starting at y, ystride bytes apart; column c's
// result goes to out[c*ostride].
type iqGemmFn func(x, y *byte, ystride, nb int, out *float32, ostride int)

// iqGemmKernels holds the kernels of one type: dot, the C = 1 kernel, and
// unpack, which expands nb > 0 weight blocks at x into iqUnpackedSize-byte
// records at buf for the unpacked kernels, and pairs.
type iqGemmKernels struct {
	dot iqGemmFn
	// dotS is dot for activations without the quant -128 (nil for types
	// whose grid is signed): it moves the weights' signs to the
	// activations, two instructions fewer per 32 weights; q8KHasMin
	// picks it.
	dotS   iqGemmFn
	unpack func(x *byte, nb int, buf *byte)
	// pairs computes rows (even, > 0) weight rows, xstride bytes apart,
	// against cols activation rows for nb <= iqPairBlocks: each pair of
	// rows is unpacked into its frame, which unlike a Go buffer is not
	// zeroed on every call. pairs[0] needs AVX2, pairs[1] also AVX-512
	// (iqHasVNNI). quads is pairs[1] for rows a multiple of 4.
	pairs [2]iqPairsFn
	quads iqPairsFn
}

// iqPairsFn is a pairs kernel (see iqGemmKernels).
type iqPairsFn func(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

// iqVNNICols is the fewest activation rows for which the VNNI pairs
// kernels are used: their unpacking costs more and their products less
// (measured on Zen 5: slower at 2 columns, even at 4, faster from 8).
const iqVNNICols = 6

// iqPairBlocks is the most super-blocks per row of the pairs kernels
// (n = 4096); longer rows are unpacked into a heap buffer.
const iqPairBlocks = 16

// iqUnpackedSize is the size of an unpacked super-block (see
// internal/gemmiqgen): for AVX2, 256 signed weight bytes and 8 vectors of
// int16 group scales; for AVX-512 VNNI, 256 weights times their group
// scales as int16; then the float32 block scale.
const iqUnpackedSize = 544

var (
	iqGemmIQ2XS  = iqGemmKernels{gemmIQ2XSAVX2C1, gemmIQ2XSAVX2C1S, gemmIQ2XSUnpack, [2]iqPairsFn{gemmIQ2XSPairsAVX2, gemmIQ2XSPairsVNNI}, gemmIQ2XSQuadsVNNI}
	iqGemmIQ2XXS = iqGemmKernels{gemmIQ2XXSAVX2C1, gemmIQ2XXSAVX2C1S, gemmIQ2XXSUnpack, [2]iqPairsFn{gemmIQ2XXSPairsAVX2, gemmIQ2XXSPairsVNNI}, gemmIQ2XXSQuadsVNNI}
	iqGemmIQ3XXS = iqGemmKernels{gemmIQ3XXSAVX2C1, gemmIQ3XXSAVX2C1S, gemmIQ3XXSUnpack, [2]iqPairsFn{gemmIQ3XXSPairsAVX2, gemmIQ3XXSPairsVNNI}, gemmIQ3XXSQuadsVNNI}
	iqGemmIQ4XS  = iqGemmKernels{gemmIQ4XSAVX2C1, nil, gemmIQ4XSUnpack, [2]iqPairsFn{gemmIQ4XSPairsAVX2, gemmIQ4XSPairsVNNI}, gemmIQ4XSQuadsVNNI}
)

// gemmIQ returns a Kernel.Gemm for an i-quant type of block size bs.
//
// With one activation row (decode), each weight row is read once by a
// kernel that unpacks each group of 32 weights (grid lookups, signs,
// scales) in registers and multiplies it with the activations. With more
// (prefill), see gemmIQUnpacked; vnni selects the pairs kernels.
func gemmIQ(bs int, ks iqGemmKernels, vnni bool) func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
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
		if cols > 1 {
			gemmIQUnpacked(ks, vnni, nb, w, wStride, rows, a, aStride, cols, out, outStride)
			return
		}
		dot := ks.dot
		if ks.dotS != nil && !q8KHasMin(a, nb) {
			dot = ks.dotS
		}
		for r := 0; r < rows; r++ {
			dot(&w[r*wStride], &a[0], aStride, nb, &out[r], outStride)
		}
	}
}

// q8KNoMin reports whether the nb Q8_K blocks at the start of a are free
// of the quant -128 (see q8KHasMin).
func q8KNoMin(a []byte, nb int) bool { return !q8KHasMin(a, nb) }

// q8KSumsMatch reports whether the block sums of the nb Q8_K blocks at the
// start of a are the sums of their quants, as QuantizeQ8K writes them
// (kernels that take Σ quants from them need it; any bytes may reach a
// Gemm).
func q8KSumsMatch(a []byte, nb int) bool {
	for b := 0; b < nb; b++ {
		blk := a[b*iqQ8KSize : (b+1)*iqQ8KSize]
		for j := 0; j < iqQK/16; j++ {
			var s int32
			for _, q := range blk[4+16*j : 4+16*j+16] {
				s += int32(int8(q))
			}
			if s != q8KBsum16(blk, j) {
				return false
			}
		}
	}
	return true
}

// q8KHasMin reports whether the nb Q8_K blocks at the start of a hold
// the quant -128, which QuantizeQ8K never writes (its scale maps the
// largest magnitude to ±127) but which the C1S kernels cannot take.
func q8KHasMin(a []byte, nb int) bool {
	for b := 0; b < nb; b++ {
		if bytes.IndexByte(a[b*iqQ8KSize+4:b*iqQ8KSize+4+iqQK], 0x80) >= 0 {
			return true
		}
	}
	return false
}

// gemmIQUnpacked is gemmIQ for wide tiles, on operands already checked:
// each weight row is unpacked once into a buffer (in L1), then multiplied
// with the columns by kernels that do no unpacking, so a row's unpacking
// (about 3/4 of the work of a one-column dot on the Zen 5 this was tuned
// on) is shared by all the columns. Rows go in pairs (AVX2) or fours
// (VNNI), columns 2 at a time: each activation group is loaded once for
// all the rows. The buffer is the assembly's stack frame (2 or 4 rows of
// iqPairBlocks records: 17 or 35 KiB), for rows of up to iqPairBlocks
// blocks.
func gemmIQUnpacked(ks iqGemmKernels, vnni bool, nb int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	pairs := rows &^ 1
	if pairs > 0 && nb <= iqPairBlocks {
		k, r := ks.pairs[0], 0
		if vnni && cols >= iqVNNICols {
			// Four rows at a time, then a pair.
			if r = rows &^ 3; r > 0 {
				ks.quads(&w[0], wStride, r, nb, &a[0], aStride, cols, &out[0], outStride)
			}
			k = ks.pairs[1]
		}
		if r < pairs {
			k(&w[r*wStride], wStride, pairs-r, nb, &a[0], aStride, cols, &out[r], outStride)
		}
	} else if pairs > 0 {
		gemmIQPairsGo(ks, nb, w, wStride, pairs, a, aStride, cols, out, outStride)
	}
	// An odd last row: one-column kernels.
	if r := pairs; r < rows {
		for c := 0; c < cols; c++ {
			ks.dot(&w[r*wStride], &a[c*aStride], aStride, nb, &out[c*outStride+r], outStride)
		}
	}
}

// gemmIQPairsGo is ks.pairs for any nb, with a heap buffer.
func gemmIQPairsGo(ks iqGemmKernels, nb int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	rs := nb * iqUnpackedSize
	buf := make([]byte, 2*rs)
	for r := 0; r < rows; r += 2 {
		ks.unpack(&w[r*wStride], nb, &buf[0])
		ks.unpack(&w[(r+1)*wStride], nb, &buf[rs])
		c := 0
		for ; c+2 <= cols; c += 2 {
			gemmIQUnpackedR2C2(&buf[0], rs, &a[c*aStride], aStride, nb, &out[c*outStride+r], outStride)
		}
		if c < cols {
			gemmIQUnpackedR2C1(&buf[0], rs, &a[c*aStride], aStride, nb, &out[c*outStride+r], outStride)
		}
	}
}

// The assembly kernels (see iqGemmFn and iqGemmKernels); nb > 0.

//go:noescape
func gemmIQ2XSAVX2C1(x, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ2XSAVX2C1S(x, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ2XXSAVX2C1S(x, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ3XXSAVX2C1S(x, y *byte, ystride, nb int, out *float32, ostride int)

// The AVX-512 C1S kernels (F, BW, VL): the same bits as the AVX2 ones.

//go:noescape
func gemmIQ2XSAVX512C1S(x, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ2XXSAVX512C1S(x, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ2XXSAVX2C1(x, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ3XXSAVX2C1(x, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ4XSAVX2C1(x, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ2XSUnpack(x *byte, nb int, buf *byte)

//go:noescape
func gemmIQ2XXSUnpack(x *byte, nb int, buf *byte)

//go:noescape
func gemmIQ3XXSUnpack(x *byte, nb int, buf *byte)

//go:noescape
func gemmIQ4XSUnpack(x *byte, nb int, buf *byte)

// gemmIQWiden turns nb narrow unpacked records at src into wide ones at
// dst (the VNNI kernels' layout), for the IQ2_S, IQ3_S and Q3_K prompts.
//
//go:noescape
func gemmIQWiden(src *byte, nb int, dst *byte)

// gemmIQWideQuadsVNNI multiplies four wide unpacked rows (xstride bytes
// apart) with cols > 0 activation rows.
//
//go:noescape
func gemmIQWideQuadsVNNI(x *byte, xstride int, y *byte, ystride, nb, cols int, out *float32, ostride int)

//go:noescape
func gemmIQUnpackedR2C1(x *byte, xstride int, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQUnpackedR2C2(x *byte, xstride int, y *byte, ystride, nb int, out *float32, ostride int)

//go:noescape
func gemmIQ2XSPairsAVX2(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ2XSPairsVNNI(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ2XXSPairsAVX2(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ2XXSPairsVNNI(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ3XXSPairsAVX2(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ3XXSPairsVNNI(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ4XSPairsAVX2(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ4XSPairsVNNI(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ2XSQuadsVNNI(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ2XXSQuadsVNNI(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ3XXSQuadsVNNI(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)

//go:noescape
func gemmIQ4XSQuadsVNNI(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)
