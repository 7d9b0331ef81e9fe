// Package synth writes synthetic GGUF models of the architectures Strata
// runs (qwen3moe, qwen3next, qwen4exp) for tests and benchmarks: exactly the
// metadata keys and tensor names and shapes llama.cpp's loader expects, a
// byte-level BPE tokenizer with the Qwen control tokens and chat template,
// and random but valid weights of any supported ggml type.
//
// Files are streamed to disk tensor by tensor (a model of tens of GB is
// never held in memory), written atomically, and byte-identical for the
// same Config.
//
// Weights: every matrix has entries of standard deviation 1/sqrt(row
// length), so each projection keeps activations at unit scale, except the
// output head, whose logits get a standard deviation of about WeightScale,
// with log-normal row norms (so the best token usually leads by a wide
// margin): a large WeightScale gives peaked next-token distributions, so
// that greedy runs of different implementations are comparable. Norm weights are near
// 1. Following llama-quantize, 1-D tensors, norms, routers
// (ffn_gate_inp), convolutions and the small indexer projections stay F32;
// every other matrix uses Config.Type, or, when its row length is not a
// whole number of blocks of that type, Q8_0 (rows of 32) or else F16.
//
// Router skew: with RouterSkew s > 0 every token embedding gets a constant
// component (hotValue) along hidden dimension 0, and in each layer the
// router row of expert e gets, on that dimension, log p_e / hotValue where p
// is a Zipf distribution with exponent s over a per-layer random order of
// the experts. The router logits are thus shifted by about log p_e for any
// input, so the hottest experts are picked far more often than the
// coldest, whatever the tokens. Since a constant can only be placed in
// formats with a quantizer, token_embd is written as Q8_0 when skew is on
// and Config.Type has none (the K and IQ types).
package synth

import (
	"context"
	_ "embed"
	"fmt"
	"math"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/quant"
)

// The architectures the generator writes.
const (
	ArchQwen3MoE  = "qwen3moe"
	ArchQwen3Next = "qwen3next"
	ArchQwen4Exp  = "qwen4exp"
)

// Archs lists the supported architectures.
var Archs = []string{ArchQwen3MoE, ArchQwen3Next, ArchQwen4Exp}

// Types lists the weight types the generator writes.
var Types = []ggml.Type{
	ggml.F32, ggml.F16, ggml.BF16, ggml.Q8_0, ggml.Q4_0, ggml.Q4_K, ggml.Q5_K, ggml.Q6_K,
	ggml.Q2_K, ggml.Q3_K, ggml.IQ2_XXS, ggml.IQ2_XS, ggml.IQ3_XXS, ggml.IQ4_XS,
	ggml.Q4_1, ggml.Q5_0, ggml.Q5_1, ggml.IQ4_NL, ggml.IQ3_S, ggml.IQ2_S, ggml.IQ1_S, ggml.IQ1_M,
	ggml.TQ1_0, ggml.TQ2_0, ggml.MXFP4,
}

//go:embed qwen3.jinja
var chatTemplate string

// Config describes a synthetic model.
type Config struct {
	Arch string    // qwen3moe, qwen3next or qwen4exp
	Type ggml.Type // type of the weight matrices
	Mix  string    // "" or a llama-quantize mixture of Mixes on top of Type
	// Imatrix makes Mix the mixture llama-quantize writes when given an
	// importance matrix (it changes a few tensors of IQ3_XXS, IQ4_NL,
	// IQ4_XS, Q4_0 and Q5_0); the weights stay random either way.
	Imatrix bool

	Layers  int // blocks (not counting MTP blocks)
	Embd    int // hidden size
	Heads   int // attention query heads
	HeadsKV int // attention key/value heads
	HeadDim int // attention head size
	CtxLen  int // training context length
	Vocab   int // tokens, including the 3 control tokens

	Experts     int // routed experts per layer
	ExpertsUsed int // experts per token
	FFExpert    int // routed expert FFN size
	// FFExperts, if set (qwen4exp), are the routed experts' FFN sizes per
	// layer, written as the expert_feed_forward_length array. llama.cpp
	// sizes every layer by the array's first entry (load_arch_tensors
	// calls n_ff_exp() for layer 0), so it loads only arrays of equal
	// entries; this engine reads each layer's own.
	FFExperts []int
	FFShared  int // shared expert FFN size (qwen3next, qwen4exp)

	Seed        uint64
	WeightScale float32 // standard deviation of the logits (1: varied distributions; ≥ 8: peaked)
	RouterSkew  float64 // Zipf exponent of expert popularity; 0 = none

	RopeBase float32 // rope.freq_base
	RopeDim  int     // rotary dimensions (qwen3next, qwen4exp: partial rotary)

	// Hybrid layers (qwen3next, qwen4exp): every FullAttnInterval-th layer
	// is full attention, the others gated DeltaNet with SSMGroups key heads
	// and SSMVHeads value heads of SSMState dimensions each, and a causal
	// convolution of SSMConv taps.
	FullAttnInterval int
	SSMConv          int
	SSMState         int
	SSMGroups        int
	SSMVHeads        int

	// MTP is the number of multi-token-prediction blocks after the trunk
	// (qwen3next; qwen4exp: full-attention blocks with hyper-connections
	// and no indexer, see engine/model/qwen4exp/mtp.go).
	MTP int

	// qwen4exp: hyper-connections (HCCount streams, low-rank mixer),
	// QSA sparse attention on the full-attention layers (indexer heads,
	// key length, top-k and block compression ratio) and the PLE n-gram
	// hash embedding on layer PLELayer (-1: none), with PLENgram-grams,
	// PLEHeadsPerNgram heads per n-gram order, a PLEConv-tap convolution
	// and PLEHeadRows table rows per head. CompressRatio 0 writes no
	// attention.compress_ratios key: llama.cpp then runs every layer dense.
	HCCount          int
	HCLowRank        int
	IndexerHeads     int
	IndexerDim       int
	IndexerTopK      int
	CompressRatio    int
	PLELayer         int
	PLENgram         int
	PLEHeadsPerNgram int
	PLEConv          int
	PLEHeadRows      int
}

// Defaults returns a tiny model of arch (a few MB): 4 layers, hidden 256,
// 8 experts top-2, 1,024 tokens, Q8_0. Every matrix row is a multiple of
// 256, so every type of Types can be used unchanged.
func Defaults(arch string) Config {
	c := Config{
		Arch: arch, Type: ggml.Q8_0,
		Layers: 4, Embd: 256, Heads: 4, HeadsKV: 2, HeadDim: 64, CtxLen: 4096, Vocab: 1024,
		Experts: 8, ExpertsUsed: 2, FFExpert: 256,
		Seed: 1, WeightScale: 1, RopeBase: 1e6, RopeDim: 64,
		PLELayer: -1,
	}
	switch arch {
	case ArchQwen3Next, ArchQwen4Exp:
		c.FFShared = 256
		c.RopeDim = 16
		c.FullAttnInterval = 4
		c.SSMConv, c.SSMState, c.SSMGroups, c.SSMVHeads = 4, 64, 2, 4
	}
	if arch == ArchQwen4Exp {
		c.HCCount, c.HCLowRank = 4, 256
		c.IndexerHeads, c.IndexerDim, c.IndexerTopK, c.CompressRatio = 2, 64, 64, 4
		c.PLELayer, c.PLENgram, c.PLEHeadsPerNgram, c.PLEConv, c.PLEHeadRows = 0, 3, 2, 4, 256
	}
	return c
}

func (c *Config) hybrid() bool { return c.Arch == ArchQwen3Next || c.Arch == ArchQwen4Exp }

// recurrent reports whether layer il is a gated DeltaNet layer.
func (c *Config) recurrent(il int) bool {
	return c.hybrid() && il < c.Layers && (il+1)%c.FullAttnInterval != 0
}

// plePerHead is the PLE row length (embedding_length_per_layer_input).
func (c *Config) pleHeads() int { return (c.PLENgram - 1) * c.PLEHeadsPerNgram }

// Validate checks that c describes a model llama.cpp can load.
func (c *Config) Validate() error {
	const maxDim = 1 << 20
	bad := func(format string, args ...any) error {
		return fmt.Errorf("synth %s: "+format, append([]any{c.Arch}, args...)...)
	}
	switch c.Arch {
	case ArchQwen3MoE, ArchQwen3Next, ArchQwen4Exp:
	default:
		return fmt.Errorf("synth: unknown architecture %q (want one of %v)", c.Arch, Archs)
	}
	if !quant.Supported(c.Type) {
		return bad("weight type %s is not supported", c.Type)
	}
	if c.Mix != "" {
		if base, ok := mixBase(c.Mix); !ok || base != c.Type {
			return bad("mixture %q on %s: want one of %v on its base type", c.Mix, c.Type, Mixes)
		}
	}
	dims := []struct {
		name string
		v    int
	}{
		{"layers", c.Layers}, {"embd", c.Embd}, {"heads", c.Heads}, {"heads-kv", c.HeadsKV},
		{"head-dim", c.HeadDim}, {"ctx", c.CtxLen}, {"vocab", c.Vocab}, {"experts", c.Experts},
		{"used", c.ExpertsUsed}, {"ff-expert", c.FFExpert}, {"rope-dim", c.RopeDim},
	}
	if c.hybrid() {
		dims = append(dims, []struct {
			name string
			v    int
		}{
			{"ff-shared", c.FFShared}, {"full-attention-interval", c.FullAttnInterval},
			{"ssm-conv", c.SSMConv}, {"ssm-state", c.SSMState}, {"ssm-groups", c.SSMGroups}, {"ssm-v-heads", c.SSMVHeads},
		}...)
	}
	if c.Arch == ArchQwen4Exp {
		dims = append(dims, []struct {
			name string
			v    int
		}{
			{"hc-low-rank", c.HCLowRank}, {"indexer-heads", c.IndexerHeads}, {"indexer-dim", c.IndexerDim},
			{"indexer-top-k", c.IndexerTopK},
		}...)
		if c.CompressRatio < 0 || c.CompressRatio > maxDim {
			return bad("compress-ratio = %d, want 0..%d", c.CompressRatio, maxDim)
		}
	}
	if c.FFExperts != nil {
		if c.Arch != ArchQwen4Exp || len(c.FFExperts) != c.Layers {
			return bad("per-layer expert FFN sizes are written for qwen4exp only, one per layer (%d for %d layers)", len(c.FFExperts), c.Layers)
		}
		for il, v := range c.FFExperts {
			if v < 1 || v > maxDim {
				return bad("ff-expert of layer %d = %d, want 1..%d", il, v, maxDim)
			}
		}
	}
	for _, d := range dims {
		if d.v < 1 || d.v > maxDim {
			return bad("%s = %d, want 1..%d", d.name, d.v, maxDim)
		}
	}
	switch {
	case c.Layers > 512:
		return bad("%d layers, at most 512", c.Layers)
	case c.Vocab < 256+3+1:
		return bad("vocab %d, want at least 260", c.Vocab)
	case c.Heads%c.HeadsKV != 0:
		return bad("heads %d is not a multiple of heads-kv %d", c.Heads, c.HeadsKV)
	case c.Experts > 512:
		return bad("%d experts, llama.cpp allows at most 512", c.Experts)
	case c.ExpertsUsed > c.Experts:
		return bad("%d experts used of %d", c.ExpertsUsed, c.Experts)
	case c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return bad("rope-dim %d must be even and at most head-dim %d", c.RopeDim, c.HeadDim)
	case c.Arch == ArchQwen3MoE && c.RopeDim != c.HeadDim:
		return bad("rope-dim %d must equal head-dim %d", c.RopeDim, c.HeadDim)
	case c.MTP < 0 || c.MTP > 4 || c.MTP > 0 && c.Arch == ArchQwen3MoE:
		return bad("%d MTP blocks: want 0..4, for qwen3next and qwen4exp only", c.MTP)
	case !(c.WeightScale > 0) || math.IsInf(float64(c.WeightScale), 0):
		return bad("weight scale %v must be positive", c.WeightScale)
	case c.RouterSkew < 0 || c.RouterSkew > 16 || math.IsNaN(c.RouterSkew):
		return bad("router skew %v, want 0..16", c.RouterSkew)
	}
	if c.hybrid() && c.SSMVHeads%c.SSMGroups != 0 {
		return bad("ssm-v-heads %d is not a multiple of ssm-groups %d", c.SSMVHeads, c.SSMGroups)
	}
	if c.Arch == ArchQwen4Exp {
		if c.HCCount < 2 || c.HCCount > 64 {
			return bad("hc-count %d, want 2..64", c.HCCount)
		}
		if c.RopeDim%4 != 0 {
			return bad("rope-dim %d must be a multiple of 4 (multi-section rope)", c.RopeDim)
		}
		if c.PLELayer >= 0 {
			h := c.pleHeads()
			switch {
			case c.PLELayer >= c.Layers || !c.recurrent(c.PLELayer):
				return bad("PLE layer %d must be a linear-attention layer", c.PLELayer)
			case c.PLENgram < 2 || c.PLENgram > 8:
				return bad("PLE n-gram size %d, want 2..8", c.PLENgram)
			case h < 1 || h > 64:
				return bad("PLE head count %d, want 1..64", h)
			case c.Embd%h != 0:
				return bad("embd %d is not a multiple of the %d PLE heads", c.Embd, h)
			case c.PLEConv < 1 || c.PLEHeadRows < 1 || c.PLEHeadRows*h > 1<<28:
				return bad("PLE conv %d and rows %d must be positive (and rows*heads < 2^28)", c.PLEConv, c.PLEHeadRows)
			}
		}
	}
	return nil
}

// Write writes the model described by cfg to path, atomically. It is
// deterministic: the same cfg gives the same bytes.
func Write(ctx context.Context, path string, cfg Config) error {
	w, err := NewWriter(ctx, cfg)
	if err != nil {
		return err
	}
	if err := w.WriteFile(path); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("synth %s: %w", path, ctx.Err())
		}
		return fmt.Errorf("synth %s: %w", path, err)
	}
	return nil
}

// NewWriter returns a gguf.Writer holding the model described by cfg; its
// tensor data is generated while the file is written, and generation stops
// with ctx's error once ctx is done.
func NewWriter(ctx context.Context, cfg Config) (*gguf.Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	voc, err := BuildVocab(cfg.Vocab)
	if err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	w := gguf.NewWriter()
	writeMetadata(w, &cfg, voc)
	ts := plan(&cfg)
	assignTypes(&cfg, ts)
	for _, t := range ts {
		w.AddTensor(t.name, t.typ, t.dims, t.data(ctx, &cfg))
	}
	if err := w.Err(); err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	return w, nil
}

// fileType is llama.cpp's general.file_type (llama_ftype) for a model whose
// matrices are all of type t, or of the mixture mix.
func fileType(t ggml.Type, mix string) uint32 {
	if f, ok := ftypes[mix]; ok {
		return f.id
	}
	switch t {
	case ggml.F32:
		return 0
	case ggml.F16:
		return 1
	case ggml.BF16:
		return 32
	case ggml.Q3_K:
		return 11 // Q3_K_S
	case ggml.Q4_K:
		return 14 // Q4_K_S
	case ggml.Q5_K:
		return 16 // Q5_K_S
	case ggml.MXFP4:
		return 38 // MXFP4_MOE
	case ggml.IQ2_S:
		return 28 // MOSTLY_IQ2_S (a file type whose mixture is built on IQ2_XS)
	}
	if f, ok := ftypes[t.String()]; ok && f.base == t {
		return f.id
	}
	return 1024 // LLAMA_FTYPE_GUESSED
}

func writeMetadata(w *gguf.Writer, c *Config, v *Vocab) {
	a := c.Arch + "."
	u := func(k string, x int) { w.AddUint32(a+k, uint32(x)) }
	w.AddString("general.architecture", c.Arch)
	name := c.Type.String()
	if c.Mix != "" {
		name = c.Mix
	}
	w.AddString("general.name", fmt.Sprintf("synthetic-%s-%s", c.Arch, name))
	u("context_length", c.CtxLen)
	u("embedding_length", c.Embd)
	u("block_count", c.Layers+c.MTP)
	u("feed_forward_length", c.FFExpert*c.ExpertsUsed)
	u("attention.head_count", c.Heads)
	u("attention.head_count_kv", c.HeadsKV)
	u("attention.key_length", c.HeadDim)
	u("attention.value_length", c.HeadDim)
	w.AddFloat32(a+"rope.freq_base", c.RopeBase)
	w.AddFloat32(a+"attention.layer_norm_rms_epsilon", 1e-6)
	u("expert_count", c.Experts)
	u("expert_used_count", c.ExpertsUsed)
	if c.FFExperts != nil {
		// One per block, as llama.cpp reads it (n_layer_all): an MTP
		// block's experts are FFExpert wide.
		ff := make([]int32, c.Layers+c.MTP)
		for i := range ff {
			ff[i] = int32(c.FFExpert)
			if i < len(c.FFExperts) {
				ff[i] = int32(c.FFExperts[i])
			}
		}
		w.AddInt32s(a+"expert_feed_forward_length", ff)
	} else {
		u("expert_feed_forward_length", c.FFExpert)
	}
	if c.hybrid() {
		u("expert_shared_feed_forward_length", c.FFShared)
		u("ssm.conv_kernel", c.SSMConv)
		u("ssm.state_size", c.SSMState)
		u("ssm.group_count", c.SSMGroups)
		u("ssm.time_step_rank", c.SSMVHeads)
		u("ssm.inner_size", c.SSMState*c.SSMVHeads)
		u("full_attention_interval", c.FullAttnInterval)
		u("rope.dimension_count", c.RopeDim)
	}
	if c.MTP > 0 {
		u("nextn_predict_layers", c.MTP)
	}
	if c.Arch == ArchQwen4Exp {
		// Multi-section rope: Qwen3.5's [11, 11, 10, 0] split of the
		// rotary pairs, scaled to RopeDim/2 pairs.
		half := c.RopeDim / 2
		s := (half*11 + 16) / 32
		w.AddInt32s(a+"rope.dimension_sections", []int32{int32(s), int32(s), int32(half - 2*s), 0})
		u("hyper_connection.count", c.HCCount)
		u("hyper_connection.low_rank", c.HCLowRank)
		u("attention.indexer.head_count", c.IndexerHeads)
		u("attention.indexer.key_length", c.IndexerDim)
		u("attention.indexer.top_k", c.IndexerTopK)
		if c.CompressRatio > 0 {
			ratios := make([]int32, c.Layers+c.MTP) // one per block; 0 for MTP blocks (dense)
			for il := range ratios {
				if il < c.Layers && !c.recurrent(il) {
					ratios[il] = int32(c.CompressRatio)
				}
			}
			w.AddInt32s(a+"attention.compress_ratios", ratios)
		}
		if c.PLELayer >= 0 {
			h := c.pleHeads()
			w.AddInt32s(a+"ple.layers", []int32{int32(c.PLELayer)})
			u("ple.ngram_size", c.PLENgram)
			u("ple.heads_per_ngram", c.PLEHeadsPerNgram)
			u("ple.conv_kernel", c.PLEConv)
			u("ple.eos_token_id", v.IMEnd)
			u("embedding_length_per_layer_input", c.Embd/h)
			rng := newRNG(c.Seed, "ple.layer_multipliers")
			mult := make([]uint64, c.PLENgram)
			for i := range mult {
				mult[i] = rng.Uint64()>>19 | 1 // odd, below 2^45 like the real constants
			}
			w.AddKV(a+"ple.layer_multipliers", gguf.Uint64s(mult))
			offs := make([]uint64, h)
			sizes := make([]uint64, h)
			for i := range h {
				offs[i] = uint64(i * c.PLEHeadRows)
				sizes[i] = uint64(c.PLEHeadRows)
			}
			w.AddKV(a+"ple.head_offsets", gguf.Uint64s(offs))
			w.AddKV(a+"ple.head_vocab_sizes", gguf.Uint64s(sizes))
		}
	}

	w.AddString("tokenizer.ggml.model", "gpt2")
	w.AddString("tokenizer.ggml.pre", "qwen2")
	w.AddStrings("tokenizer.ggml.tokens", v.Tokens)
	w.AddInt32s("tokenizer.ggml.token_type", v.Types)
	w.AddStrings("tokenizer.ggml.merges", v.Merges)
	w.AddUint32("tokenizer.ggml.eos_token_id", uint32(v.IMEnd))
	w.AddUint32("tokenizer.ggml.padding_token_id", uint32(v.EndOfText))
	w.AddUint32("tokenizer.ggml.bos_token_id", uint32(v.EndOfText))
	w.AddBool("tokenizer.ggml.add_bos_token", false)
	w.AddString("tokenizer.chat_template", chatTemplate)
	w.AddUint32("general.quantization_version", 2)
	w.AddUint32("general.file_type", fileType(c.Type, c.Mix))
}
