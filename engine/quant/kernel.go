// Package quant holds the CPU kernels for ggml's weight and activation
// formats: dequantization, llama.cpp-compatible activation quantization
// (Q8_0, Q8_K, F16, BF16) and dot products of a weight row with a quantized
// activation row, plus valid random blocks for synthetic models.
package quant

import (
	"fmt"
	"math/rand/v2"
	"sync"

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
	// Gemm computes a tile of a matrix product: for r < rows and c < cols,
	// out[c*outStride+r] = Dot(n, w[r*wStride:], a[c*aStride:]). It is
	// never nil: types without a tiled kernel get a loop over Dot. A SIMD
	// Gemm may sum in another float order than Dot; its results stay within
	// the same bound of the exact product as Dot's.
	Gemm func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
	// Tiled is the tiled Gemm installed for this CPU (the loop over Dot if
	// none); Gemm is Tiled itself when Tiled gives every activation row
	// what it gives that row alone, else a wrapper that keeps small
	// batches column-invariant (see InvariantCols).
	Tiled func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
	// GoDot is the portable Go dot product: the reference every SIMD Dot is
	// tested against. Dot is GoDot unless a SIMD version was installed.
	GoDot func(n int, w, a []byte) float32
	// SIMD names the instruction set of Dot ("" for portable Go).
	SIMD string
}

// kernels is filled by the init functions of this package's files and
// never changed afterwards.
var kernels = map[ggml.Type]*Kernel{}

func register(t ggml.Type, k Kernel) {
	if _, dup := kernels[t]; dup {
		panic(fmt.Sprintf("quant: kernel for %s registered twice", t))
	}
	k.GoDot = k.Dot
	kp := &k
	kp.Gemm = kp.loopGemm
	kernels[t] = kp
}

// loopGemm is Gemm as a loop over Dot (whichever Dot is installed), weight
// row by weight row so each row is read once for all columns. Rows and
// activation rows are passed from their start to the end of their slice:
// Dot takes the n values it needs and panics if they are not there, so the
// last row, like the tiled Gemms', need not be a whole stride long.
func (k *Kernel) loopGemm(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	dot := k.Dot
	for r := 0; r < rows; r++ {
		row := w[r*wStride:]
		for c := 0; c < cols; c++ {
			out[c*outStride+r] = dot(n, row, a[c*aStride:])
		}
	}
}

// simdKernel is an assembly dot product for one weight type, and
// optionally a tiled matrix product (see Kernel.Gemm).
type simdKernel struct {
	name string // instruction set, e.g. "avx2"
	dot  func(n int, w, a []byte) float32
}

// simdGemm is an assembly Gemm for one weight type.
type simdGemm struct {
	name string
	gemm func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
}

// simdDots is filled by the init functions of the architecture files
// (built unless the purego tag is set) with the dot products this CPU can
// run; install moves them into the kernels on first use. Never changed after.
var (
	simdDots  = map[ggml.Type]simdKernel{}
	simdGemms = map[ggml.Type]simdGemm{}
	install   sync.Once
)

func installSIMD() {
	for t, s := range simdDots {
		if k, ok := kernels[t]; ok {
			k.Dot, k.SIMD = s.dot, s.name
		}
	}
	for t, g := range simdGemms {
		if k, ok := kernels[t]; ok {
			k.Gemm = g.gemm
		}
	}
	for t, k := range kernels {
		k.Tiled = k.Gemm
		k.ensureInvariant(t)
	}
}

// For returns the kernels for weight type t.
func For(t ggml.Type) (*Kernel, error) {
	install.Do(installSIMD)
	k, ok := kernels[t]
	if !ok {
		return nil, fmt.Errorf("weight type %s is not supported by the CPU backend", t)
	}
	return k, nil
}

// Supported reports whether the CPU backend has kernels for t.
func Supported(t ggml.Type) bool { _, ok := kernels[t]; return ok }
