package qwen3moe

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Session is one sequence's tokens, F16 KV cache and the buffers of its
// forward passes. Buffers grow to the largest batch seen and are then
// reused, so decoding allocates nothing per token.
type Session struct {
	m      *Model
	kv     *backend.KVCache
	tokens []int32

	rows     int       // batch rows the buffers hold
	x, xn, y []float32 // residual stream, normed, block output: [rows][embd]
	cs       []float32 // [rows][ropeDims] cos/sin
	ids      []int32   // [rows] the batch's tokens (a replayed step reads them here)
	attn     blocks.AttnBuf
	moe      blocks.MoEBuf
	head     blocks.HeadBuf
}

// MemoryBytes implements model.Session.
func (s *Session) MemoryBytes() int64 {
	return s.kv.Bytes() + 4*int64(cap(s.x)+cap(s.xn)+cap(s.y)+cap(s.cs)) +
		s.attn.Bytes() + s.moe.Bytes() + s.head.Bytes()
}

// Tokens implements model.Session.
func (s *Session) Tokens() []int32 { return s.tokens }

// Len implements model.Session.
func (s *Session) Len() int { return len(s.tokens) }

// Cap implements model.Session.
func (s *Session) Cap() int { return s.kv.NCtx }

// CanTruncate implements model.Session: a KV cache can go back anywhere.
func (s *Session) CanTruncate(n int) bool { return n >= 0 && n <= len(s.tokens) }

// Truncate implements model.Session.
func (s *Session) Truncate(n int) error {
	if !s.CanTruncate(n) {
		return fmt.Errorf("truncate to %d: session holds %d positions", n, len(s.tokens))
	}
	s.tokens = s.tokens[:n]
	return nil
}

// Close implements model.Session.
func (s *Session) Close() error {
	s.kv = &backend.KVCache{}
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
	s.x, s.xn, s.y = be.Alloc(nt*hp.Embd), be.Alloc(nt*hp.Embd), be.Alloc(nt*hp.Embd)
	s.cs = be.Alloc(nt * hp.RopeDims)
	s.ids = make([]int32, nt)
}

// Forward implements model.Session.
func (s *Session) Forward(ctx context.Context, b *model.Batch) error {
	m, hp, be := s.m, s.m.hp, s.m.be
	nt := len(b.Tokens)
	switch {
	case nt == 0:
		return fmt.Errorf("forward: no tokens")
	case len(s.tokens)+nt > s.kv.NCtx:
		return fmt.Errorf("forward: %d positions held + %d new exceed the context of %d", len(s.tokens), nt, s.kv.NCtx)
	case b.Logits != nil && len(b.Logits) != nt, b.Hidden != nil && len(b.Hidden) != nt:
		return fmt.Errorf("forward: output flags for %d/%d rows of a batch of %d", len(b.Logits), len(b.Hidden), nt)
	}
	for _, id := range b.Tokens {
		if id < 0 || int(id) >= hp.Vocab {
			return fmt.Errorf("forward: token id %d outside the vocabulary of %d", id, hp.Vocab)
		}
	}
	s.ensure(nt)
	e, pos0 := hp.Embd, len(s.tokens)
	x, xn, y := s.x[:nt*e], s.xn[:nt*e], s.y[:nt*e]
	cs, ids := s.cs[:nt*hp.RopeDims], s.ids[:nt]
	copy(ids, b.Tokens)
	for t := 0; t < nt; t++ {
		m.rope.Cache(pos0+t, cs[t*hp.RopeDims:(t+1)*hp.RopeDims])
	}
	var err error
	if rp, ok := be.(backend.Replayer); ok && nt == 1 { // a decode step: replayed where the backend can
		key := backend.StepKey{Owner: s, Shape: stepShape{unsafe.SliceData(s.x), s.head.Key(b)}}
		err = blocks.Step(rp, key, pos0, &m.head, b, &s.head, func() error { return s.forward(ctx, b, pos0, ids, x, xn, y, cs) })
	} else {
		err = s.forward(ctx, b, pos0, ids, x, xn, y, cs)
	}
	if err != nil {
		return err
	}
	s.tokens = append(s.tokens, b.Tokens...)
	return nil
}

// stepShape is what a decode step's ops depend on besides the position
// and the contents of the session's buffers: which buffers.
type stepShape struct {
	x    *float32 // ensure's buffers (reallocated together)
	head blocks.HeadKey
}

func (s *Session) forward(ctx context.Context, b *model.Batch, pos0 int, ids []int32, x, xn, y, cs []float32) error {
	m, hp, be := s.m, s.m.hp, s.m.be
	nt := len(ids)
	be.GetRows(m.embd, ids, x)
	for il := range m.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := &m.layers[il]
		be.RMSNorm(xn, x, l.attnNorm, nt, hp.Eps)
		l.attn.Forward(be, s.kv, il, xn, nt, pos0, cs, &s.attn, y)
		be.Add(x, y)
		be.RMSNorm(xn, x, l.ffnNorm, nt, hp.Eps)
		if err := l.moe.Forward(ctx, be, xn, x, nt, &s.moe); err != nil {
			return err
		}
	}
	return m.head.Forward(be, x, b, &s.head)
}
