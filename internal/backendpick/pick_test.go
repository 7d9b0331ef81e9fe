package backendpick

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-llm/strata/internal/settings"
)

var (
	mac   = Platform{OS: "darwin", Arch: "arm64", AppVersion: "1.2.0", OSVersion: "15.1", Metal: true}
	linux = Platform{OS: "linux", Arch: "amd64", AppVersion: "1.2.0", OSVersion: "6.1.0", Metal: false}
	intel = Platform{OS: "darwin", Arch: "amd64", AppVersion: "1.2.0", OSVersion: "15.1", Metal: false}
)

func pass(ctx context.Context) Verdict {
	return Verdict{Device: "Apple M3", Passed: true, Checks: 101}
}

func fail(ctx context.Context) Verdict {
	return Verdict{Device: "Apple M3", Checks: 101, Failed: []string{"mv Q4_K 64x256: error 0.5 over the bound 0.01"}}
}

func broken(ctx context.Context) Verdict { return Verdict{Error: "no Metal device"} }

// The policy with the selftest injected: which backend, whether the
// selftest ran, whether it is a fallback, and what the reason says.
func TestDecide(t *testing.T) {
	old := &Verdict{AppVersion: "1.1.0", OSVersion: "15.1", Device: "Apple M3", Passed: true, Checks: 90}
	oldOS := &Verdict{AppVersion: "1.2.0", OSVersion: "15.0", Device: "Apple M3", Passed: true, Checks: 101}
	good := &Verdict{AppVersion: "1.2.0", OSVersion: "15.1", Device: "Apple M3", Passed: true, Checks: 101}
	bad := &Verdict{AppVersion: "1.2.0", OSVersion: "15.1", Device: "Apple M3", Checks: 101, Failed: []string{"rope: error 1 over the bound 0.001"}}
	tests := []struct {
		name     string
		choice   settings.Backend
		plat     Platform
		stored   *Verdict
		run      Selftester
		backend  string
		ran      bool
		fallback bool
		reason   string
	}{
		{"cpu chosen on a Mac", settings.BackendCPU, mac, nil, pass, "cpu", false, false, "chosen in the settings"},
		{"auto on linux", settings.BackendAuto, linux, nil, pass, "cpu", false, false, "this is linux/amd64: the Metal backend needs a Mac with Apple silicon"},
		{"metal on linux", settings.BackendMetal, linux, nil, pass, "cpu", false, true, "linux/amd64"},
		{"auto on an Intel Mac", settings.BackendAuto, intel, nil, pass, "cpu", false, false, "darwin/amd64"},
		{"first start passes", settings.BackendAuto, mac, nil, pass, "metal", true, false, "passed on Apple M3 (101 checks, at the first start of this version)"},
		{"first start fails", settings.BackendAuto, mac, nil, fail, "cpu", true, true, "failed on Apple M3 (1 of 101 checks: mv Q4_K"},
		{"metal chosen, selftest fails", settings.BackendMetal, mac, nil, fail, "cpu", true, true, "so that answers stay right"},
		{"no device", settings.BackendAuto, mac, nil, broken, "cpu", true, true, "could not run (no Metal device)"},
		{"kept verdict", settings.BackendAuto, mac, good, fail, "metal", false, false, "at the first start of version 1.2.0"},
		{"kept failure", settings.BackendMetal, mac, bad, pass, "cpu", false, true, "rope: error 1"},
		{"app updated", settings.BackendAuto, mac, old, fail, "cpu", true, true, "failed"},
		{"OS updated", settings.BackendAuto, mac, oldOS, pass, "metal", true, false, "this version"},
		{"unknown choice", settings.Backend("cuda"), mac, good, pass, "cpu", false, true, `"cuda" is not a backend`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := 0
			run := func(ctx context.Context) Verdict { runs++; return tt.run(ctx) }
			d := Decide(context.Background(), tt.choice, tt.plat, tt.stored, run)
			if d.Backend != tt.backend || d.Ran != tt.ran || d.Fallback != tt.fallback || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("Decide = %+v, want backend %s ran %v fallback %v reason ~%q", d, tt.backend, tt.ran, tt.fallback, tt.reason)
			}
			if (runs == 1) != tt.ran || runs > 1 {
				t.Errorf("selftest ran %d times", runs)
			}
			if d.Checked != (d.Backend == "metal") {
				t.Errorf("Checked %v for %s", d.Checked, d.Backend)
			}
			if d.Ran && (d.Verdict.AppVersion != tt.plat.AppVersion || d.Verdict.OSVersion != tt.plat.OSVersion) {
				t.Errorf("new verdict not stamped with the versions: %+v", d.Verdict)
			}
		})
	}
}

// A selftest cut short is no verdict: CPU now, test again next start.
func TestDecideInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := Decide(ctx, settings.BackendAuto, mac, nil, func(context.Context) Verdict {
		cancel()
		return Verdict{Device: "Apple M3", Checks: 3, Error: "context canceled"}
	})
	if d.Backend != "cpu" || d.Ran || !d.Fallback || !strings.Contains(d.Reason, "interrupted") {
		t.Fatalf("Decide = %+v", d)
	}
}

func TestManyFailuresBounded(t *testing.T) {
	d := Decide(context.Background(), settings.BackendAuto, mac, nil, func(context.Context) Verdict {
		v := Verdict{Device: "Apple M3", Checks: 101}
		for i := 0; i < 30; i++ {
			v.Failed = append(v.Failed, fmt.Sprintf("check %d: bad", i))
		}
		return v
	})
	if len(d.Verdict.Failed) != MaxFailed+1 || !strings.Contains(d.Reason, "(30 of 101 checks") || !strings.Contains(d.Reason, "… and 22 more") {
		t.Fatalf("Decide = %+v", d)
	}
}

// Resolve keeps the verdict: the second start does not test again, an app
// update does, and a damaged file means testing again, not an error.
func TestResolveKeepsVerdict(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	runs := 0
	run := func(ctx context.Context) Verdict { runs++; return fail(ctx) }
	ctx := context.Background()
	d := Resolve(ctx, path, settings.BackendAuto, mac, run, nil)
	if d.Backend != "cpu" || !d.Fallback || runs != 1 {
		t.Fatalf("first start: %+v runs %d", d, runs)
	}
	d = Resolve(ctx, path, settings.BackendAuto, mac, run, nil)
	if d.Backend != "cpu" || d.Ran || runs != 1 || !strings.Contains(d.Reason, "mv Q4_K") {
		t.Fatalf("second start: %+v runs %d", d, runs)
	}
	up := mac
	up.AppVersion = "1.3.0"
	d = Resolve(ctx, path, settings.BackendAuto, up, pass, nil)
	if d.Backend != "metal" || !d.Ran {
		t.Fatalf("after an update: %+v", d)
	}
	if v, err := Load(path); err != nil || v.AppVersion != "1.3.0" || !v.Passed {
		t.Fatalf("kept %+v, %v", v, err)
	}
	for _, junk := range []string{"{", `{"passed":true}`, strings.Repeat(" ", maxFile+1)} {
		if err := os.WriteFile(path, []byte(junk), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil {
			t.Errorf("Load(%.20q): no error", junk)
		}
		runs = 0
		if d := Resolve(ctx, path, settings.BackendMetal, mac, run, nil); !d.Ran || runs != 1 {
			t.Errorf("damaged file %.20q: %+v runs %d", junk, d, runs)
		}
	}
}

func TestCurrent(t *testing.T) {
	p := Current("9.9.9")
	if p.AppVersion != "9.9.9" || p.OS == "" || p.Metal != (p.OS == "darwin" && p.Arch == "arm64") {
		t.Fatalf("Current = %+v", p)
	}
	if p.OS == "linux" && p.OSVersion == "" {
		t.Error("no kernel release on Linux")
	}
}
