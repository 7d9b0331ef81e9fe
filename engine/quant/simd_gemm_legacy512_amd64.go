//go:build !purego

package quant

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

// AVX-512 VNNI row kernels for the 32-value formats (see
// simd_gemm_legacy512_amd64.s): 4 weight rows against one activation row,
// 8 blocks at a time, each row's exact block sums and float steps those of
// the Go reference (bit-identical to GoDot). gemmLegacy runs them for every
// activation row it does not give to a 4-column tile.

// gemmLegacyHasVNNI reports whether this CPU runs the row kernels (VPERMB
// and VPERMI2B need VBMI).
var gemmLegacyHasVNNI = simdQ8HasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW &&
	cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VBMI

// legacyVNNITab holds a row kernel's constants (offsets LV_* in the .s).
type legacyVNNITab struct {
	gather [64]byte // VPERMB: a block pair's qs bytes as [qs0, qs0, qs1, qs1]
	shift  [64]byte // VPSRLVW word counts: 0 for the low nibbles' lanes, 4 for the high ones'
	lut    [64]byte // codebook values+128 repeated 4 times, or bytes 0x0f
	scale  [64]byte // VPERMI2W (VPERMI2B for MXFP4) index of a pair of pairs' scales
	ascale [64]byte // VPERMT2W index of 4 activation blocks' scales (Q8_1: d then s)
	reduce [64]byte // VPERMD order of LV_REDUCE
	corr   [64]byte // bytes c: the bias of the stored values (Q5_0: also the fifth bit)
	ones   [32]byte // MXFP4's E8M0: dwords 1, 2, 0x00200000
	twos   [32]byte
	denorm [32]byte
	kload  uint64 // mask of a block pair's bytes
}

// newLegacyVNNITab builds the table of a type of bs-byte blocks with qs at
// qo, activation blocks of as bytes (34 Q8_0, 36 Q8_1), the codebook (nil:
// plain nibbles), the bias c, and the scales' word (byte for MXFP4)
// offsets within a block.
func newLegacyVNNITab(bs, qo, as int, codebook *[16]int8, c byte, scales []int, bytes bool) *legacyVNNITab {
	t := &legacyVNNITab{kload: 1<<(2*bs) - 1}
	for i := 0; i < 64; i++ {
		t.gather[i] = byte(i/32*bs + qo + i%16)
		if codebook != nil {
			t.lut[i] = byte(int(codebook[i%16]) + 128)
		} else {
			t.lut[i] = 0x0f
		}
		t.corr[i] = c
	}
	for i := 0; i < 32; i++ {
		binary.LittleEndian.PutUint16(t.shift[2*i:], uint16(i/8%2*4))
	}
	// The scales of blocks 0..3 of the 4 blocks in two pairs (the second
	// pair in the second table), each scale offset in turn.
	for k, off := range scales {
		for b := 0; b < 4; b++ {
			byteOff := b/2*64 + b%2*bs + off
			if bytes {
				t.scale[4*k+b] = byte(byteOff)
			} else {
				binary.LittleEndian.PutUint16(t.scale[2*(4*k+b):], uint16(byteOff/2))
			}
		}
	}
	nk := 1 // Q8_0: d; Q8_1: d and s
	if as == q8_1BlockSize {
		nk = 2
	}
	for k := 0; k < nk; k++ {
		for b := 0; b < 4; b++ {
			binary.LittleEndian.PutUint16(t.ascale[2*(4*k+b):], uint16((b*as+2*k)/2))
		}
	}
	for i, v := range []uint32{0, 4, 8, 12, 2, 6, 10, 14} {
		binary.LittleEndian.PutUint32(t.reduce[4*i:], v)
	}
	for i := 0; i < 8; i++ {
		binary.LittleEndian.PutUint32(t.ones[4*i:], 1)
		binary.LittleEndian.PutUint32(t.twos[4*i:], 2)
		binary.LittleEndian.PutUint32(t.denorm[4*i:], 0x00200000)
	}
	return t
}

var (
	lvQ5_0Tab  = newLegacyVNNITab(q5_0BlockSize, 6, q8_0BlockSize, nil, 16, []int{0}, false)
	lvIQ4NLTab = newLegacyVNNITab(iq4NLBlockSize, 2, q8_0BlockSize, &kvaluesIQ4NL, 128, []int{0}, false)
	lvMXFP4Tab = newLegacyVNNITab(mxfp4BlockSize, 1, q8_0BlockSize, &kvaluesFP4, 128, []int{0}, true)
	lvQ4_1Tab  = newLegacyVNNITab(q4_1BlockSize, 4, q8_1BlockSize, nil, 0, []int{0, 2}, false)
	lvQ5_1Tab  = newLegacyVNNITab(q5_1BlockSize, 8, q8_1BlockSize, nil, 16, []int{0, 2}, false)
)

//go:noescape
func legacyQ5_0Rows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[4]float32)

//go:noescape
func legacyIQ4NLRows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[4]float32)

//go:noescape
func legacyMXFP4Rows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[4]float32)

//go:noescape
func legacyQ4_1Rows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[8]float32)

//go:noescape
func legacyQ5_1Rows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[8]float32)

// legacyRows names a type's row kernel; the kernels are called directly
// (a switch, not function values) so that the result array stays on the
// stack.
type legacyRows int

const (
	lvNone legacyRows = iota
	lvQ5_0
	lvIQ4NL
	lvMXFP4
	lvQ4_1
	lvQ5_1
)

// rows4 runs the kernel on the 4 rows at w, w+wStride, ... and g groups
// of 8 blocks of a; res gets the 4 sums (Q4_1, Q5_1: then the 4 summs).
func (k legacyRows) rows4(w *byte, wStride int, a *byte, g int, res *[8]float32) {
	r4 := (*[4]float32)(res[:4])
	switch k {
	case lvQ5_0:
		legacyQ5_0Rows4VNNI(lvQ5_0Tab, w, wStride, a, g, r4)
	case lvIQ4NL:
		legacyIQ4NLRows4VNNI(lvIQ4NLTab, w, wStride, a, g, r4)
	case lvMXFP4:
		legacyMXFP4Rows4VNNI(lvMXFP4Tab, w, wStride, a, g, r4)
	case lvQ4_1:
		legacyQ4_1Rows4VNNI(lvQ4_1Tab, w, wStride, a, g, res)
	default:
		legacyQ5_1Rows4VNNI(lvQ5_1Tab, w, wStride, a, g, res)
	}
}

// finish continues row r's sums res[i] (and res[4+i]) from block 8g to nb
// in Go and returns the dot.
func (k legacyRows) finish(w, a []byte, g, nb int, res *[8]float32, i int) float32 {
	switch k {
	case lvQ5_0:
		return dotQ5_0Blocks(w, a, 8*g, nb, res[i])
	case lvIQ4NL:
		return dotIQ4NLBlocks(w, a, 8*g, nb, res[i])
	case lvMXFP4:
		return dotMXFP4Blocks(w, a, 8*g, nb, res[i])
	case lvQ4_1:
		sumf, summs := dotQ4_1Blocks(w, a, 8*g, nb, res[i], res[4+i])
		return sumf + summs
	default:
		sumf, summs := dotQ5_1Blocks(w, a, 8*g, nb, res[i], res[4+i])
		return sumf + summs
	}
}

// col sets out[r] to row r (at w[r*wStride:]) · a for r < rows, over nb
// >= 1 whole blocks, which the slices hold (checked by gemmLegacy): the
// rows 4 at a time (a last group of fewer overlaps the one before, or
// repeats its row with stride 0 when there are fewer than 4 rows), the
// last nb%8 blocks in Go.
func (k legacyRows) col(nb int, w []byte, wStride, rows int, a []byte, out []float32) {
	g := nb / 8
	var res [8]float32
	for r0 := 0; r0 < rows; r0 += 4 {
		if rows < 4 {
			for r := 0; r < rows; r++ {
				if g > 0 {
					k.rows4(&w[r*wStride], 0, &a[0], g, &res)
				}
				out[r] = k.finish(w[r*wStride:], a, g, nb, &res, 0)
			}
			return
		}
		r0 = min(r0, rows-4)
		if g > 0 {
			k.rows4(&w[r0*wStride], wStride, &a[0], g, &res)
		}
		for i := 0; i < 4; i++ {
			out[r0+i] = k.finish(w[(r0+i)*wStride:], a, g, nb, &res, i)
		}
	}
}
