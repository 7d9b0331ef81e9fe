package synth

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// Main runs the `strata dev synth` command: it writes a synthetic model
// described by flags, starting from Defaults(--arch).
func Main(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, out, err := parseFlags(args, stdout)
	if err != nil || out == "" {
		return err
	}
	if err := Write(ctx, out, cfg); err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "wrote %s: %s %s, %d layers, hidden %d, %d experts top-%d, vocab %d, %d bytes\n",
		out, cfg.Arch, cfg.Type, cfg.Layers, cfg.Embd, cfg.Experts, cfg.ExpertsUsed, cfg.Vocab, st.Size())
	return err
}

// parseFlags reads the command's flags into a Config and the output path
// ("" with a nil error after -help).
func parseFlags(args []string, stdout io.Writer) (Config, string, error) {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var (
		arch  = fs.String("arch", ArchQwen3MoE, "architecture: qwen3moe, qwen3next or qwen4exp")
		qt    = fs.String("quant", "Q8_0", "type of the weight matrices (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, MXFP4), or a llama-quantize file type (Q2_K_S, Q3_K_M, Q4_K_M, IQ2_M, IQ3_XS, IQ3_M, ...; see --mix) as its mixture of types")
		out   = fs.String("out", "", "output GGUF file (required)")
		seed  = fs.Uint64("seed", 1, "random seed; the same flags and seed give the same bytes")
		scale = fs.Float64("scale", 1, "standard deviation of the logits: larger gives more peaked next-token distributions (8 and up: mostly decisive)")
		skew  = fs.Float64("router-skew", 0, "Zipf exponent of expert popularity (0: none)")
		mtp   = fs.Int("mtp", 0, "multi-token-prediction (nextn) blocks after the trunk (qwen3next, qwen4exp)")
		mix   = fs.Bool("mix", false, "with a --quant that is also a llama-quantize file type (Q4_0, IQ2_XS, ...): write that file type's mixture instead of every matrix in the one type")
		imat  = fs.Bool("imatrix", false, "write the mixture as llama-quantize makes it with an importance matrix")
	)
	ints := map[string]*int{}
	for _, f := range []struct{ name, usage string }{
		{"layers", "blocks"}, {"embd", "hidden size"}, {"heads", "attention heads"},
		{"heads-kv", "key/value heads"}, {"head-dim", "attention head size"},
		{"experts", "experts per layer"}, {"used", "experts per token"},
		{"ff-expert", "expert FFN size"}, {"ff-shared", "shared expert FFN size (qwen3next, qwen4exp)"},
		{"vocab", "vocabulary size"}, {"ctx", "training context length"},
		{"ssm-state", "DeltaNet head size (qwen3next, qwen4exp)"}, {"ssm-groups", "DeltaNet key heads (qwen3next, qwen4exp)"},
		{"ssm-v-heads", "DeltaNet value heads (qwen3next, qwen4exp)"},
		{"compress-ratio", "QSA block compression ratio of the full-attention layers (qwen4exp; 0: no attention.compress_ratios key, every layer dense)"},
		{"ple-layer", "the PLE n-gram embedding's layer, a DeltaNet layer (qwen4exp; -1: no PLE key group)"},
	} {
		ints[f.name] = fs.Int(f.name, 0, f.usage+" (default: the architecture's tiny default)")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, "", nil
		}
		return Config{}, "", err
	}
	if fs.NArg() > 0 {
		return Config{}, "", fmt.Errorf("synth: unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return Config{}, "", errors.New("synth: --out is required")
	}
	cfg := Defaults(*arch)
	t, mixName, err := ParseQuant(*qt, *mix)
	if err != nil {
		return Config{}, "", fmt.Errorf("synth: --quant: %w", err)
	}
	cfg.Type, cfg.Mix, cfg.Imatrix = t, mixName, *imat
	cfg.Seed = *seed
	cfg.WeightScale = float32(*scale)
	cfg.RouterSkew = *skew
	cfg.MTP = *mtp
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, dst := range map[string]*int{
		"layers": &cfg.Layers, "embd": &cfg.Embd, "heads": &cfg.Heads, "heads-kv": &cfg.HeadsKV,
		"head-dim": &cfg.HeadDim, "experts": &cfg.Experts, "used": &cfg.ExpertsUsed,
		"ff-expert": &cfg.FFExpert, "ff-shared": &cfg.FFShared, "vocab": &cfg.Vocab, "ctx": &cfg.CtxLen,
		"ssm-state": &cfg.SSMState, "ssm-groups": &cfg.SSMGroups, "ssm-v-heads": &cfg.SSMVHeads,
		"compress-ratio": &cfg.CompressRatio, "ple-layer": &cfg.PLELayer,
	} {
		if set[name] {
			*dst = *ints[name]
		}
	}
	if set["head-dim"] && cfg.Arch == ArchQwen3MoE {
		cfg.RopeDim = cfg.HeadDim
	} else if set["head-dim"] {
		cfg.RopeDim = max(4, cfg.HeadDim/4/4*4) // partial rotary, a quarter of the head
	}
	return cfg, *out, nil
}
