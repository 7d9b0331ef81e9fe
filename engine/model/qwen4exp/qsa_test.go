package qwen4exp

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/quant"
)

type golden struct {
	PartialSort []struct {
		K   int       `json:"k"`
		V   []float32 `json:"v"`
		Out []int32   `json:"out"`
	} `json:"partial_sort"`
	PLE []struct {
		NGram    int      `json:"ngram"`
		PerNGram int      `json:"per_ngram"`
		EOS      int64    `json:"eos"`
		Mult     []string `json:"mult"`
		Offsets  []uint32 `json:"offsets"`
		Vocab    []uint32 `json:"vocab"`
		Tokens   []int32  `json:"tokens"`
		Rows     []int32  `json:"rows"`
	} `json:"ple"`
}

// readGolden reads testdata/golden.json, written by testdata/golden.cpp
// (libstdc++'s std::partial_sort and llama.cpp's PLE hash loop compiled
// with g++).
func readGolden(t *testing.T) *golden {
	t.Helper()
	b, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.PartialSort) == 0 || len(g.PLE) == 0 {
		t.Fatal("golden.json has no cases")
	}
	return &g
}

// TestPartialSortIsLibstdcxx: the order (not only the set) matches
// libstdc++'s std::partial_sort on inputs full of ties.
func TestPartialSortIsLibstdcxx(t *testing.T) {
	for i, c := range readGolden(t).PartialSort {
		idx := make([]int32, len(c.V))
		for j := range idx {
			idx[j] = int32(j)
		}
		cpu.PartialSort(c.V, idx, c.K)
		if !slices.Equal(idx[:c.K], c.Out) {
			t.Fatalf("case %d (n %d, k %d): got %v, libstdc++ %v", i, len(c.V), c.K, idx[:c.K], c.Out)
		}
	}
}

// llamaSelect is the selection as llama.cpp computes it, cell for cell:
// n_kv cells (nUsed of them holding positions 0..nUsed−1), every cell of a
// complete block carrying its score, the unpooled cells the spare block's
// (dead) score, +1e9 on blocks at or after the tail and on the spare
// block, −inf on future and empty cells (the KQ mask), ggml_top_k's
// partial_sort of width min(n_kv, top_k+r−1), and the kept visible cells.
func llamaSelect(scores []float32, dead float32, q, r, topK, nUsed, nKV int) []bool {
	tailStart := (q + 1) / r * r
	vals := make([]float32, nKV)
	for j := range vals {
		b := j / r
		var v float32
		switch {
		case j >= nUsed || j > q:
			vals[j] = float32(math.Inf(-1))
			continue
		case (b+1)*r <= nUsed: // a complete block
			v = scores[b]
			if b*r >= tailStart {
				v += 1e9
			}
		default:
			v = dead + 1e9
		}
		vals[j] = v + 0 // the mask's 0
	}
	width := min(nKV, topK+r-1)
	idx := make([]int32, nKV)
	for j := range idx {
		idx[j] = int32(j)
	}
	cpu.PartialSort(vals, idx, width)
	keep := make([]bool, q+1)
	for _, j := range idx[:width] {
		if int(j) <= q {
			keep[j] = true
		}
	}
	return keep
}

// TestQSASelectMatchesLlama: cpu.QSASelectRow (the CPU backend's QSASelect), which sees only the query's
// visible cells and gives every tail cell one value, keeps exactly the
// cells llama.cpp's full-cache selection keeps, whatever the tail blocks'
// own scores, the spare block's score and the cache's padding, with
// scores full of ties (zeros from the ReLU, repeated values).
func TestQSASelectMatchesLlama(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sc cpu.QSAScratch
	for c := 0; c < 3000; c++ {
		r := 1 + rng.IntN(8)
		topK := 1 + rng.IntN(40)
		nUsed := 1 + rng.IntN(300)
		q := rng.IntN(nUsed)
		nKV := nUsed + rng.IntN(64)
		levels := 1 + rng.IntN(6)
		scores := make([]float32, (nKV+r-1)/r)
		for b := range scores {
			scores[b] = float32(rng.IntN(levels)) * float32(rng.IntN(2)) * 7.5 // many exact ties, many zeros
			if rng.IntN(4) == 0 {
				scores[b] = 40 + rng.Float32()*60 // 1e9+s rounds to different floats
			}
		}
		dead := rng.Float32() * 100
		want := llamaSelect(scores, dead, q, r, topK, nUsed, nKV)
		sel := make([]uint64, (q+64)/64)
		cpu.QSASelectRow(sel, scores[:(q+1)/r], q, r, topK+r-1, &sc)
		for j := 0; j <= q; j++ {
			if got := sel[j/64]>>(j%64)&1 == 1; got != want[j] {
				t.Fatalf("case %d (r %d, top_k %d, q %d, %d used of %d cells): cell %d kept %v, llama.cpp %v",
					c, r, topK, q, nUsed, nKV, j, got, want[j])
			}
		}
	}
}

// TestQSASelectKeepsWidth: a query that sees more cells than the width
// keeps exactly the width, its whole tail among them.
func TestQSASelectKeepsWidth(t *testing.T) {
	var sc cpu.QSAScratch
	scores := []float32{3, 0, 3, 1, 3, 2, 0, 0, 5, 0, 0, 0}
	for q := 0; q < 48; q++ {
		const r, topK = 4, 6
		width := topK + r - 1
		sel := make([]uint64, 1)
		cpu.QSASelectRow(sel, scores[:(q+1)/r], q, r, width, &sc)
		n := 0
		for j := 0; j <= q; j++ {
			if sel[0]>>j&1 == 1 {
				n++
			}
		}
		if want := min(q+1, width); n != want {
			t.Fatalf("q %d: kept %d cells, want %d", q, n, want)
		}
		for j := (q + 1) / r * r; j <= q; j++ {
			if sel[0]>>j&1 == 0 {
				t.Fatalf("q %d: tail cell %d dropped", q, j)
			}
		}
	}
}

func TestQSAScoresAndPool(t *testing.T) {
	// Two heads of 2; head 1 negative for block 0: ReLU drops it.
	q := []float32{1, 2, -1, 0}
	keys := []float32{1, 1, 0.5, -3}
	dst := make([]float32, 2)
	cpu.QSAScores(dst, q, keys, 2, 2)
	if dst[0] != 3 || dst[1] != 0 {
		t.Fatalf("scores %v, want [3 0]", dst)
	}
	h := quant.Float32ToFP16
	raw := []uint16{h(1), h(2), h(3), h(-2), h(0.5), h(1)}
	pooled := make([]float32, 2)
	cpu.QSAPool(pooled, raw, 3, 2)
	if want := []float32{4.5 * float32(1.0/3), 1 * float32(1.0/3)}; !slices.Equal(pooled, want) {
		t.Fatalf("pooled %v, want %v", pooled, want)
	}
}
