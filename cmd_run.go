package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/strata-llm/strata/engine"
)

func cmdRun(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "run", "strata run [--model FILE] --prompt TEXT [--max-tokens N] [--temperature T] [--seed S] [--json] [--home DIR]",
		"Generates once from a raw prompt and streams the text to stdout (statistics\ngo to stderr). With --json it prints one object instead:\n{\"prompt_ids\":[...],\"generated_ids\":[...],\"text\":\"...\"}.\nWith no --model it uses the demo model (random weights).")
	model := fs.String("model", "", "GGUF model `file` (default: the demo model)")
	prompt := fs.String("prompt", "", "the prompt `text` (required)")
	maxTokens := fs.Int("max-tokens", 128, "tokens to generate at most")
	temp := fs.Float64("temperature", 0.8, "sampling temperature (0: greedy)")
	seed := fs.Uint64("seed", 0, "random seed (0: random)")
	threads := fs.Int("threads", 0, "threads (0: one per physical core)")
	backendName := fs.String("backend", "cpu", "cpu, or metal (the GPU on a Mac after a kernel selftest; the emulator on Linux, slow)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of streaming text")
	home := fs.String("home", "", "keep all files under `DIR` (for the demo model)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	switch {
	case *prompt == "":
		return fmt.Errorf("%w: run needs --prompt", errUsage)
	case *maxTokens < 1:
		return fmt.Errorf("%w: --max-tokens must be at least 1", errUsage)
	case *temp < 0 || *temp > 5:
		return fmt.Errorf("%w: --temperature must be between 0 and 5", errUsage)
	}
	if err := applyHome(env, *home); err != nil {
		return err
	}
	path := *model
	if path == "" {
		if err := os.MkdirAll(env.Dirs.Cache, 0o700); err != nil {
			return err
		}
		var err error
		if path, err = engine.EnsureDemoModel(ctx, env.Dirs.Cache); err != nil {
			return fmt.Errorf("demo model: %w", err)
		}
		env.Log.Info("using the demo model (random weights: its text is gibberish)", "path", path)
	}
	eng := engine.New(engine.Options{Threads: *threads, Logger: env.Log, Backend: *backendName})
	defer eng.Close()
	if err := eng.Load(ctx, path); err != nil {
		return err
	}
	req := engine.Request{Prompt: *prompt, Sampling: engine.Sampling{
		MaxTokens:   *maxTokens,
		Temperature: float32(*temp),
		Seed:        *seed,
	}}
	var ids []int32
	var text []byte
	st, err := eng.Generate(ctx, req, func(t engine.Token) error {
		if t.ID >= 0 {
			ids = append(ids, t.ID)
		}
		text = append(text, t.Text...)
		if !*asJSON {
			_, err := fmt.Fprint(env.Stdout, t.Text)
			return err
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if *asJSON {
		if ids == nil {
			ids = []int32{}
		}
		prompt := st.PromptIDs
		if prompt == nil {
			prompt = []int32{}
		}
		return json.NewEncoder(env.Stdout).Encode(struct {
			PromptIDs    []int32 `json:"prompt_ids"`
			GeneratedIDs []int32 `json:"generated_ids"`
			Text         string  `json:"text"`
			FinishReason string  `json:"finish_reason"`
		}{prompt, ids, string(text), string(st.FinishReason)})
	}
	fmt.Fprintln(env.Stdout)
	fmt.Fprintf(env.Stderr, "%d prompt tokens, %d generated (%s), first token after %v, %.1f tokens/s\n",
		st.PromptTokens, st.GeneratedTokens, st.FinishReason, st.TimeToFirstToken.Round(1e6), st.TokensPerSecond)
	return err
}
