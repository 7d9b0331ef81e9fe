package quant

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// IQ3_XXS: 3.0625 bits per weight. A super-block of 256 is an fp16 d, 64
// 8-bit indices into iq3xxs_grid (4 magnitudes each) and 8 uint32, one per
// group of 32, each four 7-bit ksigns_iq2xs indices and, in its top 4 bits,
// the group scale s: value = d*(0.5+s)/2 * grid * sign.

func init() {
	register(ggml.IQ3_XXS, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeIQ3XXS,
		Dot:        dotIQ3XXS,
		Random:     randomIQ3XXS,
	})
}

// iq3Grid8 joins the two 4-byte grid entries a and b into one 8-byte grid
// (a in the low bytes), the values one ksigns_iq2xs entry signs.
func iq3Grid8(a, b uint8) uint64 {
	return uint64(iq3xxsGrid[a]) | uint64(iq3xxsGrid[b])<<32
}

// dequantizeIQ3XXS is dequantize_row_iq3_xxs.
func dequantizeIQ3XXS(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	src = src[:nb*iq3XXSSize]
	for i := range nb {
		blk := src[i*iq3XXSSize : (i+1)*iq3XXSSize]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk))
		qs, sas := blk[2:2+64], blk[2+64:]
		for ib32 := range iqQK / 32 {
			aux := binary.LittleEndian.Uint32(sas[4*ib32:])
			db := d * (0.5 + float32(aux>>28)) * 0.5
			for l := range 4 {
				signs := uint32(ksignsIQ2XS[aux>>(7*l)&127])
				g := iq3Grid8(qs[8*ib32+2*l], qs[8*ib32+2*l+1])
				iqDequantGrid8(g, signs, db, y[32*ib32+8*l:])
			}
		}
	}
}

// dotIQ3XXS is ggml_vec_dot_iq3_xxs_q8_K_generic: exact integer sums per
// super-block, then float32 accumulation of d*bsum.
func dotIQ3XXS(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, iq3XXSSize)
	var sumf float32
	for i := range nb {
		blk := w[i*iq3XXSSize : (i+1)*iq3XXSSize]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk)) * yd
		qs, sas := blk[2:2+64], blk[2+64:2+64+32]
		var bsum int32
		for ib32 := range iqQK / 32 {
			aux := binary.LittleEndian.Uint32(sas[4*ib32:])
			g := qs[8*ib32 : 8*ib32+8]
			q := q8[32*ib32 : 32*ib32+32]
			sumi := iqDotGrid8(iq3Grid8(g[0], g[1]), ksigns64[aux&127], q[0:8])
			sumi += iqDotGrid8(iq3Grid8(g[2], g[3]), ksigns64[aux>>7&127], q[8:16])
			sumi += iqDotGrid8(iq3Grid8(g[4], g[5]), ksigns64[aux>>14&127], q[16:24])
			sumi += iqDotGrid8(iq3Grid8(g[6], g[7]), ksigns64[aux>>21&127], q[24:32])
			bsum += sumi * int32(2*(aux>>28)+1)
		}
		sumf += float32(d * float32(bsum)) // explicit rounding: no fused multiply-add
	}
	return 0.25 * sumf
}

// randomIQ3XXS fills dst with random IQ3_XXS blocks: uniform grid indices,
// sign indices and group scales, and d chosen so that the mean |value| is
// about scale (mean grid magnitude 25, mean (0.5+s)/2 = 4).
func randomIQ3XXS(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq3XXSSize <= len(dst); i += iq3XXSSize {
		blk := dst[i : i+iq3XXSSize]
		binary.LittleEndian.PutUint16(blk, iqRandomFP16(rng, scale/100))
		for k := range iqQK / 4 {
			blk[2+k] = uint8(rng.IntN(256))
		}
		for ib32 := range iqQK / 32 {
			aux := uint32(rng.IntN(16)) << 28
			for l := range 4 {
				aux |= uint32(rng.IntN(128)) << (7 * l)
			}
			binary.LittleEndian.PutUint32(blk[2+64+4*ib32:], aux)
		}
	}
}
