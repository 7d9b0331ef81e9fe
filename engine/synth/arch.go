package synth

import (
	"fmt"

	"github.com/strata-llm/strata/engine/ggml"
)

// kind says how a tensor's values are generated.
type kind int

const (
	kindMatrix kind = iota // random, std 1/sqrt(row length), or std if set
	kindNorm               // F32 near 1
	kindF32                // F32 random with std
	kindEmbd               // token embeddings (std 1, plus the router-skew constant)
	kindRouter             // ffn_gate_inp (F32, plus the router-skew column)
	kindSSMA               // ssm_a: -exp(A_log), A_log uniform in [0, ln 16)
	kindOutput             // output head: rows of std times a log-normal factor
)

// tensorSpec is one tensor of the plan.
type tensorSpec struct {
	name  string
	typ   ggml.Type
	dims  []uint64
	kind  kind
	std   float64 // 0: the kind's default
	layer int     // for kindRouter
}

func dims(d ...int) []uint64 {
	out := make([]uint64, len(d))
	for i, v := range d {
		out[i] = uint64(v)
	}
	return out
}

// plan lists the tensors of the model with the names and shapes llama.cpp
// creates in load_arch_tensors (src/models/<arch>.cpp).
func plan(c *Config) []tensorSpec {
	var ts []tensorSpec
	mat := func(name string, d ...int) {
		ts = append(ts, tensorSpec{name: name, typ: c.Type, dims: dims(d...), kind: kindMatrix})
	}
	norm := func(name string, n int) {
		ts = append(ts, tensorSpec{name: name, typ: ggml.F32, dims: dims(n), kind: kindNorm})
	}
	f32 := func(name string, std float64, d ...int) {
		ts = append(ts, tensorSpec{name: name, typ: ggml.F32, dims: dims(d...), kind: kindF32, std: std})
	}
	E, V := c.Embd, c.Vocab
	hcDim := c.HCCount * E

	ts = append(ts, tensorSpec{name: "token_embd.weight", typ: c.Type, dims: dims(E, V), kind: kindEmbd})
	if c.Arch == ArchQwen4Exp {
		// No output_norm: the final hyper-connection mixer carries it.
		norm("output_hc_norm.weight", hcDim)
		mat("output_hc_down.weight", hcDim, c.HCLowRank)
		mat("output_hc_up.weight", c.HCLowRank, hcDim)
		if c.PLELayer >= 0 {
			h := c.pleHeads()
			mat("per_layer_token_embd.weight", E/h, h*c.PLEHeadRows)
			ts[len(ts)-1].std = 1
		}
	} else {
		norm("output_norm.weight", E)
	}
	ts = append(ts, tensorSpec{name: "output.weight", typ: c.Type, dims: dims(E, V), kind: kindOutput,
		std: float64(c.WeightScale) / sqrtf(E)})

	qDim := c.HeadDim * c.Heads
	kvDim := c.HeadDim * c.HeadsKV
	keyDim := c.SSMState * c.SSMGroups
	valueDim := c.SSMState * c.SSMVHeads
	for il := 0; il < c.Layers+c.MTP; il++ {
		p := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		switch c.Arch {
		case ArchQwen3MoE, ArchQwen3Next:
			norm(p("attn_norm.weight"), E)
		case ArchQwen4Exp:
			for _, m := range []string{"attn", "ffn"} {
				norm(p("hc_"+m+"_norm.weight"), hcDim)
				mat(p("hc_"+m+"_down.weight"), hcDim, c.HCLowRank)
				mat(p("hc_"+m+"_up.weight"), c.HCLowRank, hcDim)
				mat(p("hc_"+m+"_inject.weight"), hcDim, c.HCCount)
			}
		}
		if c.Arch == ArchQwen3Next {
			norm(p("post_attention_norm.weight"), E)
		}

		if !c.recurrent(il) {
			q := qDim
			if c.hybrid() {
				q *= 2 // query and output gate per head
			}
			mat(p("attn_q.weight"), E, q)
			mat(p("attn_k.weight"), E, kvDim)
			mat(p("attn_v.weight"), E, kvDim)
			mat(p("attn_output.weight"), qDim, E)
			norm(p("attn_q_norm.weight"), c.HeadDim)
			norm(p("attn_k_norm.weight"), c.HeadDim)
			if c.Arch == ArchQwen4Exp && il < c.Layers {
				// (An MTP block attends densely: no indexer.)
				f32(p("indexer.q_proj.weight"), 1/sqrtf(E), E, c.IndexerHeads*c.IndexerDim)
				f32(p("indexer.k_proj.weight"), 1/sqrtf(E), E, c.IndexerDim)
				norm(p("indexer.q_norm.weight"), c.IndexerDim)
				norm(p("indexer.k_norm.weight"), c.IndexerDim)
			}
		} else {
			mat(p("attn_qkv.weight"), E, 2*keyDim+valueDim)
			mat(p("attn_gate.weight"), E, valueDim)
			f32(p("ssm_conv1d.weight"), 1/sqrtf(c.SSMConv), c.SSMConv, 2*keyDim+valueDim)
			f32(p("ssm_dt.bias"), 0.5, c.SSMVHeads)
			ts = append(ts, tensorSpec{name: p("ssm_a"), typ: ggml.F32, dims: dims(c.SSMVHeads), kind: kindSSMA})
			if c.Arch == ArchQwen4Exp {
				mat(p("ssm_beta.weight"), E, c.SSMVHeads)
				mat(p("ssm_alpha.weight"), E, c.SSMVHeads)
			} else {
				mat(p("ssm_ba.weight"), E, 2*c.SSMVHeads)
			}
			norm(p("ssm_norm.weight"), c.SSMState)
			mat(p("ssm_out.weight"), valueDim, E)
		}
		if c.Arch == ArchQwen4Exp && il == c.PLELayer {
			mat(p("ple_key.weight"), E, hcDim)
			mat(p("ple_value.weight"), E, E)
			norm(p("ple_norm_key.weight"), hcDim)
			norm(p("ple_norm_query.weight"), hcDim)
			norm(p("ple_norm_conv.weight"), hcDim)
			f32(p("ple_conv1d.weight"), 1/sqrtf(c.PLEConv), c.PLEConv, hcDim)
		}

		if c.Arch == ArchQwen3MoE {
			norm(p("ffn_norm.weight"), E)
		}
		ts = append(ts, tensorSpec{name: p("ffn_gate_inp.weight"), typ: ggml.F32, dims: dims(E, c.Experts), kind: kindRouter, layer: il})
		ffe := c.FFExpert
		if c.FFExperts != nil && il < len(c.FFExperts) {
			ffe = c.FFExperts[il]
		}
		mat(p("ffn_gate_exps.weight"), E, ffe, c.Experts)
		mat(p("ffn_up_exps.weight"), E, ffe, c.Experts)
		mat(p("ffn_down_exps.weight"), ffe, E, c.Experts)
		if c.hybrid() {
			f32(p("ffn_gate_inp_shexp.weight"), 1/sqrtf(E), E)
			mat(p("ffn_gate_shexp.weight"), E, c.FFShared)
			mat(p("ffn_up_shexp.weight"), E, c.FFShared)
			mat(p("ffn_down_shexp.weight"), c.FFShared, E)
		}
		if il >= c.Layers { // MTP block
			mat(p("nextn.eh_proj.weight"), 2*E, E)
			norm(p("nextn.enorm.weight"), E)
			norm(p("nextn.hnorm.weight"), E)
			norm(p("nextn.shared_head_norm.weight"), E)
		}
	}
	return ts
}
