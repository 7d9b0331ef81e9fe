package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
)

// BenchmarkHistoryRestart is the usage history's evidence: the hit rate
// and decode speed of the first STRATA_BENCH_TOKENS tokens (default 512)
// generated after a restart, without a history and with the one learned
// in STRATA_BENCH_TURNS earlier turns (default 6) of as many tokens each,
// against the steady state (the hit rate of the last learning turn, the
// cache warmed by the same traffic in the same run). Each turn samples at
// temperature 0.8 from its own prompt, so turns share the router's
// favourites (its skew), not their token sequences.
//
// STRATA_BENCH_MODEL names a GGUF (default: a 4-layer 64-expert
// skewed-router model written here), STRATA_BENCH_CACHE_GB the expert
// cache (default: what the process may use, so a cgroup limit sets it),
// STRATA_BENCH_THREADS the threads (default 2). Run by hand, under the
// streaming benchmark's limit, e.g. the 4-layer Q8_0 file with a router
// skew at 1 GB:
//
//	strata dev synth --arch qwen3moe --quant Q8_0 --layers 4 --embd 2048 --heads 32 --heads-kv 4 \
//	    --head-dim 128 --experts 128 --used 8 --ff-expert 768 --vocab 8192 --router-skew 0.5 --out /tmp/h.gguf
//	go test -c -o /tmp/engine.test ./engine/
//	mkdir /sys/fs/cgroup/memory/hb && echo 1G > /sys/fs/cgroup/memory/hb/memory.limit_in_bytes
//	sh -c 'echo $$ > /sys/fs/cgroup/memory/hb/cgroup.procs; exec env STRATA_BENCH_MODEL=/tmp/h.gguf \
//	    /tmp/engine.test -test.run "^$" -test.bench HistoryRestart -test.benchtime 1x -test.v'
func BenchmarkHistoryRestart(b *testing.B) {
	ntok := envInt("STRATA_BENCH_TOKENS", 512)
	turns := envInt("STRATA_BENCH_TURNS", 6)
	threads := envInt("STRATA_BENCH_THREADS", 2)
	path := os.Getenv("STRATA_BENCH_MODEL")
	if path == "" {
		path = writeSynth(b, b.TempDir(), func(c *synth.Config) {
			c.Layers, c.Experts, c.ExpertsUsed, c.RouterSkew, c.WeightScale = 4, 64, 8, 0.5, 1
		})
	}
	opts := engine.Options{Threads: threads, Streaming: engine.StreamAlways}
	if gb, _ := strconv.ParseFloat(os.Getenv("STRATA_BENCH_CACHE_GB"), 64); gb > 0 {
		opts.ExpertCache = int64(gb * 1e9)
	} else if os.Getenv("STRATA_BENCH_MODEL") == "" {
		opts.ExpertCache = 12 << 20 // about a fifth of the written model's experts
	}
	gen := func(eng *engine.Engine, turn int) engine.Stats {
		prompt := fmt.Sprintf("Conversation %d: tell me about topic number %d, at length.", turn, turn*7+3)
		st, err := eng.Generate(context.Background(), engine.Request{Prompt: prompt,
			Sampling: engine.Sampling{MaxTokens: ntok, Temperature: 0.8, Seed: uint64(turn + 1)}},
			func(engine.Token) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		if st.Experts == nil {
			b.Fatal("experts were not streamed")
		}
		return st
	}
	load := func(o engine.Options) *engine.Engine {
		eng := engine.New(o)
		if err := eng.Load(context.Background(), path); err != nil {
			b.Fatal(err)
		}
		return eng
	}
	for i := 0; i < b.N; i++ {
		eng := load(opts)
		without := gen(eng, 1000)
		eng.Close()

		// The same cache for every load: left to what the process may
		// use, a later load in this process gets a little less than the
		// first (under a 600 MB cgroup limit 74 slots against 77 with the
		// engine returning freed memory at unload, 67 against 78 before),
		// and a smaller cache, not the history, would set the figures.
		same := opts
		same.ExpertCache = without.Experts.CacheBytes
		learn := same
		learn.HistoryDir = b.TempDir()
		eng = load(learn)
		var last engine.Stats
		for t := 0; t < turns; t++ {
			last = gen(eng, t)
		}
		eng.Close() // saves the history
		if files, _ := filepath.Glob(filepath.Join(learn.HistoryDir, "*.usage")); len(files) != 1 {
			b.Fatalf("history files: %v", files)
		}
		eng = load(learn)
		with := gen(eng, 1000)
		// The steady state: the same request again, its cache warmed by
		// the history and by that request itself. (A learning turn's rate
		// is not it: another prompt's tokens hit differently.)
		steady := gen(eng, 1000)
		eng.Close()

		b.Logf("first %d tokens (%d generated) after a restart: hit %.1f %% at %.2f tok/s without history, %.1f %% at %.2f tok/s with; steady state %.1f %% at %.2f tok/s; last learning turn %.1f %% (cache %.2f GB)",
			ntok, with.GeneratedTokens, 100*without.Experts.HitRate, without.TokensPerSecond, 100*with.Experts.HitRate, with.TokensPerSecond,
			100*steady.Experts.HitRate, steady.TokensPerSecond, 100*last.Experts.HitRate, float64(with.Experts.CacheBytes)/1e9)
		b.ReportMetric(with.Experts.HitRate/steady.Experts.HitRate, "with/steady")
		b.ReportMetric(without.Experts.HitRate/steady.Experts.HitRate, "without/steady")
		b.ReportMetric(with.TokensPerSecond/without.TokensPerSecond, "tok/s-with/without")
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
