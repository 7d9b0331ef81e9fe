package quant

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// IQ4_XS: 4.25 bits per weight. A super-block of 256 is an fp16 d, a
// uint16 of high scale bits, 4 bytes of low scale bits and 128 bytes of
// 4-bit indices into kvalues_iq4nl. Group ib of 32 has the 6-bit scale
// ls = low nibble ib of scales_l | bits 2ib..2ib+1 of scales_h << 4, and
// value = d*(ls-32) * kvalues_iq4nl[q]; byte j of a group holds value j in
// its low nibble and value j+16 in its high nibble.

func init() {
	register(ggml.IQ4_XS, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeIQ4XS,
		Dot:        dotIQ4XS,
		Random:     randomIQ4XS,
		Quantize:   quantizeIQ4XS,
	})
}

// iq4XSScale returns the signed scale ls-32 of group ib of an IQ4_XS block.
func iq4XSScale(blk []byte, ib int) int32 {
	h := binary.LittleEndian.Uint16(blk[2:])
	ls := blk[4+ib/2]>>(4*(ib%2))&0xf | uint8(h>>(2*ib)&3)<<4
	return int32(ls) - 32
}

// dequantizeIQ4XS is dequantize_row_iq4_xs.
func dequantizeIQ4XS(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	src = src[:nb*iq4XSSize]
	for i := range nb {
		blk := src[i*iq4XSSize : (i+1)*iq4XSSize]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk))
		for ib := range iqQK / 32 {
			dl := d * float32(iq4XSScale(blk, ib))
			qs := blk[8+16*ib : 8+16*ib+16]
			yb := y[32*ib : 32*ib+32]
			for j, q := range qs {
				yb[j] = dl * float32(kvaluesIQ4NL[q&0xf])
				yb[j+16] = dl * float32(kvaluesIQ4NL[q>>4])
			}
		}
	}
}

// dotIQ4XS is ggml_vec_dot_iq4_xs_q8_K as llama.cpp's AVX2 and NEON code
// computes it: the integer sum over a super-block of (ls-32) times the
// group's dot product, then float32 accumulation of d*sum. (The generic C
// version instead rounds d*(ls-32) per group; both are the same integer
// products, summed in a different float order.)
func dotIQ4XS(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, iq4XSSize)
	var sumf float32
	for i := range nb {
		blk := w[i*iq4XSSize : (i+1)*iq4XSSize]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk)) * yd
		var bsum int32
		for ib := range iqQK / 32 {
			qs := blk[8+16*ib : 8+16*ib+16]
			q := q8[32*ib : 32*ib+32]
			var sumi int32
			for j := range 16 {
				sumi += int32(int8(q[j]))*int32(kvaluesIQ4NL[qs[j]&0xf]) +
					int32(int8(q[j+16]))*int32(kvaluesIQ4NL[qs[j]>>4])
			}
			bsum += sumi * iq4XSScale(blk, ib)
		}
		sumf += float32(d * float32(bsum)) // explicit rounding: no fused multiply-add
	}
	return sumf
}

// randomIQ4XS fills dst with random IQ4_XS blocks: uniform 4-bit indices and
// 6-bit scales, and d chosen so that the mean |value| is about scale (mean
// |ls-32| = 16, mean |kvalues_iq4nl| = 56).
func randomIQ4XS(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq4XSSize <= len(dst); i += iq4XSSize {
		blk := dst[i : i+iq4XSSize]
		binary.LittleEndian.PutUint16(blk, iqRandomFP16(rng, scale/896))
		binary.LittleEndian.PutUint16(blk[2:], uint16(rng.Uint32()))
		for k := 4; k < iq4XSSize; k++ {
			blk[k] = uint8(rng.Uint32())
		}
	}
}

// iq4BestIndex is ggml's best_index_int8 over kvalues_iq4nl: the index of
// the value nearest to x (the upper one on ties).
func iq4BestIndex(x float32) uint8 {
	const n = len(kvaluesIQ4NL)
	if x <= float32(kvaluesIQ4NL[0]) {
		return 0
	}
	if x >= float32(kvaluesIQ4NL[n-1]) {
		return uint8(n - 1)
	}
	ml, mu := 0, n-1
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(kvaluesIQ4NL[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(kvaluesIQ4NL[mu-1]) < float32(kvaluesIQ4NL[mu])-x {
		return uint8(mu - 1)
	}
	return uint8(mu)
}

// quantizeIQ4XS is quantize_row_iq4_xs_ref (quantize_iq4_xs without an
// importance matrix, i.e. quantize_row_iq4_nl_impl with 256-value
// super-blocks, groups of 32 and ntry = 7), with every float32 operation
// rounded separately as C does without floating-point contraction.
func quantizeIQ4XS(x []float32, dst []byte) {
	nb := len(x) / iqQK
	dst = dst[:nb*iq4XSSize]
	const ntry = 7
	v0 := float32(kvaluesIQ4NL[0])
	var scales [iqQK / 32]float32
	var weight [32]float32
	var L [iqQK]uint8
	for i := range nb {
		xs := x[i*iqQK : (i+1)*iqQK]
		blk := dst[i*iq4XSSize : (i+1)*iq4XSSize]
		clear(blk)
		var maxScale, amaxScale float32
		for ib := range iqQK / 32 {
			xb := xs[32*ib : 32*ib+32]
			var amax, mx float32
			for j, v := range xb {
				weight[j] = v * v
				if ax := abs32(v); ax > amax {
					amax, mx = ax, v
				}
			}
			if amax < 1e-15 { // GROUP_MAX_EPS
				scales[ib] = 0
				continue
			}
			d := -mx / v0
			id := 1 / d
			var sumqx, sumq2 float32
			for j, v := range xb {
				q := float32(kvaluesIQ4NL[iq4BestIndex(id*v)])
				wq := weight[j] * q
				sumqx += float32(wq * v)
				sumq2 += float32(wq * q)
			}
			d = 0
			if sumq2 > 0 {
				d = sumqx / sumq2
			}
			best := d * sumqx
			for itry := -ntry; itry <= ntry; itry++ {
				id := float32(itry+int(kvaluesIQ4NL[0])) / mx
				sumqx, sumq2 = 0, 0
				for j, v := range xb {
					q := float32(kvaluesIQ4NL[iq4BestIndex(id*v)])
					wq := weight[j] * q
					sumqx += float32(wq * v)
					sumq2 += float32(wq * q)
				}
				if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
					d = sumqx / sumq2
					best = d * sumqx
				}
			}
			scales[ib] = d
			if ad := abs32(d); ad > amaxScale {
				amaxScale, maxScale = ad, d
			}
		}
		d := -maxScale / 32
		binary.LittleEndian.PutUint16(blk, Float32ToFP16(d))
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var scalesH uint16
		for ib := range iqQK / 32 {
			l := min(max(nearestInt(mul(id, scales[ib])), -32), 31)
			dl := d * float32(l)
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			for j, v := range xs[32*ib : 32*ib+32] {
				L[32*ib+j] = iq4BestIndex(idl * v)
			}
			l += 32
			blk[4+ib/2] |= uint8(l&0xf) << (4 * (ib % 2))
			scalesH |= uint16(l>>4) << (2 * ib)
		}
		binary.LittleEndian.PutUint16(blk[2:], scalesH)
		for ib := range iqQK / 32 {
			for j := range 16 {
				blk[8+16*ib+j] = L[32*ib+j] | L[32*ib+16+j]<<4
			}
		}
	}
}
