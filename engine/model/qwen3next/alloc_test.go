package qwen3next_test

import (
	"context"
	"testing"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/internal/testfix"
)

// TestDecodeAllocations: once the buffers have grown, a decode step of the
// converter-written fixture allocates nothing.
func TestDecodeAllocations(t *testing.T) {
	f, err := gguf.Open(testfix.Path(t, testfix.Qwen3NextQ8_0))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := qwen3next.Open(f, model.Options{Backend: modeltest.NewBackend(t, 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := modeltest.NewSession(t, m, 512)
	ctx := context.Background()
	if err := s.Forward(ctx, &model.Batch{Tokens: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	b := model.Batch{Tokens: []int32{5}}
	allocs := testing.AllocsPerRun(50, func() {
		b.Tokens = b.Tokens[:1]
		if err := s.Forward(ctx, &b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%.0f allocations per decoded token", allocs)
	}
}
