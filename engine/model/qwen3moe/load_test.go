package qwen3moe_test

import (
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/internal/modeltest"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/internal/testfix"
)

func TestOpenRefusesBrokenModels(t *testing.T) {
	src := testfix.Path(t, "tiny-qwen3moe-Q8_0.gguf")
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
		}, nil, []string{`architecture "llama" is not qwen3moe`}},
		{"missing tensor", nil, func(ti *gguf.TensorInfo) bool { return ti.Name != "blk.1.ffn_down_exps.weight" },
			[]string{"qwen3moe", "blk.1.ffn_down_exps.weight"}},
		{"wrong shape", nil, func(ti *gguf.TensorInfo) bool {
			if ti.Name == "blk.0.attn_k.weight" {
				ti.Dims[0], ti.Dims[1] = ti.Dims[1], ti.Dims[0]
			}
			return true
		}, []string{"qwen3moe", "blk.0.attn_k.weight"}},
		{"missing metadata", func(e *gguf.KV) bool { return e.Key != "qwen3moe.expert_count" }, nil,
			[]string{"qwen3moe.expert_count"}},
		{"too many experts used", func(e *gguf.KV) bool {
			if e.Key == "qwen3moe.expert_used_count" {
				e.Value = gguf.Uint32(99)
			}
			return true
		}, nil, []string{"99 of 8 experts"}},
		{"missing output norm", nil, func(ti *gguf.TensorInfo) bool { return ti.Name != "output_norm.weight" },
			[]string{"output_norm.weight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := modeltest.Rewrite(t, src, tt.kv, tt.tensor)
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := qwen3moe.Open(f, model.Options{Backend: modeltest.NewBackend(t, 1)})
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
	m, err := qwen3moe.Open(f, model.Options{Backend: modeltest.NewBackend(t, 1)})
	if err != nil {
		t.Fatalf("copy of the fixture: %v", err)
	}
	m.Close()
}
