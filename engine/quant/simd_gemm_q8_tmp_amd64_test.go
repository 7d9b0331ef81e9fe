//go:build !purego

package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

func BenchmarkGemmQ8Tmp(b *testing.B) {
	const n = 2048
	typ := ggml.Q8_0
	k := mustKernel(b, typ)
	rb := rowBytes(b, typ, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rows := range []int{64, 1024, (64 << 20) / rb &^ 15} {
		w := make([]byte, rows*rb)
		k.Random(w, rng, 1)
		ab := ActivationSize(ggml.Q8_0, n)
		a := make([]byte, ab)
		QuantizeQ8_0(randomFloats(rng, n, 1), a)
		out := make([]float32, rows)
		for _, im := range []struct {
			name string
			gemm func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
		}{{"loop", (&Kernel{Dot: k.Dot}).loopGemm}, {"vnni", gemmQ8_0VNNI}, {"avx2", gemmQ8_0AVX2}} {
			b.Run(fmt.Sprintf("rows=%d/%s", rows, im.name), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					for r0 := 0; r0 < rows; r0 += 16 {
						r1 := min(r0+16, rows)
						im.gemm(n, w[r0*rb:r1*rb], rb, r1-r0, a, ab, 1, out[r0:], rows)
					}
				}
			})
		}
	}
}
