package qwen3next

import (
	"fmt"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Arch is the GGUF general.architecture this package loads.
const Arch = "qwen3next"

// Hparams are the model's dimensions and constants, from GGUF metadata.
type Hparams struct {
	Layers        int // trunk layers (block_count minus the MTP blocks)
	MTP           int // nextn_predict_layers: MTP blocks after the trunk
	Embd          int
	Heads         int
	HeadsKV       int
	HeadDim       int // key_length = value_length
	Vocab         int
	Experts       int
	ExpertsUsed   int
	FFExpert      int
	FFShared      int
	ContextLength int
	Eps           float32
	WeightsScale  float32 // expert_weights_scale; 0 or 1: none
	RopeDims      int

	// Gated DeltaNet layers.
	Recurrent []bool // per layer (trunk and MTP): DeltaNet rather than attention
	SSMConv   int    // ssm.conv_kernel: convolution taps
	SSMState  int    // ssm.state_size: head size of keys and values
	SSMGroups int    // ssm.group_count: key heads
	SSMVHeads int    // ssm.time_step_rank: value heads
}

func readHparams(f *gguf.File) (Hparams, error) {
	var h Hparams
	m := &blocks.Meta{File: f, Arch: Arch}
	u := m.Uint
	var blocks, inner, interval int
	u("block_count", &blocks, -1)
	u("embedding_length", &h.Embd, -1)
	u("attention.head_count", &h.Heads, -1)
	u("expert_count", &h.Experts, -1)
	u("expert_used_count", &h.ExpertsUsed, -1)
	u("ssm.conv_kernel", &h.SSMConv, -1)
	u("ssm.state_size", &h.SSMState, -1)
	u("ssm.group_count", &h.SSMGroups, -1)
	u("ssm.time_step_rank", &h.SSMVHeads, -1)
	u("ssm.inner_size", &inner, -1)
	u("context_length", &h.ContextLength, 4096)
	u("nextn_predict_layers", &h.MTP, 0)
	u("full_attention_interval", &interval, 4)
	if err := m.Missing(); err != nil {
		return h, err
	}
	h.Layers = blocks - h.MTP
	u("attention.head_count_kv", &h.HeadsKV, h.Heads)
	if h.Heads <= 0 || h.Embd <= 0 || h.Layers <= 0 || h.MTP < 0 {
		return h, fmt.Errorf("%s: bad dimensions: %d blocks (%d MTP), embedding %d, %d heads", Arch, blocks, h.MTP, h.Embd, h.Heads)
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
	u("expert_shared_feed_forward_length", &h.FFShared, 0)
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
	case h.RopeDims <= 0 || h.RopeDims > h.HeadDim || h.RopeDims%2 != 0:
		return h, fmt.Errorf("%s: %s.rope.dimension_count %d must be even and within the head size %d", Arch, Arch, h.RopeDims, h.HeadDim)
	case h.Experts <= 0 || h.ExpertsUsed <= 0 || h.ExpertsUsed > h.Experts:
		return h, fmt.Errorf("%s: %d of %d experts per token is not valid", Arch, h.ExpertsUsed, h.Experts)
	case h.FFExpert <= 0:
		return h, fmt.Errorf("%s: missing metadata %s.expert_feed_forward_length", Arch, Arch)
	case h.FFShared <= 0:
		return h, fmt.Errorf("%s: missing metadata %s.expert_shared_feed_forward_length", Arch, Arch)
	case h.Eps < 0 || h.Eps > 1:
		return h, fmt.Errorf("%s: rms epsilon %g is out of range", Arch, h.Eps)
	case interval <= 0:
		return h, fmt.Errorf("%s: %s.full_attention_interval is %d; it must be at least 1", Arch, Arch, interval)
	case h.SSMConv < 2 || h.SSMConv > 64:
		return h, fmt.Errorf("%s: %s.ssm.conv_kernel %d must be within 2..64", Arch, Arch, h.SSMConv)
	case h.SSMState <= 0 || h.SSMState > 1024:
		return h, fmt.Errorf("%s: %s.ssm.state_size %d is out of range", Arch, Arch, h.SSMState)
	case h.SSMGroups <= 0 || h.SSMVHeads <= 0 || h.SSMVHeads%h.SSMGroups != 0:
		return h, fmt.Errorf("%s: %s.ssm.time_step_rank %d (value heads) is not a multiple of %s.ssm.group_count %d (key heads)",
			Arch, Arch, h.SSMVHeads, Arch, h.SSMGroups)
	case inner != h.SSMState*h.SSMVHeads:
		return h, fmt.Errorf("%s: %s.ssm.inner_size %d is not ssm.state_size %d × ssm.time_step_rank %d",
			Arch, Arch, inner, h.SSMState, h.SSMVHeads)
	}
	if h.Layers > 1024 || h.MTP > 4 || h.Embd > 1<<16 || h.Heads > 1024 || h.Experts > 1<<14 || h.HeadDim > 1024 ||
		h.FFExpert > 1<<18 || h.FFShared > 1<<18 || h.SSMVHeads > 1024 {
		return h, fmt.Errorf("%s: dimensions beyond this engine's limits (%d layers, embedding %d, %d heads, head %d, %d experts, expert FFN %d)",
			Arch, h.Layers, h.Embd, h.Heads, h.HeadDim, h.Experts, h.FFExpert)
	}
	// Which layers are DeltaNet: attention.recurrent_layers if given, else
	// all but every full_attention_interval-th; MTP blocks are attention.
	h.Recurrent = make([]bool, blocks)
	if rl, ok := f.Get(Arch + ".attention.recurrent_layers"); ok {
		bs, ok := rl.Bools()
		if !ok || len(bs) != blocks {
			return h, fmt.Errorf("%s: %s.attention.recurrent_layers must be %d booleans", Arch, Arch, blocks)
		}
		for i := 0; i < h.Layers; i++ {
			h.Recurrent[i] = bs[i]
		}
	} else {
		for i := 0; i < h.Layers; i++ {
			h.Recurrent[i] = (i+1)%interval != 0
		}
	}
	return h, nil
}
