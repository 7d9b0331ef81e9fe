package backendpick

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-llm/strata/internal/settings"
)

// The whole path on the emulator: Auto on a (pretended) Metal platform
// runs the real selftest, picks Metal, keeps the verdict, and the next
// start decides from the file.
func TestResolveEmulator(t *testing.T) {
	p := Current("1.0.0-test")
	p.Metal = true // the emulator stands in for the GPU
	path := filepath.Join(t.TempDir(), FileName)
	d := Resolve(context.Background(), path, settings.BackendAuto, p, MetalSelftest(true), nil)
	if d.Backend != "metal" || !d.Ran || !d.Checked || !strings.Contains(d.Reason, "passed on emulator") {
		t.Fatalf("Resolve = %+v (verdict %+v)", d, d.Verdict)
	}
	if d.Verdict.Checks < 50 {
		t.Errorf("only %d checks", d.Verdict.Checks)
	}
	again := Resolve(context.Background(), path, settings.BackendAuto, p, func(context.Context) Verdict {
		t.Fatal("the selftest ran again for the same versions")
		return Verdict{}
	}, nil)
	if again.Backend != "metal" || again.Ran {
		t.Fatalf("second start: %+v", again)
	}
}
