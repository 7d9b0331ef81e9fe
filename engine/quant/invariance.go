package quant

import (
	"math"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// InvariantCols is the largest number of activation rows for which every
// Gemm gives each row bit for bit what a one-row Gemm gives it. Some tiled
// kernels sum in another order than their one-row kernel (the IQ "quads"
// tiles differ from the one-column kernels), so a row's logits
// would depend on the batch it was computed in: a speculative verify of k
// rows must give each row what a one-row decode would, or greedy
// speculation changes the text. (The AVX-512 VNNI Q8_0/Q4_0 row kernel
// keeps one accumulator like its tiles, so those types are invariant at
// every batch size.) Batches of up to InvariantCols rows of
// such kernels therefore run column by column through the one-row kernel;
// larger ones (prompt prefill) keep the tiles' weight reuse. Full
// invariance for every batch size would cost the tiles' reuse in prefill.
const InvariantCols = 16

// ensureInvariant checks, on random blocks, that k's Gemm gives each of
// several activation rows what it gives that row alone, and if not wraps
// it so that batches of up to InvariantCols rows go column by column.
func (k *Kernel) ensureInvariant(t ggml.Type) {
	if k.columnInvariant(t) {
		return
	}
	tiled := k.Gemm
	k.Gemm = func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
		if cols <= 1 || cols > InvariantCols {
			tiled(n, w, wStride, rows, a, aStride, cols, out, outStride)
			return
		}
		for c := 0; c < cols; c++ {
			tiled(n, w, wStride, rows, a[c*aStride:], aStride, 1, out[c*outStride:], outStride)
		}
	}
}

// columnInvariant reports whether k.Gemm of 1..InvariantCols activation
// rows gives each row bit for bit its one-row result.
func (k *Kernel) columnInvariant(t ggml.Type) bool {
	const n, rows = 512, 13
	rb, err := t.RowSize(n)
	if err != nil || k.Random == nil {
		return true
	}
	rng := rand.New(rand.NewPCG(0x5eed, uint64(t)))
	w := make([]byte, int(rb)*rows)
	k.Random(w, rng, 1)
	as := ActivationSize(k.VecDotType, n)
	a := make([]byte, as*InvariantCols)
	x := make([]float32, n)
	for c := 0; c < InvariantCols; c++ {
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		QuantizeActivations(k.VecDotType, x, a[c*as:(c+1)*as])
	}
	one := make([]float32, rows*InvariantCols)
	for c := 0; c < InvariantCols; c++ {
		k.Gemm(n, w, int(rb), rows, a[c*as:], as, 1, one[c*rows:], rows)
	}
	out := make([]float32, rows*InvariantCols)
	for cols := 2; cols <= InvariantCols; cols++ {
		k.Gemm(n, w, int(rb), rows, a, as, cols, out, rows)
		for i := 0; i < cols*rows; i++ {
			if math.Float32bits(out[i]) != math.Float32bits(one[i]) {
				return false
			}
		}
	}
	return true
}
