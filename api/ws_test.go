package api_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-llm/strata/api/client"
	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/runner"
)

func greedy(n int, prompt string) protocol.CompleteParams {
	return protocol.CompleteParams{Prompt: prompt, Options: protocol.Options{MaxTokens: n, Temperature: ptr(float32(0))}}
}

func TestHelloAndStatus(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	hello := c.Hello()
	if hello.Protocol != protocol.Version || hello.Server != "test" {
		t.Errorf("hello %+v", hello)
	}
	if hello.Engine.State != "ready" || hello.Engine.Model == nil || !hello.Engine.Model.Demo {
		t.Errorf("hello engine %+v: want ready with the demo model", hello.Engine)
	}
	if hello.Limits.MaxQueue != 16 || hello.Limits.MaxMessageBytes != 1<<20 {
		t.Errorf("limits %+v", hello.Limits)
	}
	st, err := c.EngineStatus(ctxT(t, 10*time.Second))
	if err != nil || st.State != "ready" {
		t.Fatalf("status %+v %v", st, err)
	}
}

func TestCompleteDeterministicAndCancel(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, 60*time.Second)
	var runs [2]*client.Generation
	for i := range runs {
		deltas := 0
		g, err := c.Complete(ctx, greedy(16, "Once upon a time"), func(protocol.Event) { deltas++ })
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Tokens) != 16 || deltas < 16 {
			t.Fatalf("run %d: %d tokens in %d deltas, want 16", i, len(g.Tokens), deltas)
		}
		if g.Stats.GeneratedTokens != 16 || g.Stats.FinishReason != "length" || g.Stats.PromptTokens == 0 {
			t.Errorf("run %d stats %+v", i, g.Stats)
		}
		runs[i] = g
	}
	if !slices.Equal(runs[0].Tokens, runs[1].Tokens) {
		t.Errorf("temperature 0 gave different tokens:\n%v\n%v", runs[0].Tokens, runs[1].Tokens)
	}

	// Cancel after 3 tokens: the generation stops and says so.
	n := 0
	g, err := c.Complete(ctx, greedy(200, "Once upon a time"), func(ev protocol.Event) {
		n++
		if n == 3 {
			if err := c.Cancel(ctx, ev.ID); err != nil {
				t.Errorf("cancel: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if g.Stats.FinishReason != "cancelled" {
		t.Errorf("finish reason %q, want cancelled", g.Stats.FinishReason)
	}
	// The engine stops within a token of the cancel reaching it (tested
	// exactly in package engine); the demo model decodes a token in well
	// under a millisecond, so a few more are made while the cancel is on
	// the wire.
	if len(g.Tokens) < 3 || len(g.Tokens) >= 100 {
		t.Errorf("%d tokens after cancelling at 3 of 200", len(g.Tokens))
	}
	// The slot is free at once: the next request runs without queueing.
	g, err = c.Complete(ctx, greedy(2, "x"), nil)
	if err != nil || len(g.Positions) != 0 || len(g.Tokens) != 2 {
		t.Errorf("after cancel: %+v %v", g, err)
	}
}

func TestCancelByContext(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := c.Complete(ctx, greedy(300, "hello"), func(ev protocol.Event) { cancel() })
	if err != nil {
		t.Fatal(err)
	}
	if g.Stats.FinishReason != "cancelled" || len(g.Tokens) >= 150 {
		t.Errorf("%d tokens of 300 after cancelling at the first, stats %+v", len(g.Tokens), g.Stats)
	}
}

func TestChat(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	g, err := c.Chat(ctxT(t, 30*time.Second), protocol.ChatParams{
		Messages: []protocol.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi!"}},
		Options:  protocol.Options{MaxTokens: 8, Temperature: ptr(float32(0)), Seed: 3},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.Stats.GeneratedTokens == 0 || g.Stats.GeneratedTokens > 8 || g.Stats.PromptTokens < 5 {
		t.Errorf("chat stats %+v", g.Stats)
	}
}

func TestEngineLoadUnload(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, 30*time.Second)
	st, err := c.EngineUnload(ctx)
	if err != nil || st.State != "stopped" || st.Model != nil {
		t.Fatalf("unload: %+v %v", st, err)
	}
	_, err = c.Complete(ctx, greedy(2, "x"), nil)
	if !client.IsCode(err, protocol.CodeModelNotLoaded) {
		t.Errorf("generate without model: %v, want model_not_loaded", err)
	}
	st, err = c.EngineLoad(ctx, "")
	if err != nil || st.State != "ready" || st.Model == nil || st.Model.Path != demoPath {
		t.Fatalf("load: %+v %v", st, err)
	}
	// No model manager in this server: a named model is not found.
	if _, err := c.EngineLoad(ctx, "qwen3-30b"); !client.IsCode(err, protocol.CodeNotFound) {
		t.Errorf("load unknown: %v", err)
	}
	if _, err := c.ModelsList(ctx); !client.IsCode(err, protocol.CodeNotFound) {
		t.Errorf("models.list without manager: %v", err)
	}
}

func TestSettings(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, 10*time.Second)
	raw, err := c.SettingsGet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Memory struct {
			KeepLoadedMinutes int `json:"keep_loaded_minutes"`
		} `json:"memory"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Memory.KeepLoadedMinutes != 5 {
		t.Fatalf("settings %s: %v", raw, err)
	}
	raw, err = c.SettingsSet(ctx, map[string]any{"memory": map[string]any{"keep_loaded_minutes": 30}})
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &s)
	if s.Memory.KeepLoadedMinutes != 30 || h.settings.Get().Memory.KeepLoadedMinutes != 30 {
		t.Errorf("set did not apply: %s", raw)
	}
	_, err = c.SettingsSet(ctx, map[string]any{"advanced": map[string]any{"threads": 100000}})
	if !client.IsCode(err, protocol.CodeBadRequest) || !strings.Contains(err.Error(), "advanced.threads") {
		t.Errorf("invalid setting: %v, want bad_request naming advanced.threads", err)
	}
	_, err = c.SettingsSet(ctx, map[string]any{"nope": 1})
	if !client.IsCode(err, protocol.CodeBadRequest) {
		t.Errorf("unknown setting: %v", err)
	}
	if h.settings.Get().Advanced.Threads != 0 {
		t.Error("a refused patch changed the settings")
	}
}

func TestStatsSubscription(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, 20*time.Second)
	var mu sync.Mutex
	var got []protocol.Telemetry
	stop, err := c.Subscribe(ctx, 100*time.Millisecond, func(tl protocol.Telemetry) {
		mu.Lock()
		got = append(got, tl)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, greedy(4, "a"), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(350 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(got)
	last := got[n-1]
	mu.Unlock()
	if n < 3 {
		t.Fatalf("%d telemetry events", n)
	}
	if last.Connections != 1 || last.GeneratedTotal < 4 || last.RequestsTotal < 1 || last.State != "ready" {
		t.Errorf("telemetry %+v", last)
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n {
		t.Errorf("events after unsubscribe: %d → %d", n, len(got))
	}
}

// Several operations multiplexed on one connection, all answered by id.
func TestMultiplexing(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, 60*time.Second)
	stop, err := c.Subscribe(ctx, 100*time.Millisecond, func(protocol.Telemetry) {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	gens := make([]*client.Generation, 3)
	for i := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := c.Complete(ctx, greedy(6, "The sky is"), nil)
			gens[i] = g
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = c.EngineStatus(ctx)
			} else {
				_, err = c.SettingsGet(ctx)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	queued := 0
	for _, g := range gens {
		if g == nil || len(g.Tokens) != 6 {
			t.Fatalf("generation %+v", g)
		}
		if !slices.Equal(g.Tokens, gens[0].Tokens) {
			t.Errorf("same greedy request, different tokens: %v vs %v", g.Tokens, gens[0].Tokens)
		}
		if len(g.Positions) > 0 {
			queued++
		}
	}
	if queued == 0 {
		t.Error("three simultaneous generations, none was queued")
	}
}

// A duplicate id while the first is running is refused.
func TestDuplicateID(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, 30*time.Second)
	id, next, stop, err := c.Start(protocol.TypeComplete, greedy(100, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := next(ctx); err != nil { // the first delta: it is running
		t.Fatal(err)
	}
	ev, err := c.Do(ctx, protocol.TypeEngineStatus, nil, nil) // another id works
	if err != nil || ev.Type != protocol.EventResult {
		t.Fatal(ev, err)
	}
	c.Send(protocol.TypeEngineStatus, id, nil)
	for {
		ev, err := next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == protocol.EventError {
			if ev.Code != protocol.CodeBadRequest || !strings.Contains(ev.Message, "already used") {
				t.Errorf("duplicate id: %+v", ev)
			}
			break
		}
		if ev.Type == protocol.EventDone {
			t.Fatal("no error for the duplicate id")
		}
	}
	c.Cancel(ctx, id)
}

// The queue is FIFO, tells positions, is bounded (then busy), and a
// cancelled waiter leaves it at once.
func TestQueue(t *testing.T) {
	h := startWith(t, func(c *runner.Config) { c.MaxQueue = 2 }, nil)
	ctx := ctxT(t, 60*time.Second)
	c := h.dial(t)
	runID, runNext, runStop, err := c.Start(protocol.TypeComplete, greedy(400, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer runStop()
	if ev, err := runNext(ctx); err != nil || ev.Type != protocol.EventDelta {
		t.Fatal(ev, err)
	}
	type waiting struct {
		id   string
		next func(context.Context) (protocol.Event, error)
	}
	var ws []waiting
	for i := 0; i < 2; i++ {
		id, next, stop, err := c.Start(protocol.TypeComplete, greedy(2, "b"))
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		ev, err := next(ctx)
		if err != nil || ev.Type != protocol.EventQueued || ev.Position != i+1 {
			t.Fatalf("waiter %d: %+v %v, want queued at %d", i, ev, err, i+1)
		}
		ws = append(ws, waiting{id, next})
	}
	_, err = c.Complete(ctx, greedy(2, "c"), nil)
	if !client.IsCode(err, protocol.CodeBusy) {
		t.Fatalf("third waiter: %v, want busy", err)
	}
	// Cancel the first waiter: the second moves to position 1.
	if err := c.Cancel(ctx, ws[0].id); err != nil {
		t.Fatal(err)
	}
	if ev, _ := ws[0].next(ctx); ev.Type != protocol.EventDone || ev.Stats.FinishReason != "cancelled" {
		t.Errorf("cancelled waiter: %+v", ev)
	}
	if ev, _ := ws[1].next(ctx); ev.Type != protocol.EventQueued || ev.Position != 1 {
		t.Errorf("second waiter after cancel: %+v, want position 1", ev)
	}
	// Cancel the running one: the waiter runs.
	c.Cancel(ctx, runID)
	for {
		ev, err := ws[1].next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == protocol.EventDone {
			if ev.Stats.GeneratedTokens != 2 || ev.Stats.QueueMS <= 0 {
				t.Errorf("waiter done: %+v", ev.Stats)
			}
			break
		}
	}
}

// Closing a connection frees the slot and the queue places at once.
func TestDisconnectFreesSlot(t *testing.T) {
	h := startWith(t, func(c *runner.Config) { c.MaxQueue = 1 }, nil)
	ctx := ctxT(t, 60*time.Second)
	a := h.dial(t)
	_, next, _, err := a.Start(protocol.TypeComplete, greedy(1000, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := next(ctx); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b := h.dial(t)
	start := time.Now()
	g, err := b.Complete(ctx, greedy(3, "b"), nil)
	if err != nil || len(g.Tokens) != 3 {
		t.Fatal(g, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("waited %v for the slot", time.Since(start))
	}
}

func TestShutdownClosesClientsWithReason(t *testing.T) {
	h := start(t, nil)
	c := h.dial(t)
	ctx := ctxT(t, 30*time.Second)
	done := make(chan error, 1)
	first := make(chan struct{})
	var once sync.Once
	go func() {
		_, err := c.Complete(ctx, greedy(5000, "a"), func(protocol.Event) { once.Do(func() { close(first) }) })
		done <- err
	}()
	<-first
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if !client.IsCode(err, protocol.CodeCancelled) && (err == nil || !strings.Contains(err.Error(), "shutting down")) {
		t.Errorf("in-flight generation ended with %v, want cancelled / shutting down", err)
	}
	<-c.Done()
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "server shutting down") {
		t.Errorf("connection ended with %v, want the reason", err)
	}
}

// A streamed model's done stats carry the expert cache's work, and its
// status says how the weights are held.
func TestDoneStatsReportStreaming(t *testing.T) {
	h := startWith(t, func(rc *runner.Config) {
		rc.Engine = engine.New(engine.Options{Threads: 2, ContextLength: 512, Streaming: engine.StreamAlways,
			ExpertCache: 1, Logger: quietLogger()})
	}, nil)
	c := h.dial(t)
	ctx := ctxT(t, 30*time.Second)
	g, err := c.Complete(ctx, greedy(8, "stream"), nil)
	if err != nil {
		t.Fatal(err)
	}
	x := g.Stats.Experts
	if x == nil || x.Misses == 0 || x.BytesRead == 0 || x.CacheBytes == 0 || x.HitRate < 0 || x.HitRate > 1 || x.AheadUsed > x.ReadAheads {
		t.Fatalf("done stats of a streamed model: %+v", x)
	}
	st, err := c.EngineStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Model == nil || st.Model.Memory != "streaming experts" || st.Model.ExpertCacheBytes == 0 {
		t.Fatalf("status model %+v", st.Model)
	}
}
