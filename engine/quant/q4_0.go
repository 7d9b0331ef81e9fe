package quant

import (
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// Q4_0: blocks of 32 values, d fp16 then qs [16]byte (18 bytes). Byte j
// holds value j in its low nibble and value j+16 in its high nibble;
// value = d*(q-8).
const (
	qk4_0         = 32
	q4_0BlockSize = 18
)

func init() {
	register(ggml.Q4_0, Kernel{
		VecDotType: ggml.Q8_0,
		Dequantize: dequantizeQ4_0,
		Dot:        dotQ4_0Q8_0,
		Random:     randomQ4_0,
		Quantize:   quantizeQ4_0Ref,
	})
}

// quantizeQ4_0Ref is ggml's quantize_row_q4_0_ref.
func quantizeQ4_0Ref(x []float32, dst []byte) {
	nb := len(x) / qk4_0
	_ = dst[nb*q4_0BlockSize-1]
	for i := 0; i < nb; i++ {
		xb := (*[qk4_0]float32)(x[i*qk4_0:])
		yb := (*[q4_0BlockSize]byte)(dst[i*q4_0BlockSize:])
		var amax, max float32
		for _, v := range xb {
			if ax := abs32(v); amax < ax {
				amax, max = ax, v
			}
		}
		d := max / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putFP16(yb[:], d)
		for j := 0; j < qk4_0/2; j++ {
			// (int8_t)(x + 8.5f) truncates toward zero; x*id is in
			// [-8, 8] so x+8.5 is positive and fits.
			xi0 := min(15, int8(float32(xb[j]*id)+8.5))
			xi1 := min(15, int8(float32(xb[qk4_0/2+j]*id)+8.5))
			yb[2+j] = byte(xi0) | byte(xi1)<<4
		}
	}
}

func dequantizeQ4_0(src []byte, dst []float32) {
	nb := len(dst) / qk4_0
	for i := 0; i < nb; i++ {
		b := (*[q4_0BlockSize]byte)(src[i*q4_0BlockSize:])
		y := (*[qk4_0]float32)(dst[i*qk4_0:])
		d := fp16At(b[:])
		for j := 0; j < qk4_0/2; j++ {
			q := b[2+j]
			y[j] = float32(int32(q&0xf)-8) * d
			y[j+qk4_0/2] = float32(int32(q>>4)-8) * d
		}
	}
}

// dotQ4_0Q8_0 is ggml_vec_dot_q4_0_q8_0: exact integer block sums, then
// sumf += sumi*dx*dy in float32, block by block.
func dotQ4_0Q8_0(n int, w, a []byte) float32 {
	nb := n / qk4_0
	var sumf float32
	for i := 0; i < nb; i++ {
		x := (*[q4_0BlockSize]byte)(w[i*q4_0BlockSize:])
		y := (*[q8_0BlockSize]byte)(a[i*q8_0BlockSize:])
		sumi := dotQ4_0Block(x, y)
		sumf += float32(float32(float32(sumi)*fp16At(x[:])) * fp16At(y[:]))
	}
	return sumf
}

// dotQ4_0Block is Σ (q-8)*y over one block, computed as Σ q*y - 8*Σ y.
func dotQ4_0Block(x *[q4_0BlockSize]byte, y *[q8_0BlockSize]byte) int32 {
	qs := (*[16]byte)(x[2:])
	lo := (*[16]byte)(y[2:])
	hi := (*[16]byte)(y[18:])
	var s0, s1, sy int32
	for j := 0; j < 16; j += 2 {
		q0, q1 := uint32(qs[j]), uint32(qs[j+1])
		l0, h0 := int32(int8(lo[j])), int32(int8(hi[j]))
		l1, h1 := int32(int8(lo[j+1])), int32(int8(hi[j+1]))
		s0 += int32(q0&0xf)*l0 + int32(q0>>4)*h0
		s1 += int32(q1&0xf)*l1 + int32(q1>>4)*h1
		sy += l0 + h0 + l1 + h1
	}
	return s0 + s1 - 8*sy
}

// randomQ4_0 fills whole blocks with uniform nibbles and d ≈ scale/4 (mean
// |q-8| is about 4), varied by ±25% per block.
func randomQ4_0(dst []byte, rng *rand.Rand, scale float32) {
	nb := len(dst) / q4_0BlockSize
	for i := 0; i < nb; i++ {
		b := (*[q4_0BlockSize]byte)(dst[i*q4_0BlockSize:])
		putFP16(b[:], scale/4*(0.75+0.5*rng.Float32()))
		for j := 2; j < q4_0BlockSize; j++ {
			b[j] = byte(rng.Uint32())
		}
	}
}
