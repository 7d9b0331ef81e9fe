// Package blocks holds the pieces every architecture's graph is built from
// — token embedding, attention over a KV cache, the MoE layer with its
// routing step and expert provider, the output head — and the helpers that
// read their weights from a GGUF file. Blocks issue their heavy work to a
// backend.Backend, so architectures never touch a kernel.
package blocks

import (
	"fmt"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/quant"
)

// Loader reads one architecture's tensors from a file into a backend,
// naming the architecture in its errors.
type Loader struct {
	Arch    string
	File    *gguf.File
	Backend backend.Backend
}

// Has reports whether the file holds a tensor called name.
func (l *Loader) Has(name string) bool {
	_, ok := l.File.Tensor(name)
	return ok
}

// Vec reads a 1-D tensor of n elements as float32 (converting it if it is
// stored in another type).
func (l *Loader) Vec(name string, n int) ([]float32, error) { return l.Floats(name, n) }

// Floats reads a tensor of ggml shape dims as float32 (converting it if it
// is stored in another type).
func (l *Loader) Floats(name string, dims ...int) ([]float32, error) {
	ud := make([]uint64, len(dims))
	n := 1
	for i, d := range dims {
		ud[i] = uint64(d)
		n *= d
	}
	t, err := l.File.Expect(name, ud...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Arch, err)
	}
	data := l.File.Data(t)
	if t.Type == ggml.F32 {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(data))), n), nil
	}
	k, err := quant.For(t.Type)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", l.Arch, name, err)
	}
	out := make([]float32, n)
	k.Dequantize(data, out)
	return out, nil
}

// Mat reads a 2-D weight of ggml shape [cols, rows].
func (l *Loader) Mat(name string, cols, rows int) (*backend.Matrix, error) {
	t, err := l.File.Expect(name, uint64(cols), uint64(rows))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Arch, err)
	}
	m, err := l.Backend.NewMatrix(t.Type, l.File.Data(t), rows, cols)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", l.Arch, name, err)
	}
	return m, nil
}

// RowMat reads a 1-D weight of n elements as a 1×n matrix (a projection to
// one value, e.g. ffn_gate_inp_shexp).
func (l *Loader) RowMat(name string, n int) (*backend.Matrix, error) {
	t, err := l.File.Expect(name, uint64(n))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Arch, err)
	}
	m, err := l.Backend.NewMatrix(t.Type, l.File.Data(t), 1, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", l.Arch, name, err)
	}
	return m, nil
}

// Experts checks layer il's expert tensors gate/up/down (ggml shapes
// [embd, ff, n], [embd, ff, n], [ff, embd, n]) and returns where they are.
func (l *Loader) Experts(gate, up, down string, embd, ff, n int) (model.LayerExperts, error) {
	var refs [3]model.TensorRef
	for i, x := range []struct {
		name       string
		cols, rows int
	}{{gate, embd, ff}, {up, embd, ff}, {down, ff, embd}} {
		t, err := l.File.Expect(x.name, uint64(x.cols), uint64(x.rows), uint64(n))
		if err != nil {
			return model.LayerExperts{}, fmt.Errorf("%s: %w", l.Arch, err)
		}
		if !quant.Supported(t.Type) {
			return model.LayerExperts{}, fmt.Errorf("%s: %s: weight type %s is not supported", l.Arch, x.name, t.Type)
		}
		refs[i] = model.TensorRef{Name: x.name, Type: t.Type, Rows: x.rows, Cols: x.cols, PerExpert: int64(t.Size) / int64(n)}
	}
	return model.LayerExperts{Gate: refs[0], Up: refs[1], Down: refs[2]}, nil
}

// Rope reads the RoPE parameters an architecture's metadata gives (base,
// linear or YaRN scaling) for dims rotated dimensions, as llama.cpp's
// llama_model_loader does, and the model's trained context.
func (l *Loader) Rope(dims, ctxTrain int) (backend.Rope, error) {
	f := l.File
	r := backend.Rope{Dims: dims, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, CtxOrig: ctxTrain, BetaFast: 32, BetaSlow: 1}
	if v, ok := f.ArchFloat("rope.freq_base"); ok {
		r.FreqBase = float32(v)
	}
	scaling := "none"
	if v, ok := f.String(l.Arch + ".rope.scaling.type"); ok && v != "" {
		scaling = v
	}
	factor := float32(1)
	if v, ok := f.ArchFloat("rope.scaling.factor"); ok && v > 0 {
		factor = float32(v)
	}
	if v, ok := f.ArchUint("rope.scaling.original_context_length"); ok {
		r.CtxOrig = int(v)
	}
	if v, ok := f.ArchFloat("rope.scaling.attn_factor"); ok && v > 0 {
		r.AttnFactor = float32(v)
	}
	switch scaling {
	case "none":
	case "linear":
		r.FreqScale = 1 / factor
	case "yarn":
		r.FreqScale = 1 / factor
		r.ExtFactor = 1
	default:
		return r, fmt.Errorf("%s: rope scaling %q is not supported", l.Arch, scaling)
	}
	return r, nil
}

// EmbeddingAndHead reads the token embeddings ([embd, n_vocab]) and the
// output head: the output norm and the output matrix, which is the
// embeddings themselves when the file has no output.weight (tied). It
// returns the vocabulary size the embeddings give.
func (l *Loader) EmbeddingAndHead(embd int, eps float32) (emb *backend.Matrix, head Head, vocab int, err error) {
	te, ok := l.File.Tensor("token_embd.weight")
	if !ok {
		return nil, head, 0, fmt.Errorf("%s: missing tensor token_embd.weight", l.Arch)
	}
	if len(te.Dims) != 2 || te.Dims[0] != uint64(embd) {
		return nil, head, 0, fmt.Errorf("%s: tensor token_embd.weight has shape %v, want [%d n_vocab]", l.Arch, te.Dims, embd)
	}
	vocab = int(te.Dims[1])
	if emb, err = l.Mat("token_embd.weight", embd, vocab); err != nil {
		return nil, head, 0, err
	}
	if head.Norm, err = l.Vec("output_norm.weight", embd); err != nil {
		return nil, head, 0, err
	}
	head.Eps = eps
	out := "output.weight"
	if !l.Has(out) {
		out = "token_embd.weight" // tied embeddings
	}
	if head.Output, err = l.Mat(out, embd, vocab); err != nil {
		return nil, head, 0, err
	}
	return emb, head, vocab, nil
}
