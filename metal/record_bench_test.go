package metal_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/metal"
)

// nullDevice records and runs nothing: a Backend on it costs only the
// host's recording (the engine's graph code calling the ops, the
// dispatches built), which is what replaying a recorded step would save.
type nullDevice struct{}

type nullBuffer []byte

func (b nullBuffer) Bytes() []byte { return b }

func (nullDevice) Name() string                                  { return "null" }
func (nullDevice) Alloc(n int) (metal.Buffer, error)             { return nullBuffer(make([]byte, n)), nil }
func (nullDevice) MaxThreads(string, map[int]int32) (int, error) { return metal.MaxThreadsPerTG, nil }
func (nullDevice) Run(context.Context, *metal.Commands) error    { return nil }
func (nullDevice) Close() error                                  { return nil }

// BenchmarkRecordDecodeStep is the host's cost of one decode step of
// qwen3next through the Backend, per layer (the device does nothing: no
// handshake runs, so no expert is loaded): recorded anew every token, and
// replayed (the step recorded once per shape, then run again with the new
// token and position written).
func BenchmarkRecordDecodeStep(b *testing.B) {
	for _, replay := range []bool{false, true} {
		name := "record"
		if replay {
			name = "replay"
		}
		b.Run(name, func(b *testing.B) { benchDecodeStep(b, replay) })
	}
}

func benchDecodeStep(b *testing.B, replay bool) {
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
	mb := metal.NewBackend(nullDevice{})
	mb.NoReplay = !replay
	m, err := qwen3next.Open(f, model.Options{Backend: mb})
	if err != nil {
		b.Fatal(err)
	}
	s, err := m.NewSession(1 << 16)
	if err != nil {
		b.Fatal(err)
	}
	step := func(i int) {
		bt := model.Batch{Tokens: []int32{int32(10 + i%500)}, Logits: []bool{true}}
		if err := s.Forward(ctx, &bt); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 { // every shape recorded
		step(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(i)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N)/float64(cfg.Layers), "µs/layer")
}
