package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine"
)

func demoEngine(t *testing.T, opts engine.Options) *engine.Engine {
	t.Helper()
	path, err := engine.EnsureDemoModel(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(opts)
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

func generate(t *testing.T, eng *engine.Engine, req engine.Request) ([]int32, string, engine.Stats) {
	t.Helper()
	var ids []int32
	var text strings.Builder
	st, err := eng.Generate(context.Background(), req, func(tk engine.Token) error {
		if tk.ID >= 0 {
			ids = append(ids, tk.ID)
		}
		text.WriteString(tk.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, text.String(), st
}

func TestGenerateReusesPromptPrefix(t *testing.T) {
	eng := demoEngine(t, engine.Options{Threads: 2, ContextLength: 128})
	req := engine.Request{Prompt: "The quick brown fox", Sampling: engine.Sampling{MaxTokens: 12}}
	a, textA, st := generate(t, eng, req)
	if st.GeneratedTokens == 0 || st.PromptTokens == 0 || st.FinishReason == "" {
		t.Fatalf("stats %+v", st)
	}
	// The second run starts from the cached prefix; the result must not
	// depend on it.
	b, textB, _ := generate(t, eng, req)
	if len(a) != len(b) || textA != textB {
		t.Fatalf("second run differs: %v %q vs %v %q", a, textA, b, textB)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("token %d: %d vs %d", i, a[i], b[i])
		}
	}
	// A longer prompt sharing the prefix, then the original again.
	generate(t, eng, engine.Request{Prompt: "The quick brown fox jumps over", Sampling: engine.Sampling{MaxTokens: 3}})
	c, _, _ := generate(t, eng, req)
	if len(c) != len(a) || c[0] != a[0] || c[len(c)-1] != a[len(a)-1] {
		t.Fatalf("after another prompt: %v, want %v", c, a)
	}
	// Seeded sampling is reproducible.
	samp := engine.Request{Prompt: "Hello", Sampling: engine.Sampling{MaxTokens: 10, Temperature: 1, TopK: 50, Seed: 42}}
	s1, _, _ := generate(t, eng, samp)
	s2, _, _ := generate(t, eng, samp)
	if len(s1) != len(s2) {
		t.Fatalf("seeded runs differ: %v vs %v", s1, s2)
	}
	for i := range s1 {
		if s1[i] != s2[i] {
			t.Fatalf("seeded runs differ: %v vs %v", s1, s2)
		}
	}
}

func TestStopStringsAreNotEmitted(t *testing.T) {
	eng := demoEngine(t, engine.Options{Threads: 1, ContextLength: 128})
	_, full, _ := generate(t, eng, engine.Request{Prompt: "abc", Sampling: engine.Sampling{MaxTokens: 24}})
	if len(full) < 6 {
		t.Skipf("demo output too short to pick a stop string: %q", full)
	}
	stop := full[3:6]
	_, got, st := generate(t, eng, engine.Request{Prompt: "abc", Sampling: engine.Sampling{MaxTokens: 24, Stop: []string{stop}}})
	want := full[:strings.Index(full, stop)]
	if got != want || st.FinishReason != engine.FinishStop {
		t.Fatalf("with stop %q: %q (%s), want %q (stop)", stop, got, st.FinishReason, want)
	}
}

func TestGenerateCancelAndErrors(t *testing.T) {
	eng := demoEngine(t, engine.Options{Threads: 1, ContextLength: 64})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	st, err := eng.Generate(ctx, engine.Request{Prompt: "x", Sampling: engine.Sampling{MaxTokens: 50}}, func(engine.Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || st.FinishReason != engine.FinishCancelled || st.GeneratedTokens != 3 {
		t.Fatalf("cancelled run: %v, %+v", err, st)
	}
	for _, req := range []engine.Request{
		{},
		{Prompt: "a", Tokens: []int32{1}},
		{Tokens: []int32{1 << 30}},
		{Tokens: make([]int32, 64)}, // does not fit the context
	} {
		if _, err := eng.Generate(context.Background(), req, func(engine.Token) error { return nil }); err == nil {
			t.Errorf("request %+v accepted", req)
		}
	}
	// An error from the caller stops the generation and is returned.
	boom := errors.New("client gone")
	if _, err := eng.Generate(context.Background(), engine.Request{Prompt: "x"}, func(engine.Token) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("emit error: %v", err)
	}
	// Max tokens ends with "length".
	_, _, st = generate(t, eng, engine.Request{Prompt: "x", Sampling: engine.Sampling{MaxTokens: 2}})
	if st.FinishReason != engine.FinishLength && st.FinishReason != engine.FinishStop {
		t.Fatalf("finish %q", st.FinishReason)
	}
}

func TestLoadOptionsStatusAndUnload(t *testing.T) {
	path, err := engine.EnsureDemoModel(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Threads: 1})
	defer eng.Close()
	if _, err := eng.Generate(context.Background(), engine.Request{Prompt: "x"}, nil); !errors.Is(err, engine.ErrNoModel) {
		t.Fatalf("generate with no model: %v", err)
	}
	ch, stop := eng.Subscribe()
	defer stop()
	if s := <-ch; s.State != engine.StateStopped {
		t.Fatalf("first status %s", s.State)
	}
	eng.SetOptions(engine.Options{Threads: 2, ContextLength: 100})
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	st := eng.Status()
	if st.State != engine.StateReady || st.Model == nil || !st.Model.Demo {
		t.Fatalf("status after load: %+v", st)
	}
	// The demo is small enough to be read into memory; its KV cache adds more.
	if st.MemoryBytes <= st.Model.FileBytes {
		t.Fatalf("memory in use %d, file %d bytes", st.MemoryBytes, st.Model.FileBytes)
	}
	deadline := time.After(5 * time.Second)
	for seen := false; !seen; {
		select {
		case s := <-ch:
			seen = s.State == engine.StateReady
		case <-deadline:
			t.Fatal("no ready status from Subscribe")
		}
	}
	// The context of 100 positions holds 99 prompt tokens but not 100.
	if _, err := eng.Generate(context.Background(), engine.Request{Tokens: make([]int32, 100)}, func(engine.Token) error { return nil }); err == nil {
		t.Fatal("a 100-token prompt fit a context of 100")
	}
	probs, err := eng.Eval(context.Background(), []int32{1, 2, 3}, 5)
	if err != nil || len(probs) != 3 || len(probs[0]) != 5 || probs[0][0].P < probs[0][4].P {
		t.Fatalf("eval: %v %v", probs, err)
	}
	if err := eng.Unload(); err != nil || eng.Status().State != engine.StateStopped {
		t.Fatalf("unload: %v %s", err, eng.Status().State)
	}
	if err := eng.Load(context.Background(), path+".missing"); err == nil || eng.Status().State != engine.StateError {
		t.Fatalf("loading a missing file: %v, state %s", err, eng.Status().State)
	}
}
