//go:build linux

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

type nullBuf struct{ b []byte }

func (n nullBuf) Bytes() []byte { return n.b }

type nullDev struct{}

func (nullDev) Name() string                                   { return "null" }
func (nullDev) Alloc(n int) (metal.Buffer, error)              { return nullBuf{make([]byte, n)}, nil }
func (nullDev) MaxThreads(string, map[int]int32) (int, error)  { return 1024, nil }
func (nullDev) Run(context.Context, *metal.Commands) error     { return nil }
func (nullDev) Close() error                                   { return nil }

func BenchmarkRecordNull(b *testing.B) {
	ctx := context.Background()
	cfg := synth.Defaults(synth.ArchQwen3Next)
	cfg.Type, cfg.Seed, cfg.Layers = ggml.Q4_K, 5, 8
	path := filepath.Join(b.TempDir(), "m.gguf")
	if err := synth.Write(ctx, path, cfg); err != nil {
		b.Fatal(err)
	}
	f, _ := gguf.Open(path)
	defer f.Close()
	mb := metal.NewBackend(nullDev{})
	m, err := qwen3next.Open(f, model.Options{Backend: mb})
	if err != nil {
		b.Fatal(err)
	}
	s, _ := m.NewSession(4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bt := model.Batch{Tokens: []int32{int32(10 + i%500)}, Logits: []bool{true}}
		if err := s.Forward(ctx, &bt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/8, "µs/layer")
}
