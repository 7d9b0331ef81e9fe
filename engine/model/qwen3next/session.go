package qwen3next

import (
	"context"
	"fmt"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Checkpoints is how many recent recurrent states a session keeps: it can
// roll back up to Checkpoints-1 positions (a speculative verification of
// that many drafts), or to the start.
const Checkpoints = 8

// Session is one sequence's tokens, F16 KV cache (attention layers),
// recurrent state (DeltaNet layers) with a ring of its recent checkpoints,
// and the buffers of its forward passes. Buffers grow to the largest batch
// seen and are then reused, so decoding allocates nothing per token.
type Session struct {
	m      *Model
	kv     *backend.KVCache
	tokens []int32
	nCtx   int

	state []blocks.DeltaState // per layer (zero for attention layers): the live state
	// ring[c][il] is layer il's state after ringPos[c] tokens (-1: none);
	// the state after n tokens, if kept, is in slot n % Checkpoints.
	ring    [][]blocks.DeltaState
	ringPos []int

	rows     int       // batch rows the buffers hold
	x, xn, y []float32 // residual stream, normed, block output: [rows][embd]
	cs       []float32 // [rows][ropeDims] cos/sin
	attn     blocks.AttnBuf
	delta    blocks.DeltaBuf
	moe      blocks.MoEBuf
	head     blocks.HeadBuf
	snaps    []blocks.DeltaState
	slots    []int // ring slots the current batch fills
}

// NewSession implements model.Model.
func (m *Model) NewSession(nCtx int) (model.Session, error) {
	if nCtx <= 0 || nCtx > 1<<20 {
		return nil, fmt.Errorf("%s: context length %d out of range", Arch, nCtx)
	}
	attn := make([]bool, m.hp.Layers)
	for i := range attn {
		attn[i] = !m.layers[i].recurrent
	}
	s := &Session{m: m, kv: m.be.NewKVCache(attn, nCtx, m.hp.HeadsKV*m.hp.HeadDim), tokens: make([]int32, 0, nCtx), nCtx: nCtx}
	s.state = make([]blocks.DeltaState, m.hp.Layers)
	s.ring = make([][]blocks.DeltaState, Checkpoints)
	s.ringPos = make([]int, Checkpoints)
	for c := range s.ring {
		s.ring[c] = make([]blocks.DeltaState, m.hp.Layers)
		s.ringPos[c] = -1
	}
	for il := range m.layers {
		if !m.layers[il].recurrent {
			continue
		}
		d := &m.layers[il].delta
		s.state[il] = d.NewState(m.be)
		for c := range s.ring {
			s.ring[c][il] = d.NewState(m.be)
		}
	}
	return s, nil
}

// MemoryBytes implements model.Session: caches, recurrent state and its
// checkpoints, buffers.
func (s *Session) MemoryBytes() int64 {
	n := s.kv.Bytes() + 4*int64(cap(s.x)+cap(s.xn)+cap(s.y)+cap(s.cs)) +
		s.attn.Bytes() + s.delta.Bytes() + s.moe.Bytes() + s.head.Bytes()
	for il := range s.state {
		n += s.state[il].Bytes()
		for c := range s.ring {
			n += s.ring[c][il].Bytes()
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

// kept reports whether the state after n tokens is available: the start,
// the present, or a checkpoint in the ring.
func (s *Session) kept(n int) bool {
	return n == 0 || n == len(s.tokens) || s.ringPos[n%Checkpoints] == n
}

// CanTruncate implements model.Session: the KV cache can go back anywhere,
// the recurrent state to the start or to the last Checkpoints-1 positions.
func (s *Session) CanTruncate(n int) bool {
	return n >= 0 && n <= len(s.tokens) && (s.m.nDelta == 0 || s.kept(n))
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
	if n != len(s.tokens) {
		s.restore(n)
	}
	s.tokens = s.tokens[:n]
	for c, p := range s.ringPos {
		if p > n {
			s.ringPos[c] = -1
		}
	}
	return nil
}

// restore sets the live recurrent state to the state after n tokens, which
// must be kept (n = 0 or a ring checkpoint).
func (s *Session) restore(n int) {
	for il := range s.state {
		if s.state[il].S == nil {
			continue
		}
		if n == 0 {
			s.state[il].Clear()
		} else {
			s.state[il].CopyFrom(s.ring[n%Checkpoints][il])
		}
	}
}

// Close implements model.Session.
func (s *Session) Close() error {
	s.kv = &backend.KVCache{}
	s.state, s.ring = nil, nil
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
}

// Forward implements model.Session. The recurrent states after the last
// rows of the batch (up to Checkpoints-1 of them) are kept in the ring; on
// error the live state is restored from the checkpoint of the present, so
// the session is as it was.
func (s *Session) Forward(ctx context.Context, b *model.Batch) error {
	hp := s.m.hp
	nt := len(b.Tokens)
	switch {
	case s.state == nil:
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
	// Checkpoints of this batch: the states after its last k rows, in the
	// slots of positions pos0+nt-k+1 .. pos0+nt (never pos0's own slot).
	k := min(nt, Checkpoints-1)
	slots := s.slots[:0]
	for i := 0; i < k; i++ {
		c := (pos0 + nt - k + 1 + i) % Checkpoints
		s.ringPos[c] = -1
		slots = append(slots, c)
	}
	s.slots = slots
	if err := s.forward(ctx, b, pos0, slots); err != nil {
		s.restore(pos0)
		return err
	}
	for i, c := range slots {
		s.ringPos[c] = pos0 + nt - k + 1 + i
	}
	s.tokens = append(s.tokens, b.Tokens...)
	return nil
}

func (s *Session) forward(ctx context.Context, b *model.Batch, pos0 int, slots []int) error {
	m, hp, be := s.m, s.m.hp, s.m.be
	nt := len(b.Tokens)
	s.ensure(nt)
	e := hp.Embd
	x, xn, y := s.x[:nt*e], s.xn[:nt*e], s.y[:nt*e]
	cs := s.cs[:nt*hp.RopeDims]
	be.GetRows(m.embd, b.Tokens, x)
	for t := 0; t < nt; t++ {
		m.rope.Cache(pos0+t, cs[t*hp.RopeDims:(t+1)*hp.RopeDims])
	}
	for il := range m.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := &m.layers[il]
		be.RMSNorm(xn, x, l.attnNorm, nt, hp.Eps)
		if l.recurrent {
			s.snaps = s.snaps[:0]
			for _, c := range slots {
				s.snaps = append(s.snaps, s.ring[c][il])
			}
			l.delta.Forward(be, s.state[il], s.snaps, xn, nt, &s.delta, y)
		} else {
			l.attn.Forward(be, s.kv, il, xn, nt, pos0, cs, &s.attn, y)
		}
		be.Add(x, y) // the residual: attention output + input, as ggml_add(cur, inpSA)
		be.RMSNorm(xn, x, l.postNorm, nt, hp.Eps)
		if err := l.moe.Forward(ctx, be, xn, x, nt, &s.moe); err != nil {
			return err
		}
	}
	return m.head.Forward(be, x, b, &s.head)
}
