// Package quant holds the CPU kernels for ggml's weight and activation
// formats: dequantization, llama.cpp-compatible activation quantization
// (Q8_0, Q8_K, F16, BF16) and dot products of a weight row with a quantized
// activation row, plus valid random blocks for synthetic models.
package quant

import (
	"fmt"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// Kernel is the set of CPU routines for one weight type.
type Kernel struct {
	// VecDotType is the format activations are converted to before a dot
	// product with a row of this type, as llama.cpp's CPU backend does
	// (Q8_0 for Q8_0/Q4_0, Q8_K for K and IQ types, F16 for F16, ...).
	VecDotType ggml.Type
	// Dequantize expands whole blocks of src into dst (len(dst) elements).
	Dequantize func(src []byte, dst []float32)
	// Dot returns the dot product of n elements of a weight row w with an
	// activation row a already in VecDotType.
	Dot func(n int, w, a []byte) float32
	// Random fills dst (a whole number of blocks) with valid random blocks
	// whose dequantized values are of magnitude about scale.
	Random func(dst []byte, rng *rand.Rand, scale float32)
	// Quantize, if not nil, converts x (a whole number of blocks) to this
	// type as ggml's reference quantizer (quantize_row_*_ref) does.
	Quantize func(x []float32, dst []byte)
}

// kernels is filled by the init functions of this package's files and
// never changed afterwards.
var kernels = map[ggml.Type]*Kernel{}

func register(t ggml.Type, k Kernel) {
	if _, dup := kernels[t]; dup {
		panic(fmt.Sprintf("quant: kernel for %s registered twice", t))
	}
	kernels[t] = &k
}

// For returns the kernels for weight type t.
func For(t ggml.Type) (*Kernel, error) {
	k, ok := kernels[t]
	if !ok {
		return nil, fmt.Errorf("weight type %s is not supported by the CPU backend", t)
	}
	return k, nil
}

// Supported reports whether the CPU backend has kernels for t.
func Supported(t ggml.Type) bool { _, ok := kernels[t]; return ok }
