// Package qwen4exp is llama.cpp's "qwen4exp" architecture (Qwen3.8 Flash
// Next) as a graph over the shared blocks (src/models/qwen4exp.cpp). It
// builds on qwen3next: gated DeltaNet layers, and every
// full_attention_interval-th layer a gated attention with Q/K RMSNorm and
// partial rotary embeddings; each followed by a softmax-routed top-k
// SwiGLU mixture of experts (per-layer expert FFN sizes) plus a
// sigmoid-gated shared expert. What it adds:
//
//   - Hyper-connections instead of layer norms: the residual is HC parallel
//     streams; before the token mixer and before the MoE a module
//     (blocks.HyperConn) mixes them into the block's input and scatters
//     the block's output back, and a final module is the output norm.
//   - The DeltaNet differs from qwen3next's: separate beta and alpha
//     projections, value head h reads key head h mod key heads (the fused
//     ggml_gated_delta_net's broadcast), and the output gate is sigmoid(z).
//   - Multi-section rope (IMROPE); with text positions it rotates as NEOX.
//   - QSA sparse attention on the full-attention layers whose
//     attention.compress_ratios entry is positive (an indexer picks the
//     key blocks each query sees); without that key the file runs dense.
//   - A PLE n-gram hash embedding added to the residual on one DeltaNet
//     layer.
//
// The MTP (nextn) blocks, where a file has them (llama.cpp's converter
// writes none for qwen4exp and its loader refuses a file that does), draft
// tokens for speculative decoding (mtp.go, model.DraftHead); plain decoding
// never runs them.
//
// Routing is softmax → top-k → renormalise whatever the file's gating keys
// say, as llama.cpp's graph hard-codes it.
//
// QSA (qsa.go): the full-attention layer's indexer picks the key cells
// each query row sees (Session.qsaAttention; its F16 key cache beside the
// KV cache, Session.idx). PLE (ple.go, ple_table.go): the PLE step updates
// the HC residual of the PLE layer before its first mix (Session.pleStep;
// its history is the layer's third recurrent buffer), from table rows
// whose reads start with the forward pass (Session.pleStart), or earlier
// for a batch the caller announces (Session.Prefetch: speculation's
// verify batch, as soon as the drafter has returned it). Both have
// their weights loaded here (layer.qsa, Model.ple).
package qwen4exp

import (
	"fmt"
	"math"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Architecture registers qwen4exp with the engine.
var Architecture = model.Architecture{Name: Arch, Open: func(f *gguf.File, opts model.Options) (model.Model, error) {
	return Open(f, opts)
}}

// Model is a loaded qwen4exp model. Its weights are views into the GGUF
// file, which must stay open while the Model is used.
type Model struct {
	hp     Hparams
	be     backend.Backend
	embd   *backend.Matrix
	hcHead blocks.HyperConn // the final mixer (no inject), the output norm
	head   blocks.Head      // the output projection (no norm)
	layers []layer          // trunk
	mtp    []mtpBlock       // (mtp.go)
	layout model.ExpertLayout
	rope   backend.Rope
	ple    *pleWeights // nil: no PLE layer
	pleTab *pleTable   // its table's rows (ple_table.go)
	pleL   *pleLayer   // its layer (ple.go)
}

type layer struct {
	hcAttn, hcFFN blocks.HyperConn
	recurrent     bool
	attn          blocks.Attention
	qsa           qsaWeights  // the indexer (full-attention layers)
	ix            *qsaIndexer // the indexer when the layer runs QSA (qsa.go); nil: dense
	delta         blocks.DeltaNet
	moe           blocks.MoE
}

// qsaWeights are a full-attention layer's indexer tensors
// (blk.N.indexer.*), which llama.cpp requires even when the layer runs
// dense.
type qsaWeights struct {
	QProj *backend.Matrix // [IndexerHeads·IndexerDim × embd]
	KProj *backend.Matrix // [IndexerDim × embd]
	QNorm []float32       // [IndexerDim]
	KNorm []float32       // [IndexerDim]
	Ratio int             // attention.compress_ratios[il]; 0: dense
}

// pleWeights are the PLE n-gram hash embedding's tensors: the shared table
// and the PLE layer's projections, norms and convolution.
type pleWeights struct {
	// The table (per_layer_token_embd) is no Matrix: its rows are read
	// on demand (pleTable), never the whole of it.
	Key       *backend.Matrix // ple_key [HC·embd × embd]
	Value     *backend.Matrix // ple_value [embd × embd]
	NormKey   []float32       // [HC·embd]
	NormQuery []float32       // [HC·embd]
	NormConv  []float32       // [HC·embd]
	Conv      []float32       // ple_conv1d, ggml [kernel, HC·embd]: per channel its kernel taps
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

	te, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("%s: missing tensor token_embd.weight", Arch)
	}
	if len(te.Dims) != 2 || te.Dims[0] != uint64(e) || te.Dims[1] == 0 || te.Dims[1] > 1<<24 {
		return nil, fmt.Errorf("%s: tensor token_embd.weight has shape %v, want [%d n_vocab]", Arch, te.Dims, e)
	}
	m.hp.Vocab = int(te.Dims[1])
	if m.embd, err = ld.Mat("token_embd.weight", e, m.hp.Vocab); err != nil {
		return nil, err
	}
	// No output_norm: the final hyper-connection mixer carries it.
	if m.hcHead, err = loadHC(ld, &hp, "output_hc_", false); err != nil {
		return nil, err
	}
	out := "output.weight"
	if !ld.Has(out) {
		out = "token_embd.weight" // tied embeddings
	}
	if m.head.Output, err = ld.Mat(out, e, m.hp.Vocab); err != nil {
		return nil, err
	}
	if m.rope, err = ld.Rope(hp.RopeDims, hp.ContextLength); err != nil {
		return nil, err
	}
	if hp.PLE.Layer >= 0 {
		if m.ple, err = loadPLE(ld, &hp); err != nil {
			return nil, err
		}
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
	if err := m.initQSA(); err != nil {
		return nil, err
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
	if err := m.initPLE(f, prov); err != nil {
		return nil, err
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
	if err := m.initMTPExperts(f); err != nil {
		return nil, err
	}
	return m, nil
}

// loadHC reads one hyper-connection module: prefix is "output_hc_" for the
// head (no inject) or "blk.N.hc_attn_" / "blk.N.hc_ffn_".
func loadHC(ld *blocks.Loader, hp *Hparams, prefix string, inject bool) (blocks.HyperConn, error) {
	hd := hp.HC * hp.Embd
	h := blocks.HyperConn{HC: hp.HC, Embd: hp.Embd, LowRank: hp.HCLowRank, Eps: hp.Eps}
	var err error
	if h.Norm, err = ld.Vec(prefix+"norm.weight", hd); err != nil {
		return h, err
	}
	if h.Down, err = ld.Mat(prefix+"down.weight", hd, hp.HCLowRank); err != nil {
		return h, err
	}
	if h.Up, err = ld.Mat(prefix+"up.weight", hp.HCLowRank, hd); err != nil {
		return h, err
	}
	if inject {
		if h.Inject, err = ld.Mat(prefix+"inject.weight", hd, hp.HC); err != nil {
			return h, err
		}
	}
	return h, nil
}

// loadPLE reads the PLE table and the PLE layer's tensors.
func loadPLE(ld *blocks.Loader, hp *Hparams) (*pleWeights, error) {
	p, e, hd := &pleWeights{}, hp.Embd, hp.HC*hp.Embd
	il := hp.PLE.Layer
	const table = pleTableName
	t, ok := ld.File.Tensor(table)
	if !ok {
		return nil, fmt.Errorf("%s: missing tensor %s", Arch, table)
	}
	need := hp.PLE.Rows()
	if len(t.Dims) != 2 || t.Dims[0] != uint64(hp.PLE.HeadDim) {
		return nil, fmt.Errorf("%s: tensor %s has shape %v, want [%d rows]", Arch, table, t.Dims, hp.PLE.HeadDim)
	}
	if t.Dims[1] < uint64(need) {
		return nil, fmt.Errorf("%s: %s has %d rows, too few for the PLE head ranges (%d)", Arch, table, t.Dims[1], need)
	}
	if !t.Type.Known() || t.Type.BlockSize() <= 0 || hp.PLE.HeadDim%t.Type.BlockSize() != 0 {
		return nil, fmt.Errorf("%s: tensor %s has type %s, whose blocks do not divide its rows of %d", Arch, table, t.Type, hp.PLE.HeadDim)
	}
	var err error
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", il, s) }
	if p.Key, err = ld.Mat(n("ple_key"), e, hd); err != nil {
		return nil, err
	}
	if p.Value, err = ld.Mat(n("ple_value"), e, e); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		dst  *[]float32
		name string
	}{{&p.NormKey, "ple_norm_key"}, {&p.NormQuery, "ple_norm_query"}, {&p.NormConv, "ple_norm_conv"}} {
		if *v.dst, err = ld.Vec(n(v.name), hd); err != nil {
			return nil, err
		}
	}
	if p.Conv, err = ld.Floats(n("ple_conv1d"), hp.PLE.ConvKernel, hd); err != nil {
		return nil, err
	}
	return p, nil
}

// loadLayer reads block i (trunk or MTP) into l.
func (m *Model) loadLayer(ld *blocks.Loader, i int, l *layer) (model.LayerExperts, error) {
	hp, e := m.hp, m.hp.Embd
	var err error
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
	if l.hcAttn, err = loadHC(ld, &hp, fmt.Sprintf("blk.%d.hc_attn_", i), true); err != nil {
		return model.LayerExperts{}, err
	}
	if l.hcFFN, err = loadHC(ld, &hp, fmt.Sprintf("blk.%d.hc_ffn_", i), true); err != nil {
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
		if err := loadMats([]mat{
			{&d.QKV, n("attn_qkv"), e, 2*kd + vd}, {&d.Z, n("attn_gate"), e, vd},
			{&d.Beta, n("ssm_beta"), e, hp.SSMVHeads}, {&d.Alpha, n("ssm_alpha"), e, hp.SSMVHeads},
			{&d.Out, n("ssm_out"), vd, e},
		}); err != nil {
			return model.LayerExperts{}, err
		}
		if d.Conv, err = ld.Floats(n("ssm_conv1d"), hp.SSMConv, 2*kd+vd); err != nil {
			return model.LayerExperts{}, err
		}
		if d.Norm, err = ld.Vec(n("ssm_norm"), hp.SSMState); err != nil {
			return model.LayerExperts{}, err
		}
		d.P = backend.DeltaNetParams{KeyHeads: hp.SSMGroups, ValueHeads: hp.SSMVHeads, Dim: hp.SSMState, Eps: hp.Eps, KeyTiled: true}
		if d.P.DtBias, err = ld.Vec(fmt.Sprintf("blk.%d.ssm_dt.bias", i), hp.SSMVHeads); err != nil {
			return model.LayerExperts{}, err
		}
		if d.P.A, err = ld.Vec(fmt.Sprintf("blk.%d.ssm_a", i), hp.SSMVHeads); err != nil {
			return model.LayerExperts{}, err
		}
		d.Taps, d.RMSEps, d.SigmoidGate = hp.SSMConv, hp.Eps, true
	} else {
		a := &l.attn
		qDim, kvDim := hp.Heads*hp.HeadDim, hp.HeadsKV*hp.HeadDim
		if ld.Has(n("attn_qkv")) {
			return model.LayerExperts{}, fmt.Errorf("%s: %s (a fused q/k/v projection on a full-attention layer) is not supported", Arch, n("attn_qkv"))
		}
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
		if i < hp.Layers { // an MTP block attends densely: no indexer (mtp.go)
			q := &l.qsa
			if err := loadMats([]mat{
				{&q.QProj, n("indexer.q_proj"), e, hp.IndexerHeads * hp.IndexerDim}, {&q.KProj, n("indexer.k_proj"), e, hp.IndexerDim},
			}); err != nil {
				return model.LayerExperts{}, err
			}
			if q.QNorm, err = ld.Vec(n("indexer.q_norm"), hp.IndexerDim); err != nil {
				return model.LayerExperts{}, err
			}
			if q.KNorm, err = ld.Vec(n("indexer.k_norm"), hp.IndexerDim); err != nil {
				return model.LayerExperts{}, err
			}
			q.Ratio = hp.CompressRatios[i]
		}
	}
	ff := hp.FFExpert[i]
	var router *backend.Matrix
	if err := loadMats([]mat{{&router, n("ffn_gate_inp"), e, hp.Experts}}); err != nil {
		return model.LayerExperts{}, err
	}
	le, err := ld.Experts(n("ffn_gate_exps"), n("ffn_up_exps"), n("ffn_down_exps"), e, ff, hp.Experts)
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
		Embd: e, FF: ff, WeightsScale: hp.WeightsScale, Shared: sh}
	return le, nil
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
