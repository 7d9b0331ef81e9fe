package backendpick

import (
	"context"
	"runtime"
	"time"

	"github.com/strata-llm/strata/metal"
)

// Current describes this machine: Metal only on an Apple-silicon Mac.
func Current(appVersion string) Platform {
	return Platform{OS: runtime.GOOS, Arch: runtime.GOARCH, AppVersion: appVersion, OSVersion: osVersion(),
		Metal: runtime.GOOS == "darwin" && runtime.GOARCH == "arm64"}
}

// MetalSelftest returns the real selftest: every kernel on the default
// Metal device (the GPU on a Mac, the emulator on Linux) against the CPU
// code. quick runs fewer shapes.
func MetalSelftest(quick bool) Selftester {
	return func(ctx context.Context) Verdict {
		start := time.Now()
		v := Verdict{At: start.UTC()}
		dev, err := metal.OpenDefault(ctx, metal.EmulatorOptions{})
		if err != nil {
			v.Error = err.Error()
			return v
		}
		defer dev.Close()
		v.Device = dev.Name()
		rs := metal.Selftest(ctx, dev, metal.SelftestOptions{Quick: quick})
		v.Checks, v.Passed = len(rs), len(rs) > 0 && metal.Passed(rs)
		for _, r := range rs {
			if r.Fail != nil {
				v.Failed = append(v.Failed, r.Check+": "+r.Fail.Error())
			}
		}
		if ctx.Err() != nil {
			v.Passed, v.Error = false, ctx.Err().Error()
		}
		v.TookMS = time.Since(start).Milliseconds()
		return v
	}
}
