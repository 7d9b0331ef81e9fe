package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDeltaRowArch: the fused row of the delta rule gives the bits of the
// steps deltaTask.Run takes without it (scale, dot with k, fused mad, dot
// with q), in place and reading another buffer, on rows of whole chunks
// of 32 (what it takes) with ordinary, tiny and huge values.
func TestDeltaRowArch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	if _, ok := deltaRowArch(make([]float32, 40), make([]float32, 40), make([]float32, 40), make([]float32, 40), 1, 1, 1); ok {
		t.Fatal("a row of 40 values took the assembly")
	}
	for _, n := range []int{32, 64, 128, 256} {
		for _, scale := range []float64{1, 1e-30, 1e30} {
			src := make([]float32, n)
			k, q := make([]float32, n), make([]float32, n)
			for i := range src {
				src[i] = float32(rng.NormFloat64() * scale)
				k[i], q[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			eg, v, beta := float32(math.Exp(-rng.Float64())), float32(rng.NormFloat64()), float32(rng.Float64())

			want := slices.Clone(src)
			for i := scaleArch(want, eg); i < n; i++ {
				want[i] *= eg
			}
			dj := (v - dotF32(n, f32Bytes(want), f32Bytes(k))) * beta
			for i := madArch(want, k, n, dj); i < n; i++ {
				want[i] = fmaF32(k[i], dj, want[i])
			}
			wantO := dotF32(n, f32Bytes(want), f32Bytes(q))

			dst := make([]float32, n)
			o, ok := deltaRowArch(dst, src, k, q, eg, v, beta)
			if !ok {
				if hasDeltaRowAsm {
					t.Fatalf("n=%d: the assembly did not run on a CPU with AVX2", n)
				}
				continue
			}
			same := slices.Clone(src)
			o2, _ := deltaRowArch(same, same, k, q, eg, v, beta)
			for i := range want {
				if math.Float32bits(dst[i]) != math.Float32bits(want[i]) || math.Float32bits(same[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d scale %g: value %d: %g / in place %g, steps %g", n, scale, i, dst[i], same[i], want[i])
				}
			}
			if math.Float32bits(o) != math.Float32bits(wantO) || math.Float32bits(o2) != math.Float32bits(wantO) {
				t.Fatalf("n=%d scale %g: output %g / in place %g, steps %g", n, scale, o, o2, wantO)
			}
		}
	}
}
