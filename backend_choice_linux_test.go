package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strata-llm/strata/internal/backendpick"
	"github.com/strata-llm/strata/internal/settings"
)

// The first-start path with the emulator standing in for a Mac's GPU:
// Auto runs the real (quick) selftest and picks Metal, the engine reports
// it with the reason, and settings.set to CPU switches the engine's next
// load to the CPU through watchSettings.
func TestBackendChoiceFirstStart(t *testing.T) {
	d, err := resolveDirs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := &cmdEnv{Dirs: d, Stdout: io.Discard, Stderr: io.Discard}
	plat := backendpick.Current(version)
	plat.Metal = true
	p, err := openProgram(env, programOptions{Platform: &plat, Selftest: backendpick.MetalSelftest(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	st := p.engine.Status()
	if st.Backend != "metal" || st.BackendFallback || !strings.Contains(st.BackendReason, "the Metal selftest passed on emulator") {
		t.Fatalf("status %+v, want metal after the selftest", st)
	}
	if o := p.engine.Options(); !o.BackendChecked {
		t.Error("the engine would run the selftest again at load")
	}
	if v, err := backendpick.Load(d.Data + "/" + backendpick.FileName); err != nil || v == nil || !v.Passed || v.AppVersion != version {
		t.Fatalf("verdict kept: %+v, %v", v, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.watchSettings(ctx)
	s := p.settings.Get()
	s.Advanced.Backend = settings.BackendCPU
	deadline := time.Now().Add(30 * time.Second)
	for p.engine.Status().Backend != "cpu" {
		if time.Now().After(deadline) {
			t.Fatalf("status after choosing the CPU: %+v", p.engine.Status())
		}
		if err := p.settings.Set(s); err != nil { // again, in case watchSettings subscribed after the last one
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := p.engine.Status().BackendReason; r != "chosen in the settings" {
		t.Errorf("reason %q", r)
	}
}
