package synth

import (
	"fmt"
	"sort"
	"strings"

	"github.com/strata-llm/strata/engine/ggml"
)

// A mixture is one of llama-quantize's file types (llama_ftype): a base
// weight type plus the per-tensor choices of llama_tensor_get_type
// (src/llama-quant.cpp), which this file ports. ftypes maps each name to
// its base type (llama_ftype_get_default_type) and its general.file_type.
var ftypes = map[string]struct {
	base ggml.Type
	id   uint32
}{
	"Q4_0": {ggml.Q4_0, 2}, "Q4_1": {ggml.Q4_1, 3}, "Q8_0": {ggml.Q8_0, 7}, "Q5_0": {ggml.Q5_0, 8}, "Q5_1": {ggml.Q5_1, 9},
	"Q2_K": {ggml.Q2_K, 10}, "Q3_K_S": {ggml.Q3_K, 11}, "Q3_K_M": {ggml.Q3_K, 12}, "Q3_K_L": {ggml.Q3_K, 13},
	"Q4_K_S": {ggml.Q4_K, 14}, "Q4_K_M": {ggml.Q4_K, 15}, "Q5_K_S": {ggml.Q5_K, 16}, "Q5_K_M": {ggml.Q5_K, 17},
	"Q6_K": {ggml.Q6_K, 18}, "IQ2_XXS": {ggml.IQ2_XXS, 19}, "IQ2_XS": {ggml.IQ2_XS, 20}, "Q2_K_S": {ggml.Q2_K, 21},
	"IQ3_XS": {ggml.IQ3_S, 22}, "IQ3_XXS": {ggml.IQ3_XXS, 23}, "IQ1_S": {ggml.IQ1_S, 24}, "IQ4_NL": {ggml.IQ4_NL, 25},
	"IQ3_S": {ggml.IQ3_S, 26}, "IQ3_M": {ggml.IQ3_S, 27}, "IQ2_S": {ggml.IQ2_XS, 28}, "IQ2_M": {ggml.IQ2_S, 29},
	"IQ4_XS": {ggml.IQ4_XS, 30}, "IQ1_M": {ggml.IQ1_M, 31}, "TQ1_0": {ggml.TQ1_0, 36}, "TQ2_0": {ggml.TQ2_0, 37},
	"MXFP4_MOE": {ggml.MXFP4, 38},
}

// Mixes lists the llama-quantize file types the generator writes as their
// mixtures, sorted.
var Mixes = func() []string {
	var m []string
	for name := range ftypes {
		m = append(m, name)
	}
	sort.Strings(m)
	return m
}()

// mixBase is the plain type a mixture is built on.
func mixBase(mix string) (ggml.Type, bool) {
	f, ok := ftypes[mix]
	return f.base, ok
}

// ParseQuant reads a --quant value: a plain weight type, or a mixture of
// Mixes (returned as its base type and its name). A name that is both (Q4_0,
// IQ2_XS, ...) is the plain type unless mix is set; names that are only
// mixtures (Q4_K_M, IQ2_M, ...) are mixtures either way.
func ParseQuant(s string, mix bool) (ggml.Type, string, error) {
	name := strings.ToUpper(s)
	f, isMix := ftypes[name]
	t, err := ggml.ParseType(s)
	switch {
	case isMix && (mix || err != nil):
		return f.base, name, nil
	case err != nil:
		return 0, "", fmt.Errorf("%w (or one of the mixtures %v)", err, Mixes)
	case mix:
		return 0, "", fmt.Errorf("%s is not a llama-quantize file type (one of %v)", t, Mixes)
	}
	return t, "", nil
}

// useMoreBits is llama-quantize's choice of the layers that get more bits
// in the _M mixtures: the first and last eighth and every third between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// category is llama-quantize's tensor_category.
type category int

const (
	catOther category = iota
	catOutput
	catTokenEmbd
	catAttnQKV
	catAttnKVB
	catAttnV
	catAttnK
	catAttnQ
	catAttnOutput
	catFFNUp
	catFFNGate
	catFFNDown
)

// tensorCategory is tensor_get_category.
func tensorCategory(name string) category {
	has := func(s string) bool { return strings.Contains(name, s) }
	switch {
	case name == "output.weight":
		return catOutput
	case name == "token_embd.weight" || name == "per_layer_token_embd.weight":
		return catTokenEmbd
	case has("attn_qkv.weight"):
		return catAttnQKV
	case has("attn_kv_b.weight"):
		return catAttnKVB
	case has("attn_v.weight"):
		return catAttnV
	case has("attn_k.weight"):
		return catAttnK
	case has("attn_q.weight"):
		return catAttnQ
	case has("attn_output.weight"):
		return catAttnOutput
	case has("ffn_up"):
		return catFFNUp
	case has("ffn_gate"):
		return catFFNGate
	case has("ffn_down"):
		return catFFNDown
	}
	return catOther
}

func (c category) attnV() bool { return c == catAttnV || c == catAttnQKV || c == catAttnKVB }

// mixState is llama-quantize's quantize_state_impl for one model.
type mixState struct {
	ftype          string
	nExpert, nGQA  int
	nLayer         int // n_layer_all, llama-quantize's n_ffn_down/gate/up
	nAttnV, iAttnV int
	iFFNDown       int
	tied           bool // no output.weight
	imatrix        bool
}

// layerOf returns the block number in a tensor name ("blk.N.").
func layerOf(name string) int {
	var il int
	if _, err := fmt.Sscanf(name, "blk.%d.", &il); err != nil {
		return -1
	}
	return il
}

// tensorType is llama_tensor_get_type_impl for a tensor of category cat
// whose default type is t; dims is its shape.
func (s *mixState) tensorType(t ggml.Type, name string, dims []uint64, cat category) ggml.Type {
	ft := s.ftype
	is := func(names ...string) bool {
		for _, n := range names {
			if ft == n {
				return true
			}
		}
		return false
	}
	switch {
	case cat == catOutput || (s.tied && cat == catTokenEmbd):
		switch {
		case ft == "MXFP4_MOE":
			t = ggml.Q8_0
		case int(dims[0])%t.BlockSize() != 0:
			t = ggml.Q8_0
		case is("IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"):
			t = ggml.Q5_K
		case t != ggml.Q8_0:
			t = ggml.Q6_K
		}
	case ft == "MXFP4_MOE":
		if len(dims) > 2 && dims[2] > 1 {
			t = ggml.MXFP4
		} else {
			t = ggml.Q8_0
		}
	case cat == catTokenEmbd:
		switch {
		case is("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
			t = ggml.Q2_K
		case is("IQ2_S", "IQ2_M", "IQ3_XXS"):
			t = ggml.IQ3_S
		case is("TQ1_0", "TQ2_0"):
			t = ggml.Q4_K
		}
	case is("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"):
		iq3 := is("IQ2_S", "IQ2_M")
		switch {
		case cat.attnV():
			switch {
			case s.nGQA >= 4 || s.nExpert >= 4:
				t = ggml.Q4_K
			case iq3:
				t = ggml.IQ3_S
			default:
				t = ggml.Q2_K
			}
			s.iAttnV++
		case s.nExpert == 8 && cat == catAttnK:
			t = ggml.Q4_K
		case cat == catFFNDown:
			if s.iFFNDown < s.nLayer/8 {
				t = ggml.Q2_K
				if iq3 {
					t = ggml.IQ3_S
				}
			}
			s.iFFNDown++
		case cat == catAttnOutput:
			switch {
			case s.nExpert == 8:
				t = ggml.Q5_K
			case is("IQ1_S", "IQ1_M"):
				t = ggml.IQ2_XXS
			case iq3:
				t = ggml.IQ3_S
			}
		}
	case cat.attnV():
		switch {
		case ft == "Q2_K":
			t = ggml.Q3_K
			if s.nGQA >= 4 {
				t = ggml.Q4_K
			}
		case ft == "Q2_K_S" && s.nGQA >= 4:
			t = ggml.Q4_K
		case ft == "IQ3_XXS":
			switch {
			case s.nGQA >= 4:
				t = ggml.Q4_K
			case !s.imatrix:
				t = ggml.IQ3_S
			default:
				t = ggml.IQ3_XXS
			}
		case is("IQ3_XS", "IQ3_S") && s.nGQA >= 4:
			t = ggml.Q4_K
		case ft == "IQ3_M":
			t = ggml.Q4_K
		case ft == "Q3_K_M":
			t = ggml.Q4_K
			if s.iAttnV < 2 {
				t = ggml.Q5_K
			}
		case ft == "Q3_K_L":
			t = ggml.Q5_K
		case is("IQ4_NL", "IQ4_XS") && s.nGQA >= 4:
			t = ggml.Q5_K
		case is("Q4_K_M", "Q5_K_M") && useMoreBits(s.iAttnV, s.nAttnV):
			t = ggml.Q6_K
		case ft == "Q4_K_S" && s.iAttnV < 4:
			t = ggml.Q5_K
		}
		if s.nExpert == 8 {
			t = ggml.Q8_0
		}
		s.iAttnV++
	case cat == catAttnK:
		switch {
		case s.nExpert == 8:
			t = ggml.Q8_0
		case ft == "IQ3_XS":
			t = ggml.IQ3_XXS
		case ft == "IQ3_XXS":
			t = ggml.IQ2_S
		}
	case cat == catAttnQ:
		switch ft {
		case "IQ3_XS":
			t = ggml.IQ3_XXS
		case "IQ3_XXS":
			t = ggml.IQ2_S
		}
	case cat == catFFNDown:
		il, n := layerOf(name), s.nLayer
		switch {
		case ft == "Q2_K":
			t = ggml.Q3_K
		case ft == "Q2_K_S":
			if il < n/8 {
				t = ggml.Q4_K
			}
		case ft == "IQ3_XXS" && !s.imatrix:
			t = ggml.Q3_K
			if il < n/8 {
				t = ggml.Q4_K
			}
		case ft == "Q3_K_M":
			t = ggml.Q4_K // arch is not Falcon
			if il < n/16 {
				t = ggml.Q5_K
			}
		case ft == "IQ3_M" && (il < n/8 || (s.nExpert == 8 && useMoreBits(il, n))):
			t = ggml.Q4_K
		case ft == "Q3_K_L":
			t = ggml.Q5_K
		case ft == "Q4_K_M":
			if useMoreBits(il, n) {
				t = ggml.Q6_K
			}
		case il < n/8 && is("IQ4_NL", "IQ4_XS") && !s.imatrix:
			t = ggml.Q5_K
		case ft == "Q5_K_M" && useMoreBits(il, n):
			t = ggml.Q6_K
		case ft == "Q4_K_S" && il < n/8:
			t = ggml.Q5_K
		case is("Q4_0", "Q5_0") && s.imatrix && il < n/8:
			t = ggml.Q4_1
			if ft == "Q5_0" {
				t = ggml.Q5_1
			}
		}
		s.iFFNDown++
	case cat == catAttnOutput:
		if s.nExpert == 8 {
			if is("Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S", "IQ3_M", "IQ4_XS") {
				t = ggml.Q5_K
			}
		} else {
			switch ft {
			case "Q2_K":
				t = ggml.Q3_K
			case "IQ3_XXS":
				t = ggml.IQ3_S
			case "Q3_K_M", "IQ3_M":
				t = ggml.Q4_K
			case "Q3_K_L":
				t = ggml.Q5_K
			}
		}
	case cat == catAttnQKV:
		switch ft {
		case "Q3_K_M", "Q3_K_L", "IQ3_M":
			t = ggml.Q4_K
		case "Q4_K_M":
			t = ggml.Q5_K
		case "Q5_K_M":
			t = ggml.Q6_K
		}
	case cat == catFFNGate || cat == catFFNUp:
		il, n := layerOf(name), s.nLayer
		if ft == "IQ3_XS" && il >= n/8 && il < 7*n/8 {
			t = ggml.IQ3_XXS
		}
	}
	return t
}

// typeFallback is tensor_type_fallback: the type a tensor with rows of n
// values gets when rows are not whole blocks of t.
func typeFallback(t ggml.Type, n int) ggml.Type {
	if n%t.BlockSize() == 0 {
		return t
	}
	r := t
	switch t {
	case ggml.IQ1_S, ggml.IQ1_M, ggml.IQ2_XXS, ggml.IQ2_XS, ggml.IQ2_S, ggml.IQ3_XXS, ggml.IQ3_S, ggml.IQ4_XS:
		r = ggml.IQ4_NL
	case ggml.Q2_K, ggml.Q3_K, ggml.TQ1_0, ggml.TQ2_0:
		r = ggml.Q4_0
	case ggml.Q4_K:
		r = ggml.Q5_0
	case ggml.Q5_K:
		r = ggml.Q5_1
	case ggml.Q6_K:
		r = ggml.Q8_0
	}
	if n%r.BlockSize() != 0 {
		r = ggml.F16
	}
	return r
}

// quantizable reports whether synth generates t as a quantized matrix (the
// tensors llama-quantize's tensor_allows_quantization accepts among ours).
func (t tensorSpec) quantizable() bool {
	return t.kind == kindMatrix || t.kind == kindEmbd || t.kind == kindOutput
}

// assignTypes sets the types of ts's matrices: c.Mix's mixture as
// llama-quantize makes it (visiting tensors in its order: by block, then by
// name), then llama-quantize's fallback for rows that are not whole blocks.
// With router skew, token embeddings need a quantizer (they carry a
// constant), and get Q8_0 if their type has none.
func assignTypes(c *Config, ts []tensorSpec) {
	if c.Mix != "" {
		s := mixState{ftype: c.Mix, nExpert: c.Experts, nLayer: c.Layers + c.MTP, tied: true, imatrix: c.Imatrix}
		if c.HeadsKV > 0 {
			s.nGQA = c.Heads / c.HeadsKV
		}
		order := make([]int, len(ts))
		for i := range order {
			order[i] = i
			if tensorCategory(ts[i].name).attnV() {
				s.nAttnV++
			}
			if ts[i].name == "output.weight" {
				s.tied = false
			}
		}
		sort.SliceStable(order, func(a, b int) bool {
			la, lb := layerOf(ts[order[a]].name), layerOf(ts[order[b]].name)
			if la != lb {
				return la < lb
			}
			return ts[order[a]].name < ts[order[b]].name
		})
		for _, i := range order {
			t := &ts[i]
			if t.quantizable() {
				t.typ = s.tensorType(t.typ, t.name, t.dims, tensorCategory(t.name))
			}
		}
	}
	for i := range ts {
		t := &ts[i]
		if !t.quantizable() {
			continue
		}
		t.typ = typeFallback(t.typ, int(t.dims[0]))
		if t.kind == kindEmbd && c.RouterSkew > 0 && !hasQuantizer(t.typ) {
			t.typ = typeFallback(ggml.Q8_0, int(t.dims[0]))
		}
	}
}
