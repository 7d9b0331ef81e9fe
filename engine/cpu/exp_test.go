package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// ulpDiff is |a-b| in units in the last place of b (subnormals count in
// the smallest subnormal step).
func ulpDiff(a, b float32) float64 {
	if a == b {
		return 0
	}
	ulp := math.Float32frombits(math.Float32bits(float32(math.Abs(float64(b))))+1) - float32(math.Abs(float64(b)))
	return math.Abs(float64(a)-float64(b)) / float64(ulp)
}

// TestExpSum checks the vector expf of Softmax against math.Exp (≤ 2 ulp,
// the accuracy of ggml_v_expf) on inputs through its fast path, its
// rescaled path (|n| > 126) and its saturated path (|n| > 192), and that
// the sum is formed in ggml_vec_soft_max_f32's order.
func TestExpSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x []float32
	for i := 0; i < 4096; i++ {
		x = append(x, float32(rng.Float64()*200-100))
	}
	x = append(x, 0, -0, 1, -1, 88.7, 88.72, -87.3, -103.9, -104, -150, 150, 400, -400,
		float32(math.Inf(-1)), float32(math.Inf(1)), 1e-8, -1e-8, 0.5, -0.5, 2)
	for len(x)%8 != 0 {
		x = append(x, float32(rng.Float64()*20-10))
	}
	// Values of one magnitude, so that the float32 rounding of every group
	// shows in the float64 sum (that of x is made by its few largest).
	var near []float32
	for i := 0; i < 4096; i++ {
		near = append(near, float32(rng.Float64()*4-4))
	}
	for _, x := range [][]float32{x, near} {
		for _, mx := range []float32{0, 3} {
			y := append([]float32(nil), x...)
			n, sum := expSumArch(y, mx)
			if n == 0 {
				t.Skip("no vector expf on this CPU")
			}
			if n != len(x) {
				t.Fatalf("did %d of %d values", n, len(x))
			}
			width, reduce := expSumGroup()
			var want float64
			for g := 0; g < n; g += width {
				v := y[g : g+width]
				want += float64(reduce(v))
				for i, got := range v {
					in := x[g+i] - mx
					ref := float32(math.Exp(float64(in)))
					if d := ulpDiff(got, ref); !(d <= 2) && !(ref == 0 && got == 0) {
						t.Errorf("exp(%v) = %v, math.Exp %v (%.1f ulp)", in, got, ref, d)
					}
				}
			}
			if sum != want {
				t.Errorf("max %v: sum %v, want %v in ggml's order", mx, sum, want)
			}
		}
	}
}

// expSumGroup gives the group width of the built expSumArch and how
// ggml_vec_soft_max_f32 reduces one group to float32 there.
func expSumGroup() (int, func(v []float32) float32) {
	if runtime.GOARCH == "arm64" {
		// vaddvq_f32: FADDP, FADDP.
		return 4, func(v []float32) float32 { return (v[0] + v[1]) + (v[2] + v[3]) }
	}
	// AVX2: extractf128 + add, movehl + add, movehdup + add_ss.
	return 8, func(v []float32) float32 {
		return ((v[4] + v[0]) + (v[6] + v[2])) + ((v[5] + v[1]) + (v[7] + v[3]))
	}
}

// TestSwiGLUVector checks the vector silu·up against the scalar formula
// (≤ 4 ulp: expf, then a division and a product).
func TestSwiGLUVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 1000
	gate, up := make([]float32, n), make([]float32, n)
	for i := range gate {
		gate[i] = float32(rng.NormFloat64() * 8)
		up[i] = float32(rng.NormFloat64())
	}
	gate[0], gate[1], gate[2], gate[3] = 100, -100, 200, -200
	out := make([]float32, n)
	SwiGLU(out, gate, up)
	for i := range out {
		g := gate[i]
		want := g / (1 + float32(math.Exp(float64(-g)))) * up[i]
		if d := ulpDiff(out[i], want); !(d <= 4) && math.Abs(float64(out[i]-want)) > 1e-37 {
			t.Errorf("swiglu(%v, %v) = %v, want %v (%.1f ulp)", g, up[i], out[i], want, d)
		}
	}
	// In place, as the MoE layer calls it.
	SwiGLU(gate, gate, up)
	for i := range out {
		if math.Float32bits(gate[i]) != math.Float32bits(out[i]) {
			t.Fatalf("in place: %v, want %v", gate[i], out[i])
		}
	}
}
