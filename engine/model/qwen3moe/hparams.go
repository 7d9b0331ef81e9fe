package qwen3moe

import (
	"fmt"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Arch is the GGUF general.architecture this package loads.
const Arch = "qwen3moe"

// Hparams are the model's dimensions and constants, from GGUF metadata.
type Hparams struct {
	Layers        int
	Embd          int
	Heads         int
	HeadsKV       int
	HeadDim       int // key_length = value_length
	Vocab         int
	Experts       int
	ExpertsUsed   int
	FFExpert      int
	ContextLength int
	Eps           float32
	WeightsScale  float32 // expert_weights_scale; 0 or 1: none

	RopeDims int
}

func readHparams(f *gguf.File) (Hparams, error) {
	var h Hparams
	m := &blocks.Meta{File: f, Arch: Arch}
	u := m.Uint
	u("block_count", &h.Layers, -1)
	u("embedding_length", &h.Embd, -1)
	u("attention.head_count", &h.Heads, -1)
	u("expert_count", &h.Experts, -1)
	u("expert_used_count", &h.ExpertsUsed, -1)
	u("context_length", &h.ContextLength, 4096)
	if err := m.Missing(); err != nil {
		return h, err
	}
	u("attention.head_count_kv", &h.HeadsKV, h.Heads)
	if h.Heads <= 0 || h.Embd <= 0 || h.Layers <= 0 {
		return h, fmt.Errorf("%s: bad dimensions: %d layers, embedding %d, %d heads", Arch, h.Layers, h.Embd, h.Heads)
	}
	u("attention.key_length", &h.HeadDim, h.Embd/h.Heads)
	var vlen int
	u("attention.value_length", &vlen, h.HeadDim)
	if vlen != h.HeadDim {
		return h, fmt.Errorf("%s: key length %d differs from value length %d", Arch, h.HeadDim, vlen)
	}
	u("expert_feed_forward_length", &h.FFExpert, 0)
	if h.FFExpert == 0 {
		var ff int
		u("feed_forward_length", &ff, 0)
		if h.ExpertsUsed > 0 {
			h.FFExpert = ff / h.ExpertsUsed
		}
	}
	u("rope.dimension_count", &h.RopeDims, h.HeadDim)
	eps, ok := f.ArchFloat("attention.layer_norm_rms_epsilon")
	if !ok {
		return h, fmt.Errorf("%s: missing metadata %s.attention.layer_norm_rms_epsilon", Arch, Arch)
	}
	h.Eps = float32(eps)
	if v, ok := f.ArchFloat("expert_weights_scale"); ok {
		h.WeightsScale = float32(v)
	}

	switch {
	case h.HeadsKV <= 0 || h.Heads%h.HeadsKV != 0:
		return h, fmt.Errorf("%s: %d heads is not a multiple of %d KV heads", Arch, h.Heads, h.HeadsKV)
	case h.HeadDim <= 0 || h.HeadDim%2 != 0:
		return h, fmt.Errorf("%s: head size %d must be even and positive", Arch, h.HeadDim)
	case h.RopeDims != h.HeadDim:
		return h, fmt.Errorf("%s: rope dimensions %d must equal the head size %d", Arch, h.RopeDims, h.HeadDim)
	case h.Experts <= 0 || h.ExpertsUsed <= 0 || h.ExpertsUsed > h.Experts:
		return h, fmt.Errorf("%s: %d of %d experts per token is not valid", Arch, h.ExpertsUsed, h.Experts)
	case h.FFExpert <= 0:
		return h, fmt.Errorf("%s: missing metadata %s.expert_feed_forward_length", Arch, Arch)
	case h.Eps < 0 || h.Eps > 1:
		return h, fmt.Errorf("%s: rms epsilon %g is out of range", Arch, h.Eps)
	}
	if h.Layers > 1024 || h.Embd > 1<<16 || h.Heads > 1024 || h.Experts > 1<<14 || h.HeadDim > 1024 || h.FFExpert > 1<<18 {
		return h, fmt.Errorf("%s: dimensions beyond this engine's limits (%d layers, embedding %d, %d heads, head %d, %d experts, expert FFN %d)",
			Arch, h.Layers, h.Embd, h.Heads, h.HeadDim, h.Experts, h.FFExpert)
	}
	return h, nil
}
