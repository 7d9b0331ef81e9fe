package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/synth"
)

func cmdInspect(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "inspect", "strata inspect FILE [--json]",
		"Describes a GGUF file: architecture, hyperparameters, tokenizer, tensors,\nsizes, and the memory a model of this file needs.")
	asJSON := fs.Bool("json", false, "print JSON")
	// Accept the flag before or after FILE.
	var file string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		file, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	} else if err := noArgs(fs); err != nil {
		return err
	}
	if file == "" {
		return fmt.Errorf("%w: inspect needs a FILE", errUsage)
	}
	f, err := gguf.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	r := gguf.Inspect(f)
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteText(env.Stdout)
}

func cmdDev(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "dev", "strata dev synth|split|profile [flags]",
		"Developer tools.\n  synth   write a synthetic GGUF model (strata dev synth --help)\n  split   split a GGUF model into parts as llama.cpp's gguf-split does (strata dev split --help)\n  profile write a model's static expert-usage profile from a corpus (strata dev profile --help)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "synth":
		return synth.Main(ctx, fs.Args()[1:], env.Stdout)
	case "split":
		return cmdDevSplit(ctx, env, fs.Args()[1:])
	case "profile":
		return cmdDevProfile(ctx, env, fs.Args()[1:])
	case "":
		fs.Usage()
		return fmt.Errorf("%w: dev needs a tool name", errUsage)
	default:
		return fmt.Errorf("%w: unknown dev tool %q", errUsage, fs.Arg(0))
	}
}

func cmdDevSplit(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "dev split", "strata dev split [--max-tensors N | --max-bytes N] IN.gguf OUT_PREFIX",
		"Writes IN as a split model, OUT_PREFIX-00001-of-0000N.gguf and on, the way\nllama.cpp's gguf-split does (by default 128 tensors per part).")
	maxTensors := fs.Int("max-tensors", 0, "at most `N` tensors per part (default 128)")
	maxBytes := fs.Int64("max-bytes", 0, "at most `N` bytes of tensor data per part")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("%w: dev split needs IN.gguf and OUT_PREFIX", errUsage)
	}
	opts := gguf.SplitOptions{MaxTensors: *maxTensors, MaxBytes: *maxBytes}
	if opts.MaxTensors == 0 && opts.MaxBytes == 0 {
		opts.MaxTensors = 128
	}
	f, err := gguf.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	parts, err := gguf.WriteSplit(ctx, f, fs.Arg(1), opts)
	if err != nil {
		return err
	}
	for _, p := range parts {
		fmt.Fprintln(env.Stdout, p)
	}
	return nil
}
