package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"github.com/strata-llm/strata/internal/dirs"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cmdEnv, args []string) error
}

// commands is the dispatch table, in the order help lists it. To add a
// subcommand, add a line.
func commands() []command {
	return []command{
		{"serve", "run the engine and the local API without a UI", cmdServe},
		{"run", "generate once from a prompt and print the text", cmdRun},
		{"models", "list installed and catalog models", cmdModels},
		{"pull", "download a model (catalog name, REPO/FILE or https URL)", cmdPull},
		{"rm", "remove an installed model", cmdRm},
		{"verify", "re-hash and validate an installed model or a file", cmdVerify},
		{"inspect", "describe a GGUF file: architecture, tokenizer, tensors, sizes", cmdInspect},
		{"tokenize", "print the token ids of a text", cmdTokenize},
		{"eval", "print next-token probabilities at every position", cmdEval},
		{"bench", "measure prefill and decode speed", cmdBench},
		{"selftest", "check every Metal kernel against the CPU backend", cmdSelftest},
		{"dev", "developer tools (dev synth: write a synthetic model)", cmdDev},
		{"version", "print the version", cmdVersion},
		{"help", "show this help", nil}, // handled by run
	}
}

// errUsage marks a command-line mistake (exit status 2).
var errUsage = errors.New("usage")

// run is the whole program: it parses global flags, picks the
// subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	home := os.Getenv("STRATA_HOME")
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch a := args[0]; {
		case a == "-h" || a == "-help" || a == "--help":
			printHelp(stdout)
			return 0
		case a == "--home" || a == "-home":
			if len(args) < 2 {
				fmt.Fprintln(stderr, "strata: --home needs a directory")
				return 2
			}
			home, args = args[1], args[2:]
			continue
		case strings.HasPrefix(a, "--home=") || strings.HasPrefix(a, "-home="):
			home = a[strings.Index(a, "=")+1:]
		case a == "--version" || a == "-version":
			args = []string{"version"}
			continue
		default:
			fmt.Fprintf(stderr, "strata: unknown flag %s\n", a)
			printHelp(stderr)
			return 2
		}
		args = args[1:]
	}
	env := &cmdEnv{Stdout: stdout, Stderr: stderr, Log: cliLogger(stderr)}
	var err error
	if env.Dirs, err = resolveDirs(home); err != nil {
		fmt.Fprintln(stderr, "strata:", err)
		return 1
	}
	name := ""
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	if name == "" {
		err = cmdApp(ctx, env, nil)
	} else if name == "help" {
		if len(args) > 0 {
			// help CMD is CMD --help.
			return run(ctx, []string{args[0], "--help"}, stdout, stderr)
		}
		printHelp(stdout)
		return 0
	} else {
		var cmd *command
		for _, c := range commands() {
			if c.name == name {
				cmd = &c
				break
			}
		}
		if cmd == nil {
			fmt.Fprintf(stderr, "strata: unknown command %q\n\n", name)
			printHelp(stderr)
			return 2
		}
		err = cmd.run(ctx, env, args)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "strata:", err)
		return 2
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return 130
	default:
		fmt.Fprintln(stderr, "strata:", err)
		return 1
	}
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `Strata runs Mixture-of-Experts language models on this computer.

usage: strata [--home DIR] [command] [arguments]

With no command, Strata starts the menu-bar app (headless like "serve"
when there is no display). Commands:

`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
"strata COMMAND --help" describes a command. --home DIR (or STRATA_HOME)
keeps all of Strata's files under DIR instead of the platform's places.
`)
}

// resolveDirs returns the folders: under home if set, else the platform's.
func resolveDirs(home string) (dirs.Dirs, error) {
	if home != "" {
		return dirs.Under(home)
	}
	return dirs.Default()
}

// cliLogger logs warnings and errors to stderr (STRATA_LOG=debug|info|warn
// changes the level); long-running commands replace it (see setupLogging).
func cliLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel(slog.LevelWarn)}))
}

func logLevel(def slog.Level) slog.Level {
	switch strings.ToLower(os.Getenv("STRATA_LOG")) {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return def
}

func cmdVersion(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "version", "strata version", "Prints Strata's version.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "strata %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// newFlagSet returns a flag set whose --help prints usage and doc.
func newFlagSet(env *cmdEnv, name, usage, doc string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: %s\n\n%s\n", usage, doc)
		var any bool
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprintln(env.Stderr)
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args; a mistake is a usage error (exit status 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
	}
	return nil
}

// noArgs refuses positional arguments.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s takes no arguments (got %q)", errUsage, fs.Name(), fs.Arg(0))
	}
	return nil
}
