// Package qwen3moe is the CPU forward pass of llama.cpp's "qwen3moe"
// architecture (the Qwen3-30B-A3B family): pre-norm attention with Q/K
// RMSNorm, NEOX RoPE and grouped-query attention over an F16 KV cache, and a
// softmax-routed top-k SwiGLU mixture of experts whose weights come through
// a model.ExpertSource. It follows llama.cpp's numerics (activations
// quantized to the weight type's dot format, F16 KV cache).
package qwen3moe

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/quant"
)

// Options configure Open.
type Options struct {
	Threads int                // 0: 1
	Experts model.ExpertSource // nil: expert weights straight from the file's mmap
}

// Model is a loaded qwen3moe model. Its weights are views into the GGUF
// file, which must stay open while the Model is used.
type Model struct {
	hp      Hparams
	pool    *cpu.Pool
	embd    embedding
	outNorm []float32
	output  cpu.Weight
	layers  []layer
	experts model.ExpertSource
	rope    cpu.Rope
}

type layer struct {
	attnNorm, qNorm, kNorm, ffnNorm []float32
	wq, wk, wv, wo                  cpu.Weight
	router                          cpu.Weight
}

type embedding struct {
	t        ggml.Type
	data     []byte
	rowBytes int
	k        *quant.Kernel
}

// Open builds the model from f, checking every tensor's presence, shape and
// type. Errors name the architecture and the tensor.
func Open(f *gguf.File, opts Options) (*Model, error) {
	if a := f.Arch(); a != Arch {
		return nil, fmt.Errorf("architecture %q is not %s", a, Arch)
	}
	hp, err := readHparams(f)
	if err != nil {
		return nil, err
	}
	m := &Model{hp: hp}
	e := uint64(hp.Embd)
	qDim := uint64(hp.Heads * hp.HeadDim)
	kvDim := uint64(hp.HeadsKV * hp.HeadDim)

	te, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("%s: missing tensor token_embd.weight", Arch)
	}
	if len(te.Dims) != 2 || te.Dims[0] != e {
		return nil, fmt.Errorf("%s: tensor token_embd.weight has shape %v, want [%d n_vocab]", Arch, te.Dims, e)
	}
	hp.Vocab = int(te.Dims[1])
	m.hp.Vocab = hp.Vocab
	vocab := uint64(hp.Vocab)
	k, err := quant.For(te.Type)
	if err != nil {
		return nil, fmt.Errorf("%s: token_embd.weight: %w", Arch, err)
	}
	m.embd = embedding{t: te.Type, data: f.Data(te), rowBytes: int(te.Size / te.Dims[1]), k: k}

	if m.outNorm, err = vec(f, "output_norm.weight", e); err != nil {
		return nil, err
	}
	outName := "output.weight"
	if _, ok := f.Tensor(outName); !ok {
		outName = "token_embd.weight" // tied embeddings
	}
	if m.output, err = mat(f, outName, e, vocab); err != nil {
		return nil, err
	}

	m.layers = make([]layer, hp.Layers)
	for i := range m.layers {
		l := &m.layers[i]
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
		if _, ok := f.Tensor(n("attn_qkv")); ok {
			return nil, fmt.Errorf("%s: fused %s is not supported; expected separate attn_q/attn_k/attn_v", Arch, n("attn_qkv"))
		}
		for _, v := range []struct {
			dst  *[]float32
			name string
			n    uint64
		}{
			{&l.attnNorm, "attn_norm", e}, {&l.qNorm, "attn_q_norm", uint64(hp.HeadDim)},
			{&l.kNorm, "attn_k_norm", uint64(hp.HeadDim)}, {&l.ffnNorm, "ffn_norm", e},
		} {
			if *v.dst, err = vec(f, n(v.name), v.n); err != nil {
				return nil, err
			}
		}
		for _, w := range []struct {
			dst        *cpu.Weight
			name       string
			cols, rows uint64
		}{
			{&l.wq, "attn_q", e, qDim}, {&l.wk, "attn_k", e, kvDim}, {&l.wv, "attn_v", e, kvDim},
			{&l.wo, "attn_output", qDim, e}, {&l.router, "ffn_gate_inp", e, uint64(hp.Experts)},
		} {
			if *w.dst, err = mat(f, n(w.name), w.cols, w.rows); err != nil {
				return nil, err
			}
		}
		for _, bias := range []string{"attn_q", "attn_k", "attn_v"} {
			if _, ok := f.Tensor(fmt.Sprintf("blk.%d.%s.bias", i, bias)); ok {
				return nil, fmt.Errorf("%s: blk.%d.%s.bias is not supported", Arch, i, bias)
			}
		}
	}
	if opts.Experts == nil {
		fe, err := newFileExperts(f, hp)
		if err != nil {
			return nil, err
		}
		opts.Experts = fe
	}
	m.experts = opts.Experts
	m.rope = cpu.Rope{Dims: hp.RopeDims, FreqBase: hp.RopeBase, FreqScale: 1, AttnFactor: hp.RopeAttnScale,
		CtxOrig: hp.RopeCtxOrig, BetaFast: 32, BetaSlow: 1}
	switch hp.RopeScaling {
	case "linear":
		m.rope.FreqScale = 1 / hp.RopeFactor
	case "yarn":
		m.rope.FreqScale = 1 / hp.RopeFactor
		m.rope.ExtFactor = 1
	}
	m.pool = cpu.NewPool(opts.Threads)
	return m, nil
}

// vec reads a 1-D tensor of n elements as float32 (converting if stored
// in another type).
func vec(f *gguf.File, name string, n uint64) ([]float32, error) {
	t, err := f.Expect(name, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Arch, err)
	}
	data := f.Data(t)
	if t.Type == ggml.F32 {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(data))), n), nil
	}
	k, err := quant.For(t.Type)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", Arch, name, err)
	}
	out := make([]float32, n)
	k.Dequantize(data, out)
	return out, nil
}

// mat reads a 2-D weight of ggml shape [cols, rows].
func mat(f *gguf.File, name string, cols, rows uint64) (cpu.Weight, error) {
	t, err := f.Expect(name, cols, rows)
	if err != nil {
		return cpu.Weight{}, fmt.Errorf("%s: %w", Arch, err)
	}
	w, err := cpu.NewWeight(t.Type, f.Data(t), int(rows), int(cols))
	if err != nil {
		return cpu.Weight{}, fmt.Errorf("%s: %s: %w", Arch, name, err)
	}
	return w, nil
}

// Hparams returns the model's dimensions.
func (m *Model) Hparams() Hparams { return m.hp }

// Arch implements model.Model.
func (m *Model) Arch() string { return Arch }

// NVocab implements model.Model.
func (m *Model) NVocab() int { return m.hp.Vocab }

// ContextLength implements model.Model.
func (m *Model) ContextLength() int { return m.hp.ContextLength }

// Close implements model.Model.
func (m *Model) Close() error {
	m.pool.Close()
	return nil
}

// NewSession implements model.Model.
func (m *Model) NewSession(nCtx int) (model.Session, error) {
	if nCtx <= 0 || nCtx > 1<<20 {
		return nil, fmt.Errorf("%s: context length %d out of range", Arch, nCtx)
	}
	kv := m.hp.HeadsKV * m.hp.HeadDim
	s := &Session{m: m, nCtx: nCtx, kvDim: kv}
	s.k = make([][]uint16, m.hp.Layers)
	s.v = make([][]uint16, m.hp.Layers)
	for i := range s.k {
		s.k[i] = make([]uint16, nCtx*kv)
		s.v[i] = make([]uint16, nCtx*kv)
	}
	s.scratch = make([][]float32, m.pool.Threads())
	s.qf = make([][]float32, m.pool.Threads())
	for i := range s.scratch {
		s.scratch[i] = make([]float32, nCtx)
		s.qf[i] = make([]float32, m.hp.HeadDim)
	}
	return s, nil
}

// fileExperts serves expert weights straight from the GGUF mmap.
type fileExperts struct {
	gate, up, down []tensorView
}

type tensorView struct {
	t         ggml.Type
	data      []byte
	perExpert int
}

func newFileExperts(f *gguf.File, hp Hparams) (*fileExperts, error) {
	fe := &fileExperts{}
	e, ff, ne := uint64(hp.Embd), uint64(hp.FFExpert), uint64(hp.Experts)
	for i := 0; i < hp.Layers; i++ {
		for _, x := range []struct {
			dst        *[]tensorView
			name       string
			cols, rows uint64
		}{
			{&fe.gate, "ffn_gate_exps", e, ff}, {&fe.up, "ffn_up_exps", e, ff}, {&fe.down, "ffn_down_exps", ff, e},
		} {
			name := fmt.Sprintf("blk.%d.%s.weight", i, x.name)
			t, err := f.Expect(name, x.cols, x.rows, ne)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", Arch, err)
			}
			if !quant.Supported(t.Type) {
				return nil, fmt.Errorf("%s: %s: weight type %s is not supported by the CPU backend", Arch, name, t.Type)
			}
			*x.dst = append(*x.dst, tensorView{t: t.Type, data: f.Data(t), perExpert: int(t.Size / ne)})
		}
	}
	return fe, nil
}

func (fe *fileExperts) Acquire(_ context.Context, l, e int) (model.ExpertWeights, error) {
	g, u, d := fe.gate[l], fe.up[l], fe.down[l]
	return model.ExpertWeights{
		Gate: g.data[e*g.perExpert : (e+1)*g.perExpert], GateT: g.t,
		Up: u.data[e*u.perExpert : (e+1)*u.perExpert], UpT: u.t,
		Down: d.data[e*d.perExpert : (e+1)*d.perExpert], DownT: d.t,
	}, nil
}

func (fe *fileExperts) Release(int, int) {}
