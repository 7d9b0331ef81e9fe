package quant

import (
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// BenchmarkDot measures one weight row of 4096 values against a quantized
// activation row; SetBytes is the weight row size, so MB/s is weight
// bandwidth.
func BenchmarkDot(b *testing.B) {
	const n = 4096
	for _, typ := range baseTypes {
		b.Run(typ.String(), func(b *testing.B) {
			k := mustKernel(b, typ)
			rng := rand.New(rand.NewPCG(1, 2))
			// 64 rows so the weights are not all in L1.
			const rows = 64
			rb := rowBytes(b, typ, n)
			w := randomRow(b, typ, n*rows, rng, 1)
			a := make([]byte, ActivationSize(k.VecDotType, n))
			QuantizeActivations(k.VecDotType, randomFloats(rng, n, 1), a)
			b.SetBytes(int64(rb))
			b.ResetTimer()
			var sink float32
			for i := 0; b.Loop(); i++ {
				r := i % rows
				sink += k.Dot(n, w[r*rb:(r+1)*rb], a)
			}
			_ = sink
		})
	}
}

func BenchmarkQuantizeActivations(b *testing.B) {
	const n = 4096
	for _, typ := range []ggml.Type{ggml.F32, ggml.F16, ggml.BF16, ggml.Q8_0, ggml.Q8_K} {
		b.Run(typ.String(), func(b *testing.B) {
			x := randomFloats(rand.New(rand.NewPCG(1, 2)), n, 1)
			a := make([]byte, ActivationSize(typ, n))
			b.SetBytes(4 * n)
			for b.Loop() {
				QuantizeActivations(typ, x, a)
			}
		})
	}
}
