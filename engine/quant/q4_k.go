package quant

import (
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// Q4_K: super-blocks of 256 values (144 bytes): d fp16, dmin fp16,
// scales [12]byte (8 packed 6-bit scales and 8 6-bit mins), qs [128]byte.
// Each 64 values use 32 bytes of qs: low nibbles for the first 32 (scale
// 2j), high nibbles for the next 32 (scale 2j+1). Value = d*sc*q - dmin*m.
const q4KBlockSize = 144

func init() {
	register(ggml.Q4_K, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeQ4K,
		Dot:        dotQ4KQ8K,
		Random:     randomQ4K,
		Quantize:   quantizeQ4KRef,
	})
}

// scaleMinK4 is ggml's get_scale_min_k4 for j in [0, 8).
func scaleMinK4(j int, q *[12]byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0xf) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}

// scalesMinsK4 unpacks all 8 scales and mins of a Q4_K/Q5_K block.
func scalesMinsK4(q *[12]byte) (sc, m [8]int32) {
	for j := 0; j < 8; j++ {
		s, mm := scaleMinK4(j, q)
		sc[j], m[j] = int32(s), int32(mm)
	}
	return sc, m
}

func dequantizeQ4K(src []byte, dst []float32) {
	nb := len(dst) / qkK
	for i := 0; i < nb; i++ {
		b := (*[q4KBlockSize]byte)(src[i*q4KBlockSize:])
		y := (*[qkK]float32)(dst[i*qkK:])
		d := fp16At(b[0:])
		dmin := fp16At(b[2:])
		scales := (*[12]byte)(b[4:])
		for j := 0; j < 4; j++ {
			q := (*[32]byte)(b[16+32*j:])
			sc, m := scaleMinK4(2*j, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = scaleMinK4(2*j+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			lo := (*[32]float32)(y[64*j:])
			hi := (*[32]float32)(y[64*j+32:])
			for l := 0; l < 32; l++ {
				lo[l] = float32(d1*float32(q[l]&0xf)) - m1
				hi[l] = float32(d2*float32(q[l]>>4)) - m2
			}
		}
	}
}

// dotQ4KQ8K is ggml_vec_dot_q4_K_q8_K with exact integer sums per
// super-block; the float accumulation is sums += d*isum and
// sumf -= dmin*summs per super-block, sumf + sums at the end (ggml's generic
// code splits sums over 8 lanes; the difference is float rounding).
func dotQ4KQ8K(n int, w, a []byte) float32 {
	nb := n / qkK
	var sumf, sums float32
	for i := 0; i < nb; i++ {
		x := (*[q4KBlockSize]byte)(w[i*q4KBlockSize:])
		y := (*[q8KBlockSize]byte)(a[i*q8KBlockSize:])
		isum, summs := q4KBlockSums(x, y)
		yd := q8KD(y)
		d := fp16At(x[0:]) * yd
		dmin := fp16At(x[2:]) * yd
		sums += float32(d * float32(isum))
		sumf -= float32(dmin * float32(summs))
	}
	return sumf + sums
}

// q4KBlockSums returns Σ sc*q*q8 and Σ m*bsum of one super-block.
func q4KBlockSums(x *[q4KBlockSize]byte, y *[q8KBlockSize]byte) (isum, summs int32) {
	sc, m := scalesMinsK4((*[12]byte)(x[4:]))
	for j := 0; j < 16; j++ {
		summs += q8KBsum(y, j) * m[j/2]
	}
	for j := 0; j < 4; j++ {
		q := (*[32]byte)(x[16+32*j:])
		q8lo := (*[32]byte)(y[q8KQsOff+64*j:])
		q8hi := (*[32]byte)(y[q8KQsOff+64*j+32:])
		s0, s1 := dotNibbles32(q, q8lo, q8hi)
		isum += sc[2*j]*s0 + sc[2*j+1]*s1
	}
	return isum, summs
}

// dotNibbles32 returns Σ (q&15)*lo and Σ (q>>4)*hi over 32 bytes.
func dotNibbles32(q, lo, hi *[32]byte) (int32, int32) {
	var s0, s1, s2, s3 int32
	for l := 0; l < 32; l += 2 {
		q0, q1 := int32(q[l]), int32(q[l+1])
		s0 += int32(int8(lo[l])) * (q0 & 0xf)
		s1 += int32(int8(hi[l])) * (q0 >> 4)
		s2 += int32(int8(lo[l+1])) * (q1 & 0xf)
		s3 += int32(int8(hi[l+1])) * (q1 >> 4)
	}
	return s0 + s2, s1 + s3
}

// randomQ4K fills whole super-blocks with random 6-bit scales and mins and
// random nibbles; d ≈ scale/150 and dmin ≈ 7.5*d (±25% each per block)
// center each group roughly around its mean quant.
func randomQ4K(dst []byte, rng *rand.Rand, scale float32) {
	nb := len(dst) / q4KBlockSize
	for i := 0; i < nb; i++ {
		b := (*[q4KBlockSize]byte)(dst[i*q4KBlockSize:])
		for j := 4; j < q4KBlockSize; j++ {
			b[j] = byte(rng.Uint32())
		}
		d := scale / 150 * (0.75 + 0.5*rng.Float32())
		putFP16(b[0:], d)
		putFP16(b[2:], 7.5*d*(0.75+0.5*rng.Float32()))
	}
}
