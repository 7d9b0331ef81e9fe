package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine"
)

// TestSpeculationLiveStatus: a speculating generation's figures are in the
// engine's Status while it runs (published at its start and then every
// half second) and, after it, equal its done stats; Depths count every
// verify.
func TestSpeculationLiveStatus(t *testing.T) {
	path := peakedModel(t, nil)
	eng := engine.New(engine.Options{Threads: 2, ContextLength: 256,
		Speculation: engine.Speculation{Enabled: true, MaxDraft: 3, Lookup: true}})
	defer eng.Close()
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	if eng.Status().Speculation != nil {
		t.Fatal("speculation figures before any generation")
	}
	var n int
	var first, later *engine.SpecStats
	st, err := eng.Generate(context.Background(), engine.Request{Tokens: []int32{21, 22, 23, 21, 22, 23, 21, 22},
		Sampling: engine.Sampling{MaxTokens: 80}}, func(engine.Token) error {
		n++
		switch n {
		case 1:
			first = eng.Status().Speculation
		case 40:
			time.Sleep(600 * time.Millisecond) // the next step publishes
		case 60:
			later = eng.Status().Speculation
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first == nil || first.Verifies != 0 || later == nil || later.Verifies == 0 || later.Accepted == 0 {
		t.Fatalf("live figures: at the start %+v, later %+v", first, later)
	}
	s, live := st.Speculation, eng.Status().Speculation
	if s == nil || live == nil || live.Verifies != s.Verifies || live.Accepted != s.Accepted || later.Verifies > s.Verifies {
		t.Fatalf("done %+v, status after %+v", s, live)
	}
	sum := 0
	for k, c := range s.Depths {
		if k >= 3 && c > 0 {
			t.Fatalf("depth %d beyond the maximum 3: %v", k+1, s.Depths)
		}
		sum += c
	}
	if sum != s.Verifies {
		t.Fatalf("depths %v sum to %d, %d verifies", s.Depths, sum, s.Verifies)
	}
}
