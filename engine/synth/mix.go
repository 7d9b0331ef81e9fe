package synth

import (
	"fmt"
	"strings"

	"github.com/strata-llm/strata/engine/ggml"
)

// Mixes lists the llama-quantize mixtures the generator writes (--quant
// accepts them besides the plain types of Types).
var Mixes = []string{"Q4_K_M"}

// mixBase is the plain type a mixture is built on.
func mixBase(mix string) (ggml.Type, bool) {
	switch mix {
	case "Q4_K_M":
		return ggml.Q4_K, true
	}
	return 0, false
}

// ParseQuant reads a --quant value: a plain weight type, or a mixture of
// Mixes (returned as its base type and its name).
func ParseQuant(s string) (ggml.Type, string, error) {
	for _, m := range Mixes {
		if strings.EqualFold(s, m) {
			t, _ := mixBase(m)
			return t, m, nil
		}
	}
	t, err := ggml.ParseType(s)
	if err != nil {
		return 0, "", fmt.Errorf("%w (or one of the mixtures %v)", err, Mixes)
	}
	return t, "", nil
}

// useMoreBits is llama-quantize's choice of the layers that get more bits
// in the _M mixtures: the first and last eighth and every third between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// applyMix retypes the matrices of ts as llama-quantize's
// llama_tensor_get_type does for c.Mix on a model with more than 8
// experts (src/llama-quant.cpp): for Q4_K_M the output head becomes Q6_K,
// the attention V projections (and the fused QKV of linear-attention
// layers) of the more-bits layers Q6_K, every ffn_down of the more-bits
// layers Q6_K; the rest stays Q4_K. Tensors that are not of the base type
// (F32 norms and routers, block-size fallbacks) are left alone.
func applyMix(c *Config, ts []tensorSpec) {
	base, ok := mixBase(c.Mix)
	if !ok {
		return
	}
	nWV := 0
	for _, t := range ts {
		if isAttnV(t.name) {
			nWV++
		}
	}
	nLayer := c.Layers + c.MTP // llama.cpp's n_layer_all
	iWV := 0
	for i := range ts {
		t := &ts[i]
		attnV := isAttnV(t.name)
		if t.typ == base {
			switch {
			case t.name == "output.weight":
				t.typ = ggml.Q6_K
			case attnV && useMoreBits(iWV, nWV):
				t.typ = ggml.Q6_K
			case strings.Contains(t.name, "ffn_down"):
				var il int
				if _, err := fmt.Sscanf(t.name, "blk.%d.", &il); err == nil && useMoreBits(il, nLayer) {
					t.typ = ggml.Q6_K
				}
			}
		}
		if attnV {
			iWV++
		}
	}
}

// isAttnV reports llama-quantize's "attention V-like" tensors.
func isAttnV(name string) bool {
	return strings.Contains(name, "attn_v.weight") || strings.Contains(name, "attn_qkv.weight") ||
		strings.Contains(name, "attn_kv_b.weight")
}
