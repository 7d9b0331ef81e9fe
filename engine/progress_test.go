package engine_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
)

// TestLoadProgress: a load reports its phases, in Status while it runs and
// to Options.OnProgress: reading the weights into memory (bytes, up to the
// file's size), and for a streamed model with a usage history filling the
// expert cache from it (experts, until every one queued is in). Progress
// is gone once the model is ready.
func TestLoadProgress(t *testing.T) {
	path := writeSynth(t, t.TempDir(), func(c *synth.Config) {
		c.Layers, c.Experts, c.ExpertsUsed, c.RouterSkew = 3, 16, 2, 1.2
	})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		p      engine.Progress
		status engine.Status
	}
	load := func(o engine.Options) (*engine.Engine, []seen) {
		var mu sync.Mutex
		var got []seen
		var eng *engine.Engine
		o.OnProgress = func(p engine.Progress) {
			st := eng.Status() // outside the engine's locks: no deadlock
			mu.Lock()
			got = append(got, seen{p, st})
			mu.Unlock()
		}
		eng = engine.New(o)
		if err := eng.Load(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		if st := eng.Status(); st.State != engine.StateReady || st.Progress != nil {
			t.Fatalf("after the load: %s, progress %+v", st.State, st.Progress)
		}
		return eng, got
	}
	check := func(got []seen, phase string, total int64) {
		t.Helper()
		if len(got) < 2 {
			t.Fatalf("%s: %d progress reports", phase, len(got))
		}
		var last int64 = -1
		for _, s := range got {
			p := s.p
			if p.Phase != phase || p.Text == "" || p.Total != total && total > 0 || p.Done < last || p.Done > p.Total {
				t.Fatalf("%s: report %+v", phase, p)
			}
			last = p.Done
			if s.status.State != engine.StateLoading || s.status.Progress == nil || *s.status.Progress != p {
				t.Fatalf("%s: status %s %+v during %+v", phase, s.status.State, s.status.Progress, p)
			}
		}
		if first, end := got[0].p, got[len(got)-1].p; first.Done != 0 || first.Fraction != 0 || end.Done != end.Total || end.Fraction != 1 {
			t.Fatalf("%s: from %+v to %+v", phase, first, end)
		}
	}

	eng, got := load(engine.Options{Threads: 2, Streaming: engine.StreamNever})
	eng.Close()
	check(got, engine.PhaseReading, fi.Size())

	dir := t.TempDir()
	stream := engine.Options{Threads: 2, Streaming: engine.StreamAlways, ExpertCache: 20 * 200 << 10, HistoryDir: dir}
	eng, got = load(stream)
	if len(got) != 0 { // mapped, and no history yet: nothing to show
		t.Fatalf("first streamed load: %+v", got)
	}
	hitRate(t, eng, "learn which experts this uses", 16)
	eng.Close()
	eng, got = load(stream)
	defer eng.Close()
	// The first report is taken before any read ends: 0 of them.
	check(got, engine.PhaseWarming, 0)
	if n := got[len(got)-1].p.Total; n < 10 {
		t.Fatalf("warmed %d experts", n)
	}
}
