package qwen3moe_test

import (
	"context"
	"testing"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/internal/testfix"
)

// TestDecodeAllocations: once the buffers have grown, a decode step
// allocates nothing.
func TestDecodeAllocations(t *testing.T) {
	f, err := gguf.Open(testfix.Path(t, "tiny-qwen3moe-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := qwen3moe.Open(f, qwen3moe.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession(512)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Forward(ctx, []int32{1, 2, 3}, false); err != nil {
		t.Fatal(err)
	}
	tok := []int32{5}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := s.Forward(ctx, tok, false); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per decoded token", allocs)
	if allocs > 0 {
		t.Errorf("%.0f allocations per decoded token", allocs)
	}
}
