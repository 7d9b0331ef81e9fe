package quant

import (
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// Q2_K: super-blocks of 256 values (84 bytes): scales [16]byte (low nibble
// scale, high nibble min of each group of 16), qs [64]byte (2-bit quants),
// d fp16, dmin fp16. Value = d*(sc&15)*q - dmin*(sc>>4).
const q2KBlockSize = 84

func init() {
	register(ggml.Q2_K, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeQ2K,
		Dot:        dotQ2KQ8K,
		Random:     randomQ2K,
	})
}

func dequantizeQ2K(src []byte, dst []float32) {
	nb := len(dst) / qkK
	for i := 0; i < nb; i++ {
		b := (*[q2KBlockSize]byte)(src[i*q2KBlockSize:])
		y := (*[qkK]float32)(dst[i*qkK:])
		d := fp16At(b[80:])
		dmin := fp16At(b[82:])
		sc := (*[16]byte)(b[0:])
		out, is := 0, 0
		for n := 0; n < 2; n++ {
			q := (*[32]byte)(b[16+32*n:])
			for shift := 0; shift < 8; shift += 2 {
				for h := 0; h < 2; h++ {
					s := sc[is]
					is++
					dl := d * float32(s&0xf)
					ml := dmin * float32(s>>4)
					for l := 0; l < 16; l++ {
						y[out] = float32(dl*float32((q[16*h+l]>>shift)&3)) - ml
						out++
					}
				}
			}
		}
	}
}

// dotQ2KQ8K is ggml_vec_dot_q2_K_q8_K: exact integer sums per super-block,
// then sumf += dall*isum - dmin*summs in float32.
func dotQ2KQ8K(n int, w, a []byte) float32 {
	nb := n / qkK
	var sumf float32
	for i := 0; i < nb; i++ {
		x := (*[q2KBlockSize]byte)(w[i*q2KBlockSize:])
		y := (*[q8KBlockSize]byte)(a[i*q8KBlockSize:])
		isum, summs := q2KBlockSums(x, y)
		yd := q8KD(y)
		dall := yd * fp16At(x[80:])
		dmin := yd * fp16At(x[82:])
		sumf += float32(dall*float32(isum)) - float32(dmin*float32(summs))
	}
	return sumf
}

// q2KBlockSums returns Σ sc*q*q8 and Σ m*bsum of one super-block.
func q2KBlockSums(x *[q2KBlockSize]byte, y *[q8KBlockSize]byte) (isum, summs int32) {
	sc := (*[16]byte)(x[0:])
	for j := 0; j < 16; j++ {
		summs += q8KBsum(y, j) * int32(sc[j]>>4)
	}
	for k := 0; k < 2; k++ {
		q2 := (*[32]byte)(x[16+32*k:])
		for j := 0; j < 4; j++ {
			q8 := (*[32]byte)(y[q8KQsOff+128*k+32*j:])
			s0, s1 := dotCrumbs32(q2, uint(2*j), q8)
			isum += int32(sc[8*k+2*j]&0xf)*s0 + int32(sc[8*k+2*j+1]&0xf)*s1
		}
	}
	return isum, summs
}

// dotCrumbs32 returns Σ ((q>>shift)&3)*q8 over the two halves of 32 bytes.
func dotCrumbs32(q *[32]byte, shift uint, q8 *[32]byte) (int32, int32) {
	var s0, s1, s2, s3 int32
	for l := 0; l < 16; l += 2 {
		s0 += int32(int8(q8[l])) * (int32(q[l]) >> shift & 3)
		s1 += int32(int8(q8[l+16])) * (int32(q[l+16]) >> shift & 3)
		s2 += int32(int8(q8[l+1])) * (int32(q[l+1]) >> shift & 3)
		s3 += int32(int8(q8[l+17])) * (int32(q[l+17]) >> shift & 3)
	}
	return s0 + s2, s1 + s3
}

// randomQ2K fills whole super-blocks with random 4-bit scales and mins,
// random 2-bit quants, and d = dmin ≈ scale/8 (±25% per block), so values
// spread over about ±scale around a small offset.
func randomQ2K(dst []byte, rng *rand.Rand, scale float32) {
	nb := len(dst) / q2KBlockSize
	for i := 0; i < nb; i++ {
		b := (*[q2KBlockSize]byte)(dst[i*q2KBlockSize:])
		for j := 0; j < 80; j++ {
			b[j] = byte(rng.Uint32())
		}
		putFP16(b[80:], scale/8*(0.75+0.5*rng.Float32()))
		putFP16(b[82:], scale/8*(0.75+0.5*rng.Float32()))
	}
}
