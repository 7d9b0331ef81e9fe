package quant

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// IQ2_XS: 2.3125 bits per weight. A super-block of 256 is an fp16 d, 32
// uint16 (low 9 bits an iq2xs_grid index, high 7 bits a ksigns_iq2xs index,
// one per 8 values) and 8 bytes of two 4-bit scales per group of 32 (low
// nibble for its first 16 values): value = d*(0.5+s)/4 * grid * sign.

func init() {
	register(ggml.IQ2_XS, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeIQ2XS,
		Dot:        dotIQ2XS,
		Random:     randomIQ2XS,
	})
}

// dequantizeIQ2XS is dequantize_row_iq2_xs.
func dequantizeIQ2XS(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	src = src[:nb*iq2XSSize]
	for i := range nb {
		blk := src[i*iq2XSSize : (i+1)*iq2XSSize]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk))
		qs, scales := blk[2:2+64], blk[2+64:]
		for ib32 := range iqQK / 32 {
			db := [2]float32{
				d * (0.5 + float32(scales[ib32]&0xf)) * 0.25,
				d * (0.5 + float32(scales[ib32]>>4)) * 0.25,
			}
			for l := range 4 {
				q := binary.LittleEndian.Uint16(qs[2*(4*ib32+l):])
				signs := uint32(ksignsIQ2XS[q>>9])
				iqDequantGrid8(iq2xsGrid[q&511], signs, db[l/2], y[32*ib32+8*l:])
			}
		}
	}
}

// dotIQ2XS is ggml_vec_dot_iq2_xs_q8_K_generic: exact integer sums per
// super-block, then float32 accumulation of d*bsum.
func dotIQ2XS(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, iq2XSSize)
	var sumf float32
	for i := range nb {
		blk := w[i*iq2XSSize : (i+1)*iq2XSSize]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk)) * yd
		qs, scales := blk[2:2+64], blk[2+64:2+64+8]
		var bsum int32
		for ib32 := range iqQK / 32 {
			g := qs[8*ib32 : 8*ib32+8]
			q := q8[32*ib32 : 32*ib32+32]
			q0 := binary.LittleEndian.Uint16(g[0:])
			q1 := binary.LittleEndian.Uint16(g[2:])
			q2 := binary.LittleEndian.Uint16(g[4:])
			q3 := binary.LittleEndian.Uint16(g[6:])
			sumi1 := iqDotGrid8(iq2xsGrid[q0&511], ksigns64[q0>>9], q[0:8])
			sumi1 += iqDotGrid8(iq2xsGrid[q1&511], ksigns64[q1>>9], q[8:16])
			sumi2 := iqDotGrid8(iq2xsGrid[q2&511], ksigns64[q2>>9], q[16:24])
			sumi2 += iqDotGrid8(iq2xsGrid[q3&511], ksigns64[q3>>9], q[24:32])
			sc := scales[ib32]
			bsum += sumi1*int32(2*(sc&0xf)+1) + sumi2*int32(2*(sc>>4)+1)
		}
		sumf += float32(d * float32(bsum)) // explicit rounding: no fused multiply-add
	}
	return 0.125 * sumf
}

// randomIQ2XS fills dst with random IQ2_XS blocks: uniform grid indices,
// sign indices and scales, and d chosen so that the mean |value| is about
// scale (mean grid magnitude 19.9, mean (0.5+s)/4 = 2).
func randomIQ2XS(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq2XSSize <= len(dst); i += iq2XSSize {
		blk := dst[i : i+iq2XSSize]
		binary.LittleEndian.PutUint16(blk, iqRandomFP16(rng, scale/39.8))
		for k := range iqQK / 8 {
			q := uint16(rng.IntN(512)) | uint16(rng.IntN(128))<<9
			binary.LittleEndian.PutUint16(blk[2+2*k:], q)
		}
		for k := range iqQK / 32 {
			blk[2+64+k] = uint8(rng.IntN(256))
		}
	}
}
