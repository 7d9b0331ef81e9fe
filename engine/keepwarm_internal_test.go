package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine/synth"
)

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestKeeperTouchesOnlyWhileTheTurnIsFree(t *testing.T) {
	turn := make(chan struct{}, 1)
	mem := make([]byte, 300<<12)
	k := startKeeper([][]byte{mem[:5], mem}, turn, time.Millisecond)
	if k == nil {
		t.Fatal("no keeper for two regions")
	}
	waitFor(t, "two passes while idle", func() bool { return k.passes.Load() >= 2 })

	turn <- struct{}{} // a request starts
	// A pass running when the turn was taken stops within keepWarmCheck
	// pages and does not count; after that none starts.
	time.Sleep(20 * time.Millisecond)
	held := k.passes.Load()
	time.Sleep(50 * time.Millisecond)
	if n := k.passes.Load(); n != held {
		t.Errorf("%d passes while the turn was held", n-held)
	}
	<-turn // the request ended
	waitFor(t, "a pass after the request", func() bool { return k.passes.Load() > held })

	k.stop()
	n := k.passes.Load()
	time.Sleep(20 * time.Millisecond)
	if k.passes.Load() != n {
		t.Error("passes after stop")
	}
}

func TestKeeperStopsMidPass(t *testing.T) {
	// A pass over this much takes far longer than the test waits: stop
	// must end it between checks, not after it.
	mem := make([]byte, 64<<20)
	k := &keeper{regions: [][]byte{mem, mem, mem, mem, mem, mem, mem, mem}, turn: make(chan struct{}, 1),
		page: 1, stopc: make(chan struct{}), done: make(chan struct{})}
	finished := make(chan bool, 1)
	go func() { finished <- k.pass() }()
	time.Sleep(5 * time.Millisecond)
	close(k.stopc)
	select {
	case ok := <-finished:
		if ok {
			t.Error("the pass reported finishing after stop")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pass did not stop")
	}
}

func TestNoKeeperForNothing(t *testing.T) {
	if k := startKeeper(nil, make(chan struct{}, 1), time.Second); k != nil {
		t.Error("a keeper with no regions")
	}
	var k *keeper
	k.stop() // nil: no-op
	if r := warmRegions(nil, modeMapped, nil); r != nil {
		t.Errorf("a mapped model keeps %d regions warm", len(r))
	}
}

// TestLoadedModelIsKeptWarm: a model read into memory is kept warm over
// the whole file while loaded, and the keeper ends with the model.
func TestLoadedModelIsKeptWarm(t *testing.T) {
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Layers = 1
	path := filepath.Join(t.TempDir(), "m.gguf")
	ctx := context.Background()
	if err := synth.Write(ctx, path, cfg); err != nil {
		t.Fatal(err)
	}
	e := New(Options{Threads: 1, ContextLength: 64})
	defer e.Close()
	if err := e.Load(ctx, path); err != nil {
		t.Fatal(err)
	}
	k := e.lm.keep
	if k == nil {
		t.Fatal("no keeper for a model in memory")
	}
	var n int64
	for _, r := range k.regions {
		n += int64(len(r))
	}
	if n < e.lm.file.Size {
		t.Errorf("keeps %d bytes warm of a %d-byte model in memory", n, e.lm.file.Size)
	}
	if err := e.Unload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.done:
	default:
		t.Error("the keeper still runs after unload")
	}
}
