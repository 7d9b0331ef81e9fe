package quant

import (
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// Q6_K: super-blocks of 256 values (210 bytes): ql [128]byte (low 4 bits),
// qh [64]byte (high 2 bits), scales [16]int8 (one per 16 values), d fp16.
// Value = d*scale*(q-32) with q in [0, 64).
const q6KBlockSize = 210

func init() {
	register(ggml.Q6_K, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeQ6K,
		Dot:        dotQ6KQ8K,
		Random:     randomQ6K,
		Quantize:   quantizeQ6KRef,
	})
}

func dequantizeQ6K(src []byte, dst []float32) {
	nb := len(dst) / qkK
	for i := 0; i < nb; i++ {
		b := (*[q6KBlockSize]byte)(src[i*q6KBlockSize:])
		d := fp16At(b[208:])
		for n := 0; n < 2; n++ {
			ql := (*[64]byte)(b[64*n:])
			qh := (*[32]byte)(b[128+32*n:])
			sc := (*[8]byte)(b[192+8*n:])
			y := (*[128]float32)(dst[i*qkK+128*n:])
			for l := 0; l < 32; l++ {
				is := l / 16
				h := qh[l]
				q1 := int32(ql[l]&0xf|(h&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|((h>>2)&3)<<4) - 32
				q3 := int32(ql[l]>>4|((h>>4)&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|((h>>6)&3)<<4) - 32
				y[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				y[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				y[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				y[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}

// dotQ6KQ8K is ggml_vec_dot_q6_K_q8_K with exact integer sums per
// super-block; the float accumulation is sumf += d*isum per super-block
// (ggml's generic code splits it over 8 lanes; the difference is float
// rounding).
func dotQ6KQ8K(n int, w, a []byte) float32 {
	nb := n / qkK
	var sumf float32
	for i := 0; i < nb; i++ {
		x := (*[q6KBlockSize]byte)(w[i*q6KBlockSize:])
		y := (*[q8KBlockSize]byte)(a[i*q8KBlockSize:])
		var isum int32
		for n := 0; n < 2; n++ {
			ql := (*[64]byte)(x[64*n:])
			qh := (*[32]byte)(x[128+32*n:])
			sc := (*[8]byte)(x[192+8*n:])
			q8 := (*[128]byte)(y[q8KQsOff+128*n:])
			isum += q6KHalfSum(ql, qh, sc, q8)
		}
		d := fp16At(x[208:]) * q8KD(y)
		sumf += float32(d * float32(isum))
	}
	return sumf
}

// q6KHalfSum returns Σ scale*(q-32)*q8 over one 128-value half of a
// super-block.
func q6KHalfSum(ql *[64]byte, qh *[32]byte, sc *[8]byte, q8 *[128]byte) int32 {
	var isum int32
	for h := 0; h < 32; h += 16 { // l in [h, h+16): scales sc[h/16 + 0,2,4,6]
		var s1, s2, s3, s4 int32
		for l := h; l < h+16; l++ {
			hb, a, b := int32(qh[l]), int32(ql[l]), int32(ql[l+32])
			s1 += int32(int8(q8[l])) * (a&0xf | (hb&3)<<4 - 32)
			s2 += int32(int8(q8[l+32])) * (b&0xf | (hb>>2&3)<<4 - 32)
			s3 += int32(int8(q8[l+64])) * (a>>4 | (hb>>4&3)<<4 - 32)
			s4 += int32(int8(q8[l+96])) * (b>>4 | (hb>>6)<<4 - 32)
		}
		k := h / 16
		isum += int32(int8(sc[k]))*s1 + int32(int8(sc[k+2]))*s2 +
			int32(int8(sc[k+4]))*s3 + int32(int8(sc[k+6]))*s4
	}
	return isum
}

// randomQ6K fills whole super-blocks with random 6-bit quants and random
// int8 scales; d ≈ scale/1024 (mean |scale| is 64, mean |q-32| is 16).
func randomQ6K(dst []byte, rng *rand.Rand, scale float32) {
	nb := len(dst) / q6KBlockSize
	for i := 0; i < nb; i++ {
		b := (*[q6KBlockSize]byte)(dst[i*q6KBlockSize:])
		for j := 0; j < 208; j++ {
			b[j] = byte(rng.Uint32())
		}
		putFP16(b[208:], scale/1024*(0.75+0.5*rng.Float32()))
	}
}
