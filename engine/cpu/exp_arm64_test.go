//go:build !purego

package cpu

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// fma32 is a·b+c rounded once to float32, as FMLA and vfmaq_f32 do: the
// product is exact in float64 and the sum exact in a 1024-bit big.Float.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	if math.IsInf(p, 0) || math.IsNaN(p) || math.IsInf(float64(c), 0) || math.IsNaN(float64(c)) {
		return float32(p + float64(c))
	}
	s := new(big.Float).SetPrec(1024).SetFloat64(p)
	s.Add(s, new(big.Float).SetPrec(1024).SetFloat64(float64(c)))
	f, _ := s.Float32()
	return f
}

// ggmlExpf is ggml_v_expf of ggml-cpu/vec.h (NEON branch) on one lane,
// operation for operation: vfmaq_f32(a, b, c) = fma32(b, c, a) and
// vfmsq_f32(a, b, c) = fma32(-b, c, a). Products outside an FMA are
// rounded with explicit conversions so Go cannot fuse them.
func ggmlExpf(x float32) float32 {
	const r = 0x1.8p23
	z := fma32(x, 0x1.715476p+0, r)
	n := z - r
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + math.Float32bits(1))
	c := math.Abs(float64(n)) > 126
	u := float32(b * b)
	j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		float32(0x1.ffffecp-1*b))
	if !c {
		return fma32(j, k, k)
	}
	var d uint32
	if n <= 0 {
		d = 0x82000000
	}
	s1 := math.Float32frombits(d + 0x7f000000)
	s2 := math.Float32frombits(e - d)
	if math.Abs(float64(n)) > 192 {
		return float32(s1 * s1)
	}
	return float32(fma32(s2, j, s2) * s1)
}

// expTestInputs are finite values through ggml_v_expf's fast path, its
// rescaled path (126 < |n| <= 192) and its saturated path, with the
// boundaries of each.
func expTestInputs() []float32 {
	rng := rand.New(rand.NewPCG(7, 8))
	var x []float32
	for i := 0; i < 3000; i++ {
		x = append(x, float32(rng.Float64()*300-150))
	}
	for i := 0; i < 1000; i++ {
		x = append(x, float32(rng.NormFloat64()))
	}
	for _, v := range []float32{0, 1, 88.37, 88.38, 88.72, 88.73, 87.3, 87.34, 89, 103.9, 103.97, 104, 133, 150, 1e3, 1e30, 1e-8, 1e-40} {
		x = append(x, v, -v)
	}
	for len(x)%4 != 0 {
		x = append(x, 0.25)
	}
	return x
}

// TestExpNEONBitExact checks every lane of the NEON expf against
// ggmlExpf bit for bit, through Softmax's expSumArch.
func TestExpNEONBitExact(t *testing.T) {
	x := expTestInputs()
	for _, mx := range []float32{0, 3, -2.5} {
		y := append([]float32(nil), x...)
		n, _ := expSumArch(y, mx)
		if n != len(x) {
			t.Fatalf("did %d of %d values", n, len(x))
		}
		bad := 0
		for i, got := range y {
			in := x[i] - mx
			if want := ggmlExpf(in); math.Float32bits(got) != math.Float32bits(want) {
				if bad++; bad <= 10 {
					t.Errorf("expf(%v) = %v (%#08x), ggml_v_expf %v (%#08x)", in, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestSiluNEONBitExact checks the NEON silu·up against ggml_v_silu
// (x/(1+expf(0-x))) and vmulq_f32 bit for bit.
func TestSiluNEONBitExact(t *testing.T) {
	gate := expTestInputs()
	rng := rand.New(rand.NewPCG(9, 10))
	up := make([]float32, len(gate))
	for i := range up {
		up[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, len(gate))
	if n := siluMulArch(out, gate, up); n != len(gate) {
		t.Fatalf("did %d of %d values", n, len(gate))
	}
	bad := 0
	for i, g := range gate {
		s := float32(g / float32(1+ggmlExpf(float32(0-g))))
		if want := float32(s * up[i]); math.Float32bits(out[i]) != math.Float32bits(want) {
			if bad++; bad <= 10 {
				t.Errorf("silu(%v)·%v = %v (%#08x), ggml %v (%#08x)", g, up[i], out[i], math.Float32bits(out[i]), want, math.Float32bits(want))
			}
		}
	}
}
