package quant

// Q8_1: blocks of 32 values, d fp16, s fp16 (d times the sum of the quants)
// then qs [32]int8 (36 bytes); value = d*q. It is the activation format of
// Q4_1 and Q5_1 weights, whose dot products use s for the weights' minimum.
const (
	qk8_1         = 32
	q8_1BlockSize = 36
)

// QuantizeQ8_1 converts activations x (a multiple of 32 values) to Q8_1 as
// llama.cpp's x86 CPU backend does (quantize_row_q8_1 in
// ggml-cpu/arch/x86/quants.c): the quants and d exactly as QuantizeQ8_0,
// and s = fp16(d * Σq) with d before its fp16 rounding.
func QuantizeQ8_1(x []float32, dst []byte) {
	nb := len(x) / qk8_1
	_ = dst[nb*q8_1BlockSize-1]
	for i := 0; i < nb; i++ {
		xb := (*[qk8_1]float32)(x[i*qk8_1:])
		yb := (*[q8_1BlockSize]byte)(dst[i*q8_1BlockSize:])
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		putFP16(yb[:], d)
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		var sum int32
		for j, v := range xb {
			q := nearestInt(mul(v, id))
			sum += q
			yb[4+j] = byte(int8(q))
		}
		putFP16(yb[2:], float32(d*float32(sum)))
	}
}

func dequantizeQ8_1(src []byte, dst []float32) {
	nb := len(dst) / qk8_1
	for i := 0; i < nb; i++ {
		b := (*[q8_1BlockSize]byte)(src[i*q8_1BlockSize:])
		y := (*[qk8_1]float32)(dst[i*qk8_1:])
		d := fp16At(b[:])
		for j := range y {
			y[j] = float32(int8(b[4+j])) * d
		}
	}
}
