package qwen3next_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/synth"
)

type drafted struct {
	toks  []int32
	probs []float64
}

func draftOf(t *testing.T, s model.Session, next int32, n int) drafted {
	t.Helper()
	var d drafted
	if err := s.(model.DraftHead).Draft(context.Background(), next, n, func(tok int32, p float64) {
		d.toks = append(d.toks, tok)
		d.probs = append(d.probs, p)
	}); err != nil {
		t.Fatal(err)
	}
	return d
}

func fwdChunks(t *testing.T, s model.Session, toks []int32, chunks ...int) {
	t.Helper()
	for len(toks) > 0 {
		n := len(toks)
		if len(chunks) > 0 {
			n, chunks = min(chunks[0], n), chunks[1:]
		}
		if err := s.Forward(context.Background(), &model.Batch{Tokens: toks[:n]}); err != nil {
			t.Fatal(err)
		}
		toks = toks[n:]
	}
}

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
			prompt := randTokens(rng, 14, m.Hparams().Vocab)
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
			fwdChunks(t, a, prompt)
			want := draftOf(t, a, next, 3)
			if len(want.toks) != 3 || a.MemoryBytes() <= before {
				t.Fatalf("drafts %v; memory %d → %d", want.toks, before, a.MemoryBytes())
			}
			for _, p := range want.probs {
				if !(p > 0 && p <= 1) {
					t.Fatalf("probabilities %v", want.probs)
				}
			}
			if again := draftOf(t, a, next, 2); !slices.Equal(again.toks, want.toks[:2]) || !slices.Equal(again.probs, want.probs[:2]) {
				t.Fatalf("drafting again: %v, want %v", again, want.toks[:2])
			}

			b := newSess(true)
			fwdChunks(t, b, prompt, 1, 5, 3)
			if got := draftOf(t, b, next, 3); !slices.Equal(got.toks, want.toks) || !slices.Equal(got.probs, want.probs) {
				t.Fatalf("chunked prompt: drafts %v %v, want %v %v", got.toks, got.probs, want.toks, want.probs)
			}

			// A verify of next and 3 drafts, rolled back to next alone, then
			// the next draft: as a session that forwarded next alone.
			fwdChunks(t, a, append([]int32{next}, want.toks...))
			if err := a.Truncate(len(prompt) + 1); err != nil {
				t.Fatal(err)
			}
			fwdChunks(t, b, []int32{next})
			wa, wb := draftOf(t, a, 7, 3), draftOf(t, b, 7, 3)
			if !slices.Equal(wa.toks, wb.toks) || !slices.Equal(wa.probs, wb.probs) {
				t.Fatalf("after a rolled-back verify: %v, want %v", wa, wb)
			}

			// Drafting off: plain forwards are not tracked.
			c := newSess(false)
			fwdChunks(t, c, prompt)
			if d := draftOf(t, c, next, 3); len(d.toks) != 0 {
				t.Fatalf("drafting off: drafts %v", d.toks)
			}
			if got := c.(model.DraftHead).SetDrafting(true); got != 0 {
				t.Fatalf("turned on after %d untracked positions: covers %d", len(prompt), got)
			}
			if d := draftOf(t, c, next, 3); len(d.toks) != 0 {
				t.Fatalf("uncovered: drafts %v", d.toks)
			}
			if err := c.Truncate(0); err != nil {
				t.Fatal(err)
			}
			fwdChunks(t, c, prompt)
			if got := draftOf(t, c, next, 3); !slices.Equal(got.toks, want.toks) {
				t.Fatalf("re-forwarded: %v, want %v", got.toks, want.toks)
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
