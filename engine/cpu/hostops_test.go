package cpu_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/routing"
)

// Route is engine/routing's rule applied row by row, exact and with the
// cache-aware policy, bit for bit.
func TestRouteRows(t *testing.T) {
	b := cpu.NewBackend(1)
	defer b.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, n, k = 4, 40, 5
	p := make([]float32, rows*n)
	for i := range p {
		p[i] = rng.Float32()
	}
	res := make([]bool, n)
	for i := range res {
		res[i] = i%3 == 0
	}
	for _, tc := range []struct {
		name string
		pol  routing.CacheRoute
		res  []bool
	}{
		{"exact", routing.CacheRoute{}, nil},
		{"exact with residency", routing.CacheRoute{}, res},
		{"cache-aware", routing.CacheRoute{Enabled: true, Lambda: 3, AlwaysKept: 1, MaxRank: 12}, res},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, wts := make([]int32, rows*k), make([]float32, rows*k)
			b.Route(p, rows, n, k, 2, tc.pol, tc.res, sel, wts)
			var sc routing.Scratch
			for r := 0; r < rows; r++ {
				ws, ww := make([]int32, k), make([]float32, k)
				tc.pol.Route(p[r*n:(r+1)*n], k, 2, tc.res, &sc, ws, ww)
				if !slices.Equal(sel[r*k:(r+1)*k], ws) || !slices.Equal(wts[r*k:(r+1)*k], ww) {
					t.Fatalf("row %d: %v %v, want %v %v", r, sel[r*k:(r+1)*k], wts[r*k:(r+1)*k], ws, ww)
				}
			}
		})
	}
}

func TestFillRepeat(t *testing.T) {
	b := cpu.NewBackend(1)
	defer b.Close()
	x := []float32{1, 2, 3}
	b.Fill(x, -0.5)
	if !slices.Equal(x, []float32{-0.5, -0.5, -0.5}) {
		t.Fatalf("Fill: %v", x)
	}
	dst := make([]float32, 2*3*2)
	b.Repeat(dst, []float32{1, 2, 3, 4}, 2, 3, 2)
	if want := []float32{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}; !slices.Equal(dst, want) {
		t.Fatalf("Repeat: %v, want %v", dst, want)
	}
}

// PLEGate's score, sign and floor on groups whose sums are exact.
func TestPLEGate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		key, qry []float32
		want     float32
	}{
		{"positive", []float32{1, 1, 1, 1}, []float32{1, 1, 1, 1}, float32(math.Sqrt(2))}, // s = 4/2
		{"negative", []float32{1, -1, -1, -1}, []float32{2, 2, 2, 2}, -float32(math.Sqrt(2))},
		{"zero", []float32{0, 0, 0, 0}, []float32{1, 2, 3, 4}, 0},
		{"floor", []float32{1e-4, 0, 0, 0}, []float32{1e-4, 0, 0, 0}, float32(math.Sqrt(float64(float32(1e-6))))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := make([]float32, 1)
			cpu.PLEGate(g, tc.key, tc.qry, 1, 4)
			if g[0] != tc.want {
				t.Fatalf("gate %g, want %g", g[0], tc.want)
			}
		})
	}
}
