// Package backendpick decides what runs the model, the Metal GPU or the
// CPU, from the advanced.backend setting, the platform and the Metal kernel
// selftest. The selftest runs at the first start of each app and OS
// version; its verdict is kept in a file, so later starts decide at once.
// A Mac whose GPU fails the selftest falls back to the CPU and says why, so
// a user never gets wrong tokens from a bad GPU or driver.
//
// Decide is the pure policy (the selftest injected); Resolve adds the
// verdict file; MetalSelftest runs the real selftest.
package backendpick

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/strata-llm/strata/internal/settings"
)

// Platform describes the machine and the app.
type Platform struct {
	OS, Arch   string // runtime.GOOS, runtime.GOARCH
	AppVersion string
	OSVersion  string // macOS product version ("15.1"), or the kernel release elsewhere
	// Metal: a Metal device can be tested here (an Apple-silicon Mac;
	// tests set it on Linux, where the selftest runs on the emulator).
	Metal bool
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Verdict is the outcome of one Metal selftest, as kept in the file.
type Verdict struct {
	AppVersion string    `json:"app_version"`
	OSVersion  string    `json:"os_version"`
	Device     string    `json:"device,omitempty"`
	Passed     bool      `json:"passed"`
	Checks     int       `json:"checks"`
	Failed     []string  `json:"failed,omitempty"` // "check: what", at most MaxFailed
	Error      string    `json:"error,omitempty"`  // the device could not be opened or the run stopped
	At         time.Time `json:"at"`
	TookMS     int64     `json:"took_ms"`
}

// MaxFailed bounds Verdict.Failed.
const MaxFailed = 8

// Selftester runs the Metal selftest and returns its verdict (versions
// are filled in by Decide).
type Selftester func(ctx context.Context) Verdict

// Decision is what runs the model and why.
type Decision struct {
	Backend string // "cpu" or "metal" (engine.Options.Backend)
	// Reason is a sentence fragment for the settings window, the status
	// and the log ("the Metal selftest passed on Apple M3 (101 checks)").
	Reason string
	// Fallback: Metal was wanted (chosen, or Auto on a Mac) and the CPU
	// runs the model instead.
	Fallback bool
	// Checked: the selftest passed on this device for these versions, so
	// the engine need not run it again at load (engine.Options.BackendChecked).
	Checked bool
	// Verdict is the selftest's, when one was consulted.
	Verdict *Verdict
	// Ran: the selftest ran now (first start of these versions, or a
	// changed version); Resolve keeps its verdict.
	Ran bool
}

// Decide applies the policy:
//   - CPU: the CPU, no selftest.
//   - Auto or Metal where no Metal device can be tested (not an
//     Apple-silicon Mac): the CPU, saying so.
//   - Auto or Metal on a Mac: the stored verdict if it is for this app and
//     OS version, else a new selftest (run); Metal if it passed, else the
//     CPU with the failures as the reason.
//
// A selftest cut short by ctx is not a verdict: the CPU runs this time and
// the next start tests again (Ran stays false).
func Decide(ctx context.Context, choice settings.Backend, p Platform, stored *Verdict, run Selftester) Decision {
	switch choice {
	case settings.BackendCPU:
		return Decision{Backend: "cpu", Reason: "chosen in the settings"}
	case settings.BackendAuto, settings.BackendMetal:
	default:
		return Decision{Backend: "cpu", Reason: fmt.Sprintf("the setting %q is not a backend; using the CPU", choice), Fallback: true}
	}
	if !p.Metal {
		why := fmt.Sprintf("this is %s: the Metal backend needs a Mac with Apple silicon", p)
		return Decision{Backend: "cpu", Reason: why, Fallback: choice == settings.BackendMetal}
	}
	v, ran := stored, false
	if v == nil || v.AppVersion != p.AppVersion || v.OSVersion != p.OSVersion {
		nv := run(ctx)
		nv.AppVersion, nv.OSVersion = p.AppVersion, p.OSVersion
		if len(nv.Failed) > MaxFailed {
			nv.Failed = append(nv.Failed[:MaxFailed:MaxFailed], fmt.Sprintf("… and %d more", len(nv.Failed)-MaxFailed))
		}
		if ctx.Err() != nil {
			return Decision{Backend: "cpu", Reason: "the Metal selftest was interrupted; it runs again at the next start", Fallback: true, Verdict: &nv}
		}
		v, ran = &nv, true
	}
	d := Decision{Verdict: v, Ran: ran}
	when := "at the first start of this version"
	if !ran {
		when = "at the first start of version " + v.AppVersion
	}
	switch {
	case v.Passed:
		d.Backend, d.Checked = "metal", true
		d.Reason = fmt.Sprintf("the Metal selftest passed on %s (%d checks, %s)", v.Device, v.Checks, when)
	case v.Error != "":
		d.Backend, d.Fallback = "cpu", true
		d.Reason = fmt.Sprintf("the Metal selftest could not run (%s); the CPU runs the model", v.Error)
	default:
		d.Backend, d.Fallback = "cpu", true
		d.Reason = fmt.Sprintf("the Metal selftest failed on %s (%d of %d checks: %s); the CPU runs the model so that answers stay right",
			v.Device, failedCount(v), v.Checks, strings.Join(v.Failed, "; "))
	}
	return d
}

func failedCount(v *Verdict) int {
	n := len(v.Failed)
	if n > 0 && strings.HasPrefix(v.Failed[n-1], "… and ") {
		var more int
		fmt.Sscanf(strings.TrimPrefix(v.Failed[n-1], "… and "), "%d", &more)
		n += more - 1
	}
	return n
}
