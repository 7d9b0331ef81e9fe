package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/engine/usage"
)

// TestStaticProfileWarmsTheCache: a profile built by running a corpus
// through a skewed-router model (BuildProfile) names the experts the
// router favours; a fresh install with no history that finds it in its
// profile folder fills the expert cache from it, and its first
// generation hits more than a cold cache. A damaged profile is skipped
// (and left in place), and the load goes on.
func TestStaticProfileWarmsTheCache(t *testing.T) {
	path := writeSynth(t, t.TempDir(), func(c *synth.Config) {
		c.Layers, c.Experts, c.ExpertsUsed, c.RouterSkew = 4, 32, 4, 1.2
	})
	var calls int
	corpus := strings.Repeat("a corpus about the weather, the sea and the mountains. ", 40)
	prof, err := engine.BuildProfile(context.Background(), path, engine.ProfileOptions{
		Options:  engine.Options{Threads: 2, ContextLength: 128},
		Texts:    []string{corpus, "a second, shorter text"},
		Progress: func(done, total int) { calls++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if prof.Layers != 4 || prof.Experts != 32 || prof.Tokens < 100 || calls < 2 {
		t.Fatalf("profile: %d×%d, %g tokens, %d progress calls", prof.Layers, prof.Experts, prof.Tokens, calls)
	}
	var sum float32
	for e := 0; e < 32; e++ {
		sum += prof.Count(0, e)
	}
	if want := float32(4 * prof.Tokens); sum != want { // once per token per chosen expert
		t.Fatalf("layer 0 counts %g selections, want %g", sum, want)
	}
	dir := t.TempDir()
	ppath := engine.ProfilePath(dir, prof.ID)
	if err := prof.Save(ppath); err != nil {
		t.Fatal(err)
	}

	opts := engine.Options{Threads: 2, Streaming: engine.StreamAlways, ExpertCache: 24 * 200 << 10}
	first := func(o engine.Options) float64 {
		eng := engine.New(o)
		defer eng.Close()
		if err := eng.Load(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		return hitRate(t, eng, "after a fresh install", 16)
	}
	cold := first(opts)
	withProfile := opts
	withProfile.ProfileDirs = []string{filepath.Join(dir, "missing"), dir}
	warm := first(withProfile)
	t.Logf("first-generation hit rate: %.3f with the profile, %.3f cold", warm, cold)
	if warm <= cold {
		t.Fatalf("the profile did not warm the cache: %.3f with, %.3f without", warm, cold)
	}
	// Shipped in the binary (Options.Profiles) rather than in a folder:
	// the same warm start.
	data, err := os.ReadFile(ppath)
	if err != nil {
		t.Fatal(err)
	}
	shipped := opts
	shipped.Profiles = fstest.MapFS{filepath.Base(ppath): {Data: data}}
	if got := first(shipped); got <= cold {
		t.Fatalf("the shipped profile did not warm the cache: %.3f with, %.3f without", got, cold)
	}
	// A damaged shipped profile is ignored; the load goes on cold.
	shipped.Profiles = fstest.MapFS{filepath.Base(ppath): {Data: data[:len(data)-9]}}
	if got := first(shipped); got != cold {
		t.Fatalf("a damaged shipped profile changed the first generation: %.3f, cold %.3f", got, cold)
	}
	// With a history too, both are blended: the load still warms.
	withBoth := withProfile
	withBoth.HistoryDir = t.TempDir()
	if both := first(withBoth); both <= cold {
		t.Fatalf("history (empty) + profile: %.3f, cold %.3f", both, cold)
	}

	if err := os.WriteFile(ppath, []byte("STRATAUH damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	first(withProfile)
	if _, err := os.Stat(ppath); err != nil {
		t.Fatalf("a damaged profile was moved: %v", err)
	}
	if _, err := usage.Load(ppath, prof.ID, 4, 32); err == nil {
		t.Fatal("damaged profile parsed")
	}
}
