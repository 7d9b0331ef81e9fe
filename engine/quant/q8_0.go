package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// Q8_0: blocks of 32 values, d fp16 then qs [32]int8 (34 bytes); value = d*q.
const (
	qk8_0         = 32
	q8_0BlockSize = 34
)

func init() {
	register(ggml.Q8_0, Kernel{
		VecDotType: ggml.Q8_0,
		Dequantize: dequantizeQ8_0,
		Dot:        dotQ8_0Q8_0,
		Random:     randomQ8_0,
		Quantize:   quantizeQ8_0Ref,
	})
}

func fp16At(b []byte) float32 { return FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

func putFP16(b []byte, f float32) {
	h := Float32ToFP16(f)
	b[0], b[1] = byte(h), byte(h>>8)
}

// QuantizeQ8_0 converts activations x (a multiple of 32 values) to Q8_0 as
// llama.cpp's x86 CPU backend does (quantize_row_q8_0 in
// ggml-cpu/arch/x86/quants.c, the AVX/AVX2/AVX-512 builds): d = amax/127
// stored as fp16, quants round(x * (127/amax)) with round-half-to-even
// (_mm256_round_ps). This differs from quantize_row_q8_0_ref, which
// multiplies by 1/d and rounds halves away from zero (roundf); see
// the Q8_0 kernel's Quantize for that one.
func QuantizeQ8_0(x []float32, dst []byte) {
	if quantizeQ8_0Arch != nil {
		quantizeQ8_0Arch(x, dst)
		return
	}
	quantizeQ8_0Go(x, dst)
}

// quantizeQ8_0Arch, if not nil, is an assembly QuantizeQ8_0 producing the
// same bytes as quantizeQ8_0Go. It is set at most once, by the init
// function of an architecture file, and never changed afterwards.
var quantizeQ8_0Arch func(x []float32, dst []byte)

// quantizeQ8_0Go is the portable QuantizeQ8_0: the reference the assembly
// versions are tested against.
func quantizeQ8_0Go(x []float32, dst []byte) {
	nb := len(x) / qk8_0
	_ = dst[nb*q8_0BlockSize-1]
	for i := 0; i < nb; i++ {
		xb := (*[qk8_0]float32)(x[i*qk8_0:])
		yb := (*[q8_0BlockSize]byte)(dst[i*q8_0BlockSize:])
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		putFP16(yb[:], amax/127)
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range xb {
			// |v*id| <= 127, so nearestInt is round-half-even like _mm256_round_ps.
			yb[2+j] = byte(int8(nearestInt(mul(v, id))))
		}
	}
}

// quantizeQ8_0Ref is ggml's quantize_row_q8_0_ref (used by llama-quantize
// for Q8_0 weights).
func quantizeQ8_0Ref(x []float32, dst []byte) {
	nb := len(x) / qk8_0
	_ = dst[nb*q8_0BlockSize-1]
	for i := 0; i < nb; i++ {
		xb := (*[qk8_0]float32)(x[i*qk8_0:])
		yb := (*[q8_0BlockSize]byte)(dst[i*q8_0BlockSize:])
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putFP16(yb[:], d)
		for j, v := range xb {
			yb[2+j] = byte(int8(math.Round(float64(v * id))))
		}
	}
}

func dequantizeQ8_0(src []byte, dst []float32) {
	nb := len(dst) / qk8_0
	for i := 0; i < nb; i++ {
		b := (*[q8_0BlockSize]byte)(src[i*q8_0BlockSize:])
		y := (*[qk8_0]float32)(dst[i*qk8_0:])
		d := fp16At(b[:])
		for j := range y {
			y[j] = float32(int8(b[2+j])) * d
		}
	}
}

// dotQ8_0Q8_0 is ggml_vec_dot_q8_0_q8_0: exact integer block sums, then
// sumf += sumi*(dx*dy) in float32, block by block.
func dotQ8_0Q8_0(n int, w, a []byte) float32 {
	nb := n / qk8_0
	var sumf float32
	for i := 0; i < nb; i++ {
		x := (*[q8_0BlockSize]byte)(w[i*q8_0BlockSize:])
		y := (*[q8_0BlockSize]byte)(a[i*q8_0BlockSize:])
		sumi := dotQ8_0Block(x, y)
		sumf += float32(float32(sumi) * float32(fp16At(x[:])*fp16At(y[:])))
	}
	return sumf
}

// dotQ8_0Block is Σ qx*qy over one block.
func dotQ8_0Block(x, y *[q8_0BlockSize]byte) int32 {
	var s0, s1, s2, s3 int32
	for j := 2; j < q8_0BlockSize; j += 4 {
		s0 += int32(int8(x[j])) * int32(int8(y[j]))
		s1 += int32(int8(x[j+1])) * int32(int8(y[j+1]))
		s2 += int32(int8(x[j+2])) * int32(int8(y[j+2]))
		s3 += int32(int8(x[j+3])) * int32(int8(y[j+3]))
	}
	return s0 + s1 + s2 + s3
}

// randomQ8_0 fills whole blocks with uniform quants in [-127, 127] and
// d ≈ scale/64 (mean |q| is 64), varied by ±25% per block.
func randomQ8_0(dst []byte, rng *rand.Rand, scale float32) {
	nb := len(dst) / q8_0BlockSize
	for i := 0; i < nb; i++ {
		b := (*[q8_0BlockSize]byte)(dst[i*q8_0BlockSize:])
		putFP16(b[:], scale/64*(0.75+0.5*rng.Float32()))
		for j := 2; j < q8_0BlockSize; j++ {
			b[j] = byte(int8(rng.IntN(255) - 127))
		}
	}
}
