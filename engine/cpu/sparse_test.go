package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/quant"
)

// TestSparseAttention: with every position kept it is Attention bit for
// bit; with a sparse mask it is the softmax over the kept positions only
// (F16 K, V, Q and P as the dense op rounds them).
func TestSparseAttention(t *testing.T) {
	const heads, headsKV, hd, nCtx, pos0, rows = 4, 2, 16, 80, 30, 37
	be := cpu.NewBackend(3)
	defer be.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	rnd := func(n int) []float32 {
		v := be.Alloc(n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	kvDim := headsKV * hd
	c := be.NewKVCache([]bool{true}, nCtx, kvDim)
	be.StoreKV(c, 0, rnd((pos0+rows)*kvDim), rnd((pos0+rows)*kvDim), pos0+rows, 0)
	q := rnd(rows * heads * hd)
	p := backend.AttnParams{Heads: heads, HeadsKV: headsKV, HeadDim: hd, Scale: 0.25}
	words := (pos0 + rows + 63) / 64
	all := make([]uint64, rows*words)
	for i := range all {
		all[i] = ^uint64(0)
	}
	dense, sparse := be.Alloc(rows*heads*hd), be.Alloc(rows*heads*hd)
	be.Attention(c, 0, q, rows, pos0, p, dense)
	be.SparseAttention(c, 0, q, rows, pos0, p, all, words, sparse)
	for i := range dense {
		if math.Float32bits(dense[i]) != math.Float32bits(sparse[i]) {
			t.Fatalf("all kept: output %d is %v, dense %v", i, sparse[i], dense[i])
		}
	}
	sel := make([]uint64, rows*words)
	for r := 0; r < rows; r++ {
		for j := 0; j <= pos0+r; j++ {
			if rng.IntN(3) == 0 || j == pos0+r {
				sel[r*words+j/64] |= 1 << (j % 64)
			}
		}
		sel[r*words] |= 1 << 63 // beyond the row's own position for the first rows: never attended
	}
	be.SparseAttention(c, 0, q, rows, pos0, p, sel, words, sparse)
	h16 := func(f float32) float64 { return float64(quant.FP16ToFloat32(quant.Float32ToFP16(f))) }
	for r := 0; r < rows; r++ {
		for h := 0; h < heads; h++ {
			kvh := h / (heads / headsKV)
			var sc []float64
			var js []int
			mx := math.Inf(-1)
			for j := 0; j <= pos0+r; j++ {
				if sel[r*words+j/64]>>(j%64)&1 == 0 {
					continue
				}
				var d float64
				for i := 0; i < hd; i++ {
					d += h16(q[(r*heads+h)*hd+i]) * float64(quant.FP16ToFloat32(c.K[0][j*kvDim+kvh*hd+i]))
				}
				d *= float64(p.Scale)
				sc, js = append(sc, d), append(js, j)
				mx = math.Max(mx, d)
			}
			var sum float64
			for i := range sc {
				sc[i] = math.Exp(sc[i] - mx)
				sum += sc[i]
			}
			for i := 0; i < hd; i++ {
				var o float64
				for n, j := range js {
					o += sc[n] / sum * float64(quant.FP16ToFloat32(c.V[0][(kvh*hd+i)*nCtx+j]))
				}
				if got := sparse[(r*heads+h)*hd+i]; math.Abs(float64(got)-o) > 2e-3 {
					t.Fatalf("row %d head %d value %d: %v, want %v", r, h, i, got, o)
				}
			}
		}
	}
}
