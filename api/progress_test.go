package api_test

import (
	"context"
	"testing"

	"github.com/strata-llm/strata/engine"
)

// TestEngineStatusShowsLoadProgress: while a model loads, engine.status
// says how far it has come and what is happening (from the engine,
// through the runner); once it is ready the progress is gone.
func TestEngineStatusShowsLoadProgress(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := context.Background()
	if err := h.run.Stop(); err != nil {
		t.Fatal(err)
	}
	reached, release := make(chan engine.Progress, 1), make(chan struct{})
	o := h.eng.Options()
	o.OnProgress = func(p engine.Progress) {
		if p.Phase == engine.PhaseReading && p.Done == p.Total {
			reached <- p
			<-release
		}
	}
	h.eng.SetOptions(o)
	loaded := make(chan error, 1)
	go func() { loaded <- h.run.Start(ctx, "") }()
	want := <-reached
	st, err := c.EngineStatus(ctx)
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	p := st.Progress
	if st.State != "loading" || p == nil || p.Phase != "reading" || p.Text != want.Text || p.Done != want.Total || p.Total != want.Total || p.Fraction != 1 {
		t.Fatalf("engine.status during the load: %s %+v", st.State, p)
	}
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if st, err := c.EngineStatus(ctx); err != nil || st.State != "ready" || st.Progress != nil {
		t.Fatalf("after the load: %+v %v", st, err)
	}
}
