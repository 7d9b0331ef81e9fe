package quant

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// IQ3_S: 3.4375 bits per weight. A super-block of 256 is an fp16 d, 64 low
// bytes of 9-bit indices into iq3s_grid (4 magnitudes each), 8 bytes of
// their high bits (qh), 32 bytes of explicit signs (one bit per value) and
// 4 bytes of 4-bit scales, one per 32 values: value = d*(1+2s) * grid *
// sign.
//
// IQ2_S: 2.5625 bits per weight. An fp16 d, 32 low bytes of 10-bit indices
// into iq2s_grid (8 magnitudes each), 32 bytes of signs, 8 bytes of the
// indices' high bits and 8 bytes holding two 4-bit scales per 32 values
// (one per 16): value = d*(0.5+s)/4 * grid * sign.
const (
	iq3SSize = 2 + iqQK/4 + iqQK/32 + iqQK/8 + iqQK/64 // 110
	iq2SSize = 2 + iqQK/4 + iqQK/16                    // 82
)

func init() {
	register(ggml.IQ3_S, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeIQ3S,
		Dot:        dotIQ3S,
		Random:     randomIQ3S,
	})
	register(ggml.IQ2_S, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeIQ2S,
		Dot:        dotIQ2S,
		Random:     randomIQ2S,
	})
}

// signMask8 spreads the 8 bits of a sign byte to 8 bytes of 0x00 (bit
// clear) or 0xff (bit set), byte j for bit j: the mask iqDotGrid8 takes.
func signMask8(b uint8) uint64 {
	m := uint64(b)
	m = (m | m<<28) & 0x0000000f0000000f
	m = (m | m<<14) & 0x0003000300030003
	m = (m | m<<7) & 0x0101010101010101
	return m * 0xff
}

// iq3SGrid8 returns the two grid entries of 8 consecutive IQ3_S values:
// group l (0..3) of the 32 values whose high index bits are qh.
func iq3SGrid8(qs []byte, qh uint8, l int) uint64 {
	i1 := uint32(qs[2*l]) | uint32(qh)<<(8-2*l)&256
	i2 := uint32(qs[2*l+1]) | uint32(qh)<<(7-2*l)&256
	return uint64(iq3sGrid[i1]) | uint64(iq3sGrid[i2])<<32
}

// dequantizeIQ3S is dequantize_row_iq3_s.
func dequantizeIQ3S(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	src = src[:nb*iq3SSize]
	for i := range nb {
		blk := src[i*iq3SSize : (i+1)*iq3SSize]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := fp16At(blk)
		qs, qh, signs, scales := blk[2:66], blk[66:74], blk[74:106], blk[106:110]
		for ib32 := range iqQK / 32 {
			db := d * float32(1+2*(scales[ib32/2]>>(4*(ib32%2))&0xf))
			for l := range 4 {
				g := iq3SGrid8(qs[8*ib32:], qh[ib32], l)
				iqDequantGrid8(g, uint32(signs[4*ib32+l]), db, y[32*ib32+8*l:])
			}
		}
	}
}

// dotIQ3S is ggml_vec_dot_iq3_s_q8_K: exact integer sums per super-block
// (each group of 32 times its 1+2s), then float32 accumulation of d*bsum.
func dotIQ3S(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, iq3SSize)
	var sumf float32
	for i := range nb {
		blk := w[i*iq3SSize : (i+1)*iq3SSize]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		d := fp16At(blk) * yd
		qs, qh, signs, scales := blk[2:66], blk[66:74], blk[74:106], blk[106:110]
		var bsum int32
		for ib32 := range iqQK / 32 {
			q := q8[32*ib32 : 32*ib32+32]
			g := qs[8*ib32 : 8*ib32+8]
			s := signs[4*ib32 : 4*ib32+4]
			sumi := iqDotGrid8(iq3SGrid8(g, qh[ib32], 0), signMask8(s[0]), q[0:8])
			sumi += iqDotGrid8(iq3SGrid8(g, qh[ib32], 1), signMask8(s[1]), q[8:16])
			sumi += iqDotGrid8(iq3SGrid8(g, qh[ib32], 2), signMask8(s[2]), q[16:24])
			sumi += iqDotGrid8(iq3SGrid8(g, qh[ib32], 3), signMask8(s[3]), q[24:32])
			bsum += sumi * int32(1+2*(scales[ib32/2]>>(4*(ib32%2))&0xf))
		}
		sumf += float32(d * float32(bsum)) // explicit rounding: no fused multiply-add
	}
	return sumf
}

// iq2SGrid returns the grid entry of values 8l..8l+7 of group ib32.
func iq2SGrid(qs []byte, qh uint8, l int) uint64 {
	return iq2sGrid[uint32(qs[l])|uint32(qh)<<(8-2*l)&0x300]
}

// dequantizeIQ2S is dequantize_row_iq2_s.
func dequantizeIQ2S(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	src = src[:nb*iq2SSize]
	for i := range nb {
		blk := src[i*iq2SSize : (i+1)*iq2SSize]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := fp16At(blk)
		qs, signs, qh, scales := blk[2:34], blk[34:66], blk[66:74], blk[74:82]
		for ib32 := range iqQK / 32 {
			db := [2]float32{
				float32(d*(0.5+float32(scales[ib32]&0xf))) * 0.25,
				float32(d*(0.5+float32(scales[ib32]>>4))) * 0.25,
			}
			for l := range 4 {
				g := iq2SGrid(qs[4*ib32:], qh[ib32], l)
				iqDequantGrid8(g, uint32(signs[4*ib32+l]), db[l/2], y[32*ib32+8*l:])
			}
		}
	}
}

// dotIQ2S is ggml_vec_dot_iq2_s_q8_K: exact integer sums per super-block
// (each half group of 16 times its 1+2s), float32 accumulation of d*bsum,
// and the result times 1/8.
func dotIQ2S(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, iq2SSize)
	var sumf float32
	for i := range nb {
		blk := w[i*iq2SSize : (i+1)*iq2SSize]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		d := fp16At(blk) * yd
		qs, signs, qh, scales := blk[2:34], blk[34:66], blk[66:74], blk[74:82]
		var bsum int32
		for ib32 := range iqQK / 32 {
			q := q8[32*ib32 : 32*ib32+32]
			g := qs[4*ib32 : 4*ib32+4]
			s := signs[4*ib32 : 4*ib32+4]
			sumi1 := iqDotGrid8(iq2SGrid(g, qh[ib32], 0), signMask8(s[0]), q[0:8])
			sumi1 += iqDotGrid8(iq2SGrid(g, qh[ib32], 1), signMask8(s[1]), q[8:16])
			sumi2 := iqDotGrid8(iq2SGrid(g, qh[ib32], 2), signMask8(s[2]), q[16:24])
			sumi2 += iqDotGrid8(iq2SGrid(g, qh[ib32], 3), signMask8(s[3]), q[24:32])
			bsum += sumi1*int32(1+2*(scales[ib32]&0xf)) + sumi2*int32(1+2*(scales[ib32]>>4))
		}
		sumf += float32(d * float32(bsum))
	}
	return 0.125 * sumf
}

// randomIQ3S fills dst with random IQ3_S blocks: uniform indices, signs
// and scales, and d chosen so that the mean |value| is about scale (mean
// grid magnitude about 5.4, mean 1+2s = 16).
func randomIQ3S(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq3SSize <= len(dst); i += iq3SSize {
		blk := dst[i : i+iq3SSize]
		binary.LittleEndian.PutUint16(blk, iqRandomFP16(rng, scale/86))
		for k := 2; k < iq3SSize; k++ {
			blk[k] = uint8(rng.Uint32())
		}
	}
}

// randomIQ2S fills dst with random IQ2_S blocks: uniform indices, signs
// and scales, and d chosen so that the mean |value| is about scale (mean
// grid magnitude about 21, mean (0.5+s)/4 = 2).
func randomIQ2S(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq2SSize <= len(dst); i += iq2SSize {
		blk := dst[i : i+iq2SSize]
		binary.LittleEndian.PutUint16(blk, iqRandomFP16(rng, scale/42))
		for k := 2; k < iq2SSize; k++ {
			blk[k] = uint8(rng.Uint32())
		}
	}
}
