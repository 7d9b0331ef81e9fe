package cpu_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
)

// BenchmarkMatVec streams a set of matrices much larger than the caches
// through single-row matrix products, as a decoded token does: rows×2048
// matrices, 256 MB in all, in Q8_0 and in F32 (whose dot is one FMA per 8
// values: the machine's vectorised read bandwidth through the same pool).
// The bytes/s figure is the effective weight bandwidth; compare threads
// side by side in one run:
//
//	go test -run x -bench MatVec -benchtime 40x ./engine/cpu/
func BenchmarkMatVec(b *testing.B) {
	const cols, total = 2048, 256 << 20
	for _, c := range []struct {
		typ  ggml.Type
		rows int
	}{{ggml.Q8_0, 512}, {ggml.Q8_0, 4096}, {ggml.F32, 4096}} {
		typ, rows := c.typ, c.rows
		rb, _ := typ.RowSize(cols)
		n := total / (int(rb) * rows)
		rng := rand.New(rand.NewPCG(1, 2))
		k, _ := quant.For(typ)
		ws := make([]cpu.Weight, n)
		for i := range ws {
			data := make([]byte, int(rb)*rows)
			k.Random(data, rng, 1)
			ws[i], _ = cpu.NewWeight(typ, data, rows, cols)
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, rows)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/rows=%d/threads=%d", typ, rows, threads), func(b *testing.B) {
				p := cpu.NewPool(threads)
				defer p.Close()
				var a cpu.Acts
				a.Quantize(p, ws[0].VecDotType(), x, 1, cols)
				b.SetBytes(int64(n * rows * int(rb)))
				for b.Loop() {
					for i := range ws {
						cpu.MatMul(p, &ws[i], &a, out)
					}
				}
			})
		}
	}
}
