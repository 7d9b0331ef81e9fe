package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
)

// ExpertsFFN gives every row of a batch of up to quant.InvariantCols rows
// exactly what it gives that row alone (a speculative verify must match a
// one-row decode), whatever the weight type; a larger batch (a prompt)
// may run each expert's rows through the tiled kernels, which sum in
// another order, and stays within their bound of the one-row results.
func TestExpertsFFNRowsAsAlone(t *testing.T) {
	const embd, ff, experts = 256, 512, 3
	for _, typ := range []ggml.Type{ggml.Q8_0, ggml.Q4_K, ggml.IQ2_XS, ggml.IQ4_XS} {
		t.Run(typ.String(), func(t *testing.T) {
			k, err := quant.For(typ)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, uint64(typ)))
			matrix := func(rows, cols int) []byte {
				rb, err := typ.RowSize(int64(cols))
				if err != nil {
					t.Fatal(err)
				}
				b := make([]byte, rows*int(rb))
				k.Random(b, rng, 1)
				return b
			}
			ws := make([]backend.ExpertWeights, experts)
			for i := range ws {
				ws[i] = backend.ExpertWeights{Gate: matrix(ff, embd), Up: matrix(ff, embd), Down: matrix(embd, ff),
					GateT: typ, UpT: typ, DownT: typ}
			}
			be := cpu.NewBackend(2)
			defer be.Close()
			// run gives each expert every row of in, and returns the
			// outputs by expert.
			run := func(in []float32, rows int) [][]float32 {
				jobs := make([]backend.ExpertJob, experts)
				for i := range jobs {
					jobs[i] = backend.ExpertJob{W: ws[i], Out: make([]float32, rows*embd)}
					for r := 0; r < rows; r++ {
						jobs[i].Rows = append(jobs[i].Rows, int32(r))
					}
				}
				if err := be.ExpertsFFN(in, rows, embd, ff, jobs, false); err != nil {
					t.Fatal(err)
				}
				out := make([][]float32, experts)
				for i := range jobs {
					out[i] = jobs[i].Out
				}
				return out
			}
			for _, rows := range []int{quant.InvariantCols, 40} {
				in := make([]float32, rows*embd)
				for i := range in {
					in[i] = float32(rng.NormFloat64())
				}
				batch := run(in, rows)
				worst := 0.0
				for r := 0; r < rows; r++ {
					alone := run(in[r*embd:(r+1)*embd], 1)
					for e := range alone {
						got, want := batch[e][r*embd:(r+1)*embd], alone[e]
						var scale float64
						for _, v := range want {
							scale = max(scale, math.Abs(float64(v)))
						}
						for i := range want {
							d := math.Abs(float64(got[i]-want[i])) / max(scale, 1e-30)
							worst = max(worst, d)
							if rows <= quant.InvariantCols && math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%d rows: row %d expert %d value %d is %g, alone %g", rows, r, e, i, got[i], want[i])
							}
						}
					}
				}
				if worst > 1e-4 {
					t.Errorf("%d rows: a row differs from itself alone by %.2g of its scale", rows, worst)
				}
				t.Logf("%d rows: worst difference from a row alone %.2g of its scale", rows, worst)
			}
		})
	}
}
