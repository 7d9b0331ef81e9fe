package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
)

func writeSynth(t testing.TB, dir string, edit func(*synth.Config)) string {
	t.Helper()
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Layers, cfg.Experts, cfg.ExpertsUsed, cfg.WeightScale, cfg.RouterSkew, cfg.Seed = 3, 16, 4, 8, 1, 12
	if edit != nil {
		edit(&cfg)
	}
	path := filepath.Join(dir, "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

func greedy(t testing.TB, opts engine.Options, path string, n int) ([]int32, engine.Stats) {
	t.Helper()
	eng := engine.New(opts)
	defer eng.Close()
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	var ids []int32
	st, err := eng.Generate(context.Background(), engine.Request{Prompt: "Streaming from the disk, one expert at a time",
		Sampling: engine.Sampling{MaxTokens: n}}, func(tk engine.Token) error {
		if tk.ID >= 0 {
			ids = append(ids, tk.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, st
}

// TestStreamingMatchesInMemory: greedy tokens with experts streamed through
// caches from a third of the experts down to one are those of the
// in-memory engine, and the generation reports its cache work.
func TestStreamingMatchesInMemory(t *testing.T) {
	path := writeSynth(t, t.TempDir(), nil)
	want, _ := greedy(t, engine.Options{Threads: 2, Streaming: engine.StreamNever}, path, 48)
	for _, cache := range []int64{16 << 20, 2 << 20, 1} {
		got, st := greedy(t, engine.Options{Threads: 2, Streaming: engine.StreamAlways, ExpertCache: cache}, path, 48)
		if !slices.Equal(got, want) {
			t.Fatalf("cache %d bytes: tokens differ from token %d", cache, firstDiff(got, want))
		}
		x := st.Experts
		if x == nil || x.Misses == 0 || x.BytesRead == 0 || x.CacheBytes == 0 || x.HitRate < 0 || x.HitRate > 1 {
			t.Fatalf("cache %d bytes: expert stats %+v", cache, x)
		}
	}
}

// TestStreamingTruncatedFile: a model file cut short after it was loaded
// fails the request that needs what is gone with a clear error; nothing
// panics, and the engine loads and runs another model afterwards.
func TestStreamingTruncatedFile(t *testing.T) {
	dir := t.TempDir()
	path := writeSynth(t, dir, nil)
	eng := engine.New(engine.Options{Threads: 1, Streaming: engine.StreamAlways, ExpertCache: 1})
	defer eng.Close()
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()*9/10); err != nil {
		t.Fatal(err)
	}
	_, err := eng.Generate(context.Background(), engine.Request{Prompt: "hello", Sampling: engine.Sampling{MaxTokens: 16}},
		func(engine.Token) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "expert") {
		t.Fatalf("generation over a truncated file: %v", err)
	}
	if errors.Is(err, engine.ErrBadRequest) {
		t.Fatalf("a read error is not the request's fault: %v", err)
	}
	other := writeSynth(t, t.TempDir(), func(c *synth.Config) { c.Seed = 99 })
	if err := eng.Load(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Generate(context.Background(), engine.Request{Prompt: "hello", Sampling: engine.Sampling{MaxTokens: 4}},
		func(engine.Token) error { return nil }); err != nil {
		t.Fatalf("after the failure: %v", err)
	}
}

const cgroupChildEnv = "STRATA_TEST_CGROUP_CHILD"

// TestStreamingUnderCgroupLimit: under a cgroup v1 memory limit of 100 MB
// (which charges page cache too), a 200 MB model streams with the budget
// the engine measures itself: the child is never OOM-killed and the
// cgroup's peak stays under the limit. Needs root and cgroup v1's memory
// controller (CI has both); it fails under CI=true without them.
func TestStreamingUnderCgroupLimit(t *testing.T) {
	if path := os.Getenv(cgroupChildEnv); path != "" {
		cgroupChild(t, path)
		return
	}
	root := "/sys/fs/cgroup/memory"
	if os.Geteuid() != 0 || !dirExists(root) {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root and the cgroup v1 memory controller, which CI has")
		}
		t.Skip("needs root and cgroup v1 (/sys/fs/cgroup/memory)")
	}
	path := writeSynth(t, t.TempDir(), func(c *synth.Config) {
		c.Layers, c.Embd, c.Experts, c.ExpertsUsed, c.FFExpert, c.Vocab = 4, 512, 64, 4, 512, 2048
	})
	st, _ := os.Stat(path)
	const limit = 100 << 20
	if st.Size() < 2*limit-40<<20 {
		t.Fatalf("model of %d bytes is not far over the limit", st.Size())
	}
	cg := filepath.Join(root, fmt.Sprintf("strata-test-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(cg)
	for file, v := range map[string]string{"memory.limit_in_bytes": strconv.Itoa(limit), "memory.swappiness": "0"} {
		if err := os.WriteFile(filepath.Join(cg, file), []byte(v), 0o644); err != nil && file != "memory.swappiness" {
			t.Fatal(err)
		}
	}
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestStreamingUnderCgroupLimit$", "-test.v")
	cmd.Env = append(os.Environ(), cgroupChildEnv+"="+path, "STRATA_TEST_CGROUP="+cg)
	out, err := cmd.CombinedOutput()
	peak, _ := os.ReadFile(filepath.Join(cg, "memory.max_usage_in_bytes"))
	failcnt, _ := os.ReadFile(filepath.Join(cg, "memory.failcnt"))
	oom, _ := os.ReadFile(filepath.Join(cg, "memory.oom_control"))
	t.Logf("cgroup peak %s bytes, failcnt %s, oom_control %q", strings.TrimSpace(string(peak)), strings.TrimSpace(string(failcnt)), oom)
	if err != nil {
		t.Fatalf("child under a %d MB limit: %v\n%s", limit>>20, err, out)
	}
	if !strings.Contains(string(out), "streamed ok") {
		t.Fatalf("child output:\n%s", out)
	}
	if p, _ := strconv.ParseInt(strings.TrimSpace(string(peak)), 10, 64); p > limit {
		t.Fatalf("peak %d over the limit", p)
	}
	if strings.Contains(string(oom), "oom_kill 1") {
		t.Fatal("the OOM killer ran")
	}
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// cgroupChild moves itself into the test's cgroup, then loads and runs the
// model with the engine's own memory plan.
func cgroupChild(t *testing.T, path string) {
	cg := os.Getenv("STRATA_TEST_CGROUP")
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Threads: 2})
	defer eng.Close()
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	if s := eng.Status(); s.Model == nil || s.Model.Memory != "streaming experts" {
		t.Fatalf("the engine did not choose to stream: %+v", s.Model)
	}
	st, err := eng.Generate(context.Background(), engine.Request{Prompt: "under a memory limit", Sampling: engine.Sampling{MaxTokens: 24}},
		func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("streamed ok: %d tokens, cache %d bytes, hit rate %.2f, %d bytes read\n",
		st.GeneratedTokens, st.Experts.CacheBytes, st.Experts.HitRate, st.Experts.BytesRead)
}
