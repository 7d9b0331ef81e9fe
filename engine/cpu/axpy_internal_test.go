package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScaleMadArch: the vector scale and fused multiply-add give the bits
// of the scalar loops (fmaF32: one rounding).
func TestScaleMadArch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{8, 32, 40, 128, 131} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		a := float32(rng.NormFloat64())
		ys, yv := append([]float32(nil), y...), append([]float32(nil), y...)
		np := n &^ 7
		for i := 0; i < np; i++ {
			ys[i] = fmaF32(x[i], a, ys[i])
		}
		vec := madArch(yv, x, np, a)
		if wantVectorAxpy && vec != np {
			t.Fatalf("n=%d: the vector mad did %d of %d values", n, vec, np)
		}
		for i := vec; i < np; i++ {
			yv[i] = fmaF32(x[i], a, yv[i])
		}
		xs, xv := append([]float32(nil), x...), append([]float32(nil), x...)
		for i := range xs {
			xs[i] *= a
		}
		vs := scaleArch(xv, a)
		if wantVectorAxpy && vs < n&^7 {
			t.Fatalf("n=%d: the vector scale did %d of %d values", n, vs, n)
		}
		for i := vs; i < n; i++ {
			xv[i] *= a
		}
		for i := range ys {
			if math.Float32bits(ys[i]) != math.Float32bits(yv[i]) || math.Float32bits(xs[i]) != math.Float32bits(xv[i]) {
				t.Fatalf("n=%d: value %d differs between the vector and scalar kernels", n, i)
			}
		}
	}
}
