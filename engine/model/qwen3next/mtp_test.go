package qwen3next_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/synth"
)

// TestMTPDraftHead: the MTP head's drafts depend only on the tokens the
// session holds: the same whether the prompt was forwarded in one batch or
// in chunks, after drafts and a verify that was rolled back, and after a
// rollback to a checkpoint; with drafting off nothing is tracked, so
// turning it on later reports the shorter coverage and drafts nothing.
func TestMTPDraftHead(t *testing.T) {
	for _, typ := range []ggml.Type{ggml.F32, ggml.Q4_K} {
		t.Run(typ.String(), func(t *testing.T) {
			m := synthModel(t, typ, func(c *synth.Config) { c.MTP, c.WeightScale = 1, 8 })
			if m.MTPBlocks() != 1 {
				t.Fatalf("%d MTP blocks", m.MTPBlocks())
			}
			rng := rand.New(rand.NewPCG(3, 4))
			prompt := modeltest.RandTokens(rng, 14, m.Hparams().Vocab)
			next := int32(5)
			newSess := func(on bool) model.Session {
				s, err := m.NewSession(64)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				h := s.(model.DraftHead)
				if h.DraftDepth() != qwen3next.MTPDepth {
					t.Fatalf("depth %d", h.DraftDepth())
				}
				if got := h.SetDrafting(on); got != 0 {
					t.Fatalf("an empty session covers %d", got)
				}
				return s
			}
			a := newSess(true)
			before := a.MemoryBytes()
			modeltest.ForwardChunks(t, a, prompt)
			want := modeltest.Draft(t, a, next, 3)
			if len(want.Toks) != 3 || a.MemoryBytes() <= before {
				t.Fatalf("drafts %v; memory %d → %d", want.Toks, before, a.MemoryBytes())
			}
			for _, p := range want.Probs {
				if !(p > 0 && p <= 1) {
					t.Fatalf("probabilities %v", want.Probs)
				}
			}
			if again := modeltest.Draft(t, a, next, 2); !slices.Equal(again.Toks, want.Toks[:2]) || !slices.Equal(again.Probs, want.Probs[:2]) {
				t.Fatalf("drafting again: %v, want %v", again, want.Toks[:2])
			}

			b := newSess(true)
			modeltest.ForwardChunks(t, b, prompt, 1, 5, 3)
			if got := modeltest.Draft(t, b, next, 3); !slices.Equal(got.Toks, want.Toks) || !slices.Equal(got.Probs, want.Probs) {
				t.Fatalf("chunked prompt: drafts %v %v, want %v %v", got.Toks, got.Probs, want.Toks, want.Probs)
			}

			// A verify of next and 3 drafts, rolled back to next alone, then
			// the next draft: as a session that forwarded next alone.
			modeltest.ForwardChunks(t, a, append([]int32{next}, want.Toks...))
			if err := a.Truncate(len(prompt) + 1); err != nil {
				t.Fatal(err)
			}
			modeltest.ForwardChunks(t, b, []int32{next})
			wa, wb := modeltest.Draft(t, a, 7, 3), modeltest.Draft(t, b, 7, 3)
			if !slices.Equal(wa.Toks, wb.Toks) || !slices.Equal(wa.Probs, wb.Probs) {
				t.Fatalf("after a rolled-back verify: %v, want %v", wa, wb)
			}

			// Drafting off: plain forwards are not tracked.
			c := newSess(false)
			modeltest.ForwardChunks(t, c, prompt)
			if d := modeltest.Draft(t, c, next, 3); len(d.Toks) != 0 {
				t.Fatalf("drafting off: drafts %v", d.Toks)
			}
			if got := c.(model.DraftHead).SetDrafting(true); got != 0 {
				t.Fatalf("turned on after %d untracked positions: covers %d", len(prompt), got)
			}
			if d := modeltest.Draft(t, c, next, 3); len(d.Toks) != 0 {
				t.Fatalf("uncovered: drafts %v", d.Toks)
			}
			if err := c.Truncate(0); err != nil {
				t.Fatal(err)
			}
			modeltest.ForwardChunks(t, c, prompt)
			if got := modeltest.Draft(t, c, next, 3); !slices.Equal(got.Toks, want.Toks) {
				t.Fatalf("re-forwarded: %v, want %v", got.Toks, want.Toks)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.(model.DraftHead).Draft(context.Background(), next, 1, func(int32, float64) {}); err == nil {
				t.Fatal("draft on a closed session: no error")
			}
		})
	}
}
