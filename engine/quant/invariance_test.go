package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// gemmCase is random weights of one type and activation rows quantized
// for its kernel.
type gemmCase struct {
	k           *Kernel
	typ         ggml.Type
	n, rows, rb int
	w, a        []byte
	as          int
}

// newGemmCase makes rows weight rows of n values of typ and cols
// activation rows (values of scale 3), from seed; ok is false for a type
// that has no rows of n values.
func newGemmCase(t *testing.T, typ ggml.Type, n, rows, cols int, seed uint64) (gemmCase, bool) {
	k := mustKernel(t, typ)
	rb, err := typ.RowSize(int64(n))
	if err != nil {
		return gemmCase{}, false
	}
	rng := rand.New(rand.NewPCG(uint64(typ), seed))
	g := gemmCase{k: k, typ: typ, n: n, rows: rows, rb: int(rb), w: make([]byte, int(rb)*rows)}
	k.Random(g.w, rng, 0.5)
	g.as = ActivationSize(k.VecDotType, n)
	g.a = make([]byte, g.as*cols)
	x := make([]float32, n)
	for c := 0; c < cols; c++ {
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * 3
		}
		QuantizeActivations(k.VecDotType, x, g.a[c*g.as:(c+1)*g.as])
	}
	return g, true
}

// checkRowsAlone fails unless a Gemm of the first cols activation rows
// gives each row bit for bit its one-row result.
func (g gemmCase) checkRowsAlone(t *testing.T, cols int) {
	t.Helper()
	out, one := make([]float32, g.rows*cols), make([]float32, g.rows)
	g.k.Gemm(g.n, g.w, g.rb, g.rows, g.a, g.as, cols, out, g.rows)
	for c := 0; c < cols; c++ {
		g.k.Gemm(g.n, g.w, g.rb, g.rows, g.a[c*g.as:], g.as, 1, one, g.rows)
		for r := range one {
			if math.Float32bits(one[r]) != math.Float32bits(out[c*g.rows+r]) {
				t.Fatalf("%s: row %d of a batch of %d differs from the row alone (weight row %d)", g.typ, c, cols, r)
			}
		}
	}
}

// TestGemmColumnInvariant: for every weight type and every batch of up to
// InvariantCols activation rows, each row's products are bit for bit
// those of the row alone, on random blocks other than the start-up
// check's and rows that are not a multiple of the tiles' 4.
func TestGemmColumnInvariant(t *testing.T) {
	for typ := range kernels {
		g, ok := newGemmCase(t, typ, 1024, 23, InvariantCols, 99)
		if !ok {
			continue
		}
		for cols := 1; cols <= InvariantCols; cols++ {
			g.checkRowsAlone(t, cols)
		}
	}
}

// TestQ8TilesMatchTheRowKernel: Q8_0 and Q4_0, whose row kernel sums in
// its tiles' order, give every row of batches larger than InvariantCols
// (tiles of 4×3 and 4×1) the bits of the row alone, so a long prompt's
// logits do not depend on how it is chunked.
func TestQ8TilesMatchTheRowKernel(t *testing.T) {
	for _, typ := range []ggml.Type{ggml.Q8_0, ggml.Q4_0} {
		g, _ := newGemmCase(t, typ, 512, 9, 29, 7)
		g.checkRowsAlone(t, 29)
	}
}
