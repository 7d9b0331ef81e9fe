package engine_test

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/internal/testfix"
)

// Supports says yes exactly for the architectures Load opens: a small
// model of every architecture synth writes loads iff Supports says so.
func TestSupportsMatchesLoad(t *testing.T) {
	if len(engine.SupportedArchs()) == 0 {
		t.Fatal("no supported architectures")
	}
	for _, arch := range synth.Archs {
		t.Run(arch, func(t *testing.T) {
			cfg := synth.Defaults(arch)
			cfg.Layers, cfg.Vocab = 1, 512
			path := filepath.Join(t.TempDir(), arch+".gguf")
			if err := synth.Write(context.Background(), path, cfg); err != nil {
				t.Fatal(err)
			}
			eng := engine.New(engine.Options{Threads: 1, ContextLength: 64})
			defer eng.Close()
			err := eng.Load(context.Background(), path)
			if got := engine.Supports(arch); got != (err == nil) {
				t.Errorf("Supports(%q) = %v, but Load: %v", arch, got, err)
			}
			if err != nil && !strings.Contains(err.Error(), "not supported yet") {
				t.Errorf("load error %q does not say the architecture is unsupported", err)
			}
		})
	}
	if engine.Supports("") || engine.Supports("llama") {
		t.Error("Supports accepts an architecture the engine does not have")
	}
}

// A split model (three parts written by gguf.WriteSplit) loads as one model
// and gives bit-identical next-token distributions to the unsplit file, at
// every position; Status reports the bytes of all parts.
func TestSplitModelMatchesUnsplit(t *testing.T) {
	for _, name := range []string{testfix.Qwen3MoEQ8_0, testfix.Qwen3MoEQ4_K_M} {
		t.Run(name, func(t *testing.T) {
			src := testfix.Path(t, name)
			f, err := gguf.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			parts, err := gguf.WriteSplit(context.Background(), f, filepath.Join(t.TempDir(), "tiny"), gguf.SplitOptions{MaxTensors: 20})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != 3 {
				t.Fatalf("%d parts", len(parts))
			}
			tokens := []int32{1, 17, 300, 5, 900, 42, 7, 1000, 64, 3}
			eval := func(path string, mode engine.Streaming) ([][]engine.TokenProb, engine.Status) {
				eng := engine.New(engine.Options{Threads: 2, ContextLength: 64, Streaming: mode, ExpertCache: 1 << 20})
				defer eng.Close()
				if err := eng.Load(context.Background(), path); err != nil {
					t.Fatal(err)
				}
				probs, err := eng.Eval(context.Background(), tokens, 0)
				if err != nil {
					t.Fatal(err)
				}
				return probs, eng.Status()
			}
			want, st1 := eval(src, engine.StreamNever)
			// In memory, and with the experts streamed from the parts'
			// files through a small cache.
			for _, mode := range []engine.Streaming{engine.StreamNever, engine.StreamAlways} {
				got, st2 := eval(parts[0], mode)
				if st2.Model.FileBytes <= st1.Model.FileBytes || st2.Model.Layers != st1.Model.Layers {
					t.Errorf("split model info %+v, unsplit %+v", st2.Model, st1.Model)
				}
				for i := range want {
					if !slices.Equal(got[i], want[i]) {
						t.Fatalf("streaming %v: position %d: the split model's distribution differs", mode, i)
					}
				}
			}
		})
	}
}

// Unload gives the model's memory back to the system at once, so a model
// loaded next in the same process (after a keep-alive expiry, say) sees
// it as usable and sizes its expert cache the same: the Go heap the
// session held (its KV cache, buffers) is returned, not kept as free heap
// until the runtime's scavenger gets to it.
func TestUnloadReturnsTheHeap(t *testing.T) {
	path := writeSynth(t, t.TempDir(), nil)
	held := func() int64 { // heap memory taken from the system and not returned
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapSys - ms.HeapReleased)
	}
	debug.FreeOSMemory()
	before := held()
	eng := engine.New(engine.Options{Threads: 1, ContextLength: 16384, Streaming: engine.StreamAlways})
	defer eng.Close()
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Generate(context.Background(), engine.Request{Prompt: "Give the memory back",
		Sampling: engine.Sampling{MaxTokens: 4}}, func(engine.Token) error { return nil }); err != nil {
		t.Fatal(err)
	}
	loaded := held()
	if err := eng.Unload(); err != nil {
		t.Fatal(err)
	}
	after := held()
	t.Logf("heap held: %.1f MB before the load, %.1f MB loaded, %.1f MB after the unload", float64(before)/1e6, float64(loaded)/1e6, float64(after)/1e6)
	if loaded-before < 8<<20 {
		t.Fatalf("the loaded model holds only %d bytes of heap: the test measures nothing", loaded-before)
	}
	if after-before > (loaded-before)/4 {
		t.Errorf("after the unload the process still holds %d of the %d bytes of heap the model took", after-before, loaded-before)
	}
}
