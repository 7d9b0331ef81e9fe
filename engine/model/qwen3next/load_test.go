package qwen3next_test

import (
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/synth"
)

// TestOpenRefusesBrokenModels: missing DeltaNet tensors, inconsistent
// ssm.* sizes, a full_attention_interval of 0 and other damage give errors
// that name the key or tensor.
func TestOpenRefusesBrokenModels(t *testing.T) {
	src := writeSynth(t, ggml.Q8_0, func(c *synth.Config) { c.MTP = 1 })
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
		}, nil, []string{`architecture "llama" is not qwen3next`}},
		{"missing ssm_a", nil, modeltest.Drop("blk.1.ssm_a"), []string{"qwen3next", "blk.1.ssm_a"}},
		{"missing conv", nil, modeltest.Drop("blk.0.ssm_conv1d.weight"), []string{"blk.0.ssm_conv1d.weight"}},
		{"missing qkv", nil, modeltest.Drop("blk.2.attn_qkv.weight"), []string{"blk.2.attn_qkv.weight"}},
		{"missing ba", nil, modeltest.Drop("blk.0.ssm_ba.weight"), []string{"blk.0.ssm_ba.weight"}},
		{"missing dt bias", nil, modeltest.Drop("blk.0.ssm_dt.bias"), []string{"blk.0.ssm_dt.bias"}},
		{"missing shared gate", nil, modeltest.Drop("blk.3.ffn_gate_inp_shexp.weight"), []string{"blk.3.ffn_gate_inp_shexp.weight"}},
		{"missing attention gate", nil, modeltest.Drop("blk.3.attn_q.weight"), []string{"blk.3.attn_q.weight"}},
		{"missing MTP projection", nil, modeltest.Drop("blk.4.nextn.eh_proj.weight"), []string{"blk.4.nextn.eh_proj.weight"}},
		{"conv of the wrong width", nil, func(ti *gguf.TensorInfo) bool {
			if ti.Name == "blk.0.ssm_conv1d.weight" {
				ti.Dims[0], ti.Dims[1] = 2*ti.Dims[0], ti.Dims[1]/2
			}
			return true
		}, []string{"blk.0.ssm_conv1d.weight", "shape"}},
		{"inner size", modeltest.SetUint("qwen3next.ssm.inner_size", 300), nil, []string{"qwen3next.ssm.inner_size", "300"}},
		{"value heads", modeltest.SetUint("qwen3next.ssm.time_step_rank", 3), nil, []string{"qwen3next.ssm.time_step_rank", "qwen3next.ssm.group_count"}},
		{"state size", modeltest.SetUint("qwen3next.ssm.state_size", 32), nil, []string{"ssm.inner_size"}},
		{"state size vs tensors", func(e *gguf.KV) bool {
			modeltest.SetUint("qwen3next.ssm.state_size", 32)(e)
			modeltest.SetUint("qwen3next.ssm.inner_size", 128)(e)
			return true
		}, nil, []string{"qwen3next", "blk.0."}},
		{"conv kernel", modeltest.SetUint("qwen3next.ssm.conv_kernel", 1), nil, []string{"qwen3next.ssm.conv_kernel"}},
		{"attention interval 0", modeltest.SetUint("qwen3next.full_attention_interval", 0), nil, []string{"qwen3next.full_attention_interval"}},
		{"missing ssm metadata", func(e *gguf.KV) bool { return e.Key != "qwen3next.ssm.group_count" }, nil,
			[]string{"qwen3next.ssm.group_count"}},
		{"missing shared size", func(e *gguf.KV) bool { return e.Key != "qwen3next.expert_shared_feed_forward_length" }, nil,
			[]string{"qwen3next.expert_shared_feed_forward_length"}},
		{"rope beyond the head", modeltest.SetUint("qwen3next.rope.dimension_count", 128), nil, []string{"qwen3next.rope.dimension_count"}},
		{"legacy ssm_in", nil, func(ti *gguf.TensorInfo) bool {
			if ti.Name == "blk.0.attn_qkv.weight" {
				ti.Name = "blk.0.ssm_in.weight"
			}
			return true
		}, []string{"blk.0.ssm_in.weight", "not supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := gguf.Open(modeltest.Rewrite(t, src, tt.kv, tt.tensor))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := qwen3next.Open(f, model.Options{Backend: modeltest.NewBackend(t, 1)})
			if err == nil {
				m.Close()
				t.Fatal("Open accepted a broken model")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// The unedited copy loads.
	f, err := gguf.Open(modeltest.Rewrite(t, src, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := qwen3next.Open(f, model.Options{Backend: modeltest.NewBackend(t, 1)})
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	m.Close()
}
