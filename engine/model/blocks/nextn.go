package blocks

import (
	"fmt"
	"math"

	"github.com/strata-llm/strata/engine/backend"
)

// NextN is an MTP (multi-token-prediction) block's own tensors,
// blk.N.nextn.* as llama.cpp names them for qwen3next: the projection of
// [enorm(embedding); hnorm(h)] into the block, and the optional norm,
// embedding and head that otherwise are the model's.
type NextN struct {
	EhProj               *backend.Matrix // [embd × 2·embd]
	ENorm, HNorm         []float32
	HeadNorm             []float32       // nil: absent
	EmbedTokens, OutHead *backend.Matrix // nil: the model's
}

// NextN reads block i's nextn tensors.
func (ld *Loader) NextN(i, embd, vocab int) (NextN, error) {
	var b NextN
	var err error
	n := func(s string) string { return fmt.Sprintf("blk.%d.nextn.%s.weight", i, s) }
	if b.EhProj, err = ld.Mat(n("eh_proj"), 2*embd, embd); err != nil {
		return b, err
	}
	if b.ENorm, err = ld.Vec(n("enorm"), embd); err != nil {
		return b, err
	}
	if b.HNorm, err = ld.Vec(n("hnorm"), embd); err != nil {
		return b, err
	}
	if ld.Has(n("shared_head_norm")) {
		if b.HeadNorm, err = ld.Vec(n("shared_head_norm"), embd); err != nil {
			return b, err
		}
	}
	if ld.Has(n("embed_tokens")) {
		if b.EmbedTokens, err = ld.Mat(n("embed_tokens"), embd, vocab); err != nil {
			return b, err
		}
	}
	if ld.Has(n("shared_head_head")) {
		if b.OutHead, err = ld.Mat(n("shared_head_head"), embd, vocab); err != nil {
			return b, err
		}
	}
	return b, nil
}

// Input writes one row's eh_proj input [enorm(emb); hnorm(h)] into cat
// ([2·embd]) with backend ops (never a host copy: the CPU backend's Linear
// reuses its conversion of an input only a backend op can invalidate).
func (b *NextN) Input(be backend.Backend, cat, emb, h []float32, eps float32) {
	e := len(emb)
	be.RMSNorm(cat[:e], emb, b.ENorm, 1, eps)
	be.RMSNorm(cat[e:2*e], h, b.HNorm, 1, eps)
}

// MTPCache is the part of a session's MTP head that does not depend on
// the block's layout: the head's KV cache (one attention layer, index
// Layer), how many leading positions it covers, and the trunk's final
// hidden state h where batches and rollbacks resume. Row p of the head
// pairs the token at p with h_{p−1}; h_{−1} is zeros.
type MTPCache struct {
	On    bool
	Valid int              // positions 0..Valid-1 have the head's K/V
	KV    *backend.KVCache // layer Layer only
	// HRing[c] is h_{n−1} where the recurrent ring's slot c holds the
	// state after n tokens (c = n mod len(HRing)): kept exactly as long as
	// that checkpoint, so a rollback finds the h it resumes from.
	HRing [][]float32
	HLive []float32 // h_{Valid−1}: where the next batch starts
	Zero  []float32 // h_{−1}
	CS    []float32 // one row's cos/sin
}

// Enable allocates the cache on first use (Valid stays what it was).
func (c *MTPCache) Enable(be backend.Backend, layer, nCtx, kvDim, embd, ropeDims, checkpoints int) {
	if c.KV != nil {
		return
	}
	attn := make([]bool, layer+1)
	attn[layer] = true
	c.KV = be.NewKVCache(attn, nCtx, kvDim)
	c.HRing = make([][]float32, checkpoints)
	for i := range c.HRing {
		c.HRing[i] = be.Alloc(embd)
	}
	c.Zero, c.HLive, c.CS = be.Alloc(embd), be.Alloc(embd), be.Alloc(ropeDims)
}

// Bytes is what the cache holds.
func (c *MTPCache) Bytes() int64 {
	if c.KV == nil {
		return 0
	}
	n := c.KV.Bytes() + 4*int64(len(c.Zero)+len(c.HLive)+len(c.CS))
	for _, h := range c.HRing {
		n += 4 * int64(len(h))
	}
	return n
}

// HPrev is h_{pos0−1}, where a batch at pos0 starts: pos0 is 0, the
// head's present (Valid) or a kept checkpoint.
func (c *MTPCache) HPrev(pos0 int) []float32 {
	switch pos0 {
	case 0:
		return c.Zero
	case c.Valid:
		return c.HLive
	}
	return c.HRing[pos0%len(c.HRing)]
}

// Truncate follows the session back to n tokens: the h the head resumes
// from is the one kept beside n's checkpoint (the session checked that
// the recurrent state kept it); the head's K/V rows from n on are scratch
// the next batch overwrites.
func (c *MTPCache) Truncate(n int) {
	if n < c.Valid && c.HLive != nil {
		copy(c.HLive, c.HPrev(n))
	}
	c.Valid = min(c.Valid, n)
}

// Keep records a tracked batch of rows at pos0 whose h are hn
// ([rows][embd]): beside each checkpoint the batch keeps (rec's slots;
// position p: the state after p tokens), the h of row p−1, which a
// rollback to p starts from; the last row's h is where the next batch
// starts. The head then covers pos0+rows positions.
func (c *MTPCache) Keep(rec *Recurrent, hn []float32, pos0, rows, embd int) {
	for i, slot := range rec.Slots() {
		r := rec.SlotPos(i) - pos0 - 1
		copy(c.HRing[slot], hn[r*embd:(r+1)*embd])
	}
	copy(c.HLive, hn[(rows-1)*embd:rows*embd])
	c.Valid = pos0 + rows
}

// ArgmaxProb is the most likely token of logits l (the first on ties) and
// its softmax probability.
func ArgmaxProb(l []float32) (int32, float64) {
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
