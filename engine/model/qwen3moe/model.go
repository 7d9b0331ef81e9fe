// Package qwen3moe is llama.cpp's "qwen3moe" architecture (the
// Qwen3-30B-A3B family) as a graph over the shared blocks: pre-norm
// attention with Q/K RMSNorm, NEOX RoPE and grouped-query attention over an
// F16 KV cache, then a softmax-routed top-k SwiGLU mixture of experts whose
// weights come through a model.ExpertProvider.
package qwen3moe

import (
	"fmt"
	"math"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Architecture registers qwen3moe with the engine.
var Architecture = model.Architecture{Name: Arch, Open: func(f *gguf.File, opts model.Options) (model.Model, error) {
	return Open(f, opts)
}}

// Model is a loaded qwen3moe model. Its weights are views into the GGUF
// file, which must stay open while the Model is used.
type Model struct {
	hp     Hparams
	be     backend.Backend
	embd   *backend.Matrix
	head   blocks.Head
	layers []layer
	layout model.ExpertLayout
	rope   backend.Rope
}

type layer struct {
	attnNorm, ffnNorm []float32
	attn              blocks.Attention
	moe               blocks.MoE
}

// Open builds the model from f, checking every tensor's presence, shape and
// type. Errors name the architecture and the tensor.
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
	qDim, kvDim := hp.Heads*hp.HeadDim, hp.HeadsKV*hp.HeadDim

	if m.embd, m.head, m.hp.Vocab, err = ld.EmbeddingAndHead(e, hp.Eps); err != nil {
		return nil, err
	}
	if m.rope, err = ld.Rope(hp.RopeDims, hp.ContextLength); err != nil {
		return nil, err
	}

	m.layers = make([]layer, hp.Layers)
	m.layout = model.ExpertLayout{Experts: hp.Experts, Layers: make([]*model.LayerExperts, hp.Layers)}
	for i := range m.layers {
		l := &m.layers[i]
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
		if ld.Has(n("attn_qkv")) {
			return nil, fmt.Errorf("%s: fused %s is not supported; expected separate attn_q/attn_k/attn_v", Arch, n("attn_qkv"))
		}
		for _, bias := range []string{"attn_q", "attn_k", "attn_v"} {
			if ld.Has(fmt.Sprintf("blk.%d.%s.bias", i, bias)) {
				return nil, fmt.Errorf("%s: blk.%d.%s.bias is not supported", Arch, i, bias)
			}
		}
		a := &l.attn
		for _, v := range []struct {
			dst  *[]float32
			name string
			n    int
		}{
			{&l.attnNorm, "attn_norm", e}, {&a.QNorm, "attn_q_norm", hp.HeadDim},
			{&a.KNorm, "attn_k_norm", hp.HeadDim}, {&l.ffnNorm, "ffn_norm", e},
		} {
			if *v.dst, err = ld.Vec(n(v.name), v.n); err != nil {
				return nil, err
			}
		}
		for _, w := range []struct {
			dst        **backend.Matrix
			name       string
			cols, rows int
		}{
			{&a.Q, "attn_q", e, qDim}, {&a.K, "attn_k", e, kvDim}, {&a.V, "attn_v", e, kvDim},
			{&a.O, "attn_output", qDim, e}, {&l.moe.Router, "ffn_gate_inp", e, hp.Experts},
		} {
			if *w.dst, err = ld.Mat(n(w.name), w.cols, w.rows); err != nil {
				return nil, err
			}
		}
		a.P = backend.AttnParams{Heads: hp.Heads, HeadsKV: hp.HeadsKV, HeadDim: hp.HeadDim,
			Scale: float32(1 / math.Sqrt(float64(hp.HeadDim)))}
		a.RopeDims, a.Eps = hp.RopeDims, hp.Eps
		le, err := ld.Experts(n("ffn_gate_exps"), n("ffn_up_exps"), n("ffn_down_exps"), e, hp.FFExpert, hp.Experts)
		if err != nil {
			return nil, err
		}
		m.layout.Layers[i] = &le
		l.moe = blocks.MoE{Layer: i, Router: l.moe.Router, Experts: hp.Experts, Used: hp.ExpertsUsed,
			Embd: e, FF: hp.FFExpert, WeightsScale: hp.WeightsScale}
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
	return m, nil
}

// Hparams returns the model's dimensions.
func (m *Model) Hparams() Hparams { return m.hp }

// Info implements model.Model.
func (m *Model) Info() model.Info {
	hp := m.hp
	return model.Info{Arch: Arch, Layers: hp.Layers, Embd: hp.Embd, Vocab: hp.Vocab, Experts: hp.Experts,
		ExpertsUsed: hp.ExpertsUsed, ContextLength: hp.ContextLength}
}

// Experts implements model.Model.
func (m *Model) Experts() *model.ExpertLayout { return &m.layout }

// Close implements model.Model; the backend belongs to the caller.
func (m *Model) Close() error { return nil }

// NewSession implements model.Model.
func (m *Model) NewSession(nCtx int) (model.Session, error) {
	if nCtx <= 0 || nCtx > 1<<20 {
		return nil, fmt.Errorf("%s: context length %d out of range", Arch, nCtx)
	}
	attn := make([]bool, m.hp.Layers)
	for i := range attn {
		attn[i] = true
	}
	return &Session{m: m, kv: m.be.NewKVCache(attn, nCtx, m.hp.HeadsKV*m.hp.HeadDim), tokens: make([]int32, 0, nCtx)}, nil
}
