package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/tokenizer"
	"github.com/strata-llm/strata/internal/cores"
)

// cmdTokenize prints the token ids of a text, as a raw prompt is tokenized.
func cmdTokenize(ctx context.Context, env *cmdEnv, args []string) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	modelPath := fs.String("model", "", "GGUF model `file`")
	text := fs.String("text", "", "text to tokenize")
	asJSON := fs.Bool("json", false, "print JSON")
	noSpecial := fs.Bool("no-special", false, "no BOS/EOS, and control-token text is not parsed")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: strata tokenize --model FILE --text TEXT [--json] [--no-special]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *modelPath == "" {
		return errors.New("tokenize: --model is required")
	}
	f, err := gguf.Open(*modelPath)
	if err != nil {
		return err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return fmt.Errorf("tokenize %s: %w", *modelPath, err)
	}
	ids := tok.Encode(*text, !*noSpecial, !*noSpecial)
	if *asJSON {
		pieces := make([]string, len(ids))
		for i, id := range ids {
			pieces[i] = string(tok.TokenBytes(id))
		}
		return json.NewEncoder(env.Stdout).Encode(map[string]any{"ids": ids, "pieces": pieces})
	}
	for _, id := range ids {
		fmt.Fprintf(env.Stdout, "%d\t%q\n", id, tok.TokenBytes(id))
	}
	return nil
}

// loadForCLI loads a model into a fresh engine for one-shot commands.
func loadForCLI(ctx context.Context, env *cmdEnv, path string, threads, nctx int) (*engine.Engine, error) {
	return loadWith(ctx, engine.Options{Threads: threads, ContextLength: nctx, Logger: env.Log}, path)
}

// loadWith loads path into a new engine with opts.
func loadWith(ctx context.Context, opts engine.Options, path string) (*engine.Engine, error) {
	eng := engine.New(opts)
	if err := eng.Load(ctx, path); err != nil {
		eng.Close()
		return nil, err
	}
	return eng, nil
}

func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("token id %q: %w", f, err)
		}
		ids = append(ids, int32(v))
	}
	return ids, nil
}

// cmdEval prints the top-K next-token probabilities at every position.
func cmdEval(ctx context.Context, env *cmdEnv, args []string) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	modelPath := fs.String("model", "", "GGUF model `file`")
	prompt := fs.String("prompt", "", "text, tokenized as a raw prompt")
	tokens := fs.String("tokens", "", "comma-separated token ids (instead of --prompt)")
	top := fs.Int("top", 10, "probabilities per position")
	threads := fs.Int("threads", 0, "threads (0: one per physical core)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: strata eval --model FILE (--prompt TEXT | --tokens 1,2,3) [--top K] [--json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *modelPath == "" || (*prompt == "") == (*tokens == "") {
		return errors.New("eval: --model and exactly one of --prompt or --tokens are required")
	}
	ids, err := parseIDs(*tokens)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	eng, err := loadForCLI(ctx, env, *modelPath, *threads, 0)
	if err != nil {
		return err
	}
	defer eng.Close()
	if *prompt != "" {
		if ids, err = eng.Tokenize(*prompt); err != nil {
			return err
		}
	}
	if cap := eng.Status().Model.ContextLength; cap > 0 && len(ids) > cap {
		return fmt.Errorf("eval: %d tokens exceed the model's context of %d", len(ids), cap)
	}
	probs, err := eng.Eval(ctx, ids, *top)
	if err != nil {
		return err
	}
	if *asJSON {
		type pos struct {
			Index int                `json:"i"`
			Token int32              `json:"token"`
			Top   []engine.TokenProb `json:"top"`
		}
		out := struct {
			Tokens    []int32 `json:"tokens"`
			Positions []pos   `json:"positions"`
		}{Tokens: ids}
		for i, p := range probs {
			out.Positions = append(out.Positions, pos{i, ids[i], p})
		}
		return json.NewEncoder(env.Stdout).Encode(out)
	}
	for i, p := range probs {
		fmt.Fprintf(env.Stdout, "%d (token %d):", i, ids[i])
		for _, tp := range p {
			fmt.Fprintf(env.Stdout, " %d:%.4f", tp.ID, tp.P)
		}
		fmt.Fprintln(env.Stdout)
	}
	return nil
}

// cmdBench times prefill and decode like llama-bench's pp and tg tests,
// reporting the median of --reps runs.
func cmdBench(ctx context.Context, env *cmdEnv, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	modelPath := fs.String("model", "", "GGUF model `file`")
	threads := fs.Int("threads", cores.Default(), "threads")
	pp := fs.Int("prompt-tokens", 512, "prompt tokens prefilled in one batch")
	tg := fs.Int("gen", 64, "tokens decoded one at a time")
	reps := fs.Int("reps", 3, "repetitions (the median is reported)")
	asJSON := fs.Bool("json", false, "print JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed runs to `file` (go tool pprof)")
	stream := fs.String("stream", "auto", "stream experts from the SSD: auto (when the model does not fit the memory this process may use), always, never")
	cacheGB := fs.Float64("cache-gb", 0, "expert cache size in GB when streaming (0: what the process may use)")
	ttftIdle := fs.Duration("ttft-idle", 0, "instead: time-to-first-token of a request after this idle time vs right after another, --reps times")
	speculate := fs.Bool("speculate", false, "instead: greedy decode tok/s with speculative decoding (SpecGate, prompt lookup and MTP drafts) vs plain, alternating, --reps times each")
	maxDraft := fs.Int("max-draft", 8, "with --speculate: the most drafts per verify")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: strata bench --model FILE [--threads N] [--prompt-tokens P] [--gen G] [--reps R] [--stream auto|always|never] [--cache-gb G] [--cpuprofile F] [--speculate [--max-draft K]] [--json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *modelPath == "" || *reps < 1 {
		return errors.New("bench: --model is required and --reps must be ≥ 1")
	}
	mode := map[string]engine.Streaming{"auto": engine.StreamAuto, "always": engine.StreamAlways, "never": engine.StreamNever}
	sm, ok := mode[*stream]
	if !ok || *cacheGB < 0 {
		return fmt.Errorf("bench: --stream must be auto, always or never, --cache-gb not negative")
	}
	eng, err := loadWith(ctx, engine.Options{Threads: *threads, ContextLength: *pp + *tg + 1, Logger: env.Log,
		Streaming: sm, ExpertCache: int64(*cacheGB * 1e9)}, *modelPath)
	if err != nil {
		return err
	}
	defer eng.Close()
	if *ttftIdle > 0 {
		return benchTTFT(ctx, env, eng, *pp, *ttftIdle, *reps, *asJSON)
	}
	if *speculate {
		if *maxDraft < 1 {
			return errors.New("bench: --max-draft must be ≥ 1")
		}
		return benchSpeculate(ctx, env, eng, *modelPath, *pp, *tg, *reps, *maxDraft, *asJSON)
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	var pre, dec []float64
	var last engine.BenchResult
	for r := 0; r < *reps; r++ {
		res, err := eng.Bench(ctx, *pp, *tg, uint64(r+1))
		if err != nil {
			return err
		}
		pre, dec, last = append(pre, res.PrefillPerSec), append(dec, res.DecodePerSec), res
	}
	out := struct {
		Model          string              `json:"model"`
		Threads        int                 `json:"threads"`
		PromptTokens   int                 `json:"prompt_tokens"`
		GenTokens      int                 `json:"gen_tokens"`
		PrefillTokS    float64             `json:"prefill_tokens_per_second"`
		DecodeTokS     float64             `json:"decode_tokens_per_second"`
		PrefillSamples []float64           `json:"prefill_samples"`
		DecodeSamples  []float64           `json:"decode_samples"`
		Memory         string              `json:"memory"`
		Experts        *engine.ExpertStats `json:"experts,omitempty"` // of the last repetition's decode
	}{*modelPath, *threads, last.PromptTokens, last.GenTokens, median(pre), median(dec), pre, dec, last.Memory, last.Experts}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(out)
	}
	fmt.Fprintf(env.Stdout, "model %s, %d threads, %s\nprefill %d tokens: %.1f tok/s\ndecode %d tokens: %.1f tok/s\n",
		out.Model, out.Threads, out.Memory, out.PromptTokens, out.PrefillTokS, out.GenTokens, out.DecodeTokS)
	if x := out.Experts; x != nil {
		fmt.Fprintf(env.Stdout, "experts: cache %.2f GB, hit %.1f %%, %.1f MB read per token, %.0f MB/s, stalled %.2f s, %d read-aheads (%d used)\n",
			float64(x.CacheBytes)/1e9, 100*x.HitRate, float64(x.BytesRead)/1e6/float64(max(out.GenTokens, 1)), x.ReadMBps, x.StallSeconds, x.ReadAheads, x.AheadUsed)
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchSpeculate measures greedy decode speed with speculative decoding
// (the gate choosing the depth, prompt lookup and the model's MTP head where
// it has one) against plain decoding, runs alternating, and checks that
// both give the same tokens. The prompt is pp tokens of a repeating
// pattern; the generated text is the model's own.
func benchSpeculate(ctx context.Context, env *cmdEnv, eng *engine.Engine, path string, pp, tg, reps, maxDraft int, asJSON bool) error {
	toks := make([]int32, pp)
	for i := range toks {
		toks[i] = int32(1 + (i%23)*7919%1000)
	}
	base := eng.Options()
	spec := engine.Speculation{Enabled: true, Gate: true, MaxDraft: maxDraft, Lookup: true, MTP: true}
	req := engine.Request{Tokens: toks, Sampling: engine.Sampling{MaxTokens: tg}}
	gen := func(s engine.Speculation) ([]int32, engine.Stats, error) {
		o := base
		o.Speculation = s
		eng.SetOptions(o)
		var ids []int32
		st, err := eng.Generate(ctx, req, func(t engine.Token) error {
			if t.ID >= 0 {
				ids = append(ids, t.ID)
			}
			return nil
		})
		return ids, st, err
	}
	defer eng.SetOptions(base)
	var plain, gated []float64
	var last *engine.SpecStats
	identical := true
	for r := 0; r < reps; r++ {
		want, ps, err := gen(engine.Speculation{})
		if err != nil {
			return err
		}
		got, ss, err := gen(spec)
		if err != nil {
			return err
		}
		identical = identical && slices.Equal(got, want)
		plain, gated = append(plain, ps.TokensPerSecond), append(gated, ss.TokensPerSecond)
		last = ss.Speculation
	}
	if last == nil {
		last = &engine.SpecStats{}
	}
	out := struct {
		Model        string            `json:"model"`
		Threads      int               `json:"threads"`
		MaxDraft     int               `json:"max_draft"`
		PlainTokS    float64           `json:"plain_tokens_per_second"`
		GateTokS     float64           `json:"gate_tokens_per_second"`
		Ratio        float64           `json:"ratio"`
		PlainSamples []float64         `json:"plain_samples"`
		GateSamples  []float64         `json:"gate_samples"`
		Acceptance   float64           `json:"acceptance"` // accepted / verified drafts, last repetition
		SameTokens   bool              `json:"same_tokens"`
		Speculation  *engine.SpecStats `json:"speculation"` // of the last repetition
	}{path, base.Threads, maxDraft, median(plain), median(gated), median(gated) / max(median(plain), 1e-9), plain, gated,
		float64(last.Accepted) / float64(max(last.Verified, 1)), identical, last}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(out)
	}
	fmt.Fprintf(env.Stdout, "model %s, %d threads, greedy decode of %d tokens after %d, median of %d alternating runs\n",
		out.Model, out.Threads, tg, pp, reps)
	fmt.Fprintf(env.Stdout, "plain %.1f tok/s, speculation (gate, max %d drafts) %.1f tok/s: %.2f×; tokens identical: %v\n",
		out.PlainTokS, maxDraft, out.GateTokS, out.Ratio, identical)
	fmt.Fprintf(env.Stdout, "drafts: %d proposed, %d verified, %d accepted (%.0f %%), %d declined; %d verifies, %d plain steps\n",
		last.Proposed, last.Verified, last.Accepted, 100*out.Acceptance, last.Declined, last.Verifies, last.PlainSteps)
	fmt.Fprintf(env.Stdout, "chosen depths (verifies by number of drafts): %v\nT(1) %.2f ms, T(n)/T(1) %.2f, stall %.2f ms a row\n",
		last.Depths, last.T1MS, last.TRatio, last.StallMS)
	for src, a := range last.Acceptance {
		fmt.Fprintf(env.Stdout, "acceptance by position, %s: %.2f\n", src, a)
	}
	return nil
}

// benchTTFT measures the time to first token of a prompt of pp tokens
// right after another request (warm) and after idle (the engine wakes its
// backend while it tokenizes), reps times each, and prints the medians,
// with what each request paid besides compute: minor and major page
// faults, garbage collections, and the heap the runtime had returned to
// the kernel when it began (pages it must fault back in).
func benchTTFT(ctx context.Context, env *cmdEnv, eng *engine.Engine, pp int, idle time.Duration, reps int, asJSON bool) error {
	toks := make([]int32, pp)
	for i := range toks {
		toks[i] = int32(1 + i*7919%1000)
	}
	type sample struct {
		MS         float64 `json:"ttft_ms"`
		MinFlt     int64   `json:"minor_faults"`
		MajFlt     int64   `json:"major_faults"`
		GCs        uint32  `json:"gcs"`
		ReleasedMB float64 `json:"heap_released_mb"` // at the start
		CPUMS      float64 `json:"cpu_ms"`           // user + system time of the process
		Preempted  int64   `json:"involuntary_switches"`
	}
	ttft := func() (sample, error) {
		toks[0]++ // a new prompt each time: nothing reused
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		f0, g0 := faults(), ms.NumGC
		released := float64(ms.HeapReleased) / 1e6
		st, err := eng.Generate(ctx, engine.Request{Tokens: toks, Sampling: engine.Sampling{MaxTokens: 1}}, func(engine.Token) error { return nil })
		f1 := faults()
		runtime.ReadMemStats(&ms)
		return sample{st.TimeToFirstToken.Seconds() * 1000, f1[0] - f0[0], f1[1] - f0[1], ms.NumGC - g0, released,
			float64(f1[2]-f0[2]) / 1e3, f1[3] - f0[3]}, err
	}
	var warm, cold []float64
	var warmS, coldS []sample
	for r := 0; r < reps; r++ {
		if _, err := ttft(); err != nil {
			return err
		}
		w, err := ttft()
		if err != nil {
			return err
		}
		select {
		case <-time.After(idle):
		case <-ctx.Done():
			return ctx.Err()
		}
		c, err := ttft()
		if err != nil {
			return err
		}
		warm, cold = append(warm, w.MS), append(cold, c.MS)
		warmS, coldS = append(warmS, w), append(coldS, c)
		if !asJSON {
			fmt.Fprintf(env.Stdout, "round %d: warm %.1f ms (cpu %.0f ms, preempted %d, faults %d/%d, gc %d, released %.0f MB), idle %.1f ms (cpu %.0f ms, preempted %d, faults %d/%d, gc %d, released %.0f MB)\n",
				r+1, w.MS, w.CPUMS, w.Preempted, w.MinFlt, w.MajFlt, w.GCs, w.ReleasedMB, c.MS, c.CPUMS, c.Preempted, c.MinFlt, c.MajFlt, c.GCs, c.ReleasedMB)
		}
	}
	out := struct {
		IdleSeconds float64   `json:"idle_seconds"`
		WarmMS      float64   `json:"warm_ttft_ms"`
		IdleMS      float64   `json:"idle_ttft_ms"`
		Ratio       float64   `json:"ratio"`
		WarmSamples []float64 `json:"warm_samples_ms"`
		IdleSamples []float64 `json:"idle_samples_ms"`
		Warm        []sample  `json:"warm"`
		Idle        []sample  `json:"idle"`
	}{idle.Seconds(), median(warm), median(cold), median(cold) / median(warm), warm, cold, warmS, coldS}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(out)
	}
	fmt.Fprintf(env.Stdout, "time to first token, %d-token prompt: %.1f ms warm, %.1f ms after %s idle (ratio %.2f)\n",
		pp, out.WarmMS, out.IdleMS, idle, out.Ratio)
	return nil
}

// faults is the process's minor and major page faults, CPU time (µs) and
// involuntary context switches so far.
func faults() [4]int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return [4]int64{}
	}
	cpu := ru.Utime.Nano()/1e3 + ru.Stime.Nano()/1e3
	return [4]int64{int64(ru.Minflt), int64(ru.Majflt), cpu, int64(ru.Nivcsw)}
}
