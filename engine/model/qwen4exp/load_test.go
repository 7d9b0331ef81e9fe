package qwen4exp_test

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
	"github.com/strata-llm/strata/engine/model/qwen4exp"
	"github.com/strata-llm/strata/engine/synth"
)

// TestOpenRefusesBrokenModels: what llama.cpp's load_arch_hparams and
// load_arch_tensors refuse (missing hyper-connection or indexer tensors,
// a single stream, zero sizes, arrays of the wrong length, a PLE layer on
// an attention layer) gives errors that name the key or tensor.
func TestOpenRefusesBrokenModels(t *testing.T) {
	src := writeSynth(t, ggml.Q8_0, func(c *synth.Config) { c.FFExperts = []int{256, 256, 256, 256} })
	const a = "qwen4exp."
	tests := []struct {
		name   string
		kv     func(*gguf.KV) bool
		tensor func(*gguf.TensorInfo) bool
		want   []string
	}{
		{"other architecture", func(e *gguf.KV) bool {
			if e.Key == "general.architecture" {
				e.Value = gguf.String("llama")
			}
			return true
		}, nil, []string{`architecture "llama" is not qwen4exp`}},
		{"missing hc head", nil, modeltest.Drop("output_hc_down.weight"), []string{"output_hc_down.weight"}},
		{"missing hc inject", nil, modeltest.Drop("blk.1.hc_ffn_inject.weight"), []string{"blk.1.hc_ffn_inject.weight"}},
		{"missing hc norm", nil, modeltest.Drop("blk.0.hc_attn_norm.weight"), []string{"blk.0.hc_attn_norm.weight"}},
		{"missing indexer", nil, modeltest.Drop("blk.3.indexer.k_proj.weight"), []string{"blk.3.indexer.k_proj.weight"}},
		{"missing indexer norm", nil, modeltest.Drop("blk.3.indexer.q_norm.weight"), []string{"blk.3.indexer.q_norm.weight"}},
		{"missing beta", nil, modeltest.Drop("blk.0.ssm_beta.weight"), []string{"blk.0.ssm_beta.weight"}},
		{"missing alpha", nil, modeltest.Drop("blk.2.ssm_alpha.weight"), []string{"blk.2.ssm_alpha.weight"}},
		{"missing shared gate", nil, modeltest.Drop("blk.3.ffn_gate_inp_shexp.weight"), []string{"blk.3.ffn_gate_inp_shexp.weight"}},
		{"hc inject of the wrong shape", nil, func(ti *gguf.TensorInfo) bool {
			if ti.Name == "blk.0.hc_attn_inject.weight" {
				ti.Dims[0], ti.Dims[1] = ti.Dims[0]/2, ti.Dims[1]*2
			}
			return true
		}, []string{"blk.0.hc_attn_inject.weight", "shape"}},
		{"one stream", modeltest.SetUint(a+"hyper_connection.count", 1), nil, []string{a + "hyper_connection.count", "greater than one"}},
		{"low rank 0", modeltest.SetUint(a+"hyper_connection.low_rank", 0), nil, []string{a + "hyper_connection.low_rank"}},
		{"missing low rank", modeltest.DropKey(a + "hyper_connection.low_rank"), nil, []string{a + "hyper_connection.low_rank"}},
		{"indexer top-k 0", modeltest.SetUint(a+"attention.indexer.top_k", 0), nil, []string{a + "attention.indexer"}},
		{"missing indexer heads", modeltest.DropKey(a + "attention.indexer.head_count"), nil, []string{a + "attention.indexer.head_count"}},
		{"missing rope sections", modeltest.DropKey(a + "rope.dimension_sections"), nil, []string{a + "rope.dimension_sections"}},
		{"rope sections of 3", modeltest.SetInts(a+"rope.dimension_sections", []int32{4, 4, 0}), nil, []string{a + "rope.dimension_sections", "entries"}},
		{"expert sizes of 3 layers", modeltest.SetInts(a+"expert_feed_forward_length", []int32{256, 256, 256}), nil,
			[]string{a + "expert_feed_forward_length", "entries"}},
		{"expert sizes vs tensors", modeltest.SetInts(a+"expert_feed_forward_length", []int32{256, 512, 256, 256}), nil,
			[]string{"blk.1.ffn_gate_exps.weight"}},
		{"inner size", modeltest.SetUint(a+"ssm.inner_size", 300), nil, []string{a + "ssm.inner_size", "300"}},
		{"conv kernel", modeltest.SetUint(a+"ssm.conv_kernel", 0), nil, []string{a + "ssm.conv_kernel"}},
		{"attention interval 0", modeltest.SetUint(a+"full_attention_interval", 0), nil, []string{a + "full_attention_interval"}},
		{"missing shared size", func(e *gguf.KV) bool {
			return e.Key != a+"expert_shared_feed_forward_length" && e.Key != a+"feed_forward_length"
		}, nil, []string{a + "expert_shared_feed_forward_length"}},
		{"rope beyond the head", modeltest.SetUint(a+"rope.dimension_count", 128), nil, []string{a + "rope.dimension_count"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { refuses(t, modeltest.Rewrite(t, src, tt.kv, tt.tensor), tt.want) })
	}
	// Keys the synthetic file does not carry.
	add := func(key string, v gguf.Value) string {
		f, err := gguf.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w := gguf.NewWriter()
		for _, e := range f.KV {
			w.AddKV(e.Key, e.Value)
		}
		w.AddKV(key, v)
		for i := range f.Tensors {
			ti := f.Tensors[i]
			data := f.Data(&f.Tensors[i])
			w.AddTensor(ti.Name, ti.Type, ti.Dims, func(out io.Writer) error { _, err := out.Write(data); return err })
		}
		path := filepath.Join(t.TempDir(), "added.gguf")
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tt := range []struct {
		name string
		key  string
		v    gguf.Value
		want []string
	}{
		{"compress ratios of 2 layers", a + "attention.compress_ratios", gguf.Int32s([]int32{0, 4}), []string{a + "attention.compress_ratios", "entries"}},
		// The last block becomes the MTP block, which has no nextn tensors.
		{"MTP blocks", a + "nextn_predict_layers", gguf.Uint32(1), []string{"blk.3.nextn.eh_proj.weight"}},
		{"two PLE layers", a + "ple.layers", gguf.Int32s([]int32{0, 1}), []string{a + "ple.layers", "only one PLE layer"}},
		{"PLE on attention", a + "ple.layers", gguf.Int32s([]int32{3}), []string{"PLE layer 3 is not a linear attention layer"}},
		{"PLE out of range", a + "ple.layers", gguf.Int32s([]int32{9}), []string{"PLE layer 9 is out of range"}},
		{"PLE without its keys", a + "ple.layers", gguf.Int32s([]int32{0}), []string{a + "ple.ngram_size"}},
	} {
		t.Run(tt.name, func(t *testing.T) { refuses(t, add(tt.key, tt.v), tt.want) })
	}
	// The unedited copy loads.
	f, err := gguf.Open(modeltest.Rewrite(t, src, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := qwen4exp.Open(f, model.Options{Backend: modeltest.NewBackend(t, 1)})
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	m.Close()
}

func refuses(t *testing.T, path string, want []string) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := qwen4exp.Open(f, model.Options{Backend: modeltest.NewBackend(t, 1)})
	if err == nil {
		m.Close()
		t.Fatal("Open accepted a broken model")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}
