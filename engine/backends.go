package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/gguf"
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
		if opts.BackendChecked {
			log.Info("metal backend", "device", dev.Name(), "selftest", "passed at first start of this version")
			return metal.NewBackend(dev), nil
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

// hostMapper is a backend that wraps large host memory (the file's memory
// map, the expert arena) once, so that the expert slices inside it need no
// wrap or copy of their own (the Metal backend's no-copy buffers).
type hostMapper interface {
	MapHost(mem []byte) (int, error)
}

// mapHost hands be the model file's mappings (f non-nil) and, when experts
// stream, the arena they are read into.
func mapHost(be backend.Backend, f *gguf.File, stream **experts.Stream, log *slog.Logger) error {
	hm, ok := be.(hostMapper)
	if !ok {
		return nil
	}
	var mems [][]byte
	if f != nil {
		mems = f.Mappings()
	}
	if stream != nil && *stream != nil {
		mems = append(mems, (*stream).Arena())
	}
	if len(mems) == 0 {
		return nil
	}
	n := 0
	for _, m := range mems {
		k, err := hm.MapHost(m)
		if err != nil {
			return err
		}
		n += k
	}
	log.Info("backend wraps host memory", "regions", len(mems), "buffers", n)
	return nil
}
