package quant

import (
	"math"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
	"testing"
)

// TestGemmColumnInvariant: for every weight type and every batch of up to
// InvariantCols activation rows, each row's products are bit for bit
// those of the row alone, on random blocks other than the start-up
// check's and rows that are not a multiple of the tiles' 4.
func TestGemmColumnInvariant(t *testing.T) {
	for typ := range kernels {
		k := mustKernel(t, typ)
		const n, rows = 1024, 23
		rb, err := typ.RowSize(n)
		if err != nil {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(typ), 99))
		w := make([]byte, int(rb)*rows)
		k.Random(w, rng, 0.5)
		as := ActivationSize(k.VecDotType, n)
		a := make([]byte, as*InvariantCols)
		x := make([]float32, n)
		for c := 0; c < InvariantCols; c++ {
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * 3
			}
			QuantizeActivations(k.VecDotType, x, a[c*as:(c+1)*as])
		}
		one := make([]float32, rows)
		out := make([]float32, rows*InvariantCols)
		for cols := 1; cols <= InvariantCols; cols++ {
			k.Gemm(n, w, int(rb), rows, a, as, cols, out, rows)
			for c := 0; c < cols; c++ {
				k.Gemm(n, w, int(rb), rows, a[c*as:], as, 1, one, rows)
				for r := range one {
					if math.Float32bits(one[r]) != math.Float32bits(out[c*rows+r]) {
						t.Fatalf("%s: row %d of a batch of %d differs from the row alone (weight row %d)", typ, c, cols, r)
					}
				}
			}
		}
	}
}

// TestQ8TilesMatchTheRowKernel: Q8_0 and Q4_0, whose row kernel sums in
// its tiles' order, give every row of batches larger than InvariantCols
// (tiles of 4×3 and 4×1) the bits of the row alone, so a long prompt's
// logits do not depend on how it is chunked.
func TestQ8TilesMatchTheRowKernel(t *testing.T) {
	for _, typ := range []ggml.Type{ggml.Q8_0, ggml.Q4_0} {
		k := mustKernel(t, typ)
		const n, rows, cols = 512, 9, 29
		rb, _ := typ.RowSize(n)
		rng := rand.New(rand.NewPCG(uint64(typ), 7))
		w := make([]byte, int(rb)*rows)
		k.Random(w, rng, 0.5)
		as := ActivationSize(k.VecDotType, n)
		a := make([]byte, as*cols)
		x := make([]float32, n)
		for c := 0; c < cols; c++ {
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * 3
			}
			QuantizeActivations(k.VecDotType, x, a[c*as:(c+1)*as])
		}
		out, one := make([]float32, rows*cols), make([]float32, rows)
		k.Gemm(n, w, int(rb), rows, a, as, cols, out, rows)
		for c := 0; c < cols; c++ {
			k.Gemm(n, w, int(rb), rows, a[c*as:], as, 1, one, rows)
			for r := range one {
				if math.Float32bits(one[r]) != math.Float32bits(out[c*rows+r]) {
					t.Fatalf("%s: row %d of a batch of %d differs from the row alone (weight row %d)", typ, c, cols, r)
				}
			}
		}
	}
}
