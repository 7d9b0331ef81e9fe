// Package qwen3next is llama.cpp's "qwen3next" architecture (the
// Qwen3-Next-80B-A3B family) as a graph over the shared blocks: gated
// DeltaNet (linear attention with a recurrent state) layers, and every
// full_attention_interval-th layer a gated attention with Q/K RMSNorm and
// partial NEOX RoPE; each followed by a softmax-routed top-k SwiGLU mixture
// of experts plus a sigmoid-gated shared expert. The MTP (nextn) block,
// where the file has one, drafts tokens for speculative decoding (mtp.go,
// model.DraftHead); plain decoding never runs it.
package qwen3next

import (
	"fmt"
	"math"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Architecture registers qwen3next with the engine.
var Architecture = model.Architecture{Name: Arch, Open: func(f *gguf.File, opts model.Options) (model.Model, error) {
	return Open(f, opts)
}}

// Model is a loaded qwen3next model. Its weights are views into the GGUF
// file, which must stay open while the Model is used.
type Model struct {
	hp     Hparams
	be     backend.Backend
	embd   *backend.Matrix
	head   blocks.Head
	layers []layer // trunk
	mtp    []mtpBlock
	layout model.ExpertLayout
	rope   backend.Rope
}

type layer struct {
	attnNorm, postNorm []float32
	recurrent          bool
	attn               blocks.Attention
	delta              blocks.DeltaNet
	moe                blocks.MoE
}

// mtpBlock is a multi-token-prediction block: a full-attention layer with
// its MoE, and the projections that feed it the previous hidden state and
// the next token's embedding (used by speculation, not plain decoding).
type mtpBlock struct {
	layer
	blocks.NextN // HeadNorm nil: the model's output norm
	experts      model.LayerExperts
}

// Open builds the model from f, checking every tensor's presence, shape and
// type. Errors name the architecture and the tensor or key.
func Open(f *gguf.File, opts model.Options) (*Model, error) {
	if a := f.Arch(); a != Arch {
		return nil, fmt.Errorf("architecture %q is not %s", a, Arch)
	}
	if opts.Backend == nil {
		return nil, fmt.Errorf("%s: no backend", Arch)
	}
	hp, err := readHparams(f)
	if err != nil {
		return nil, err
	}
	ld := &blocks.Loader{Arch: Arch, File: f, Backend: opts.Backend}
	m := &Model{hp: hp, be: opts.Backend}
	e := hp.Embd

	if m.embd, m.head, m.hp.Vocab, err = ld.EmbeddingAndHead(e, hp.Eps); err != nil {
		return nil, err
	}
	if m.rope, err = ld.Rope(hp.RopeDims, hp.ContextLength); err != nil {
		return nil, err
	}

	m.layers = make([]layer, hp.Layers)
	m.layout = model.ExpertLayout{Experts: hp.Experts, Layers: make([]*model.LayerExperts, hp.Layers)}
	for i := range m.layers {
		le, err := m.loadLayer(ld, i, &m.layers[i])
		if err != nil {
			return nil, err
		}
		m.layout.Layers[i] = &le
	}
	for j := 0; j < hp.MTP; j++ {
		b, err := m.loadMTP(ld, hp.Layers+j)
		if err != nil {
			return nil, err
		}
		m.mtp = append(m.mtp, b)
	}
	var prov model.ExpertProvider
	if opts.NewExperts != nil {
		prov, err = opts.NewExperts(&m.layout)
	} else {
		prov, err = experts.NewFile(f, &m.layout)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Arch, err)
	}
	for i := range m.layers {
		m.layers[i].moe.Provider = prov
		m.layers[i].moe.Tensors = m.layout.Layers[i]
		m.layers[i].moe.Routing = opts.Routing
		m.layers[i].moe.Usage = opts.Usage
		if i+1 < len(m.layers) {
			m.layers[i].moe.NextRouter = m.layers[i+1].moe.Router
		}
	}
	if len(m.mtp) > 0 {
		// The MTP block's experts are read from the file's mapping even
		// when the trunk's stream through the expert cache: only drafts use
		// them, and exact routing (no MoCE, no usage history) keeps the
		// head's drafts independent of the cache.
		ml := model.ExpertLayout{Experts: hp.Experts, Layers: make([]*model.LayerExperts, hp.Layers+len(m.mtp))}
		for j := range m.mtp {
			ml.Layers[hp.Layers+j] = &m.mtp[j].experts
		}
		mp, err := experts.NewFile(f, &ml)
		if err != nil {
			return nil, fmt.Errorf("%s: MTP block: %w", Arch, err)
		}
		for j := range m.mtp {
			m.mtp[j].moe.Provider = mp
		}
	}
	return m, nil
}

// loadLayer reads block i (trunk or MTP) into l.
func (m *Model) loadLayer(ld *blocks.Loader, i int, l *layer) (model.LayerExperts, error) {
	hp, e := m.hp, m.hp.Embd
	var err error
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
	if l.attnNorm, err = ld.Vec(n("attn_norm"), e); err != nil {
		return model.LayerExperts{}, err
	}
	if l.postNorm, err = ld.Vec(n("post_attention_norm"), e); err != nil {
		return model.LayerExperts{}, err
	}
	type mat struct {
		dst        **backend.Matrix
		name       string
		cols, rows int
	}
	loadMats := func(ms []mat) error {
		for _, w := range ms {
			if *w.dst, err = ld.Mat(w.name, w.cols, w.rows); err != nil {
				return err
			}
		}
		return nil
	}
	l.recurrent = hp.Recurrent[i]
	if l.recurrent {
		d := &l.delta
		kd, vd := hp.SSMState*hp.SSMGroups, hp.SSMState*hp.SSMVHeads
		if !ld.Has(n("attn_qkv")) && ld.Has(n("ssm_in")) {
			return model.LayerExperts{}, fmt.Errorf("%s: %s (the legacy fused q/k/v/z projection) is not supported; convert the model with a current llama.cpp", Arch, n("ssm_in"))
		}
		if err := loadMats([]mat{
			{&d.QKV, n("attn_qkv"), e, 2*kd + vd}, {&d.Z, n("attn_gate"), e, vd},
			{&d.BA, n("ssm_ba"), e, 2 * hp.SSMVHeads}, {&d.Out, n("ssm_out"), vd, e},
		}); err != nil {
			return model.LayerExperts{}, err
		}
		if d.Conv, err = ld.Floats(n("ssm_conv1d"), hp.SSMConv, 2*kd+vd); err != nil {
			return model.LayerExperts{}, err
		}
		if d.Norm, err = ld.Vec(n("ssm_norm"), hp.SSMState); err != nil {
			return model.LayerExperts{}, err
		}
		d.P = backend.DeltaNetParams{KeyHeads: hp.SSMGroups, ValueHeads: hp.SSMVHeads, Dim: hp.SSMState, Eps: hp.Eps}
		if d.P.DtBias, err = ld.Vec(fmt.Sprintf("blk.%d.ssm_dt.bias", i), hp.SSMVHeads); err != nil {
			return model.LayerExperts{}, err
		}
		if d.P.A, err = ld.Vec(fmt.Sprintf("blk.%d.ssm_a", i), hp.SSMVHeads); err != nil {
			return model.LayerExperts{}, err
		}
		d.Taps, d.RMSEps = hp.SSMConv, hp.Eps
	} else {
		a := &l.attn
		qDim, kvDim := hp.Heads*hp.HeadDim, hp.HeadsKV*hp.HeadDim
		if err := loadMats([]mat{
			{&a.Q, n("attn_q"), e, 2 * qDim}, {&a.K, n("attn_k"), e, kvDim}, {&a.V, n("attn_v"), e, kvDim},
			{&a.O, n("attn_output"), qDim, e},
		}); err != nil {
			return model.LayerExperts{}, err
		}
		if a.QNorm, err = ld.Vec(n("attn_q_norm"), hp.HeadDim); err != nil {
			return model.LayerExperts{}, err
		}
		if a.KNorm, err = ld.Vec(n("attn_k_norm"), hp.HeadDim); err != nil {
			return model.LayerExperts{}, err
		}
		a.P = backend.AttnParams{Heads: hp.Heads, HeadsKV: hp.HeadsKV, HeadDim: hp.HeadDim,
			Scale: float32(1 / math.Sqrt(float64(hp.HeadDim)))}
		a.RopeDims, a.Eps, a.Gated = hp.RopeDims, hp.Eps, true
	}
	var router *backend.Matrix
	if err := loadMats([]mat{{&router, n("ffn_gate_inp"), e, hp.Experts}}); err != nil {
		return model.LayerExperts{}, err
	}
	le, err := ld.Experts(n("ffn_gate_exps"), n("ffn_up_exps"), n("ffn_down_exps"), e, hp.FFExpert, hp.Experts)
	if err != nil {
		return model.LayerExperts{}, err
	}
	sh := &blocks.SharedExpert{FF: hp.FFShared}
	if sh.Gate, err = ld.RowMat(n("ffn_gate_inp_shexp"), e); err != nil {
		return model.LayerExperts{}, err
	}
	var g, u, dn *backend.Matrix
	if err := loadMats([]mat{
		{&g, n("ffn_gate_shexp"), e, hp.FFShared}, {&u, n("ffn_up_shexp"), e, hp.FFShared},
		{&dn, n("ffn_down_shexp"), hp.FFShared, e},
	}); err != nil {
		return model.LayerExperts{}, err
	}
	if g.Type != u.Type {
		return model.LayerExperts{}, fmt.Errorf("%s: %s is %s but %s is %s; the shared expert's gate and up must share a type",
			Arch, n("ffn_gate_shexp"), g.Type, n("ffn_up_shexp"), u.Type)
	}
	sh.W = backend.ExpertWeights{Gate: g.Data, Up: u.Data, Down: dn.Data, GateT: g.Type, UpT: u.Type, DownT: dn.Type}
	l.moe = blocks.MoE{Layer: i, Router: router, Experts: hp.Experts, Used: hp.ExpertsUsed,
		Embd: e, FF: hp.FFExpert, WeightsScale: hp.WeightsScale, Shared: sh}
	return le, nil
}

// loadMTP reads MTP block i (a full-attention block plus its nextn tensors).
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

// Hparams returns the model's dimensions.
func (m *Model) Hparams() Hparams { return m.hp }

// MTPBlocks is the number of MTP blocks the file carries (the first drafts
// for speculation; plain decoding runs none).
func (m *Model) MTPBlocks() int { return len(m.mtp) }

// Info implements model.Model.
func (m *Model) Info() model.Info {
	hp := m.hp
	return model.Info{Arch: Arch, Layers: hp.Layers, Embd: hp.Embd, Vocab: hp.Vocab, Experts: hp.Experts,
		ExpertsUsed: hp.ExpertsUsed, ContextLength: hp.ContextLength}
}

// Experts implements model.Model: the trunk's experts.
func (m *Model) Experts() *model.ExpertLayout { return &m.layout }

// Close implements model.Model; the backend belongs to the caller.
func (m *Model) Close() error { return nil }
