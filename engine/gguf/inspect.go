package gguf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Report summarizes a GGUF file for people (WriteText) and tools
// (encoding/json): what `strata inspect` prints.
type Report struct {
	File         string     `json:"file"`
	Version      uint32     `json:"version"`
	Architecture string     `json:"architecture"`
	Alignment    uint64     `json:"alignment"`
	FileBytes    int64      `json:"file_bytes"`      // all parts of a split model
	Parts        []string   `json:"parts,omitempty"` // the files of a split model
	HParams      Params     `json:"hparams"`
	Tokenizer    *Tokenizer `json:"tokenizer,omitempty"`
	Tensors      []Tensor   `json:"tensors"`
	TensorCount  int        `json:"tensor_count"`
	TensorBytes  uint64     `json:"tensor_bytes"`
	// ExpertBytes is the size of the expert tensors (names containing
	// "_exps"), which an engine can stream from disk instead of holding.
	ExpertBytes uint64 `json:"expert_bytes"`
	// RAMMinBytes is what a model of this file needs in memory at least:
	// all non-expert tensors. RAMAllBytes is all tensors.
	RAMMinBytes uint64 `json:"ram_min_bytes"`
	RAMAllBytes uint64 `json:"ram_all_bytes"`
}

// Param is one hyperparameter: a general.* or architecture-prefixed key.
type Param struct {
	Key   string
	Value Value
}

// Params is an ordered list of hyperparameters. It marshals to a JSON
// object in file order.
type Params []Param

// MarshalJSON encodes ps as one JSON object, keys in order. Arrays of more
// than maxJSONArray elements are summarized as {"type", "len"}.
func (ps Params) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(p.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(jsonValue(p.Value))
		if err != nil {
			return nil, fmt.Errorf("hparam %s: %w", p.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

const maxJSONArray = 256

type arraySummary struct {
	Type string `json:"type"`
	Len  int    `json:"len"`
}

// jsonValue maps v to something encoding/json handles: non-finite floats
// become strings, long arrays summaries.
func jsonValue(v Value) any {
	if v.Type() == TypeArray {
		if v.Len() > maxJSONArray || v.ElemType() == TypeArray {
			return arraySummary{Type: v.ElemType().String(), Len: v.Len()}
		}
		if fs, ok := v.Floats(); ok && (v.ElemType() == TypeFloat32 || v.ElemType() == TypeFloat64) {
			out := make([]any, len(fs))
			for i, f := range fs {
				out[i] = jsonFloat(f, v.ElemType())
			}
			return out
		}
		if ints, ok := v.Ints(); ok {
			return ints // also keeps []uint8 from encoding as base64
		}
		return v.Array()
	}
	if v.Type() == TypeFloat32 || v.Type() == TypeFloat64 {
		f, _ := v.Float()
		return jsonFloat(f, v.Type())
	}
	return v.Interface()
}

// jsonFloat returns f as a JSON number (an f32 at its shortest decimal
// form, 1e-06 rather than 9.999999974752427e-07), or as a string if it is
// not finite.
func jsonFloat(f float64, t ValueType) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return json.Number(formatFloat(f, t))
}

// Tokenizer summarizes the tokenizer.ggml.* metadata.
type Tokenizer struct {
	Model              string `json:"model"`
	Pre                string `json:"pre,omitempty"`
	VocabSize          int    `json:"vocab_size"`
	Merges             int    `json:"merges"`
	BOS                *int64 `json:"bos_id,omitempty"`
	EOS                *int64 `json:"eos_id,omitempty"`
	ChatTemplate       bool   `json:"chat_template"`
	ChatTemplateLength int    `json:"chat_template_length,omitempty"`
}

// Tensor is one row of the tensor table.
type Tensor struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	Shape []uint64 `json:"shape"`
	Bytes uint64   `json:"bytes"`
}

// IsExpert reports whether a tensor name denotes routed-expert weights
// (llama.cpp names them blk.N.ffn_{gate,up,down}_exps...).
func IsExpert(name string) bool { return strings.Contains(name, "_exps") }

// Inspect summarizes f.
func Inspect(f *File) Report {
	r := Report{
		File:         f.Name,
		Version:      f.Version,
		Architecture: f.Arch(),
		Alignment:    f.Alignment,
		FileBytes:    f.Size,
		HParams:      Params{},
		Tensors:      make([]Tensor, 0, len(f.Tensors)),
		TensorCount:  len(f.Tensors),
	}
	if parts := f.SplitParts(); len(parts) > 1 {
		r.Parts = parts
	}
	archPrefix := r.Architecture + "."
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, "general.") || (r.Architecture != "" && strings.HasPrefix(kv.Key, archPrefix)) {
			r.HParams = append(r.HParams, Param{Key: kv.Key, Value: kv.Value})
		}
	}
	if model, ok := f.String("tokenizer.ggml.model"); ok {
		t := &Tokenizer{Model: model}
		t.Pre, _ = f.String("tokenizer.ggml.pre")
		if v, ok := f.Get("tokenizer.ggml.tokens"); ok && v.Type() == TypeArray {
			t.VocabSize = v.Len()
		}
		if v, ok := f.Get("tokenizer.ggml.merges"); ok && v.Type() == TypeArray {
			t.Merges = v.Len()
		}
		if id, ok := f.Int("tokenizer.ggml.bos_token_id"); ok {
			t.BOS = &id
		}
		if id, ok := f.Int("tokenizer.ggml.eos_token_id"); ok {
			t.EOS = &id
		}
		if tmpl, ok := f.String("tokenizer.chat_template"); ok {
			t.ChatTemplate = true
			t.ChatTemplateLength = len(tmpl)
		}
		r.Tokenizer = t
	}
	for _, t := range f.Tensors {
		r.Tensors = append(r.Tensors, Tensor{Name: t.Name, Type: t.Type.String(), Shape: t.Dims, Bytes: t.Size})
		r.TensorBytes += t.Size
		if IsExpert(t.Name) {
			r.ExpertBytes += t.Size
		}
	}
	r.RAMAllBytes = r.TensorBytes
	r.RAMMinBytes = r.TensorBytes - r.ExpertBytes
	return r
}

// WriteText writes r for people: a summary, the hyperparameters, the
// tokenizer and the tensor table.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	arch := r.Architecture
	if arch == "" {
		arch = "(none)"
	}
	p("file:\t%s\n", r.File)
	p("format:\tGGUF v%d, alignment %d, %s\n", r.Version, r.Alignment, humanBytes(uint64(r.FileBytes)))
	if len(r.Parts) > 1 {
		p("split:\t%d parts\n", len(r.Parts))
	}
	p("architecture:\t%s\n", arch)
	p("tensors:\t%d, %s\n", r.TensorCount, humanBytes(r.TensorBytes))
	p("RAM minimum:\t%s, all but expert tensors\n", humanBytes(r.RAMMinBytes))
	p("RAM all:\t%s, experts %s\n", humanBytes(r.RAMAllBytes), humanBytes(r.ExpertBytes))
	p("\nhparams:\n")
	for _, h := range r.HParams {
		p("  %s\t%s\n", h.Key, truncate(h.Value.String(), 120))
	}
	if t := r.Tokenizer; t != nil {
		p("\ntokenizer:\n")
		p("  model\t%s\n", t.Model)
		if t.Pre != "" {
			p("  pre\t%s\n", t.Pre)
		}
		p("  vocab size\t%d\n", t.VocabSize)
		p("  merges\t%d\n", t.Merges)
		if t.BOS != nil {
			p("  bos id\t%d\n", *t.BOS)
		}
		if t.EOS != nil {
			p("  eos id\t%d\n", *t.EOS)
		}
		if t.ChatTemplate {
			p("  chat template\t%d bytes\n", t.ChatTemplateLength)
		} else {
			p("  chat template\tnone\n")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\n%s\t%s\t%s\t%s\n", "name", "type", "shape", "bytes")
	for _, t := range r.Tensors {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", t.Name, t.Type, shapeString(t.Shape), t.Bytes)
	}
	return tw.Flush()
}

func shapeString(dims []uint64) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "×")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB (%d bytes)", float64(n)/float64(div), "KMGTPE"[exp], n)
}
