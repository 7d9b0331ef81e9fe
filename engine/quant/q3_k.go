package quant

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// Q3_K: super-blocks of 256 values (110 bytes): hmask [32]byte (high bit of
// each quant), qs [64]byte (low 2 bits), scales [12]byte (16 packed 6-bit
// scales, offset by 32), d fp16. Value = d*(scale-32)*(q - (hbit ? 0 : 4)).
const q3KBlockSize = 110

func init() {
	register(ggml.Q3_K, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeQ3K,
		Dot:        dotQ3KQ8K,
		Random:     randomQ3K,
	})
}

// q3KScales unpacks the 16 6-bit scales of a Q3_K block minus 32, as the
// aux/kmask code of dequantize_row_q3_K does.
func q3KScales(s *[12]byte) [16]int32 {
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	a0 := binary.LittleEndian.Uint32(s[0:])
	a1 := binary.LittleEndian.Uint32(s[4:])
	tmp := binary.LittleEndian.Uint32(s[8:])
	aux := [4]uint32{
		(a0 & kmask2) | (((tmp >> 0) & kmask1) << 4),
		(a1 & kmask2) | (((tmp >> 2) & kmask1) << 4),
		((a0 >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4),
		((a1 >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4),
	}
	var out [16]int32
	for j := range out {
		out[j] = int32(int8(byte(aux[j/4]>>(8*(j%4))))) - 32
	}
	return out
}

func dequantizeQ3K(src []byte, dst []float32) {
	nb := len(dst) / qkK
	for i := 0; i < nb; i++ {
		b := (*[q3KBlockSize]byte)(src[i*q3KBlockSize:])
		y := (*[qkK]float32)(dst[i*qkK:])
		dAll := fp16At(b[108:])
		hm := (*[32]byte)(b[0:])
		sc := q3KScales((*[12]byte)(b[96:]))
		out, is := 0, 0
		for g := 0; g < 8; g++ { // groups of 32: chunk g/4, shift 2*(g%4), hmask bit g
			q := (*[32]byte)(b[32+32*(g/4):])
			shift := uint(2 * (g % 4))
			for h := 0; h < 2; h++ {
				dl := dAll * float32(sc[is])
				is++
				for l := 16 * h; l < 16*h+16; l++ {
					v := int32((q[l]>>shift)&3) - int32((^hm[l]>>g)&1)<<2
					y[out] = dl * float32(v)
					out++
				}
			}
		}
	}
}

// dotQ3KQ8K is ggml_vec_dot_q3_K_q8_K with the integer sum of a super-block
// exact; the float accumulation is sums += d*isum per super-block (ggml's
// generic code splits it over 8 lanes; the difference is float rounding).
func dotQ3KQ8K(n int, w, a []byte) float32 {
	nb := n / qkK
	var sumf float32
	for i := 0; i < nb; i++ {
		x := (*[q3KBlockSize]byte)(w[i*q3KBlockSize:])
		y := (*[q8KBlockSize]byte)(a[i*q8KBlockSize:])
		isum := q3KBlockSum(x, y)
		d := fp16At(x[108:]) * q8KD(y)
		sumf += float32(d * float32(isum))
	}
	return sumf
}

// q3KBlockSum returns Σ (scale-32)*q*q8 of one super-block.
func q3KBlockSum(x *[q3KBlockSize]byte, y *[q8KBlockSize]byte) int32 {
	hm := (*[32]byte)(x[0:])
	sc := q3KScales((*[12]byte)(x[96:]))
	var isum int32
	for g := 0; g < 8; g++ {
		q := (*[32]byte)(x[32+32*(g/4):])
		q8 := (*[32]byte)(y[q8KQsOff+32*g:])
		s0, s1 := dotQ3Group(q, hm, uint(2*(g%4)), uint(g), q8)
		isum += sc[2*g]*s0 + sc[2*g+1]*s1
	}
	return isum
}

// dotQ3Group returns Σ q*q8 over the two halves of a group of 32 values,
// q = ((qs>>shift)&3) - 4 unless hmask bit hbit is set.
func dotQ3Group(q, hm *[32]byte, shift, hbit uint, q8 *[32]byte) (int32, int32) {
	var s0, s1 int32
	for l := 0; l < 16; l++ {
		v0 := int32(q[l])>>shift&3 - (^int32(hm[l])>>hbit&1)<<2
		v1 := int32(q[l+16])>>shift&3 - (^int32(hm[l+16])>>hbit&1)<<2
		s0 += int32(int8(q8[l])) * v0
		s1 += int32(int8(q8[l+16])) * v1
	}
	return s0, s1
}

// randomQ3K fills whole super-blocks with random bits (quants and 6-bit
// scales) and d ≈ scale/32 (mean |scale-32| is 16, mean |q| is 2).
func randomQ3K(dst []byte, rng *rand.Rand, scale float32) {
	nb := len(dst) / q3KBlockSize
	for i := 0; i < nb; i++ {
		b := (*[q3KBlockSize]byte)(dst[i*q3KBlockSize:])
		for j := 0; j < 108; j++ {
			b[j] = byte(rng.Uint32())
		}
		putFP16(b[108:], scale/32*(0.75+0.5*rng.Float32()))
	}
}
