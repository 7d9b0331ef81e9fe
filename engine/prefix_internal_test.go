package engine

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/synth"
)

// TestPrefixReuseGivesFreshLogits: the logits that start a generation are
// bit for bit the same when the whole prompt is forwarded and when all of
// it but the last token is reused from the session, for prompts longer
// than a batch-invariant step (whose batches round differently from one
// row).
func TestPrefixReuseGivesFreshLogits(t *testing.T) {
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Layers, cfg.Seed = 2, 4
	path := filepath.Join(t.TempDir(), "m.gguf")
	ctx := context.Background()
	if err := synth.Write(ctx, path, cfg); err != nil {
		t.Fatal(err)
	}
	e := New(Options{Threads: 2, ContextLength: 256})
	defer e.Close()
	if err := e.Load(ctx, path); err != nil {
		t.Fatal(err)
	}
	lm := e.lm
	for _, n := range []int{3, 16, 17, 18, 33, 40, 42, 99, 120} {
		prompt := make([]int32, n)
		for i := range prompt {
			prompt[i] = int32(3 + (i*131+n)%1000)
		}
		if err := lm.sess.Truncate(0); err != nil {
			t.Fatal(err)
		}
		fresh, err := lm.prefill(ctx, prompt)
		if err != nil {
			t.Fatal(err)
		}
		fresh = append([]float32(nil), fresh...)
		if _, err := lm.step(ctx, 7); err != nil { // as if a token was generated
			t.Fatal(err)
		}
		keep := reusable(lm.sess, prompt)
		if keep != n-1 {
			t.Fatalf("n=%d: reusable %d", n, keep)
		}
		if err := lm.sess.Truncate(keep); err != nil {
			t.Fatal(err)
		}
		again, err := lm.prefill(ctx, prompt[keep:])
		if err != nil {
			t.Fatal(err)
		}
		for i := range fresh {
			if math.Float32bits(fresh[i]) != math.Float32bits(again[i]) {
				t.Fatalf("prompt of %d: logit %d differs when the prefix is reused", n, i)
			}
		}
	}
}
