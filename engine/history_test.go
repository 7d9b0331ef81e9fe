package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/engine/usage"
)

func hitRate(t *testing.T, eng *engine.Engine, prompt string, n int) float64 {
	t.Helper()
	st, err := eng.Generate(context.Background(), engine.Request{Prompt: prompt, Sampling: engine.Sampling{MaxTokens: n, Temperature: 0.7, Seed: 5}},
		func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return st.Experts.HitRate
}

// TestUsageHistoryWarmsTheCache: after a restart, a streamed model whose
// usage history was kept starts with a warm cache (a higher hit rate over
// its first tokens than without the history); a damaged history file is
// set aside and the model loads with an empty one.
func TestUsageHistoryWarmsTheCache(t *testing.T) {
	path := writeSynth(t, t.TempDir(), func(c *synth.Config) {
		c.Layers, c.Experts, c.ExpertsUsed, c.RouterSkew = 4, 32, 4, 1.2
	})
	dir := t.TempDir()
	opts := engine.Options{Threads: 2, Streaming: engine.StreamAlways, ExpertCache: 40 * 200 << 10, HistoryDir: dir}
	load := func(o engine.Options) *engine.Engine {
		eng := engine.New(o)
		if err := eng.Load(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		return eng
	}
	eng := load(opts)
	for i := 0; i < 3; i++ {
		hitRate(t, eng, "a first conversation about the weather", 48)
	}
	steady := hitRate(t, eng, "and another one", 48)
	eng.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.usage"))
	if len(files) != 1 {
		t.Fatalf("history files: %v", files)
	}

	cold := opts
	cold.HistoryDir = ""
	eng = load(cold)
	without := hitRate(t, eng, "after a restart", 48)
	eng.Close()
	eng = load(opts)
	with := hitRate(t, eng, "after a restart", 48)
	eng.Close()
	t.Logf("first-generation hit rate after a restart: %.3f with history, %.3f without; steady state %.3f", with, without, steady)
	if with <= without {
		t.Fatalf("the history did not warm the cache: %.3f with, %.3f without", with, without)
	}

	// A damaged file is set aside; the load goes on with an empty history.
	if err := os.WriteFile(files[0], []byte("STRATAUH garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	eng = load(opts)
	hitRate(t, eng, "hello", 4)
	eng.Close()
	aside, _ := filepath.Glob(files[0] + ".bad-*")
	if len(aside) != 1 {
		t.Fatalf("damaged history not set aside: %v", aside)
	}
	if err := engine.New(opts).ForgetHistory(dir, false); !errors.Is(err, engine.ErrNoModel) {
		t.Fatalf("forget the loaded model's history with none loaded: %v", err)
	}
	if err := engine.New(opts).ForgetHistory(dir, true); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.usage")); len(left) != 0 {
		t.Fatalf("forget left %v", left)
	}
}

// TestForgetLoadedModelHistory: forgetting the loaded model's history
// deletes its file and its counts (the next save writes an empty one) and
// leaves other models' histories.
func TestForgetLoadedModelHistory(t *testing.T) {
	path := writeSynth(t, t.TempDir(), func(c *synth.Config) {
		c.Layers, c.Experts, c.ExpertsUsed, c.RouterSkew = 2, 16, 2, 1.2
	})
	dir := t.TempDir()
	other := filepath.Join(dir, "0123456789abcdef01234567.usage")
	if err := os.WriteFile(other, []byte("another model's"), 0o600); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Threads: 2, Streaming: engine.StreamAlways, ExpertCache: 8 * 200 << 10, HistoryDir: dir})
	defer eng.Close()
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	hitRate(t, eng, "learn something", 8)
	files, _ := filepath.Glob(filepath.Join(dir, "*.usage"))
	if len(files) != 2 {
		t.Fatalf("histories: %v", files)
	}
	if err := eng.ForgetHistory(dir, false); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.usage"))
	if len(left) != 1 || left[0] != other {
		t.Fatalf("after forgetting the loaded model's: %v", left)
	}
	if err := eng.Unload(); err != nil { // saves the (now empty) history
		t.Fatal(err)
	}
	gf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := usage.IdentityOf(path, gf.DataOffset)
	gf.Close()
	if err != nil {
		t.Fatal(err)
	}
	h, err := usage.Load(engine.ProfilePath(dir, id), id, 2, 16)
	if err != nil {
		t.Fatal(err)
	}
	if h.Tokens != 0 || len(h.Hottest()) != 0 {
		t.Fatalf("the forgotten counts came back: %g tokens, %d experts", h.Tokens, len(h.Hottest()))
	}
}
