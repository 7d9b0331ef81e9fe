package qwen4exp

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Checkpoints is how many recent recurrent states a session keeps: it can
// roll back up to Checkpoints-1 positions (a speculative verification of
// that many drafts), or to the start.
const Checkpoints = 8

// Session is one sequence's tokens, F16 KV cache (attention layers),
// recurrent state (DeltaNet layers, the PLE convolution history) with a
// ring of its recent checkpoints, and the buffers of its forward passes.
// Buffers grow to the largest batch seen and are then reused, so decoding
// allocates nothing per token.
type Session struct {
	m      *Model
	kv     *backend.KVCache
	rec    *blocks.Recurrent
	tokens []int32
	nCtx   int
	closed bool

	rows  int       // batch rows the buffers hold
	x     []float32 // the HC residual: [rows][HC·embd]
	xn, y []float32 // the mixed block input, the block output: [rows][embd]
	cs    []float32 // [rows][ropeDims] cos/sin
	ids   []int32   // [rows] the batch's tokens (a replayed step reads them here)
	hc    blocks.HCBuf
	attn  blocks.AttnBuf
	delta blocks.DeltaBuf
	moe   blocks.MoEBuf
	head  blocks.HeadBuf
	snaps []blocks.DeltaState
	idx   []*qsaCache // per layer: the indexer cache of QSA layers (qsa.go)
	qsab  qsaBuf
	ple   pleSession // (ple.go)
	mtp   mtpState   // the MTP head's cache (drafting only; mtp.go)
}

// NewSession implements model.Model.
func (m *Model) NewSession(nCtx int) (model.Session, error) {
	if nCtx <= 0 || nCtx > 1<<20 {
		return nil, fmt.Errorf("%s: context length %d out of range", Arch, nCtx)
	}
	hp := m.hp
	attn := make([]bool, hp.Layers)
	sizes := make([][]int, hp.Layers)
	for il := range m.layers {
		l := &m.layers[il]
		attn[il] = !l.recurrent
		if l.recurrent {
			sizes[il] = l.delta.StateSizes()
			if il == hp.PLE.Layer {
				sizes[il] = append(sizes[il], hp.pleHistory())
			}
		}
	}
	s := &Session{m: m, kv: m.be.NewKVCache(attn, nCtx, hp.HeadsKV*hp.HeadDim),
		rec: blocks.NewRecurrent(m.be, sizes, Checkpoints), tokens: make([]int32, 0, nCtx), nCtx: nCtx}
	s.idx = make([]*qsaCache, hp.Layers)
	for il := range m.layers {
		if ix := m.layers[il].ix; ix != nil {
			s.idx[il] = newQSACache(m.be, ix, nCtx)
		}
	}
	return s, nil
}

// MemoryBytes implements model.Session: caches, recurrent state and its
// checkpoints, buffers.
func (s *Session) MemoryBytes() int64 {
	n := s.kv.Bytes() + s.rec.Bytes() + 4*int64(cap(s.x)+cap(s.xn)+cap(s.y)+cap(s.cs)) +
		s.hc.Bytes() + s.attn.Bytes() + s.delta.Bytes() + s.moe.Bytes() + s.head.Bytes() + s.qsab.Bytes() + s.ple.Bytes() + s.mtp.bytes()
	for _, c := range s.idx {
		if c != nil {
			n += c.Bytes()
		}
	}
	return n
}

// Tokens implements model.Session.
func (s *Session) Tokens() []int32 { return s.tokens }

// Len implements model.Session.
func (s *Session) Len() int { return len(s.tokens) }

// Cap implements model.Session.
func (s *Session) Cap() int { return s.nCtx }

// CanTruncate implements model.Session: the KV cache can go back anywhere,
// the recurrent state to the start or to the last Checkpoints-1 positions.
func (s *Session) CanTruncate(n int) bool {
	return n >= 0 && n <= len(s.tokens) && s.rec.Kept(n, len(s.tokens))
}

// Truncate implements model.Session.
func (s *Session) Truncate(n int) error {
	if n < 0 || n > len(s.tokens) {
		return fmt.Errorf("truncate to %d: session holds %d positions", n, len(s.tokens))
	}
	if !s.CanTruncate(n) {
		return fmt.Errorf("%s: truncate to %d of %d positions: the recurrent state keeps the last %d: %w",
			Arch, n, len(s.tokens), Checkpoints-1, model.ErrRollback)
	}
	s.rec.Truncate(n, len(s.tokens))
	s.qsaTruncate(n)
	s.tokens = s.tokens[:n]
	s.mtpTruncate(n)
	return nil
}

// Close implements model.Session.
func (s *Session) Close() error {
	s.kv = &backend.KVCache{}
	s.closed = true
	s.mtp = mtpState{}
	if rp, ok := s.m.be.(backend.Replayer); ok {
		rp.Forget(s)
	}
	return nil
}

func (s *Session) ensure(nt int) {
	if nt <= s.rows {
		return
	}
	be, hp := s.m.be, s.m.hp
	s.rows = nt
	s.x = be.Alloc(nt * hp.HC * hp.Embd)
	s.xn, s.y = be.Alloc(nt*hp.Embd), be.Alloc(nt*hp.Embd)
	s.cs = be.Alloc(nt * hp.RopeDims)
	s.ids = make([]int32, nt)
}

// Forward implements model.Session. The recurrent states after the last
// rows of the batch (up to Checkpoints-1 of them) are kept in the ring; on
// error the present's checkpoint, which the batch only read, is still the
// state, so the session is as it was.
func (s *Session) Forward(ctx context.Context, b *model.Batch) error {
	hp := s.m.hp
	nt := len(b.Tokens)
	switch {
	case s.closed:
		return fmt.Errorf("forward: session is closed")
	case nt == 0:
		return fmt.Errorf("forward: no tokens")
	case len(s.tokens)+nt > s.nCtx:
		return fmt.Errorf("forward: %d positions held + %d new exceed the context of %d", len(s.tokens), nt, s.nCtx)
	case b.Logits != nil && len(b.Logits) != nt, b.Hidden != nil && len(b.Hidden) != nt:
		return fmt.Errorf("forward: output flags for %d/%d rows of a batch of %d", len(b.Logits), len(b.Hidden), nt)
	}
	for _, id := range b.Tokens {
		if id < 0 || int(id) >= hp.Vocab {
			return fmt.Errorf("forward: token id %d outside the vocabulary of %d", id, hp.Vocab)
		}
	}
	pos0 := len(s.tokens)
	s.rec.Begin(pos0, nt)
	if err := s.forward(ctx, b, pos0); err != nil {
		s.rec.Abort()
		s.qsaTruncate(pos0) // blocks the failed batch completed
		return err
	}
	s.rec.Commit()
	s.tokens = append(s.tokens, b.Tokens...)
	return nil
}

func (s *Session) forward(ctx context.Context, b *model.Batch, pos0 int) error {
	m, hp, be := s.m, s.m.hp, s.m.be
	nt := len(b.Tokens)
	s.ensure(nt)
	e, hd := hp.Embd, hp.HC*hp.Embd
	x, xn, y := s.x[:nt*hd], s.xn[:nt*e], s.y[:nt*e]
	cs, ids := s.cs[:nt*hp.RopeDims], s.ids[:nt]
	copy(ids, b.Tokens)
	// The PLE rows depend on the tokens alone: their reads start now and
	// are collected at the PLE layer.
	s.pleStart(b.Tokens)
	for t := 0; t < nt; t++ {
		m.rope.Cache(pos0+t, cs[t*hp.RopeDims:(t+1)*hp.RopeDims])
	}
	// A decode step is replayed where the backend can (not while the MTP
	// head tracks the hidden states: its ops follow the step's Sync).
	if rp, ok := be.(backend.Replayer); ok && nt == 1 && !s.mtp.On && len(m.layers) <= 64 {
		from, spare := s.rec.Sets()
		pools, scores := s.qsaShape(pos0)
		key := backend.StepKey{Owner: s, Shape: stepShape{unsafe.SliceData(s.x), from, spare, pools, scores, s.head.Key(b)}}
		return blocks.Step(rp, key, pos0, &m.head, b, &s.head, func() error { return s.layers(ctx, b, pos0, ids, x, xn, y, cs) })
	}
	return s.layers(ctx, b, pos0, ids, x, xn, y, cs)
}

// stepShape is what a decode step's ops depend on besides the position
// and the contents of the session's buffers: which buffers (ensure's,
// reallocated together; the recurrent state's sets it reads and writes;
// the head's) and, per QSA layer (a bit each), whether the step completes
// a block to pool and whether it scores blocks (it sees more cells than
// the indexer keeps): the ops the indexer queues, redone at each replay.
type stepShape struct {
	x             *float32
	from, spare   int
	pools, scores uint64
	head          blocks.HeadKey
}

// qsaShape is the QSA part of a one-row step's shape at pos0.
func (s *Session) qsaShape(pos0 int) (pools, scores uint64) {
	for il, c := range s.idx {
		if c == nil {
			continue
		}
		ix := s.m.layers[il].ix
		if (pos0+1)/ix.Ratio > c.nPooled {
			pools |= 1 << il
		}
		if pos0+1 > ix.TopK+ix.Ratio-1 {
			scores |= 1 << il
		}
	}
	return pools, scores
}

// layers runs the step's ops from the embedding to the head.
func (s *Session) layers(ctx context.Context, b *model.Batch, pos0 int, ids []int32, x, xn, y, cs []float32) error {
	m, hp, be := s.m, s.m.hp, s.m.be
	nt, e := len(ids), hp.Embd
	// The wide residual starts as HC copies of the embedding.
	be.GetRows(m.embd, ids, xn)
	be.Repeat(x, xn, nt, hp.HC, e)
	for il := range m.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := &m.layers[il]
		if il == hp.PLE.Layer && m.pleL != nil {
			if err := s.pleStep(il, nt, x); err != nil {
				return err
			}
		}
		if err := l.hcAttn.Mix(be, x, nt, &s.hc, xn); err != nil {
			return err
		}
		if l.recurrent {
			s.snaps = s.snaps[:0]
			for _, bs := range s.rec.Snaps(il) {
				s.snaps = append(s.snaps, blocks.DeltaStateOf(bs))
			}
			l.delta.ForwardFrom(be, blocks.DeltaStateOf(s.rec.From(il)), blocks.DeltaStateOf(s.rec.State(il)), s.snaps, xn, nt, &s.delta, y)
		} else if l.ix != nil {
			if err := s.qsaAttention(l, il, xn, nt, pos0, cs, y); err != nil {
				return err
			}
		} else {
			l.attn.Forward(be, s.kv, il, xn, nt, pos0, cs, &s.attn, y)
		}
		if err := l.hcAttn.Combine(be, x, y, nt, &s.hc); err != nil {
			return err
		}
		if err := l.hcFFN.Mix(be, x, nt, &s.hc, xn); err != nil {
			return err
		}
		// The MoE adds into its residual argument: y starts at zero, so it
		// holds the FFN output (shared + routed) alone. It is cleared
		// after the queued combine has read the attention output in it.
		be.Fill(y, 0)
		if err := l.moe.Forward(ctx, be, xn, y, nt, &s.moe); err != nil {
			return err
		}
		if err := l.hcFFN.Combine(be, x, y, nt, &s.hc); err != nil {
			return err
		}
	}
	// The final mixer is the output norm.
	if err := m.hcHead.Mix(be, x, nt, &s.hc, xn); err != nil {
		return err
	}
	if err := m.head.Forward(be, xn, b, &s.head); err != nil {
		return err
	}
	if s.mtp.On && s.mtp.Valid == pos0 {
		return s.mtpTrack(b.Tokens, xn, pos0)
	}
	return nil
}
