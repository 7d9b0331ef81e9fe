package cpu_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
)

// BenchmarkMatVec streams a set of Q8_0 matrices much larger than the
// caches through single-row matrix products, as a decoded token does:
// rows×2048 matrices, 256 MB in all. The bytes/s figure is the
// effective weight bandwidth; compare threads side by side in one run:
//
//	go test -run x -bench MatVec -benchtime 40x ./engine/cpu/
func BenchmarkMatVec(b *testing.B) {
	const cols, total = 2048, 256 << 20
	for _, rows := range []int{512, 4096} {
		rb, _ := ggml.Q8_0.RowSize(cols)
		n := total / (int(rb) * rows)
		rng := rand.New(rand.NewPCG(1, 2))
		k, _ := quant.For(ggml.Q8_0)
		ws := make([]cpu.Weight, n)
		for i := range ws {
			data := make([]byte, int(rb)*rows)
			k.Random(data, rng, 1)
			ws[i], _ = cpu.NewWeight(ggml.Q8_0, data, rows, cols)
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, rows)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("rows=%d/threads=%d", rows, threads), func(b *testing.B) {
				p := cpu.NewPool(threads)
				defer p.Close()
				var a cpu.Acts
				a.Quantize(p, ggml.Q8_0, x, 1, cols)
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
