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
// row), on an attention-only and a hybrid (recurrent-state) architecture.
func TestPrefixReuseGivesFreshLogits(t *testing.T) {
	for _, arch := range []string{synth.ArchQwen3MoE, synth.ArchQwen3Next} {
		t.Run(arch, func(t *testing.T) { testPrefixReuse(t, arch) })
	}
}

func testPrefixReuse(t *testing.T, arch string) {
	cfg := synth.Defaults(arch)
	cfg.Layers, cfg.Seed = 2, 4
	if arch == synth.ArchQwen3Next {
		cfg.FullAttnInterval = 2 // a DeltaNet and an attention layer
	}
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
	if arch == synth.ArchQwen3Next {
		// A prefix further back than the recurrent checkpoints: nothing is
		// reused, the prompt is forwarded from the start.
		if err := lm.sess.Truncate(0); err != nil {
			t.Fatal(err)
		}
		long := make([]int32, 40)
		for i := range long {
			long[i] = int32(5 + i)
		}
		if _, err := lm.prefill(ctx, long); err != nil {
			t.Fatal(err)
		}
		prompt := append(append([]int32(nil), long[:20]...), 900, 901)
		if keep := reusable(lm.sess, prompt); keep != 0 {
			t.Fatalf("reusable %d of a prefix 20 back beyond the checkpoints", keep)
		}
	}
}
