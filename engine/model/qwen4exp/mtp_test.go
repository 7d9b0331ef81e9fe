package qwen4exp_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
	"github.com/strata-llm/strata/engine/model/qwen4exp"
	"github.com/strata-llm/strata/engine/synth"
)

// mtpEdit gives a file one MTP block, with QSA and PLE on so the head runs
// beside both.
func mtpEdit(c *synth.Config) {
	c.MTP, c.WeightScale = 1, 8
	c.CompressRatio, c.PLELayer = 4, 0
}

// TestMTPDraftHead: the MTP head's drafts depend only on the tokens the
// session holds: the same whether the prompt was forwarded in one batch or
// in chunks, after drafts and a verify that was rolled back (the head's
// own KV rows of the rejected positions are rewritten), after a rollback
// several positions back to an older checkpoint, and after the rows past
// the context were used as a draft's scratch; with drafting off nothing is
// tracked, so turning it on later reports the shorter coverage and drafts
// nothing until the session is forwarded again.
func TestMTPDraftHead(t *testing.T) {
	for _, typ := range []ggml.Type{ggml.F32, ggml.Q4_K} {
		t.Run(typ.String(), func(t *testing.T) {
			m := synthModel(t, typ, mtpEdit)
			if m.MTPBlocks() != 1 || m.Hparams().Layers != 4 || m.Hparams().MTP != 1 {
				t.Fatalf("%d MTP blocks, hparams %d layers %d MTP", m.MTPBlocks(), m.Hparams().Layers, m.Hparams().MTP)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			prompt := modeltest.RandTokens(rng, 14, m.Hparams().Vocab)
			next := int32(5)
			newSess := func(on bool) model.Session {
				s := modeltest.NewSession(t, m, 64)
				t.Cleanup(func() { s.Close() })
				h := s.(model.DraftHead)
				if h.DraftDepth() != qwen4exp.MTPDepth {
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
			if again := modeltest.Draft(t, a, next, 2); !again.Same(modeltest.Drafted{Toks: want.Toks[:2], Probs: want.Probs[:2]}) {
				t.Fatalf("drafting again: %v, want %v", again, want.Toks[:2])
			}
			if other := modeltest.Draft(t, a, next+1, 3); other.Same(want) {
				t.Logf("another next token drafts the same: %v", other.Toks) // possible, not wrong
			}

			b := newSess(true)
			modeltest.ForwardChunks(t, b, prompt, 1, 5, 3)
			if got := modeltest.Draft(t, b, next, 3); !got.Same(want) {
				t.Fatalf("chunked prompt: drafts %v %v, want %v %v", got.Toks, got.Probs, want.Toks, want.Probs)
			}

			// A verify of next and 3 drafts, rolled back to next alone,
			// then the next draft: as a session that forwarded next alone.
			modeltest.ForwardChunks(t, a, append([]int32{next}, want.Toks...))
			if err := a.Truncate(len(prompt) + 1); err != nil {
				t.Fatal(err)
			}
			modeltest.ForwardChunks(t, b, []int32{next})
			wa, wb := modeltest.Draft(t, a, 7, 3), modeltest.Draft(t, b, 7, 3)
			if !wa.Same(wb) {
				t.Fatalf("after a rolled-back verify: %v, want %v", wa, wb)
			}
			// Six more positions one by one, back five (an older
			// checkpoint), then other tokens: as a fresh session.
			more := modeltest.RandTokens(rng, 6, m.Hparams().Vocab)
			modeltest.ForwardChunks(t, a, more, 1, 1, 1, 1, 1, 1)
			keep := a.Len() - 5
			if err := a.Truncate(keep); err != nil {
				t.Fatal(err)
			}
			other := modeltest.RandTokens(rng, 4, m.Hparams().Vocab)
			modeltest.ForwardChunks(t, a, other, 4)
			c := newSess(true)
			modeltest.ForwardChunks(t, c, append(slices.Clone(a.Tokens()[:keep]), other...))
			if ga, gc := modeltest.Draft(t, a, 9, 3), modeltest.Draft(t, c, 9, 3); !ga.Same(gc) {
				t.Fatalf("after a rollback of 5: %v, fresh session %v", ga, gc)
			}

			// Drafting off: plain forwards are not tracked.
			d := newSess(false)
			modeltest.ForwardChunks(t, d, prompt)
			if got := modeltest.Draft(t, d, next, 3); len(got.Toks) != 0 {
				t.Fatalf("drafting off: drafts %v", got.Toks)
			}
			if got := d.(model.DraftHead).SetDrafting(true); got != 0 {
				t.Fatalf("turned on after %d untracked positions: covers %d", len(prompt), got)
			}
			if got := modeltest.Draft(t, d, next, 3); len(got.Toks) != 0 {
				t.Fatalf("uncovered: drafts %v", got.Toks)
			}
			if err := d.Truncate(0); err != nil {
				t.Fatal(err)
			}
			modeltest.ForwardChunks(t, d, prompt)
			if got := modeltest.Draft(t, d, next, 3); !got.Same(want) {
				t.Fatalf("re-forwarded: %v, want %v", got.Toks, want.Toks)
			}
			if err := d.(model.DraftHead).Draft(context.Background(), int32(m.Hparams().Vocab), 1, func(int32, float64) {}); err == nil {
				t.Fatal("a draft after a token outside the vocabulary: no error")
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := d.(model.DraftHead).Draft(context.Background(), next, 1, func(int32, float64) {}); err == nil {
				t.Fatal("draft on a closed session: no error")
			}
		})
	}
}

// TestMTPLeavesTrunk: the trunk of a file with an MTP block computes
// exactly the logits of the same file without it (synth draws every
// tensor from its own name, so the trunks are the same bytes; the file
// without it agrees with llama.cpp, which refuses the one with it), with
// drafting on or off, and drafts between forwards change nothing.
func TestMTPLeavesTrunk(t *testing.T) {
	edit := func(mtp int) func(*synth.Config) {
		return func(c *synth.Config) { mtpEdit(c); c.MTP = mtp }
	}
	plain := synthModel(t, ggml.Q8_0, edit(0))
	withMTP := synthModel(t, ggml.Q8_0, edit(1))
	if plain.MTPBlocks() != 0 || withMTP.MTPBlocks() != 1 {
		t.Fatalf("MTP blocks %d, %d", plain.MTPBlocks(), withMTP.MTPBlocks())
	}
	if sp := modeltest.NewSession(t, plain, 8); sp.(model.DraftHead).DraftDepth() != 0 {
		t.Fatal("a file without MTP blocks drafts")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	toks := modeltest.RandTokens(rng, 24, plain.Hparams().Vocab)
	want := modeltest.ForwardAll(t, modeltest.NewSession(t, plain, 64), toks)
	for _, on := range []bool{false, true} {
		s := modeltest.NewSession(t, withMTP, 64)
		s.(model.DraftHead).SetDrafting(on)
		var got [][]float32
		for i := 0; i < len(toks); {
			n := min(1+i%5, len(toks)-i)
			got = append(got, modeltest.ForwardAll(t, s, toks[i:i+n])...)
			modeltest.Draft(t, s, 3, 3)
			i += n
		}
		for i := range want {
			if !modeltest.SameBits(got[i], want[i]) {
				t.Fatalf("drafting %v: position %d's logits differ from the file without an MTP block", on, i)
			}
		}
	}
}

// TestMTPRefusesBrokenBlocks: an MTP block missing a nextn tensor or a
// layer tensor, or one of the wrong shape, is refused with the tensor's
// name; optional nextn tensors may be absent.
func TestMTPRefusesBrokenBlocks(t *testing.T) {
	src := writeSynth(t, ggml.Q8_0, func(c *synth.Config) { c.MTP = 1 })
	for _, name := range []string{"blk.4.nextn.eh_proj.weight", "blk.4.nextn.enorm.weight", "blk.4.nextn.hnorm.weight",
		"blk.4.hc_attn_inject.weight", "blk.4.attn_q.weight", "blk.4.ffn_up_exps.weight"} {
		t.Run("missing "+name, func(t *testing.T) { refuses(t, modeltest.Rewrite(t, src, nil, modeltest.Drop(name)), []string{name}) })
	}
	t.Run("eh_proj shape", func(t *testing.T) {
		refuses(t, modeltest.Rewrite(t, src, nil, func(ti *gguf.TensorInfo) bool {
			if ti.Name == "blk.4.nextn.eh_proj.weight" {
				ti.Dims[0], ti.Dims[1] = ti.Dims[1], ti.Dims[0] // the same bytes, transposed
			}
			return true
		}), []string{"blk.4.nextn.eh_proj.weight"})
	})
	t.Run("recurrent MTP block", func(t *testing.T) {
		key := qwen4exp.Arch + ".attention.recurrent_layers"
		path := modeltest.Rewrite(t, src, func(e *gguf.KV) bool {
			if e.Key == qwen4exp.Arch+".full_attention_interval" {
				// Stands in for the key that rewrite cannot add: replaced
				// by recurrent_layers with the MTP block recurrent.
				e.Key, e.Value = key, gguf.Bools([]bool{true, true, true, false, true})
			}
			return true
		}, nil)
		refuses(t, path, []string{key, "MTP block 4"})
	})
	// Without the optional shared_head_norm the block still loads and drafts.
	f, err := gguf.Open(modeltest.Rewrite(t, src, nil, modeltest.Drop("blk.4.nextn.shared_head_norm.weight")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := qwen4exp.Open(f, model.Options{Backend: modeltest.NewBackend(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := modeltest.NewSession(t, m, 16)
	s.(model.DraftHead).SetDrafting(true)
	modeltest.ForwardChunks(t, s, []int32{1, 2, 3})
	if d := modeltest.Draft(t, s, 4, 3); len(d.Toks) != 3 {
		t.Fatalf("drafts %v", d.Toks)
	}
}
