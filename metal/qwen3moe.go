package metal

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/blocks"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/routing"
)

// Qwen3MoE is the decode step of a qwen3moe model on a Device: the whole
// step (every layer, the head) is one command list, encoded once and run
// once per token; at each layer's MoE the GPU stops at a handshake, the
// host makes the routed experts resident in the arena and writes the slot
// map, and the GPU goes on. The token and its position are read from
// buffers, so the commands never change between tokens.
type Qwen3MoE struct {
	dev     Device
	hp      qwen3moe.Hparams
	nCtx    int
	n       int
	arena   *Arena
	cmds    Commands
	routing routing.CacheRoute

	tok, pos                          Buffer
	x, xn, q, k, v, att, proj         Buffer
	rlog, ids, wts, slotMap, resident Buffer
	gate, up, hidden, down, scores    Buffer
	logits                            Buffer
	kc, vc                            []Buffer
}

type q3weight struct {
	t          ggml.Type
	ref        BufRef
	rows, cols int
}

// Qwen3MoEOptions configure NewQwen3MoE.
type Qwen3MoEOptions struct {
	Context int                  // positions (KV cache length)
	Slots   int                  // expert arena slots (0: every expert of every layer)
	Experts model.ExpertProvider // nil: the file's own expert tensors (engine/experts.File)
	MatVec  MatVecGeometry       // zero: DefaultMatVec
	// Routing is the cache-aware routing policy, applied on the GPU with
	// the arena's residency (zero: exact routing).
	Routing routing.CacheRoute
}

// NewQwen3MoE uploads the dense weights of f (the file m was opened
// from) to dev and encodes the decode step.
func NewQwen3MoE(dev Device, f *gguf.File, m *qwen3moe.Model, o Qwen3MoEOptions) (*Qwen3MoE, error) {
	if o.Context <= 0 {
		return nil, fmt.Errorf("qwen3moe on metal: context of %d", o.Context)
	}
	hp := m.Hparams()
	s := &Qwen3MoE{dev: dev, hp: hp, nCtx: o.Context}
	src := o.Experts
	if src == nil {
		fe, err := experts.NewFile(f, m.Experts())
		if err != nil {
			return nil, err
		}
		src = fe
	}
	rope, err := (&blocks.Loader{Arch: qwen3moe.Arch, File: f}).Rope(hp.RopeDims, hp.ContextLength)
	if err != nil {
		return nil, err
	}
	slots := o.Slots
	if slots == 0 {
		slots = hp.Layers * hp.Experts
	}
	if slots < hp.ExpertsUsed {
		return nil, fmt.Errorf("qwen3moe on metal: %d arena slots for %d experts per token", slots, hp.ExpertsUsed)
	}
	ge, ok1 := f.Tensor("blk.0.ffn_gate_exps.weight")
	ue, ok2 := f.Tensor("blk.0.ffn_up_exps.weight")
	de, ok3 := f.Tensor("blk.0.ffn_down_exps.weight")
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("qwen3moe on metal: missing expert tensors of layer 0")
	}
	if s.arena, err = NewArena(dev, src, slots, hp.Embd, hp.FFExpert, ge.Type, ue.Type, de.Type); err != nil {
		return nil, err
	}
	if err := o.Routing.Validate(hp.ExpertsUsed, hp.Experts); err != nil {
		return nil, err
	}
	s.routing = o.Routing
	if err := s.encode(f, rope, o.MatVec); err != nil {
		return nil, err
	}
	return s, nil
}

// Arena is the step's expert cache.
func (s *Qwen3MoE) Arena() *Arena { return s.arena }

// Commands is the encoded step (for inspection: dispatches, barriers).
func (s *Qwen3MoE) Commands() *Commands { return &s.cmds }

// Len is the number of positions decoded so far.
func (s *Qwen3MoE) Len() int { return s.n }

// Step decodes one token at the next position and returns the logits.
func (s *Qwen3MoE) Step(ctx context.Context, token int32) ([]float32, error) {
	if token < 0 || int(token) >= s.hp.Vocab {
		return nil, fmt.Errorf("token id %d outside the vocabulary of %d", token, s.hp.Vocab)
	}
	if s.n >= s.nCtx {
		return nil, fmt.Errorf("context of %d positions is full", s.nCtx)
	}
	putI32(s.tok.Bytes(), []int32{token})
	s.arena.Resident(0, s.layerMask(0))
	putI32(s.pos.Bytes(), []int32{int32(s.n)})
	if err := s.dev.Run(ctx, &s.cmds); err != nil {
		return nil, err
	}
	s.n++
	return getF32(s.logits.Bytes(), s.hp.Vocab), nil
}

// layerMask is layer il's part of the residency masks.
func (s *Qwen3MoE) layerMask(il int) []byte {
	n := 4 * s.hp.Experts
	return s.resident.Bytes()[il*n : (il+1)*n]
}

func (s *Qwen3MoE) encode(f *gguf.File, rope backend.Rope, g MatVecGeometry) error {
	hp := s.hp
	e, hd := hp.Embd, hp.HeadDim
	qDim, kvDim := hp.Heads*hd, hp.HeadsKV*hd
	k, ff := hp.ExpertsUsed, hp.FFExpert
	alloc := func(dst *Buffer, n int) error {
		b, err := s.dev.Alloc(n)
		*dst = b
		return err
	}
	for _, a := range []struct {
		dst *Buffer
		n   int
	}{
		{&s.tok, 4}, {&s.pos, 4}, {&s.x, 4 * e}, {&s.xn, 4 * e}, {&s.q, 4 * qDim}, {&s.k, 4 * kvDim}, {&s.v, 4 * kvDim},
		{&s.att, 4 * qDim}, {&s.proj, 4 * e}, {&s.rlog, 4 * hp.Experts}, {&s.ids, 4 * k}, {&s.wts, 4 * k},
		{&s.slotMap, 4 * hp.Experts}, {&s.resident, 4 * hp.Layers * hp.Experts}, {&s.gate, 4 * k * ff}, {&s.up, 4 * k * ff}, {&s.hidden, 4 * k * ff},
		{&s.down, 4 * k * e}, {&s.scores, 4 * hp.Heads * s.nCtx}, {&s.logits, 4 * hp.Vocab},
	} {
		if err := alloc(a.dst, a.n); err != nil {
			return err
		}
	}
	upload := func(name string, rows, cols int) (q3weight, error) {
		t, ok := f.Tensor(name)
		if !ok {
			return q3weight{}, fmt.Errorf("qwen3moe on metal: missing tensor %s", name)
		}
		if _, err := weightType(t.Type); err != nil {
			return q3weight{}, fmt.Errorf("qwen3moe on metal: %s: %w", name, err)
		}
		ref, err := Upload(s.dev, f.Data(t))
		return q3weight{t: t.Type, ref: ref, rows: rows, cols: cols}, err
	}
	vec := func(name string, n int) (BufRef, error) {
		t, ok := f.Tensor(name)
		if !ok || t.Elements != uint64(n) {
			return BufRef{}, fmt.Errorf("qwen3moe on metal: tensor %s missing or not %d values", name, n)
		}
		if t.Type == ggml.F32 {
			return Upload(s.dev, f.Data(t))
		}
		return BufRef{}, fmt.Errorf("qwen3moe on metal: %s is %s, want F32", name, t.Type)
	}
	ref := func(b Buffer) BufRef { return BufRef{Buf: b} }
	c := &s.cmds
	mv := func(w q3weight, x, y Buffer) {
		MatVec{T: w.t, Rows: w.rows, Cols: w.cols, W: w.ref, X: ref(x), Y: ref(y), Geometry: g}.Encode(c)
	}
	embd, err := upload("token_embd.weight", hp.Vocab, e)
	if err != nil {
		return err
	}
	GetRows{T: embd.t, Cols: e, N: 1, W: embd.ref, IDs: ref(s.tok), Out: ref(s.x)}.Encode(c)
	c.Barrier()
	ropeOp := func(x Buffer, heads int) {
		Rope{HeadDim: hd, Heads: heads, Dims: hp.RopeDims, FreqBase: rope.FreqBase, FreqScale: rope.FreqScale,
			ExtFactor: rope.ExtFactor, AttnFactor: rope.AttnFactor, Corr: RopeCorrDims(rope), X: ref(x), Pos: ref(s.pos)}.Encode(c)
	}
	wa := s.arena
	for il := 0; il < hp.Layers; il++ {
		n := func(x string) string { return fmt.Sprintf("blk.%d.%s.weight", il, x) }
		var ws [5]q3weight
		for i, d := range []struct {
			name       string
			rows, cols int
		}{{"attn_q", qDim, e}, {"attn_k", kvDim, e}, {"attn_v", kvDim, e}, {"attn_output", e, qDim}, {"ffn_gate_inp", hp.Experts, e}} {
			if ws[i], err = upload(n(d.name), d.rows, d.cols); err != nil {
				return err
			}
		}
		var norms [4]BufRef
		for i, d := range []struct {
			name string
			n    int
		}{{"attn_norm", e}, {"attn_q_norm", hd}, {"attn_k_norm", hd}, {"ffn_norm", e}} {
			if norms[i], err = vec(n(d.name), d.n); err != nil {
				return err
			}
		}
		var kc, vc Buffer
		if err := alloc(&kc, 2*s.nCtx*kvDim); err != nil {
			return err
		}
		if err := alloc(&vc, 2*s.nCtx*kvDim); err != nil {
			return err
		}
		s.kc, s.vc = append(s.kc, kc), append(s.vc, vc)

		// Attention.
		RMSNorm{N: e, Rows: 1, Eps: hp.Eps, X: ref(s.x), W: norms[0], Out: ref(s.xn)}.Encode(c)
		c.Barrier()
		mv(ws[0], s.xn, s.q)
		mv(ws[1], s.xn, s.k)
		mv(ws[2], s.xn, s.v)
		c.Barrier()
		RMSNorm{N: hd, Rows: hp.Heads, Eps: hp.Eps, X: ref(s.q), W: norms[1], Out: ref(s.q)}.Encode(c)
		RMSNorm{N: hd, Rows: hp.HeadsKV, Eps: hp.Eps, X: ref(s.k), W: norms[2], Out: ref(s.k)}.Encode(c)
		c.Barrier()
		ropeOp(s.q, hp.Heads)
		ropeOp(s.k, hp.HeadsKV)
		c.Barrier()
		KVStore{KVDim: kvDim, K: ref(s.k), V: ref(s.v), KC: ref(kc), VC: ref(vc), Pos: ref(s.pos)}.Encode(c)
		c.Barrier()
		Attention{HeadDim: hd, Heads: hp.Heads, HeadsKV: hp.HeadsKV, NCtx: s.nCtx, Scale: float32(1 / math.Sqrt(float64(hd))),
			Q: ref(s.q), KC: ref(kc), VC: ref(vc), Scores: ref(s.scores), Out: ref(s.att), Pos: ref(s.pos)}.Encode(c)
		c.Barrier()
		mv(ws[3], s.att, s.proj)
		c.Barrier()
		Add{N: e, X: ref(s.x), Y: ref(s.proj)}.Encode(c)
		c.Barrier()

		// MoE: route, hand over to the host, run the experts from the arena.
		RMSNorm{N: e, Rows: 1, Eps: hp.Eps, X: ref(s.x), W: norms[3], Out: ref(s.xn)}.Encode(c)
		c.Barrier()
		mv(ws[4], s.xn, s.rlog)
		c.Barrier()
		Router{Experts: hp.Experts, K: k, Tokens: 1, Scale: hp.WeightsScale, Logits: ref(s.rlog), IDs: ref(s.ids), Weights: ref(s.wts),
			Cache: s.routing, Resident: BufRef{Buf: s.resident, Off: 4 * il * hp.Experts}}.Encode(c)
		layer := il
		c.Handshake(func(ctx context.Context) error {
			ids := make([]int32, k)
			for j := range ids {
				ids[j] = int32(binary.LittleEndian.Uint32(s.ids.Bytes()[4*j:]))
			}
			if err := wa.Load(ctx, layer, ids, s.slotMap.Bytes()); err != nil {
				return err
			}
			if layer+1 < hp.Layers { // the next layer's router sees what is resident now
				wa.Resident(layer+1, s.layerMask(layer+1))
			}
			return nil
		})
		ids, slots := ref(s.ids), ref(s.slotMap)
		arena := BufRef{Buf: wa.Buffer()}
		MatVec{T: wa.GateT, Rows: ff, Cols: e, N: k, W: arena, X: ref(s.xn), Y: ref(s.gate), IDs: &ids, Slots: &slots,
			SlotBytes: wa.SlotBytes, WOff: wa.GateOff, Geometry: g}.Encode(c)
		MatVec{T: wa.UpT, Rows: ff, Cols: e, N: k, W: arena, X: ref(s.xn), Y: ref(s.up), IDs: &ids, Slots: &slots,
			SlotBytes: wa.SlotBytes, WOff: wa.UpOff, Geometry: g}.Encode(c)
		c.Barrier()
		SwiGLU{N: k * ff, Gate: ref(s.gate), Up: ref(s.up), Out: ref(s.hidden)}.Encode(c)
		c.Barrier()
		MatVec{T: wa.DownT, Rows: e, Cols: ff, N: k, W: arena, X: ref(s.hidden), XStride: ff, Y: ref(s.down), IDs: &ids, Slots: &slots,
			SlotBytes: wa.SlotBytes, WOff: wa.DownOff, Geometry: g}.Encode(c)
		c.Barrier()
		Combine{Embd: e, K: k, X: ref(s.x), Down: ref(s.down), Weights: ref(s.wts)}.Encode(c)
		c.Barrier()
	}
	outNorm, err := vec("output_norm.weight", e)
	if err != nil {
		return err
	}
	outName := "output.weight"
	if _, ok := f.Tensor(outName); !ok {
		outName = "token_embd.weight"
	}
	out, err := upload(outName, hp.Vocab, e)
	if err != nil {
		return err
	}
	RMSNorm{N: e, Rows: 1, Eps: hp.Eps, X: ref(s.x), W: outNorm, Out: ref(s.xn)}.Encode(c)
	c.Barrier()
	mv(out, s.xn, s.logits)
	return c.Err()
}

// NoCopier is a Device that can wrap host memory (page-aligned: a file's
// mmap, the arena) as a buffer without copying.
type NoCopier interface {
	NoCopy(b []byte) (BufRef, error)
}

// Upload makes b visible to dev: wrapped without a copy where the device
// can, else copied into a new buffer.
func Upload(dev Device, b []byte) (BufRef, error) {
	if nc, ok := dev.(NoCopier); ok {
		return nc.NoCopy(b)
	}
	buf, err := dev.Alloc(len(b))
	if err != nil {
		return BufRef{}, err
	}
	copy(buf.Bytes(), b)
	return BufRef{Buf: buf}, nil
}
