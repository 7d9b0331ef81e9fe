package qwen4exp

import (
	"fmt"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model/blocks"
)

// Arch is the GGUF general.architecture this package loads.
const Arch = "qwen4exp"

// Hparams are the model's dimensions and constants, from GGUF metadata,
// read and checked as llama.cpp's llama_model_qwen4exp::load_arch_hparams
// does (its errors become ours: every zero it refuses, we refuse).
type Hparams struct {
	Layers        int // trunk layers (block_count minus the MTP blocks)
	MTP           int // nextn_predict_layers: MTP blocks after the trunk (mtp.go)
	Embd          int
	Heads         int
	HeadsKV       int
	HeadDim       int // key_length = value_length
	Vocab         int
	Experts       int
	ExpertsUsed   int
	FFExpert      []int // per block, trunk and MTP (expert_feed_forward_length, a scalar or an array)
	FFShared      int
	ContextLength int
	Eps           float32
	WeightsScale  float32 // expert_weights_scale; 0 or 1: none
	RopeDims      int
	// RopeSections are the multi-section (IMROPE) sections. With text
	// positions (every section's position the same) IMROPE rotates as NEOX
	// over RopeDims, which is how this engine runs it.
	RopeSections [4]int

	// Gated DeltaNet layers.
	Recurrent []bool // per block: DeltaNet rather than attention (MTP blocks: attention)
	SSMConv   int    // ssm.conv_kernel: convolution taps
	SSMState  int    // ssm.state_size: head size of keys and values
	SSMGroups int    // ssm.group_count: key heads
	SSMVHeads int    // ssm.time_step_rank: value heads

	// Hyper-connections: HC residual streams, a LowRank mixer.
	HC, HCLowRank int

	// QSA sparse attention (the indexer); CompressRatios[il] > 0 makes
	// full-attention layer il sparse. Without the key every layer is dense.
	// Per block; MTP blocks always attend densely.
	IndexerHeads, IndexerDim, IndexerTopK int
	CompressRatios                        []int

	// PLE n-gram hash embedding; PLE.Layer < 0: none.
	PLE PLEParams
}

// PLEParams are the PLE n-gram hash embedding's constants (ple.* keys).
type PLEParams struct {
	Layer        int // the one PLE layer (a DeltaNet layer), -1: none
	Ngram        int // ngram_size (2..LLAMA_MAX_PLE_NGRAM)
	HeadsPerGram int // heads_per_ngram
	Heads        int // (Ngram-1)·HeadsPerGram
	HeadDim      int // embedding_length_per_layer_input: a table row
	ConvKernel   int
	EOS          int64
	ImageToken   int64    // 0: none (the EOS stands in)
	Multipliers  []uint64 // layer_multipliers, ≥ Ngram entries
	Offsets      []uint64 // head_offsets, per head
	VocabSizes   []uint64 // head_vocab_sizes, per head
}

// llama.cpp's LLAMA_MAX_PLE_NGRAM and LLAMA_MAX_PLE_HEADS.
const (
	maxPLENgram = 8
	maxPLEHeads = 64
)

func readHparams(f *gguf.File) (Hparams, error) {
	h := Hparams{PLE: PLEParams{Layer: -1}}
	m := &blocks.Meta{File: f, Arch: Arch}
	u := m.Uint
	var inner, interval, nblk int
	u("block_count", &nblk, -1)
	u("embedding_length", &h.Embd, -1)
	u("attention.head_count", &h.Heads, -1)
	u("expert_count", &h.Experts, -1)
	u("expert_used_count", &h.ExpertsUsed, -1)
	u("ssm.conv_kernel", &h.SSMConv, -1)
	u("ssm.state_size", &h.SSMState, -1)
	u("ssm.group_count", &h.SSMGroups, -1)
	u("ssm.time_step_rank", &h.SSMVHeads, -1)
	u("ssm.inner_size", &inner, -1)
	u("hyper_connection.count", &h.HC, -1)
	u("hyper_connection.low_rank", &h.HCLowRank, -1)
	u("attention.indexer.head_count", &h.IndexerHeads, -1)
	u("attention.indexer.key_length", &h.IndexerDim, -1)
	u("attention.indexer.top_k", &h.IndexerTopK, -1)
	u("context_length", &h.ContextLength, 4096)
	u("nextn_predict_layers", &h.MTP, 0)
	u("full_attention_interval", &interval, 4)
	if err := m.Missing(); err != nil {
		return h, err
	}
	// The MTP blocks are the last nextn_predict_layers blocks, as in
	// llama.cpp (n_layer() = n_layer_all − n_layer_nextn). Its converter
	// writes none for qwen4exp (no_mtp), and its loader refuses a file
	// that has them (it creates the trunk's tensors only: "wrong number
	// of tensors"); here they draft for speculation (mtp.go).
	h.Layers = nblk - h.MTP
	u("attention.head_count_kv", &h.HeadsKV, h.Heads)
	if h.Heads <= 0 || h.Embd <= 0 || h.Layers <= 0 || h.MTP < 0 {
		return h, fmt.Errorf("%s: bad dimensions: %d blocks (%d MTP), embedding %d, %d heads", Arch, nblk, h.MTP, h.Embd, h.Heads)
	}
	if h.Layers > 1024 || h.MTP > 4 {
		return h, fmt.Errorf("%s: %d layers and %d MTP blocks are beyond this engine's limits of 1024 and 4", Arch, h.Layers, h.MTP)
	}
	u("attention.key_length", &h.HeadDim, h.Embd/h.Heads)
	var vlen int
	u("attention.value_length", &vlen, h.HeadDim)
	if vlen != h.HeadDim {
		return h, fmt.Errorf("%s: key length %d differs from value length %d", Arch, h.HeadDim, vlen)
	}
	// expert_feed_forward_length, one for all layers or one per layer;
	// absent: feed_forward_length / expert_used_count.
	// Per-block arrays cover the MTP blocks too (llama.cpp's n_layer_all).
	ffe, ok, err := m.UintsOrScalar("expert_feed_forward_length", nblk)
	if err != nil {
		return h, err
	}
	var ff int
	u("feed_forward_length", &ff, 0)
	if !ok {
		ffe = make([]int, nblk)
		for i := range ffe {
			if h.ExpertsUsed > 0 {
				ffe[i] = ff / h.ExpertsUsed
			}
		}
	}
	h.FFExpert = ffe
	u("expert_shared_feed_forward_length", &h.FFShared, ff)
	u("rope.dimension_count", &h.RopeDims, h.HeadDim)
	eps, ok := f.ArchFloat("attention.layer_norm_rms_epsilon")
	if !ok {
		return h, fmt.Errorf("%s: missing metadata %s.attention.layer_norm_rms_epsilon", Arch, Arch)
	}
	h.Eps = float32(eps)
	if v, ok := f.ArchFloat("expert_weights_scale"); ok {
		h.WeightsScale = float32(v)
	}
	secs, ok, err := m.UintsOrScalar("rope.dimension_sections", 4)
	switch {
	case err != nil:
		return h, err
	case !ok:
		return h, fmt.Errorf("%s: missing metadata %s.rope.dimension_sections", Arch, Arch)
	}
	copy(h.RopeSections[:], secs)

	switch {
	case h.HeadsKV <= 0 || h.Heads%h.HeadsKV != 0:
		return h, fmt.Errorf("%s: %d heads is not a multiple of %d KV heads", Arch, h.Heads, h.HeadsKV)
	case h.HeadDim <= 0 || h.HeadDim%2 != 0:
		return h, fmt.Errorf("%s: head size %d must be even and positive", Arch, h.HeadDim)
	case h.RopeDims <= 0 || h.RopeDims > h.HeadDim || h.RopeDims%2 != 0:
		return h, fmt.Errorf("%s: %s.rope.dimension_count %d must be even and within the head size %d", Arch, Arch, h.RopeDims, h.HeadDim)
	case h.Experts <= 0 || h.ExpertsUsed <= 0 || h.ExpertsUsed > h.Experts:
		return h, fmt.Errorf("%s: %d of %d experts per token is not valid", Arch, h.ExpertsUsed, h.Experts)
	case h.FFShared <= 0:
		return h, fmt.Errorf("%s: missing metadata %s.expert_shared_feed_forward_length", Arch, Arch)
	case h.Eps < 0 || h.Eps > 1:
		return h, fmt.Errorf("%s: rms epsilon %g is out of range", Arch, h.Eps)
	case interval <= 0:
		return h, fmt.Errorf("%s: %s.full_attention_interval must be greater than zero, got %d", Arch, Arch, interval)
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
	case h.HC <= 1:
		// transformers, vLLM and SGLang all refuse hc_count <= 1, as llama.cpp does.
		return h, fmt.Errorf("%s: %s.hyper_connection.count must be greater than one, got %d", Arch, Arch, h.HC)
	case h.HCLowRank <= 0:
		return h, fmt.Errorf("%s: %s.hyper_connection.low_rank must be greater than zero", Arch, Arch)
	case h.IndexerHeads <= 0 || h.IndexerDim <= 0 || h.IndexerTopK <= 0:
		return h, fmt.Errorf("%s: %s.attention.indexer.head_count, key_length and top_k must be greater than zero (got %d, %d, %d)",
			Arch, Arch, h.IndexerHeads, h.IndexerDim, h.IndexerTopK)
	}
	for il, v := range h.FFExpert {
		if v <= 0 || v > 1<<18 {
			return h, fmt.Errorf("%s: expert FFN length %d of layer %d is out of range (%s.expert_feed_forward_length)", Arch, v, il, Arch)
		}
	}
	if h.Embd > 1<<16 || h.Heads > 1024 || h.Experts > 1<<14 || h.HeadDim > 1024 || h.FFShared > 1<<18 ||
		h.SSMVHeads > 1024 || h.HC > 64 || h.HCLowRank > 1<<16 || h.IndexerHeads > 1024 || h.IndexerDim > 1024 {
		return h, fmt.Errorf("%s: dimensions beyond this engine's limits (embedding %d, %d heads, head %d, %d experts, %d streams, low rank %d)",
			Arch, h.Embd, h.Heads, h.HeadDim, h.Experts, h.HC, h.HCLowRank)
	}
	// Which layers are DeltaNet: attention.recurrent_layers if given, else
	// all but every full_attention_interval-th.
	// all but every full_attention_interval-th of the trunk; MTP blocks
	// are attention.
	h.Recurrent = make([]bool, nblk)
	if rl, ok := f.Get(Arch + ".attention.recurrent_layers"); ok {
		bs, ok := rl.Bools()
		if !ok || len(bs) != nblk {
			return h, fmt.Errorf("%s: %s.attention.recurrent_layers must be %d booleans", Arch, Arch, nblk)
		}
		copy(h.Recurrent, bs)
		for i := h.Layers; i < nblk; i++ {
			if h.Recurrent[i] {
				return h, fmt.Errorf("%s: %s.attention.recurrent_layers makes MTP block %d a linear attention layer; MTP blocks are full attention", Arch, Arch, i)
			}
		}
	} else {
		for i := 0; i < h.Layers; i++ {
			h.Recurrent[i] = (i+1)%interval != 0
		}
	}
	h.CompressRatios, _, err = m.UintsOrScalar("attention.compress_ratios", nblk)
	if err != nil {
		return h, err
	}
	if h.CompressRatios == nil {
		h.CompressRatios = make([]int, nblk) // dense everywhere
	}
	if h.PLE, err = readPLE(f, m, h); err != nil {
		return h, err
	}
	return h, nil
}

// readPLE reads the PLE key group, checked as llama.cpp checks it; absent
// (no ple.layers, or an empty list), PLE.Layer is -1.
func readPLE(f *gguf.File, m *blocks.Meta, h Hparams) (PLEParams, error) {
	p := PLEParams{Layer: -1}
	v, ok := f.Get(Arch + ".ple.layers")
	if !ok {
		return p, nil
	}
	layers, ok := v.Ints()
	if !ok {
		return p, fmt.Errorf("%s: %s.ple.layers must be an array of layer indices", Arch, Arch)
	}
	switch {
	case len(layers) == 0:
		return p, nil
	case len(layers) != 1:
		// llama.cpp holds one set of hash constants.
		return p, fmt.Errorf("%s: %s.ple.layers lists %d layers, but only one PLE layer is supported", Arch, Arch, len(layers))
	case layers[0] < 0 || layers[0] >= int64(h.Layers):
		return p, fmt.Errorf("%s: PLE layer %d is out of range", Arch, layers[0])
	case !h.Recurrent[layers[0]]:
		// Its convolution history is a row of the recurrent cache.
		return p, fmt.Errorf("%s: PLE layer %d is not a linear attention layer", Arch, layers[0])
	}
	p.Layer = int(layers[0])
	u := m.Uint
	var eos, img int
	u("ple.ngram_size", &p.Ngram, -1)
	u("ple.heads_per_ngram", &p.HeadsPerGram, -1)
	u("ple.conv_kernel", &p.ConvKernel, -1)
	u("ple.eos_token_id", &eos, -1)
	u("ple.image_token_id", &img, 0)
	u("embedding_length_per_layer_input", &p.HeadDim, -1)
	if err := m.Missing(); err != nil {
		return p, err
	}
	p.EOS, p.ImageToken = int64(eos), int64(img)
	p.Heads = (p.Ngram - 1) * p.HeadsPerGram
	switch {
	case p.ConvKernel <= 0 || p.ConvKernel > 64:
		return p, fmt.Errorf("%s: %s.ple.conv_kernel %d must be within 1..64", Arch, Arch, p.ConvKernel)
	case p.HeadDim <= 0 || p.HeadDim > 1<<16:
		return p, fmt.Errorf("%s: %s.embedding_length_per_layer_input %d is out of range", Arch, Arch, p.HeadDim)
	case p.Ngram < 2 || p.Ngram > maxPLENgram:
		return p, fmt.Errorf("%s: PLE n-gram size %d is out of range", Arch, p.Ngram)
	case p.Heads <= 0 || p.Heads > maxPLEHeads:
		return p, fmt.Errorf("%s: PLE head count %d is out of range", Arch, p.Heads)
	}
	arr := func(key string, n int) ([]uint64, error) {
		v, ok := f.Get(Arch + "." + key)
		if !ok {
			return nil, fmt.Errorf("%s: missing metadata %s.%s", Arch, Arch, key)
		}
		is, ok := v.Ints()
		if !ok {
			return nil, fmt.Errorf("%s: %s.%s must be an array of integers", Arch, Arch, key)
		}
		if len(is) < n {
			return nil, fmt.Errorf("%s: %s.%s has %d entries, but at least %d are required", Arch, Arch, key, len(is), n)
		}
		out := make([]uint64, len(is))
		for i, x := range is {
			out[i] = uint64(x) // llama.cpp reads these as unsigned
		}
		return out, nil
	}
	var err error
	if p.Multipliers, err = arr("ple.layer_multipliers", p.Ngram); err != nil {
		return p, err
	}
	if p.Offsets, err = arr("ple.head_offsets", p.Heads); err != nil {
		return p, err
	}
	if p.VocabSizes, err = arr("ple.head_vocab_sizes", p.Heads); err != nil {
		return p, err
	}
	p.Multipliers, p.Offsets, p.VocabSizes = p.Multipliers[:p.Ngram], p.Offsets[:p.Heads], p.VocabSizes[:p.Heads]
	for i := range p.Heads {
		const maxI32 = 1<<31 - 1
		if p.VocabSizes[i] == 0 || p.Offsets[i] > maxI32 || p.VocabSizes[i] > maxI32 || p.Offsets[i]+p.VocabSizes[i] > maxI32 {
			return p, fmt.Errorf("%s: PLE head %d range does not fit the int32 row index", Arch, i)
		}
	}
	return p, nil
}

// Rows is the number of table rows the PLE head ranges index.
func (p *PLEParams) Rows() int {
	n := 0
	for i := range p.Offsets {
		n = max(n, int(p.Offsets[i]+p.VocabSizes[i]))
	}
	return n
}
