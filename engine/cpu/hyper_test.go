package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
)

// The hyper-connection ops equal, bit for bit, the host loops
// blocks.HyperConn ran before they were backend ops (copied here as the
// reference): RMSNorm with a weight of ones then ·w, the scaled SiLU, the
// gated stream mean and the combine; on one thread and on four (the ops
// split rows and groups over the pool).
func TestHyperOpsMatchHostLoops(t *testing.T) {
	sigmoid32 := func(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }
	const hc, e, lr = 3, 96, 40 // 3 streams: 1/3 is not exact, its rounding counts
	hd := hc * e
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(scale * rng.NormFloat64())
		}
		return v
	}
	same := func(name string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: value %d is %g, the host loop's %g", name, i, got[i], want[i])
			}
		}
	}
	for _, threads := range []int{1, 4} {
		be := cpu.NewBackend(threads)
		for _, rows := range []int{1, 3, 9} {
			x, norm := fill(rows*hd, 1), fill(hd, 1)
			x[0], x[1], x[e] = 0, 1e-30, 3e4 // a tiny and a large value in two streams
			for i := 2 * e; i < 3*e; i++ {
				x[i] = 0 // an all-zero stream: eps alone
			}
			// The reference grouped norm: RMSNorm with ones, then ·norm.
			ones := make([]float32, e)
			for i := range ones {
				ones[i] = 1
			}
			want := make([]float32, rows*hd)
			for g := 0; g < rows*hc; g++ {
				cpu.RMSNorm(want[g*e:(g+1)*e], x[g*e:(g+1)*e], ones, 1e-6)
			}
			for r := 0; r < rows; r++ {
				row := want[r*hd : (r+1)*hd]
				for i, w := range norm {
					row[i] *= w
				}
			}
			got := make([]float32, rows*hd)
			be.GroupRMSNorm(got, x, norm, rows, e, 1e-6)
			same("GroupRMSNorm", got, want)
			inPlace := append([]float32(nil), x...)
			be.GroupRMSNorm(inPlace, inPlace, norm, rows, e, 1e-6)
			same("GroupRMSNorm in place", inPlace, want)

			lo := fill(rows*lr+5000, 4) // over one pool chunk
			lo[0], lo[1], lo[2] = 0, -200, 200
			wantLo := append([]float32(nil), lo...)
			inv := 1 / float32(hc)
			for i, v := range wantLo {
				v *= inv
				wantLo[i] = v / (1 + float32(math.Exp(float64(-v))))
			}
			be.ScaledSiLU(lo, inv)
			same("ScaledSiLU", lo, wantLo)

			xn, gate := want, fill(rows*hd, 3)
			gate[0], gate[1] = -100, 100
			wantOut := make([]float32, rows*e)
			for r := 0; r < rows; r++ {
				g, n, o := gate[r*hd:(r+1)*hd], xn[r*hd:(r+1)*hd], wantOut[r*e:(r+1)*e]
				for i := range o {
					o[i] = n[i] * sigmoid32(g[i])
				}
				for c := 1; c < hc; c++ {
					gc, nc := g[c*e:(c+1)*e], n[c*e:(c+1)*e]
					for i := range o {
						o[i] += float32(nc[i] * sigmoid32(gc[i]))
					}
				}
				for i := range o {
					o[i] *= inv
				}
			}
			out := make([]float32, rows*e)
			be.HyperMix(out, xn, gate, rows, hc, e)
			same("HyperMix", out, wantOut)

			y, inject := fill(rows*e, 2), fill(rows*hc, 3)
			inject[0] = -1e4
			wantX := append([]float32(nil), x...)
			for r := 0; r < rows; r++ {
				yr := y[r*e : (r+1)*e]
				for c := 0; c < hc; c++ {
					w := 2 * sigmoid32(inject[r*hc+c]*inv)
					xs := wantX[r*hd+c*e : r*hd+(c+1)*e]
					for i, v := range yr {
						xs[i] += float32(v * w)
					}
				}
			}
			be.HyperCombine(x, y, inject, rows, hc, e)
			same("HyperCombine", x, wantX)
		}
		be.Close()
	}
}
