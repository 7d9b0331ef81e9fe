package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-llm/strata/metal"
)

func cmdSelftest(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "selftest", "strata selftest [--quick] [--sanitize]",
		"Runs every Metal kernel against the CPU backend on the same data and prints a\n"+
			"table. On a Mac it uses the GPU; on Linux the kernels run through the Metal\n"+
			"emulator (clang 16 needed), whose timings say nothing about a GPU's speed.")
	quick := fs.Bool("quick", false, "fewer shapes")
	sanitize := fs.Bool("sanitize", false, "Linux: run the emulator's ASan/UBSan build")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	dev, err := metal.OpenDefault(ctx, metal.EmulatorOptions{Sanitize: *sanitize})
	if err != nil {
		return fmt.Errorf("selftest: %w", err)
	}
	defer dev.Close()
	fmt.Fprintf(env.Stdout, "device: %s\n", dev.Name())
	rs := metal.Selftest(ctx, dev, metal.SelftestOptions{Quick: *quick})
	metal.PrintResults(env.Stdout, rs)
	if !metal.Passed(rs) {
		return errors.New("selftest: some kernels disagree with the CPU backend")
	}
	fmt.Fprintf(env.Stdout, "all %d checks passed\n", len(rs))
	if strings.HasPrefix(dev.Name(), "emulator") {
		fmt.Fprintln(env.Stdout, "(emulator timings say nothing about a GPU's speed)")
	}
	return nil
}
