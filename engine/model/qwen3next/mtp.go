package qwen3next

import (
	"context"
	"fmt"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// MTPDepth is the most tokens one Draft proposes: the single MTP block run
// again on its own output, as llama.cpp's draft-mtp does for qwen3next
// (issue 18 asks for up to 3 drafts).
const MTPDepth = 3

// The MTP (nextn) head, as llama.cpp's qwen3next graph_mtp and
// common/speculative.cpp's draft-mtp run it. Row p of the head pairs the
// token at position p with h_{p−1}, the trunk's final hidden state of
// position p−1 after the output norm (llama.cpp's h_nextn; Batch.Hidden
// is the state before that norm), and predicts the token at p+1:
//
//	x = eh_proj · [enorm(embed(token)); hnorm(h)]
//	x += gated attention(attn_norm(x))      (its own KV cache)
//	x += MoE + shared expert(post_norm(x))
//	h' = shared_head_norm(x); logits = head(h')
//
// While drafting is on, every Forward also runs the head's K/V over the
// batch's rows (the rest of the block is not needed there: nothing reads
// those rows' outputs), so the head attends to every earlier position as
// llama.cpp's catch-up decode of the draft context does. A draft then runs
// the whole block at position Len() with the token about to be forwarded
// and h_{Len()−1}, and again at Len()+1… with its own token and h'.
type mtpState struct {
	blocks.MTPCache

	// Buffers, grown to the largest batch.
	rows                    int
	hn, emb, cat, cur, cur2 []float32 // [rows][embd], cat [rows][2·embd]
	logits                  []float32
	attn                    blocks.AttnBuf
	moe                     blocks.MoEBuf
	tok                     [1]int32
}

func (b *mtpBlock) embedding(m *Model) *backend.Matrix {
	if b.EmbedTokens != nil {
		return b.EmbedTokens
	}
	return m.embd
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
// costs about one more attention layer's K/V per row. It returns how many
// leading positions the head covers.
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

// bytes is what the head's cache and buffers hold.
func (ms *mtpState) bytes() int64 {
	if ms.KV == nil {
		return 0
	}
	return ms.MTPCache.Bytes() + 4*int64(cap(ms.hn)+cap(ms.emb)+cap(ms.cat)+cap(ms.cur)+cap(ms.cur2)+cap(ms.logits)) +
		ms.attn.Bytes() + ms.moe.Bytes()
}

func (ms *mtpState) ensure(be backend.Backend, rows, embd int) {
	if rows <= ms.rows {
		return
	}
	ms.rows = rows
	ms.hn, ms.emb, ms.cur, ms.cur2 = be.Alloc(rows*embd), be.Alloc(rows*embd), be.Alloc(rows*embd), be.Alloc(rows*embd)
	ms.cat = be.Alloc(2 * rows * embd)
}

// mtpTruncate follows the session back to n tokens (blocks.MTPCache).
func (s *Session) mtpTruncate(n int) { s.mtp.Truncate(n) }

// mtpTrack runs the head's K/V over a batch's nt rows at pos0 (the trunk's
// final residual stream in x) and keeps the h of the rows whose recurrent
// checkpoints the batch keeps (s.rec.Slots()) and of its last row. Called
// after the trunk succeeded.
func (s *Session) mtpTrack(tokens []int32, x []float32, pos0 int) {
	m, hp, be := s.m, s.m.hp, s.m.be
	ms, b := &s.mtp, &s.m.mtp[0]
	nt, e := len(tokens), hp.Embd
	ms.ensure(be, nt, e)
	hn, emb, cat, cur := ms.hn[:nt*e], ms.emb[:nt*e], ms.cat[:2*nt*e], ms.cur[:nt*e]
	be.RMSNorm(hn, x, m.head.Norm, nt, m.head.Eps)
	be.GetRows(b.embedding(m), tokens, emb)
	for t := 0; t < nt; t++ {
		h := ms.HPrev(pos0)
		if t > 0 {
			h = hn[(t-1)*e : t*e]
		}
		b.Input(be, cat[2*t*e:2*(t+1)*e], emb[t*e:(t+1)*e], h, hp.Eps)
	}
	be.Linear(b.EhProj, cat, nt, cur)
	be.RMSNorm(cur, cur, b.attnNorm, nt, hp.Eps)
	b.attn.Store(be, ms.KV, hp.Layers, cur, nt, pos0, s.cs[:nt*hp.RopeDims], &ms.attn)
	ms.Keep(s.rec, hn, pos0, nt, e)
}

// Draft implements model.DraftHead: up to n greedy tokens of the MTP head
// to follow the session's tokens and next, each with the head's softmax
// probability of it. It proposes nothing while the head does not cover
// every position (drafting was off when some were forwarded).
func (s *Session) Draft(ctx context.Context, next int32, n int, emit func(tok int32, p float64)) error {
	m, hp, be := s.m, s.m.hp, s.m.be
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
	ms.ensure(be, 1, e)
	emb, cat, cur, y := ms.emb[:e], ms.cat[:2*e], ms.cur[:e], ms.cur2[:e]
	hn := ms.hn[:e]
	copy(hn, ms.HPrev(len(s.tokens)))
	out := b.OutHead
	if out == nil {
		out = m.head.Output
	}
	norm := b.HeadNorm
	if norm == nil {
		norm = m.head.Norm
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
		be.RMSNorm(y, cur, b.attnNorm, 1, hp.Eps)
		m.rope.Cache(pos, ms.CS)
		// The head's K/V at pos..: scratch until the Forward of those
		// positions writes the trunk-paired ones.
		b.attn.Forward(be, ms.KV, hp.Layers, y, 1, pos, ms.CS, &ms.attn, y)
		be.Add(cur, y)
		be.RMSNorm(y, cur, b.postNorm, 1, hp.Eps)
		if err := b.moe.Forward(ctx, be, y, cur, 1, &ms.moe); err != nil {
			return fmt.Errorf("draft: %w", err)
		}
		be.RMSNorm(hn, cur, norm, 1, hp.Eps)
		be.Linear(out, hn, 1, logits)
		if err := be.Sync(); err != nil {
			return err
		}
		best, p := blocks.ArgmaxProb(logits)
		emit(best, p)
		tok = best
	}
	return nil
}
