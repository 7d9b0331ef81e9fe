package qwen4exp_test

import (
	"context"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
)

// TestDecodeAllocations: once the buffers have grown, a decode step
// allocates nothing.
func TestDecodeAllocations(t *testing.T) {
	m := synthModel(t, ggml.Q8_0, nil)
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
