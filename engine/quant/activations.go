package quant

import (
	"fmt"

	"github.com/strata-llm/strata/engine/ggml"
)

// ActivationSize returns the bytes of n activation values converted to t,
// one of the VecDotTypes (F32, F16, BF16, Q8_0, Q8_1, Q8_K). n must be a whole
// number of t's blocks. It panics for other types: the type comes from a
// Kernel, never from outside input.
func ActivationSize(t ggml.Type, n int) int {
	switch t {
	case ggml.F32:
		return 4 * n
	case ggml.F16, ggml.BF16:
		return 2 * n
	case ggml.Q8_0:
		return n / qk8_0 * q8_0BlockSize
	case ggml.Q8_1:
		return n / qk8_1 * q8_1BlockSize
	case ggml.Q8_K:
		return n / qkK * q8KBlockSize
	}
	panic(fmt.Sprintf("quant: %s is not an activation type", t))
}

// QuantizeActivations converts x to t (a Kernel's VecDotType) in dst, which
// must hold ActivationSize(t, len(x)) bytes, as llama.cpp's CPU backend does
// before a matrix-vector product (type_traits_cpu[t].from_float): F32 is
// copied, F16 and BF16 are rounded to nearest even, Q8_0 is QuantizeQ8_0
// (the x86 SIMD variant), Q8_1 is QuantizeQ8_1 and Q8_K is QuantizeQ8K. len(x) must be a whole
// number of t's blocks.
func QuantizeActivations(t ggml.Type, x []float32, dst []byte) {
	switch t {
	case ggml.F32:
		quantizeF32(x, dst)
	case ggml.F16:
		quantizeF16(x, dst)
	case ggml.BF16:
		quantizeBF16(x, dst)
	case ggml.Q8_0:
		QuantizeQ8_0(x, dst)
	case ggml.Q8_1:
		QuantizeQ8_1(x, dst)
	case ggml.Q8_K:
		QuantizeQ8K(x, dst)
	default:
		panic(fmt.Sprintf("quant: %s is not an activation type", t))
	}
}

// DequantizeActivations expands n activation values of type t (as written
// by QuantizeActivations) into dst: the values a dot product actually sees.
func DequantizeActivations(t ggml.Type, src []byte, dst []float32) {
	switch t {
	case ggml.F32:
		dequantizeF32(src, dst)
	case ggml.F16:
		dequantizeF16(src, dst)
	case ggml.BF16:
		dequantizeBF16(src, dst)
	case ggml.Q8_0:
		dequantizeQ8_0(src, dst)
	case ggml.Q8_1:
		dequantizeQ8_1(src, dst)
	case ggml.Q8_K:
		dequantizeQ8K(src, dst)
	default:
		panic(fmt.Sprintf("quant: %s is not an activation type", t))
	}
}
