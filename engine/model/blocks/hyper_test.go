package blocks_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// TestHyperConnMatchesReference: Mix and Combine of F32 mixers against a
// float64 reading of llama.cpp's build_hc_mix / build_hc_combine.
func TestHyperConnMatchesReference(t *testing.T) {
	be := cpu.NewBackend(2)
	defer be.Close()
	const hc, e, lr, rows = 3, 64, 32, 5
	hd := hc * e
	rng := rand.New(rand.NewPCG(1, 2))
	mat := func(r, c int, std float64) ([]float64, []byte) {
		w := make([]float64, r*c)
		b := make([]byte, 4*r*c)
		for i := range w {
			w[i] = float64(float32(std * rng.NormFloat64()))
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(w[i])))
		}
		return w, b
	}
	down, db := mat(lr, hd, 1/math.Sqrt(float64(hd)))
	up, ub := mat(hd, lr, 1/math.Sqrt(lr))
	inj, ib := mat(hc, hd, 1/math.Sqrt(float64(hd)))
	h := blocks.HyperConn{HC: hc, Embd: e, LowRank: lr, Eps: 1e-6, Norm: make([]float32, hd)}
	for i := range h.Norm {
		h.Norm[i] = float32(1 + 0.1*rng.NormFloat64())
	}
	var err error
	if h.Down, err = be.NewMatrix(ggml.F32, db, lr, hd); err != nil {
		t.Fatal(err)
	}
	if h.Up, err = be.NewMatrix(ggml.F32, ub, hd, lr); err != nil {
		t.Fatal(err)
	}
	if h.Inject, err = be.NewMatrix(ggml.F32, ib, hc, hd); err != nil {
		t.Fatal(err)
	}
	x := be.Alloc(rows * hd)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	x0 := append([]float32(nil), x...)
	out, y := be.Alloc(rows*e), be.Alloc(rows*e)
	for i := range y {
		y[i] = float32(rng.NormFloat64())
	}
	var buf blocks.HCBuf
	if err := h.Mix(be, x, rows, &buf, out); err != nil {
		t.Fatal(err)
	}
	if err := h.Combine(be, x, y, rows, &buf); err != nil {
		t.Fatal(err)
	}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	var worst float64
	for r := 0; r < rows; r++ {
		xn := make([]float64, hd)
		for c := 0; c < hc; c++ {
			var ss float64
			for i := 0; i < e; i++ {
				v := float64(x0[r*hd+c*e+i])
				ss += v * v
			}
			s := 1 / math.Sqrt(ss/e+1e-6)
			for i := 0; i < e; i++ {
				xn[c*e+i] = float64(x0[r*hd+c*e+i]) * s * float64(h.Norm[c*e+i])
			}
		}
		lo := make([]float64, lr)
		for j := range lo {
			var d float64
			for i := range xn {
				d += down[j*hd+i] * xn[i]
			}
			d /= hc
			lo[j] = d * sig(d)
		}
		mixed := make([]float64, e)
		for i := 0; i < hd; i++ {
			var g float64
			for j := range lo {
				g += up[i*lr+j] * lo[j]
			}
			mixed[i%e] += xn[i] * sig(g) / hc
		}
		for i := range mixed {
			worst = max(worst, math.Abs(mixed[i]-float64(out[r*e+i])))
		}
		for c := 0; c < hc; c++ {
			var d float64
			for i := range xn {
				d += inj[c*hd+i] * xn[i]
			}
			w := 2 * sig(d/hc)
			for i := 0; i < e; i++ {
				want := float64(x0[r*hd+c*e+i]) + float64(y[r*e+i])*w
				worst = max(worst, math.Abs(want-float64(x[r*hd+c*e+i])))
			}
		}
	}
	if worst > 1e-5 {
		t.Fatalf("worst difference from the float64 reference %.3g", worst)
	}
	t.Logf("worst difference %.3g", worst)
}
