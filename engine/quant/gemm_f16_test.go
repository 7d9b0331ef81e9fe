package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// TestGemmF16 checks the F16 Gemm bit for bit against the F16 Dot and
// GoDot on lengths with and without a tail of < 32 values, strided rows and
// columns, and values from subnormal to the fp16 maximum.
func TestGemmF16(t *testing.T) {
	k := mustKernel(t, ggml.F16)
	rng := rand.New(rand.NewPCG(3, 4))
	fills := []struct {
		name string
		val  func() float32
	}{
		{"normal", func() float32 { return float32(rng.NormFloat64()) }},
		{"wide", func() float32 { return float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(30)-24))) }},
		{"extreme", func() float32 {
			return []float32{0, 65504, -65504, 6e-8, -6e-8, 1, -1}[rng.IntN(7)]
		}},
	}
	for _, f := range fills {
		for _, n := range []int{1, 5, 31, 32, 33, 64, 100, 127, 128, 300, 513} {
			for _, s := range []struct{ rows, cols int }{{1, 1}, {3, 1}, {17, 1}, {5, 3}, {64, 2}} {
				name := fmt.Sprintf("%s/n=%d/%dx%d", f.name, n, s.rows, s.cols)
				ws := 2*n + 2*rng.IntN(4)
				as := 2*n + 2*rng.IntN(3)
				os := s.rows + rng.IntN(3)
				w := make([]byte, (s.rows-1)*ws+2*n)
				a := make([]byte, (s.cols-1)*as+2*n)
				for i := 0; i+1 < len(w); i += 2 {
					putFP16(w[i:], f.val())
				}
				for i := 0; i+1 < len(a); i += 2 {
					putFP16(a[i:], f.val())
				}
				out := make([]float32, (s.cols-1)*os+s.rows)
				k.Gemm(n, w, ws, s.rows, a, as, s.cols, out, os)
				for c := 0; c < s.cols; c++ {
					ar := a[c*as : c*as+2*n]
					for r := 0; r < s.rows; r++ {
						wr := w[r*ws : r*ws+2*n]
						got, dot, ref := out[c*os+r], k.Dot(n, wr, ar), k.GoDot(n, wr, ar)
						if !sameF32(got, dot) || !sameF32(got, ref) {
							t.Fatalf("%s: out[%d][%d] = %v, Dot %v, GoDot %v", name, c, r, got, dot, ref)
						}
					}
				}
			}
		}
	}
	out := []float32{1, 1}
	k.Gemm(0, nil, 0, 2, nil, 0, 1, out, 2)
	if out[0] != 0 || out[1] != 0 {
		t.Errorf("n = 0: %v", out)
	}
	defer func() {
		if recover() == nil {
			t.Error("short weights did not panic")
		}
	}()
	k.Gemm(32, make([]byte, 127), 64, 2, make([]byte, 64), 64, 1, out, 2)
}

func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}
