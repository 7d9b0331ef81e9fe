package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// The other legacy 32-value formats (ggml-common.h):
//
//	Q4_1: d fp16, m fp16, qs [16]byte (20 bytes); value = d*q + m, q in 0..15
//	Q5_0: d fp16, qh [4]byte, qs [16]byte (22 bytes); value = d*(q-16)
//	Q5_1: d fp16, m fp16, qh [4]byte, qs [16]byte (24 bytes); value = d*q + m
//
// Byte j of qs holds the low 4 bits of value j in its low nibble and of
// value j+16 in its high nibble; bit j of the little-endian uint32 qh is the
// fifth bit of value j. Q5_0 pairs with Q8_0 activations, Q4_1 and Q5_1
// with Q8_1 (whose s carries the minimum's share), as in ggml's CPU backend.
const (
	qk4_1         = 32
	q4_1BlockSize = 20
	q5_0BlockSize = 22
	q5_1BlockSize = 24
)

func init() {
	register(ggml.Q4_1, Kernel{
		VecDotType: ggml.Q8_1,
		Dequantize: dequantizeQ4_1,
		Dot:        dotQ4_1Q8_1,
		Random:     randomQ4_1,
		Quantize:   quantizeQ4_1Ref,
	})
	register(ggml.Q5_0, Kernel{
		VecDotType: ggml.Q8_0,
		Dequantize: dequantizeQ5_0,
		Dot:        dotQ5_0Q8_0,
		Random:     randomQ5_0,
		Quantize:   quantizeQ5_0Ref,
	})
	register(ggml.Q5_1, Kernel{
		VecDotType: ggml.Q8_1,
		Dequantize: dequantizeQ5_1,
		Dot:        dotQ5_1Q8_1,
		Random:     randomQ5_1,
		Quantize:   quantizeQ5_1Ref,
	})
}

// minMax returns the smallest and largest of x as quantize_row_q4_1_ref
// finds them (starting from ±FLT_MAX).
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// quantizeQ4_1Ref is ggml's quantize_row_q4_1_ref.
func quantizeQ4_1Ref(x []float32, dst []byte) {
	nb := len(x) / qk4_1
	_ = dst[nb*q4_1BlockSize-1]
	for i := 0; i < nb; i++ {
		xb := (*[qk4_1]float32)(x[i*qk4_1:])
		yb := (*[q4_1BlockSize]byte)(dst[i*q4_1BlockSize:])
		lo, hi := minMax(xb[:])
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putFP16(yb[:], d)
		putFP16(yb[2:], lo)
		for j := 0; j < 16; j++ {
			x0 := float32(xb[j]-lo) * id
			x1 := float32(xb[16+j]-lo) * id
			q0 := min(15, int8(float32(x0+0.5)))
			q1 := min(15, int8(float32(x1+0.5)))
			yb[4+j] = byte(q0) | byte(q1)<<4
		}
	}
}

// quantizeQ5_0Ref is ggml's quantize_row_q5_0_ref.
func quantizeQ5_0Ref(x []float32, dst []byte) {
	nb := len(x) / qk4_1
	_ = dst[nb*q5_0BlockSize-1]
	for i := 0; i < nb; i++ {
		xb := (*[qk4_1]float32)(x[i*qk4_1:])
		yb := (*[q5_0BlockSize]byte)(dst[i*q5_0BlockSize:])
		var amax, mx float32
		for _, v := range xb {
			if ax := abs32(v); amax < ax {
				amax, mx = ax, v
			}
		}
		d := mx / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putFP16(yb[:], d)
		var qh uint32
		for j := 0; j < 16; j++ {
			q0 := uint8(min(31, int8(float32(float32(xb[j]*id)+16.5))))
			q1 := uint8(min(31, int8(float32(float32(xb[16+j]*id)+16.5))))
			yb[6+j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4) << j
			qh |= uint32(q1>>4) << (j + 16)
		}
		binary.LittleEndian.PutUint32(yb[2:], qh)
	}
}

// quantizeQ5_1Ref is ggml's quantize_row_q5_1_ref.
func quantizeQ5_1Ref(x []float32, dst []byte) {
	nb := len(x) / qk4_1
	_ = dst[nb*q5_1BlockSize-1]
	for i := 0; i < nb; i++ {
		xb := (*[qk4_1]float32)(x[i*qk4_1:])
		yb := (*[q5_1BlockSize]byte)(dst[i*q5_1BlockSize:])
		lo, hi := minMax(xb[:])
		d := (hi - lo) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putFP16(yb[:], d)
		putFP16(yb[2:], lo)
		var qh uint32
		for j := 0; j < 16; j++ {
			// (uint8_t)(x + 0.5f) with x in [0, 31]: truncation.
			q0 := uint8(float32(float32(xb[j]-lo)*id) + 0.5)
			q1 := uint8(float32(float32(xb[16+j]-lo)*id) + 0.5)
			yb[8+j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1) << j
			qh |= uint32(q1>>4&1) << (j + 16)
		}
		binary.LittleEndian.PutUint32(yb[4:], qh)
	}
}

func dequantizeQ4_1(src []byte, dst []float32) {
	nb := len(dst) / qk4_1
	for i := 0; i < nb; i++ {
		b := (*[q4_1BlockSize]byte)(src[i*q4_1BlockSize:])
		y := (*[qk4_1]float32)(dst[i*qk4_1:])
		d, m := fp16At(b[:]), fp16At(b[2:])
		for j := 0; j < 16; j++ {
			q := b[4+j]
			y[j] = float32(float32(q&0xf)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

// q5Values returns the 5-bit quants of a Q5_0/Q5_1 block from its qh and qs.
func q5Values(qh uint32, qs *[16]byte, j int) (int32, int32) {
	h0 := int32(qh>>j&1) << 4
	h1 := int32(qh>>(j+16)&1) << 4
	return int32(qs[j]&0xf) | h0, int32(qs[j]>>4) | h1
}

func dequantizeQ5_0(src []byte, dst []float32) {
	nb := len(dst) / qk4_1
	for i := 0; i < nb; i++ {
		b := (*[q5_0BlockSize]byte)(src[i*q5_0BlockSize:])
		y := (*[qk4_1]float32)(dst[i*qk4_1:])
		d := fp16At(b[:])
		qh := binary.LittleEndian.Uint32(b[2:])
		qs := (*[16]byte)(b[6:])
		for j := 0; j < 16; j++ {
			v0, v1 := q5Values(qh, qs, j)
			y[j] = float32(v0-16) * d
			y[j+16] = float32(v1-16) * d
		}
	}
}

func dequantizeQ5_1(src []byte, dst []float32) {
	nb := len(dst) / qk4_1
	for i := 0; i < nb; i++ {
		b := (*[q5_1BlockSize]byte)(src[i*q5_1BlockSize:])
		y := (*[qk4_1]float32)(dst[i*qk4_1:])
		d, m := fp16At(b[:]), fp16At(b[2:])
		qh := binary.LittleEndian.Uint32(b[4:])
		qs := (*[16]byte)(b[8:])
		for j := 0; j < 16; j++ {
			v0, v1 := q5Values(qh, qs, j)
			y[j] = float32(float32(v0)*d) + m
			y[j+16] = float32(float32(v1)*d) + m
		}
	}
}

// dotQ4_1Q8_1 is ggml_vec_dot_q4_1_q8_1 with the float steps of its x86
// SIMD version, block by block: sumf += sumi*(dx*dy) and, apart,
// summs += m*s; the result is sumf + summs.
func dotQ4_1Q8_1(n int, w, a []byte) float32 {
	sumf, summs := dotQ4_1Blocks(w, a, 0, n/qk4_1, 0, 0)
	return sumf + summs
}

// dotQ4_1Blocks continues the sums of dotQ4_1Q8_1 over blocks i..nb-1.
func dotQ4_1Blocks(w, a []byte, i, nb int, sumf, summs float32) (float32, float32) {
	for ; i < nb; i++ {
		x := (*[q4_1BlockSize]byte)(w[i*q4_1BlockSize:])
		y := (*[q8_1BlockSize]byte)(a[i*q8_1BlockSize:])
		qs := (*[16]byte)(x[4:])
		var sumi int32
		for j := 0; j < 16; j++ {
			sumi += int32(qs[j]&0xf)*int32(int8(y[4+j])) + int32(qs[j]>>4)*int32(int8(y[20+j]))
		}
		sumf += float32(float32(sumi) * float32(fp16At(x[:])*fp16At(y[:])))
		summs += float32(fp16At(x[2:]) * fp16At(y[2:]))
	}
	return sumf, summs
}

// dotQ5_0Q8_0 is ggml_vec_dot_q5_0_q8_0: exact integer block sums, then
// sumf += sumi*(dx*dy), block by block.
func dotQ5_0Q8_0(n int, w, a []byte) float32 { return dotQ5_0Blocks(w, a, 0, n/qk4_1, 0) }

// dotQ5_0Blocks continues the sum of dotQ5_0Q8_0 over blocks i..nb-1.
func dotQ5_0Blocks(w, a []byte, i, nb int, sumf float32) float32 {
	for ; i < nb; i++ {
		x := (*[q5_0BlockSize]byte)(w[i*q5_0BlockSize:])
		y := (*[q8_0BlockSize]byte)(a[i*q8_0BlockSize:])
		qh := binary.LittleEndian.Uint32(x[2:])
		qs := (*[16]byte)(x[6:])
		var sumi int32
		for j := 0; j < 16; j++ {
			v0, v1 := q5Values(qh, qs, j)
			sumi += (v0-16)*int32(int8(y[2+j])) + (v1-16)*int32(int8(y[18+j]))
		}
		sumf += float32(float32(sumi) * float32(fp16At(x[:])*fp16At(y[:])))
	}
	return sumf
}

// dotQ5_1Q8_1 is ggml_vec_dot_q5_1_q8_1 with the float steps of
// dotQ4_1Q8_1.
func dotQ5_1Q8_1(n int, w, a []byte) float32 {
	sumf, summs := dotQ5_1Blocks(w, a, 0, n/qk4_1, 0, 0)
	return sumf + summs
}

// dotQ5_1Blocks continues the sums of dotQ5_1Q8_1 over blocks i..nb-1.
func dotQ5_1Blocks(w, a []byte, i, nb int, sumf, summs float32) (float32, float32) {
	for ; i < nb; i++ {
		x := (*[q5_1BlockSize]byte)(w[i*q5_1BlockSize:])
		y := (*[q8_1BlockSize]byte)(a[i*q8_1BlockSize:])
		qh := binary.LittleEndian.Uint32(x[4:])
		qs := (*[16]byte)(x[8:])
		var sumi int32
		for j := 0; j < 16; j++ {
			v0, v1 := q5Values(qh, qs, j)
			sumi += v0*int32(int8(y[4+j])) + v1*int32(int8(y[20+j]))
		}
		sumf += float32(float32(sumi) * float32(fp16At(x[:])*fp16At(y[:])))
		summs += float32(fp16At(x[2:]) * fp16At(y[2:]))
	}
	return sumf, summs
}

// randomQ4_1 fills whole blocks with uniform nibbles, d ≈ scale/3.75 (mean
// |q-7.5| is 4) varied by ±25% per block and m ≈ -7.5*d, so values are
// centred on zero.
func randomQ4_1(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+q4_1BlockSize <= len(dst); i += q4_1BlockSize {
		b := dst[i : i+q4_1BlockSize]
		d := scale / 4 * (0.75 + 0.5*rng.Float32())
		putFP16(b, d)
		putFP16(b[2:], -7.5*d*(0.9+0.2*rng.Float32()))
		for j := 4; j < q4_1BlockSize; j++ {
			b[j] = byte(rng.Uint32())
		}
	}
}

// randomQ5_0 fills whole blocks with uniform 5-bit quants and d ≈ scale/8
// (mean |q-16| is 8), varied by ±25% per block.
func randomQ5_0(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+q5_0BlockSize <= len(dst); i += q5_0BlockSize {
		b := dst[i : i+q5_0BlockSize]
		putFP16(b, scale/8*(0.75+0.5*rng.Float32()))
		for j := 2; j < q5_0BlockSize; j++ {
			b[j] = byte(rng.Uint32())
		}
	}
}

// randomQ5_1 fills whole blocks with uniform 5-bit quants, d ≈ scale/8 and
// m ≈ -15.5*d.
func randomQ5_1(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+q5_1BlockSize <= len(dst); i += q5_1BlockSize {
		b := dst[i : i+q5_1BlockSize]
		d := scale / 8 * (0.75 + 0.5*rng.Float32())
		putFP16(b, d)
		putFP16(b[2:], -15.5*d*(0.9+0.2*rng.Float32()))
		for j := 4; j < q5_1BlockSize; j++ {
			b[j] = byte(rng.Uint32())
		}
	}
}
