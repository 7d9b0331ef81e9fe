package synth_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/internal/oracle"
)

// TestOracleLoads writes every architecture in every weight type and checks
// that llama.cpp loads each file and gives finite next-token probabilities.
// All models run in one oracle process.
func TestOracleLoads(t *testing.T) {
	o := oracle.Require(t)
	o.Threads = 2
	dir := t.TempDir()

	type model struct {
		arch string
		typ  ggml.Type
		path string
		mod  func(*synth.Config)
	}
	var models []model
	for _, arch := range synth.Archs {
		for _, typ := range synth.Types {
			models = append(models, model{arch, typ, filepath.Join(dir, fmt.Sprintf("%s-%s.gguf", arch, typ)), nil})
		}
	}
	// Extras: the weight scale sets how peaked the distributions are, and
	// qwen3next with an MTP block loads too.
	matrix := len(models)
	extra := func(name string, mod func(*synth.Config)) {
		models = append(models, model{synth.ArchQwen3MoE, ggml.Q8_0, filepath.Join(dir, name+".gguf"), mod})
	}
	extra("flat", func(c *synth.Config) { c.WeightScale = 0.1 })
	extra("peaked", func(c *synth.Config) { c.WeightScale = 24 })
	models = append(models, model{synth.ArchQwen3Next, ggml.Q4_K, filepath.Join(dir, "mtp.gguf"), func(c *synth.Config) { c.MTP = 1 }})
	for _, arch := range synth.Archs {
		models = append(models, model{arch, ggml.Q4_K, filepath.Join(dir, arch+"-Q4_K_M.gguf"), func(c *synth.Config) { c.Mix = "Q4_K_M" }})
	}
	errs := make([]error, len(models))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, m := range models {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cfg := synth.Defaults(m.arch)
			cfg.Type = m.typ
			cfg.Vocab = 512
			cfg.Experts = 4
			cfg.CtxLen = 512
			cfg.Seed = uint64(i)
			if m.mod != nil {
				m.mod(&cfg)
			}
			errs[i] = synth.Write(context.Background(), m.path, cfg)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s %s: %v", models[i].arch, models[i].typ, err)
		}
	}

	tokens := []int32{1, 100, 200, 300, 509, 511, 7, 42, 250, 260}
	jobs := make([]oracle.Job, len(models))
	for i, m := range models {
		jobs[i] = oracle.Job{Model: m.path, Ops: []oracle.Op{oracle.Eval{Tokens: tokens, TopK: 4}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := o.RunJobs(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("llama.cpp loaded and evaluated %d models in %v", len(models), time.Since(start).Round(time.Millisecond))

	for i, m := range models[matrix:] {
		r := res[matrix+i]
		if r.Err != nil {
			t.Errorf("%s: %v", m.path, r.Err)
			continue
		}
		if msg := checkProbs(r.Results[0], len(tokens), 512); msg != "" {
			t.Errorf("%s: %s", m.path, msg)
		}
	}
	if t.Failed() {
		return
	}
	// Peaked: most positions have a decisive top token (a near tie of the
	// two best logits can still happen at some position).
	top1 := func(r oracle.JobResult) (mean, decisive float64) {
		for _, pos := range r.Results[0].Probs {
			mean += pos[0].P
			if pos[0].P > 0.9 {
				decisive++
			}
		}
		n := float64(len(r.Results[0].Probs))
		return mean / n, decisive / n
	}
	flat, _ := top1(res[matrix])
	peaked, decisive := top1(res[matrix+1])
	t.Logf("mean top-1 probability: %.3f at weight scale 0.1; %.3f at 24, where %.0f%% of positions have top-1 > 0.9", flat, peaked, 100*decisive)
	if flat > 0.2 || decisive < 0.8 {
		t.Errorf("weight scale: mean top-1 %.3f at scale 0.1 (want < 0.2); %.0f%% decisive positions at 24 (want ≥ 80%%)", flat, 100*decisive)
	}

	status := map[string]string{}
	for i, m := range models[:matrix] {
		r := res[i]
		key := m.arch + "/" + m.typ.String()
		if r.Err != nil {
			status[key] = "FAIL"
			t.Errorf("%s %s: %v", m.arch, m.typ, r.Err)
			continue
		}
		if msg := checkProbs(r.Results[0], len(tokens), 512); msg != "" {
			status[key] = "BAD"
			t.Errorf("%s %s: %s", m.arch, m.typ, msg)
			continue
		}
		status[key] = fmt.Sprintf("ok %.2f", r.Results[0].Probs[len(tokens)-1][0].P)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "llama.cpp load + eval (top-1 probability at the last position):\n%-10s", "")
	for _, typ := range synth.Types {
		fmt.Fprintf(&b, " %-8s", typ)
	}
	for _, arch := range synth.Archs {
		fmt.Fprintf(&b, "\n%-10s", arch)
		for _, typ := range synth.Types {
			fmt.Fprintf(&b, " %-8s", status[arch+"/"+typ.String()])
		}
	}
	t.Log(b.String())
}

func checkProbs(r oracle.Result, positions, vocab int) string {
	if r.Vocab != vocab {
		return fmt.Sprintf("vocabulary %d, want %d", r.Vocab, vocab)
	}
	if len(r.Probs) != positions {
		return fmt.Sprintf("%d positions, want %d", len(r.Probs), positions)
	}
	for i, pos := range r.Probs {
		sum := 0.0
		for _, p := range pos {
			if math.IsNaN(p.P) || math.IsInf(p.P, 0) || p.P < 0 {
				return fmt.Sprintf("position %d: probability %v", i, p.P)
			}
			sum += p.P
		}
		if !(pos[0].P > 0) || sum > 1+1e-4 {
			return fmt.Sprintf("position %d: top %v, top-K sum %v", i, pos[0].P, sum)
		}
	}
	return ""
}
