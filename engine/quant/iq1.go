package quant

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// IQ1_S: 1.5625 bits per weight. A super-block of 256 is an fp16 d, 32 low
// bytes of 11-bit indices into iq1s_grid (8 values in {-1, 0, 1} each) and
// 8 uint16 qh, one per 32 values: bits 3l..3l+2 are the high index bits of
// group l, bits 12..14 a scale s and bit 15 the sign of a shift:
// value = d*(2s+1) * (grid ± 1/8).
//
// IQ1_M: 1.75 bits per weight. No d field: 32 low index bytes, 16 bytes qh
// (per 8 values: 3 high index bits and a shift-sign bit, two groups a
// byte) and 8 bytes of scales, four uint16 whose low 12 bits are four 3-bit
// scales (one per 16 values) and whose top nibbles together are the fp16
// super-block scale d: value = d*(2s+1) * (grid ± 1/8).
const (
	iq1SSize = 2 + iqQK/8 + iqQK/16       // 50
	iq1MSize = iqQK/8 + iqQK/16 + iqQK/32 // 56
	iq1Delta = 0.125                      // IQ1S_DELTA, IQ1M_DELTA
	q8KBsums = 4 + iqQK                   // offset of a Q8_K block's bsums
)

func init() {
	register(ggml.IQ1_S, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeIQ1S,
		Dot:        dotIQ1S,
		Random:     randomIQ1S,
	})
	register(ggml.IQ1_M, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeIQ1M,
		Dot:        dotIQ1M,
		Random:     randomIQ1M,
	})
}

// iq1Dot8 is Σ grid[j]*q8[j] over one iq1s_grid entry (8 int8 in {-1,0,1}).
func iq1Dot8(g uint64, q8 []byte) int32 {
	q8 = q8[:8]
	var s int32
	for j := range 8 {
		s += int32(int8(g>>(8*j))) * int32(int8(q8[j]))
	}
	return s
}

// iq1Dequant8 writes dl*(grid[j]+delta) for one grid entry.
func iq1Dequant8(g uint64, dl, delta float32, y []float32) {
	y = y[:8]
	for j := range 8 {
		y[j] = dl * (float32(int8(g>>(8*j))) + delta)
	}
}

// q8KBsum16 returns bsums[j] of the Q8_K block a (the sum of quants
// 16j..16j+15).
func q8KBsum16(a []byte, j int) int32 {
	return int32(int16(binary.LittleEndian.Uint16(a[q8KBsums+2*j:])))
}

// dequantizeIQ1S is dequantize_row_iq1_s.
func dequantizeIQ1S(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	src = src[:nb*iq1SSize]
	for i := range nb {
		blk := src[i*iq1SSize : (i+1)*iq1SSize]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := fp16At(blk)
		qs, qhb := blk[2:34], blk[34:50]
		for ib := range iqQK / 32 {
			qh := binary.LittleEndian.Uint16(qhb[2*ib:])
			dl := d * float32(2*(qh>>12&7)+1)
			delta := float32(iq1Delta)
			if qh&0x8000 != 0 {
				delta = -iq1Delta
			}
			for l := range 4 {
				g := iq1sGrid[uint32(qs[4*ib+l])|uint32(qh>>(3*l)&7)<<8]
				iq1Dequant8(g, dl, delta, y[32*ib+8*l:])
			}
		}
	}
}

// dotIQ1S is ggml_vec_dot_iq1_s_q8_K with the float steps of its x86 SIMD
// version: per super-block, the exact integer sum of the grid part and of
// the shift part (from the Q8_K block sums), each times d accumulated in
// float32 on its own; the result is sum + 1/8 * shift sum.
func dotIQ1S(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, iq1SSize)
	var sumf, sumf1 float32
	for i := range nb {
		blk := w[i*iq1SSize : (i+1)*iq1SSize]
		ab := a[i*iqQ8KSize : (i+1)*iqQ8KSize]
		yd, q8 := iqQ8K(ab)
		qs, qhb := blk[2:34], blk[34:50]
		var sumi, sumi1 int32
		for ib := range iqQK / 32 {
			qh := binary.LittleEndian.Uint16(qhb[2*ib:])
			ls := int32(2*(qh>>12&7) + 1)
			var lsum int32
			for l := range 4 {
				g := iq1sGrid[uint32(qs[4*ib+l])|uint32(qh>>(3*l)&7)<<8]
				lsum += iq1Dot8(g, q8[32*ib+8*l:])
			}
			sumi += ls * lsum
			bs := q8KBsum16(ab, 2*ib) + q8KBsum16(ab, 2*ib+1)
			if qh&0x8000 != 0 {
				bs = -bs
			}
			sumi1 += ls * bs
		}
		d := yd * fp16At(blk)
		sumf += float32(d * float32(sumi))
		sumf1 += float32(d * float32(sumi1))
	}
	return sumf + float32(iq1Delta*sumf1)
}

// iq1MScale returns the fp16 super-block scale of an IQ1_M block, made of
// the top nibbles of its four scale words.
func iq1MScale(sc []byte) float32 {
	s0 := binary.LittleEndian.Uint16(sc[0:])
	s1 := binary.LittleEndian.Uint16(sc[2:])
	s2 := binary.LittleEndian.Uint16(sc[4:])
	s3 := binary.LittleEndian.Uint16(sc[6:])
	return FP16ToFloat32(s0>>12 | s1>>8&0x00f0 | s2>>4&0x0f00 | s3&0xf000)
}

// iq1MGroup returns, for group l (0..3) of the 32 values ib, its grid entry
// and whether its shift is negative.
func iq1MGroup(qs, qh []byte, ib, l int) (uint64, bool) {
	h := qh[2*ib+l/2]
	if l%2 == 0 {
		return iq1sGrid[uint32(qs[4*ib+l])|uint32(h)<<8&0x700], h&0x08 != 0
	}
	return iq1sGrid[uint32(qs[4*ib+l])|uint32(h)<<4&0x700], h&0x80 != 0
}

// iq1MScales returns the two 3-bit scales (as 2s+1) of the 32 values ib.
func iq1MScales(sc []byte, ib int) (int32, int32) {
	w := binary.LittleEndian.Uint16(sc[2*(ib/2):])
	sh := 6 * (ib % 2)
	return int32(2*(w>>sh&7) + 1), int32(2*(w>>(sh+3)&7) + 1)
}

// dequantizeIQ1M is dequantize_row_iq1_m.
func dequantizeIQ1M(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	src = src[:nb*iq1MSize]
	for i := range nb {
		blk := src[i*iq1MSize : (i+1)*iq1MSize]
		y := dst[i*iqQK : (i+1)*iqQK]
		qs, qh, sc := blk[0:32], blk[32:48], blk[48:56]
		d := iq1MScale(sc)
		for ib := range iqQK / 32 {
			ls1, ls2 := iq1MScales(sc, ib)
			dl := [2]float32{d * float32(ls1), d * float32(ls2)}
			for l := range 4 {
				g, neg := iq1MGroup(qs, qh, ib, l)
				delta := float32(iq1Delta)
				if neg {
					delta = -iq1Delta
				}
				iq1Dequant8(g, dl[l/2], delta, y[32*ib+8*l:])
			}
		}
	}
}

// dotIQ1M is ggml_vec_dot_iq1_m_q8_K with the float steps of its x86 SIMD
// version: the grid and shift parts as exact integer sums per super-block,
// each times d accumulated in float32; the result is sum + 1/8 * shift sum.
func dotIQ1M(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, iq1MSize)
	var sumf1, sumf2 float32
	for i := range nb {
		blk := w[i*iq1MSize : (i+1)*iq1MSize]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		qs, qh, sc := blk[0:32], blk[32:48], blk[48:56]
		var sumi1, sumi2 int32
		for ib := range iqQK / 32 {
			ls := [2]int32{}
			ls[0], ls[1] = iq1MScales(sc, ib)
			for l := range 4 {
				g, neg := iq1MGroup(qs, qh, ib, l)
				q := q8[32*ib+8*l : 32*ib+8*l+8]
				var qsum int32
				for _, v := range q {
					qsum += int32(int8(v))
				}
				if neg {
					qsum = -qsum
				}
				sumi1 += ls[l/2] * iq1Dot8(g, q)
				sumi2 += ls[l/2] * qsum
			}
		}
		d := yd * iq1MScale(sc)
		sumf1 += float32(d * float32(sumi1))
		sumf2 += float32(d * float32(sumi2))
	}
	return sumf1 + float32(iq1Delta*sumf2)
}

// randomIQ1S fills dst with random IQ1_S blocks: uniform indices, scales
// and shift signs, and d chosen so that the mean |value| is about scale
// (mean |grid ± 1/8| about 0.66, mean 2s+1 = 8).
func randomIQ1S(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq1SSize <= len(dst); i += iq1SSize {
		blk := dst[i : i+iq1SSize]
		binary.LittleEndian.PutUint16(blk, iqRandomFP16(rng, scale/5.3))
		for k := 2; k < iq1SSize; k++ {
			blk[k] = uint8(rng.Uint32())
		}
	}
}

// randomIQ1M fills dst with random IQ1_M blocks: uniform indices, scales
// and shift signs, and a super-block scale chosen as for IQ1_S, split into
// the top nibbles of the scale words.
func randomIQ1M(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq1MSize <= len(dst); i += iq1MSize {
		blk := dst[i : i+iq1MSize]
		for k := range blk {
			blk[k] = uint8(rng.Uint32())
		}
		d := iqRandomFP16(rng, scale/5.3)
		sc := blk[48:56]
		for j := range 4 {
			w := binary.LittleEndian.Uint16(sc[2*j:])&0x0fff | (d>>(4*j)&0xf)<<12
			binary.LittleEndian.PutUint16(sc[2*j:], w)
		}
	}
}
