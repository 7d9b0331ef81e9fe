package qwen4exp

import (
	"context"
	"fmt"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// MTPDepth is the most tokens one Draft proposes: the first MTP block run
// again on its own output, as for qwen3next.
const MTPDepth = 3

// The MTP (nextn) head. llama.cpp has none for qwen4exp (its converter
// drops the checkpoint's MTP block, and its loader refuses a file that
// carries one: it creates the trunk's tensors only), so its layout here is
// ours. It keeps qwen3next's nextn tensors and data flow (llama.cpp's
// qwen3next graph_mtp) and puts a qwen4exp full-attention layer where
// qwen3next has its own kind of layer:
//
//	x = eh_proj · [enorm(embed(token)); hnorm(h)]   (h: the trunk's h_{p−1})
//	X = HC copies of x                               (as the trunk starts from the embedding)
//	X = hc_attn.Combine(X, gated attention(hc_attn.Mix(X)))   (its own KV cache, dense)
//	X = hc_ffn.Combine(X, MoE + shared expert(hc_ffn.Mix(X)))
//	h' = shared_head_norm(output_hc.Mix(X)); logits = head(h')
//
// Why this layout: h, the trunk's final hidden state of the previous
// position, is taken after the final hyper-connection mixer (output_hc_*),
// the one place where the trunk's HC streams become one embd-wide state,
// the head's input: llama.cpp's h_nextn for qwen3next is likewise the
// state after the output norm, and qwen4exp's output norm is that mixer.
// The block is then exactly a trunk full-attention layer of the same
// file (blk.N.hc_attn_*, hc_ffn_*, attn_*, ffn_*: the tensors the
// converter would write for the checkpoint's MTP layer, which is a
// transformer layer of the model's own kind), so it reuses the trunk's
// code; a narrow layer with RMSNorms would need tensors a qwen4exp layer
// does not have. Its output streams are collapsed by the trunk's own
// final mixer, as qwen3next's head falls back to the trunk's output norm,
// and nextn.shared_head_norm, when present, is an RMSNorm after it (the
// mixer's gated mean of normalised streams is not itself of unit RMS).
// The block attends densely (no QSA indexer): a draft covers at most
// MTPDepth positions past the context, and its cache is one layer.
//
// Row p of the head pairs the token at position p with h_{p−1} and
// predicts the token at p+1. While drafting is on every Forward also runs
// the head's K/V over the batch's rows (the rest of the block is not
// needed there), so the head attends to every earlier position; a draft
// runs the whole block at position Len() with the token about to be
// forwarded and h_{Len()−1}, and again at Len()+1… with its own token and
// h'. Its KV rows past the session's length are scratch: a rollback
// (Truncate) only moves the covered length back and restores the h kept
// beside the recurrent checkpoint it returns to.
type mtpBlock struct {
	layer
	blocks.NextN // HeadNorm nil: the final mixer alone
	experts      model.LayerExperts
}

// loadMTP reads MTP block i: a full-attention qwen4exp block (no indexer)
// plus its nextn tensors.
func (m *Model) loadMTP(ld *blocks.Loader, i int) (mtpBlock, error) {
	var b mtpBlock
	le, err := m.loadLayer(ld, i, &b.layer)
	if err != nil {
		return b, err
	}
	b.experts = le
	b.NextN, err = ld.NextN(i, m.hp.Embd, m.hp.Vocab)
	return b, err
}

// initMTPExperts gives the MTP blocks their experts, read from the file's
// mapping even when the trunk's stream through the expert cache: only
// drafts use them, and exact routing (no cache-aware routing, no usage
// history) keeps the head's drafts independent of the cache.
func (m *Model) initMTPExperts(f *gguf.File) error {
	if len(m.mtp) == 0 {
		return nil
	}
	hp := m.hp
	ml := model.ExpertLayout{Experts: hp.Experts, Layers: make([]*model.LayerExperts, hp.Layers+len(m.mtp))}
	for j := range m.mtp {
		ml.Layers[hp.Layers+j] = &m.mtp[j].experts
	}
	mp, err := experts.NewFile(f, &ml)
	if err != nil {
		return fmt.Errorf("%s: MTP block: %w", Arch, err)
	}
	for j := range m.mtp {
		m.mtp[j].moe.Provider = mp
	}
	return nil
}

// MTPBlocks is the number of MTP blocks the file carries (the first drafts
// for speculation; plain decoding runs none).
func (m *Model) MTPBlocks() int { return len(m.mtp) }

func (b *mtpBlock) embedding(m *Model) *backend.Matrix {
	if b.EmbedTokens != nil {
		return b.EmbedTokens
	}
	return m.embd
}

// mtpState is a session's MTP head: its cache (blocks.MTPCache) and
// buffers.
type mtpState struct {
	blocks.MTPCache

	// Buffers, grown to the largest batch.
	rows                 int
	emb, cur, y, out, hn []float32 // [rows][embd]
	cat                  []float32 // [rows][2·embd]
	xw                   []float32 // [rows][HC·embd]: the block's HC residual
	logits               []float32
	hc                   blocks.HCBuf
	attn                 blocks.AttnBuf
	moe                  blocks.MoEBuf
	tok                  [1]int32
}

// bytes is what the head's cache and buffers hold.
func (ms *mtpState) bytes() int64 {
	if ms.KV == nil {
		return 0
	}
	return ms.MTPCache.Bytes() + 4*int64(cap(ms.emb)+cap(ms.cur)+cap(ms.y)+cap(ms.out)+cap(ms.hn)+cap(ms.cat)+cap(ms.xw)+cap(ms.logits)) +
		ms.hc.Bytes() + ms.attn.Bytes() + ms.moe.Bytes()
}

func (ms *mtpState) ensure(be backend.Backend, rows int, hp *Hparams) {
	if rows <= ms.rows {
		return
	}
	e := hp.Embd
	ms.rows = rows
	ms.emb, ms.cur, ms.y, ms.out, ms.hn = be.Alloc(rows*e), be.Alloc(rows*e), be.Alloc(rows*e), be.Alloc(rows*e), be.Alloc(rows*e)
	ms.cat = be.Alloc(2 * rows * e)
	ms.xw = be.Alloc(rows * hp.HC * e)
}

// DraftDepth implements model.DraftHead: MTPDepth when the file carries
// an MTP block, else 0.
func (s *Session) DraftDepth() int {
	if len(s.m.mtp) == 0 {
		return 0
	}
	return MTPDepth
}

// SetDrafting implements model.DraftHead. Turning it on allocates the
// head's KV cache (one attention layer) on first use; each Forward then
// costs about one more attention layer's K/V (and one HC mix) per row. It
// returns how many leading positions the head covers.
func (s *Session) SetDrafting(on bool) int {
	if len(s.m.mtp) == 0 || s.closed {
		return len(s.tokens)
	}
	ms := &s.mtp
	if on {
		hp := s.m.hp
		ms.Enable(s.m.be, hp.Layers, s.nCtx, hp.HeadsKV*hp.HeadDim, hp.Embd, hp.RopeDims, Checkpoints)
	}
	ms.On = on
	return ms.Valid
}

// mtpWiden makes rows rows of the block's HC residual xw from the eh_proj
// output cur: HC copies each, as the trunk's residual starts.
func (s *Session) mtpWiden(cur, xw []float32, rows int) {
	s.m.be.Repeat(xw, cur, rows, s.m.hp.HC, s.m.hp.Embd)
}

// mtpTruncate follows the session back to n tokens (blocks.MTPCache).
func (s *Session) mtpTruncate(n int) { s.mtp.Truncate(n) }

// mtpTrack runs the head's K/V over a batch's rows at pos0, from hn (the
// trunk's rows after the final mixer) and keeps the h of the rows whose
// recurrent checkpoints the batch keeps and of its last row. Called after
// the trunk succeeded; on error nothing the head covers has changed.
func (s *Session) mtpTrack(tokens []int32, hn []float32, pos0 int) error {
	m, hp, be := s.m, &s.m.hp, s.m.be
	ms, b := &s.mtp, &s.m.mtp[0]
	nt, e := len(tokens), hp.Embd
	ms.ensure(be, nt, hp)
	emb, cat, cur, y := ms.emb[:nt*e], ms.cat[:2*nt*e], ms.cur[:nt*e], ms.y[:nt*e]
	xw := ms.xw[:nt*hp.HC*e]
	be.GetRows(b.embedding(m), tokens, emb)
	for t := 0; t < nt; t++ {
		h := ms.HPrev(pos0)
		if t > 0 {
			h = hn[(t-1)*e : t*e]
		}
		b.Input(be, cat[2*t*e:2*(t+1)*e], emb[t*e:(t+1)*e], h, hp.Eps)
	}
	be.Linear(b.EhProj, cat, nt, cur)
	s.mtpWiden(cur, xw, nt)
	if err := b.hcAttn.Mix(be, xw, nt, &ms.hc, y); err != nil {
		return err
	}
	b.attn.Store(be, ms.KV, hp.Layers, y, nt, pos0, s.cs[:nt*hp.RopeDims], &ms.attn)
	if err := be.Sync(); err != nil {
		return err
	}
	ms.Keep(s.rec, hn, pos0, nt, e)
	return nil
}

// Draft implements model.DraftHead: up to n greedy tokens of the MTP head
// to follow the session's tokens and next, each with the head's softmax
// probability of it. It proposes nothing while the head does not cover
// every position (drafting was off when some were forwarded).
func (s *Session) Draft(ctx context.Context, next int32, n int, emit func(tok int32, p float64)) error {
	m, hp, be := s.m, &s.m.hp, s.m.be
	ms := &s.mtp
	switch {
	case s.closed:
		return fmt.Errorf("draft: session is closed")
	case len(m.mtp) == 0 || !ms.On || ms.Valid != len(s.tokens) || len(s.tokens) == 0:
		return nil
	case next < 0 || int(next) >= hp.Vocab:
		return fmt.Errorf("draft: token id %d outside the vocabulary of %d", next, hp.Vocab)
	}
	n = min(n, MTPDepth, s.nCtx-len(s.tokens))
	b := &m.mtp[0]
	e := hp.Embd
	ms.ensure(be, 1, hp)
	emb, cat, cur, y, out, hn := ms.emb[:e], ms.cat[:2*e], ms.cur[:e], ms.y[:e], ms.out[:e], ms.hn[:e]
	xw := ms.xw[:hp.HC*e]
	copy(hn, ms.HPrev(len(s.tokens)))
	head := b.OutHead
	if head == nil {
		head = m.head.Output
	}
	if len(ms.logits) < hp.Vocab {
		ms.logits = be.Alloc(hp.Vocab)
	}
	logits := ms.logits[:hp.Vocab]
	tok := next
	for j := 0; j < n; j++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		pos := len(s.tokens) + j
		ms.tok[0] = tok
		be.GetRows(b.embedding(m), ms.tok[:], emb)
		b.Input(be, cat, emb, hn, hp.Eps)
		be.Linear(b.EhProj, cat, 1, cur)
		s.mtpWiden(cur, xw, 1)
		m.rope.Cache(pos, ms.CS)
		if err := b.hcAttn.Mix(be, xw, 1, &ms.hc, y); err != nil {
			return err
		}
		// The head's K/V at pos..: scratch until the Forward of those
		// positions writes the trunk-paired ones.
		b.attn.Forward(be, ms.KV, hp.Layers, y, 1, pos, ms.CS, &ms.attn, out)
		if err := b.hcAttn.Combine(be, xw, out, 1, &ms.hc); err != nil {
			return err
		}
		if err := b.hcFFN.Mix(be, xw, 1, &ms.hc, y); err != nil {
			return err
		}
		be.Fill(out, 0) // the MoE adds into it (after the queued combine read it)
		if err := b.moe.Forward(ctx, be, y, out, 1, &ms.moe); err != nil {
			return fmt.Errorf("draft: %w", err)
		}
		if err := b.hcFFN.Combine(be, xw, out, 1, &ms.hc); err != nil {
			return err
		}
		if err := m.hcHead.Mix(be, xw, 1, &ms.hc, hn); err != nil {
			return err
		}
		if b.HeadNorm != nil {
			be.RMSNorm(hn, hn, b.HeadNorm, 1, hp.Eps)
		}
		be.Linear(head, hn, 1, logits)
		if err := be.Sync(); err != nil {
			return err
		}
		best, p := blocks.ArgmaxProb(logits)
		emit(best, p)
		tok = best
	}
	return nil
}
