package quant

import (
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// Q5_K: super-blocks of 256 values (176 bytes): d fp16, dmin fp16,
// scales [12]byte (as Q4_K), qh [32]byte (5th bits: bit 2j for the low
// nibbles and 2j+1 for the high nibbles of 64-value chunk j), qs [128]byte
// (as Q4_K). Value = d*sc*q - dmin*m with q in [0, 32).
const q5KBlockSize = 176

func init() {
	register(ggml.Q5_K, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeQ5K,
		Dot:        dotQ5KQ8K,
		Random:     randomQ5K,
		Quantize:   quantizeQ5KRef,
	})
}

func dequantizeQ5K(src []byte, dst []float32) {
	nb := len(dst) / qkK
	for i := 0; i < nb; i++ {
		b := (*[q5KBlockSize]byte)(src[i*q5KBlockSize:])
		y := (*[qkK]float32)(dst[i*qkK:])
		d := fp16At(b[0:])
		dmin := fp16At(b[2:])
		scales := (*[12]byte)(b[4:])
		qh := (*[32]byte)(b[16:])
		for j := 0; j < 4; j++ {
			q := (*[32]byte)(b[48+32*j:])
			sc, m := scaleMinK4(2*j, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = scaleMinK4(2*j+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			lo := (*[32]float32)(y[64*j:])
			hi := (*[32]float32)(y[64*j+32:])
			for l := 0; l < 32; l++ {
				h := qh[l] >> (2 * j)
				lo[l] = float32(d1*float32(q[l]&0xf|(h&1)<<4)) - m1
				hi[l] = float32(d2*float32(q[l]>>4|(h&2)<<3)) - m2
			}
		}
	}
}

// dotQ5KQ8K is ggml_vec_dot_q5_K_q8_K with exact integer sums per
// super-block and the float accumulation of dotQ4KQ8K.
func dotQ5KQ8K(n int, w, a []byte) float32 {
	nb := n / qkK
	var sumf, sums float32
	for i := 0; i < nb; i++ {
		x := (*[q5KBlockSize]byte)(w[i*q5KBlockSize:])
		y := (*[q8KBlockSize]byte)(a[i*q8KBlockSize:])
		isum, summs := q5KBlockSums(x, y)
		yd := q8KD(y)
		d := fp16At(x[0:]) * yd
		dmin := fp16At(x[2:]) * yd
		sums += float32(d * float32(isum))
		sumf -= float32(dmin * float32(summs))
	}
	return sumf + sums
}

// q5KBlockSums returns Σ sc*q*q8 and Σ m*bsum of one super-block.
func q5KBlockSums(x *[q5KBlockSize]byte, y *[q8KBlockSize]byte) (isum, summs int32) {
	sc, m := scalesMinsK4((*[12]byte)(x[4:]))
	for j := 0; j < 16; j++ {
		summs += q8KBsum(y, j) * m[j/2]
	}
	qh := (*[32]byte)(x[16:])
	for j := 0; j < 4; j++ {
		q := (*[32]byte)(x[48+32*j:])
		q8lo := (*[32]byte)(y[q8KQsOff+64*j:])
		q8hi := (*[32]byte)(y[q8KQsOff+64*j+32:])
		s0, s1 := dotNibbles32H(q, qh, uint(2*j), q8lo, q8hi)
		isum += sc[2*j]*s0 + sc[2*j+1]*s1
	}
	return isum, summs
}

// dotNibbles32H is dotNibbles32 with 5th bits from qh: bit shift for the
// low nibbles and bit shift+1 for the high nibbles.
func dotNibbles32H(q, qh *[32]byte, shift uint, lo, hi *[32]byte) (int32, int32) {
	var s0, s1 int32
	for l := 0; l < 32; l++ {
		h, q0 := int32(qh[l])>>shift, int32(q[l])
		s0 += int32(int8(lo[l])) * (q0&0xf | (h&1)<<4)
		s1 += int32(int8(hi[l])) * (q0>>4 | (h&2)<<3)
	}
	return s0, s1
}

// randomQ5K fills whole super-blocks with random 6-bit scales and mins and
// random 5-bit quants; d ≈ scale/300 and dmin ≈ 15.5*d (±25% per block).
func randomQ5K(dst []byte, rng *rand.Rand, scale float32) {
	nb := len(dst) / q5KBlockSize
	for i := 0; i < nb; i++ {
		b := (*[q5KBlockSize]byte)(dst[i*q5KBlockSize:])
		for j := 4; j < q5KBlockSize; j++ {
			b[j] = byte(rng.Uint32())
		}
		d := scale / 300 * (0.75 + 0.5*rng.Float32())
		putFP16(b[0:], d)
		putFP16(b[2:], 15.5*d*(0.75+0.5*rng.Float32()))
	}
}
