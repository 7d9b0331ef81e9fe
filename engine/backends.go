package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/metal"
)

// Backends are the names Options.Backend accepts.
var Backends = []string{"cpu", "metal"}

// newBackend makes the backend opts names. The Metal backend is used only
// after every kernel agreed with the CPU code on this machine (a quick
// selftest), so a bad GPU or driver gives an error, never wrong tokens.
func newBackend(ctx context.Context, opts Options, log *slog.Logger) (backend.Backend, error) {
	switch opts.Backend {
	case "", "cpu":
		return cpu.NewBackend(opts.Threads), nil
	case "metal":
		dev, err := metal.OpenDefault(ctx, metal.EmulatorOptions{})
		if err != nil {
			return nil, fmt.Errorf("metal backend: %w", err)
		}
		start := time.Now()
		rs := metal.Selftest(ctx, dev, metal.SelftestOptions{Quick: true})
		if !metal.Passed(rs) {
			dev.Close()
			var bad []string
			for _, r := range rs {
				if r.Fail != nil {
					bad = append(bad, r.Check+": "+r.Fail.Error())
				}
			}
			return nil, fmt.Errorf("metal backend on %s: the kernel selftest failed (%s)", dev.Name(), strings.Join(bad, "; "))
		}
		log.Info("metal backend", "device", dev.Name(), "selftest", len(rs), "took", time.Since(start).Round(time.Millisecond))
		return metal.NewBackend(dev), nil
	default:
		return nil, fmt.Errorf("unknown backend %q (want one of %s)", opts.Backend, strings.Join(Backends, ", "))
	}
}
