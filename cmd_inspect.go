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
	fs := newFlagSet(env, "dev", "strata dev synth [flags]",
		"Developer tools.\n  synth   write a synthetic GGUF model (strata dev synth --help)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "synth":
		return synth.Main(ctx, fs.Args()[1:], env.Stdout)
	case "":
		fs.Usage()
		return fmt.Errorf("%w: dev needs a tool name", errUsage)
	default:
		return fmt.Errorf("%w: unknown dev tool %q", errUsage, fs.Arg(0))
	}
}
