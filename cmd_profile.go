package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/cores"
)

// historyDir is where the learned expert-usage histories live.
func historyDir(data string) string { return filepath.Join(data, "usage") }

// profilesDir is where the app looks for static usage profiles the user
// imported (beside the learned histories under usage/).
func profilesDir(data string) string { return filepath.Join(data, "profiles") }

// cmdDevProfile runs a corpus through a model and writes its static usage
// profile, in the usage history's format, named by the model's identity.
func cmdDevProfile(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "dev profile", "strata dev profile [--model FILE] [--out DIR] [--threads N] CORPUS.txt...",
		"Runs the corpus files through the model and writes which experts its tokens\n"+
			"select, per layer, as a static usage profile named by the model's identity\n"+
			"(IDENTITY.usage). Put it in the data folder's profiles/ (the default --out)\n"+
			"or ship it in the app's resources/profiles: when the model streams its\n"+
			"experts, the expert cache is filled from it blended with the learned history.")
	modelPath := fs.String("model", "", "GGUF model `file` (default: the demo model)")
	out := fs.String("out", "", "directory to write the profile to (default: the data folder's profiles/)")
	threads := fs.Int("threads", cores.Default(), "threads")
	ctxLen := fs.Int("ctx", 2048, "tokens forwarded per chunk of the corpus, plus one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("%w: dev profile needs at least one corpus file", errUsage)
	}
	if *modelPath == "" {
		p, err := engine.EnsureDemoModel(ctx, env.Dirs.Cache)
		if err != nil {
			return fmt.Errorf("dev profile: %w", err)
		}
		*modelPath = p
	}
	var texts []string
	for _, p := range fs.Args() {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("dev profile: %w", err)
		}
		texts = append(texts, string(b))
	}
	dir := *out
	if dir == "" {
		if env.Dirs.Data == "" {
			return fmt.Errorf("dev profile: no data folder; pass --out")
		}
		dir = profilesDir(env.Dirs.Data)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dev profile: %w", err)
	}
	last := -1
	prof, err := engine.BuildProfile(ctx, *modelPath, engine.ProfileOptions{
		Options: engine.Options{Threads: *threads, ContextLength: *ctxLen, Logger: env.Log},
		Texts:   texts,
		Progress: func(done, total int) {
			if pct := 100 * done / total; pct/10 != last/10 {
				last = pct
				fmt.Fprintf(env.Stderr, "profile: %d of %d tokens\n", done, total)
			}
		},
	})
	if err != nil {
		return err
	}
	path := engine.ProfilePath(dir, prof.ID)
	if err := prof.Save(path); err != nil {
		return fmt.Errorf("dev profile: %w", err)
	}
	fmt.Fprintf(env.Stdout, "wrote %s: %d tokens, %d layers × %d experts\n", path, int(prof.Tokens), prof.Layers, prof.Experts)
	return nil
}
