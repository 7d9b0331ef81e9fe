package qwen3next

import (
	"context"
	"fmt"
	"math"

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
	on    bool
	valid int              // positions 0..valid-1 have the head's K/V
	kv    *backend.KVCache // layer hp.Layers only
	// hRing[c] is h_{n−1} (after the output norm) where the recurrent ring's
	// slot c holds the state after n tokens: kept exactly as long as that
	// checkpoint, so a rollback finds the h it resumes from.
	hRing [][]float32
	hLive []float32 // h_{valid−1}: where the next batch starts (a batch may keep no checkpoint)
	zero  []float32 // h_{−1}: zeros, as llama.cpp's first pending_h

	// Buffers, grown to the largest batch.
	rows                    int
	hn, emb, cat, cur, cur2 []float32 // [rows][embd], cat [rows][2·embd]
	cs                      []float32 // one row's cos/sin
	logits                  []float32
	attn                    blocks.AttnBuf
	moe                     blocks.MoEBuf
	tok                     [1]int32
}

func (b *mtpBlock) embedding(m *Model) *backend.Matrix {
	if b.embedTokens != nil {
		return b.embedTokens
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
	if on && ms.kv == nil {
		hp := s.m.hp
		attn := make([]bool, hp.Layers+1)
		attn[hp.Layers] = true
		ms.kv = s.m.be.NewKVCache(attn, s.nCtx, hp.HeadsKV*hp.HeadDim)
		ms.hRing = make([][]float32, Checkpoints)
		for c := range ms.hRing {
			ms.hRing[c] = s.m.be.Alloc(hp.Embd)
		}
		ms.zero = s.m.be.Alloc(hp.Embd)
		ms.hLive = s.m.be.Alloc(hp.Embd)
		ms.cs = s.m.be.Alloc(hp.RopeDims)
	}
	ms.on = on
	return ms.valid
}

// mtpBytes is what the head's cache and buffers hold.
func (ms *mtpState) bytes() int64 {
	if ms.kv == nil {
		return 0
	}
	n := ms.kv.Bytes() + 4*int64(len(ms.zero)+len(ms.hLive)+cap(ms.hn)+cap(ms.emb)+cap(ms.cat)+cap(ms.cur)+cap(ms.cur2)+cap(ms.cs)+cap(ms.logits))
	for _, h := range ms.hRing {
		n += 4 * int64(len(h))
	}
	return n + ms.attn.Bytes() + ms.moe.Bytes()
}

func (ms *mtpState) ensure(be backend.Backend, rows, embd int) {
	if rows <= ms.rows {
		return
	}
	ms.rows = rows
	ms.hn, ms.emb, ms.cur, ms.cur2 = be.Alloc(rows*embd), be.Alloc(rows*embd), be.Alloc(rows*embd), be.Alloc(rows*embd)
	ms.cat = be.Alloc(2 * rows * embd)
}

// input writes row r's eh_proj input [enorm(emb); hnorm(h)] into cat.
func (s *Session) mtpInput(b *mtpBlock, cat, emb, h []float32) {
	e, eps := s.m.hp.Embd, s.m.hp.Eps
	// Per-row backend ops (never a host copy): the CPU backend's Linear
	// reuses its conversion of an input only a backend op can invalidate.
	s.m.be.RMSNorm(cat[:e], emb, b.enorm, 1, eps)
	s.m.be.RMSNorm(cat[e:2*e], h, b.hnorm, 1, eps)
}

// hPrev is h_{pos0−1}, where a batch at pos0 starts: pos0 is 0, the
// head's present (valid) or a kept checkpoint.
func (s *Session) hPrev(pos0 int) []float32 {
	switch pos0 {
	case 0:
		return s.mtp.zero
	case s.mtp.valid:
		return s.mtp.hLive
	}
	return s.mtp.hRing[pos0%Checkpoints]
}

// mtpTruncate follows the session back to n tokens: the h the head
// resumes from is the one kept beside n's checkpoint (Truncate checked
// that the recurrent state kept it, and the head's cache covers it
// whenever n ≤ valid).
func (s *Session) mtpTruncate(n int) {
	ms := &s.mtp
	if n < ms.valid && ms.hLive != nil {
		copy(ms.hLive, s.hPrev(n))
	}
	ms.valid = min(ms.valid, n)
}

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
		h := s.hPrev(pos0)
		if t > 0 {
			h = hn[(t-1)*e : t*e]
		}
		s.mtpInput(b, cat[2*t*e:2*(t+1)*e], emb[t*e:(t+1)*e], h)
	}
	be.Linear(b.ehProj, cat, nt, cur)
	be.RMSNorm(cur, cur, b.attnNorm, nt, hp.Eps)
	b.attn.Store(be, ms.kv, hp.Layers, cur, nt, pos0, s.cs[:nt*hp.RopeDims], &ms.attn)
	// Beside each checkpoint the batch keeps (position p: the state after
	// p tokens), the h of row p−1, which a rollback to p starts from; the
	// last row's h is where the next batch starts.
	for i, c := range s.rec.Slots() {
		r := s.rec.SlotPos(i) - pos0 - 1
		copy(ms.hRing[c], hn[r*e:(r+1)*e])
	}
	copy(ms.hLive, hn[(nt-1)*e:nt*e])
	ms.valid = pos0 + nt
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
	case len(m.mtp) == 0 || !ms.on || ms.valid != len(s.tokens) || len(s.tokens) == 0:
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
	copy(hn, s.hPrev(len(s.tokens)))
	out := b.outHead
	if out == nil {
		out = m.head.Output
	}
	norm := b.headNorm
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
		s.mtpInput(b, cat, emb, hn)
		be.Linear(b.ehProj, cat, 1, cur)
		be.RMSNorm(y, cur, b.attnNorm, 1, hp.Eps)
		m.rope.Cache(pos, ms.cs)
		// The head's K/V at pos..: scratch until the Forward of those
		// positions writes the trunk-paired ones.
		b.attn.Forward(be, ms.kv, hp.Layers, y, 1, pos, ms.cs, &ms.attn, y)
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
		best, p := argmaxProb(logits)
		emit(best, p)
		tok = best
	}
	return nil
}

// argmaxProb is the most likely token (the first on ties) and its softmax
// probability.
func argmaxProb(l []float32) (int32, float64) {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	var sum float64
	mx := float64(l[best])
	for _, v := range l {
		sum += math.Exp(float64(v) - mx)
	}
	return int32(best), 1 / sum
}
