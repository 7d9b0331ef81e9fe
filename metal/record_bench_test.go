//go:build linux

package metal_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/metal"
)

// timedDevice measures the time spent in Run (the device's work and the
// handshakes' host code): a step's time minus it is the host's recording.
type timedDevice struct {
	metal.Device
	run time.Duration
}

func (d *timedDevice) Run(ctx context.Context, c *metal.Commands) error {
	t0 := time.Now()
	err := d.Device.Run(ctx, c)
	d.run += time.Since(t0)
	return err
}

// BenchmarkRecordDecodeStep is the host's cost of recording one decode
// step (the engine's graph code calling the backend's ops, the dispatches
// built): what a recorded step replayed would save, per layer.
func BenchmarkRecordDecodeStep(b *testing.B) {
	ctx := context.Background()
	cfg := synth.Defaults(synth.ArchQwen3Next)
	cfg.Type, cfg.Seed, cfg.Layers = ggml.Q4_K, 5, 8
	path := filepath.Join(b.TempDir(), "m.gguf")
	if err := synth.Write(ctx, path, cfg); err != nil {
		b.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	emu, err := metal.NewEmulator(ctx, metal.EmulatorOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	dev := &timedDevice{Device: emu}
	mb := metal.NewBackend(dev)
	newStream := func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		return experts.NewStream(f, l, experts.StreamOptions{Budget: 1 << 30, Readers: 2, Alloc: mb.AllocHost})
	}
	m, err := qwen3next.Open(f, model.Options{Backend: mb, NewExperts: newStream})
	if err != nil {
		b.Fatal(err)
	}
	s, err := m.NewSession(4096)
	if err != nil {
		b.Fatal(err)
	}
	step := func(tok int32) {
		bt := model.Batch{Tokens: []int32{tok}, Logits: []bool{true}}
		if err := s.Forward(ctx, &bt); err != nil {
			b.Fatal(err)
		}
	}
	step(3)
	var total, run time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dev.run = 0
		t0 := time.Now()
		step(int32(10 + i%500))
		total += time.Since(t0)
		run += dev.run
	}
	b.ReportMetric(float64((total-run).Microseconds())/float64(b.N)/float64(cfg.Layers), "record-µs/layer")
}
