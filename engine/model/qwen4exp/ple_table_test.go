package qwen4exp

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/synth"
)

// TestPLETableStreamedIsMapped: rows gathered through the expert stream's
// readers into the row cache are the mapped rows, bit for bit, over
// fetches that hit, miss, evict and outgrow the cache; a row outside the
// table is an error.
func TestPLETableStreamedIsMapped(t *testing.T) {
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Type, cfg.Layers, cfg.Vocab, cfg.Experts, cfg.ExpertsUsed = ggml.Q8_0, 2, 8192, 4, 2
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	be := cpu.NewBackend(1)
	defer be.Close()
	var layout *model.ExpertLayout
	if _, err := qwen3moe.Open(f, model.Options{Backend: be, NewExperts: func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		layout = l
		return experts.NewFile(f, l)
	}}); err != nil {
		t.Fatal(err)
	}
	st, err := experts.NewStream(f, layout, experts.StreamOptions{Budget: 1 << 20, Readers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The token embeddings stand in for a table: a Q8_0 matrix of rows.
	ti, _ := f.Tensor("token_embd.weight")
	rows, cols := int(ti.Dims[1]), int(ti.Dims[0])
	mapped, err := newPLETable(f, ti, ti.Type, cols, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := newPLETable(f, ti, ti.Type, cols, rows, st)
	if err != nil {
		t.Fatal(err)
	}
	if mapped.Streamed() || !streamed.Streamed() {
		t.Fatal("modes")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	var fm, fs pleFetch
	var sm, ss pleStage
	for round, n := range []int{16, 16, 300, 5000, 16, 7000, 1} {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(rng.IntN(rows))
			if round == 1 && i < 8 {
				ids[i] = int32(i) // hits from round 0's rows? not necessarily; repeats within a batch
			}
		}
		ids[0] = ids[n-1] // a repeat within the fetch
		mapped.Start(&fm, ids)
		streamed.Start(&fs, ids)
		em, es := be.Alloc(n*cols), be.Alloc(n*cols)
		if err := sm.Gather(be, mapped, &fm, em); err != nil {
			t.Fatal(err)
		}
		if err := ss.Gather(be, streamed, &fs, es); err != nil {
			t.Fatal(err)
		}
		for i := range em {
			if math.Float32bits(em[i]) != math.Float32bits(es[i]) {
				t.Fatalf("round %d: value %d streamed %v, mapped %v", round, i, es[i], em[i])
			}
		}
	}
	s := streamed.Stats()
	if s.Reads == 0 || s.Reads >= s.Rows || s.BytesRead != s.Reads*int64(streamed.rowBytes) {
		t.Fatalf("stats %+v: want some reads, fewer than the rows gathered", s)
	}
	streamed.Start(&fs, []int32{int32(rows)})
	if err := ss.Gather(be, streamed, &fs, be.Alloc(cols)); err == nil {
		t.Fatal("a row outside the table was gathered")
	}
}
