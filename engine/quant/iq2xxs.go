package quant

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// IQ2_XXS: 2.0625 bits per weight. A super-block of 256 is an fp16 d and
// 8 groups of 32, each 8 bytes: four 8-bit indices into iq2xxs_grid (8
// magnitudes each), then a uint32 holding four 7-bit ksigns_iq2xs indices
// and, in its top 4 bits, the group scale s: value = d*(0.5+s)/4 * grid * sign.

func init() {
	register(ggml.IQ2_XXS, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeIQ2XXS,
		Dot:        dotIQ2XXS,
		Random:     randomIQ2XXS,
	})
}

// dequantizeIQ2XXS is dequantize_row_iq2_xxs.
func dequantizeIQ2XXS(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	src = src[:nb*iq2XXSSize]
	for i := range nb {
		blk := src[i*iq2XXSSize : (i+1)*iq2XXSSize]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk))
		for ib32 := range iqQK / 32 {
			g := blk[2+8*ib32 : 2+8*ib32+8]
			aux := binary.LittleEndian.Uint32(g[4:])
			db := d * (0.5 + float32(aux>>28)) * 0.25
			for l := range 4 {
				signs := uint32(ksignsIQ2XS[aux>>(7*l)&127])
				iqDequantGrid8(iq2xxsGrid[g[l]], signs, db, y[32*ib32+8*l:])
			}
		}
	}
}

// dotIQ2XXS is ggml_vec_dot_iq2_xxs_q8_K_generic: exact integer sums per
// super-block, then float32 accumulation of d*bsum.
func dotIQ2XXS(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, iq2XXSSize)
	var sumf float32
	for i := range nb {
		blk := w[i*iq2XXSSize : (i+1)*iq2XXSSize]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk)) * yd
		var bsum int32
		for ib32 := range iqQK / 32 {
			g := blk[2+8*ib32 : 2+8*ib32+8]
			aux := binary.LittleEndian.Uint32(g[4:])
			q := q8[32*ib32 : 32*ib32+32]
			sumi := iqDotGrid8(iq2xxsGrid[g[0]], ksigns64[aux&127], q[0:8])
			sumi += iqDotGrid8(iq2xxsGrid[g[1]], ksigns64[aux>>7&127], q[8:16])
			sumi += iqDotGrid8(iq2xxsGrid[g[2]], ksigns64[aux>>14&127], q[16:24])
			sumi += iqDotGrid8(iq2xxsGrid[g[3]], ksigns64[aux>>21&127], q[24:32])
			bsum += sumi * int32(2*(aux>>28)+1)
		}
		sumf += float32(d * float32(bsum)) // explicit rounding: no fused multiply-add
	}
	return 0.125 * sumf
}

// randomIQ2XXS fills dst with random IQ2_XXS blocks: uniform grid indices,
// sign indices and group scales, and d chosen so that the mean |value| is
// about scale (mean grid magnitude 18.85, mean (0.5+s)/4 = 2).
func randomIQ2XXS(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq2XXSSize <= len(dst); i += iq2XXSSize {
		blk := dst[i : i+iq2XXSSize]
		binary.LittleEndian.PutUint16(blk, iqRandomFP16(rng, scale/37.7))
		for ib32 := range iqQK / 32 {
			g := blk[2+8*ib32 : 2+8*ib32+8]
			for l := range 4 {
				g[l] = uint8(rng.IntN(256))
			}
			aux := uint32(rng.IntN(16)) << 28
			for l := range 4 {
				aux |= uint32(rng.IntN(128)) << (7 * l)
			}
			binary.LittleEndian.PutUint32(g[4:], aux)
		}
	}
}
