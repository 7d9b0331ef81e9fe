package engine

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/speculation"
	"github.com/strata-llm/strata/engine/speculation/gate"
	"github.com/strata-llm/strata/engine/synth"
)

// callLog wraps a session, logging Prefetch and Forward calls (and passing
// Prefetch on to a session that has it).
type callLog struct {
	model.Session
	calls []call
}

type call struct {
	prefetch bool
	toks     []int32
}

func (c *callLog) Prefetch(toks []int32) {
	c.calls = append(c.calls, call{true, slices.Clone(toks)})
	if p, ok := c.Session.(model.Prefetcher); ok {
		p.Prefetch(toks)
	}
}

func (c *callLog) Forward(ctx context.Context, b *model.Batch) error {
	c.calls = append(c.calls, call{false, slices.Clone(b.Tokens)})
	return c.Session.Forward(ctx, b)
}

// repeatDrafter proposes the last token of the context again, up to max
// times: right now and then on a peaked model that repeats itself.
type repeatDrafter struct{}

func (repeatDrafter) Source() gate.Source {
	return gate.Source{Name: "repeat", Priors: []float64{0.5}}
}

func (repeatDrafter) Draft(_ context.Context, ctx []int32, max int, d *speculation.Draft) error {
	for range max {
		d.Add(ctx[len(ctx)-1], math.NaN())
	}
	return nil
}

// TestSpeculationPrefetchesVerify: with speculation on, every step tells
// the session the token it will forward before drafting, and the whole
// verify batch (that token and the drafts kept) once the drafter has
// returned, before the verify forward; on a streamed qwen4exp (the PLE
// table's rows then read early) the tokens are plain decoding's.
func TestSpeculationPrefetchesVerify(t *testing.T) {
	cfg := synth.Defaults(synth.ArchQwen4Exp)
	cfg.Seed, cfg.WeightScale = 12, 8
	path := filepath.Join(t.TempDir(), "m.gguf")
	ctx := context.Background()
	if err := synth.Write(ctx, path, cfg); err != nil {
		t.Fatal(err)
	}
	o := Options{Threads: 2, ContextLength: 256, Streaming: StreamAlways, ExpertCache: 1 << 20}
	prompt := []int32{11, 12, 13, 14, 15, 16}
	req := Request{Tokens: prompt, Sampling: Sampling{MaxTokens: 32}}
	gen := func(o Options, wrap bool) ([]int32, *callLog) {
		e := New(o)
		defer e.Close()
		if err := e.Load(ctx, path); err != nil {
			t.Fatal(err)
		}
		var log *callLog
		if wrap {
			log = &callLog{Session: e.lm.sess}
			e.lm.sess = log
		}
		var out []int32
		if _, err := e.Generate(ctx, req, func(tk Token) error {
			if tk.ID >= 0 {
				out = append(out, tk.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out, log
	}
	want, _ := gen(o, false)
	o.Speculation = Speculation{Enabled: true, MaxDraft: 3, Drafter: repeatDrafter{}}
	got, log := gen(o, true)
	if !slices.Equal(got, want) {
		t.Fatalf("speculation with prefetches: tokens %v, plain %v", got, want)
	}
	// After the prompt's forward (no prefetch), every forward is a step:
	// prefetch [id] before drafting, prefetch [id drafts…] (when drafts
	// are kept), forward [id drafts…].
	first := slices.IndexFunc(log.calls, func(c call) bool { return c.prefetch })
	if first < 1 {
		t.Fatalf("calls %v", log.calls)
	}
	verifies := 0
	for i := first; i < len(log.calls); i++ {
		c := log.calls[i]
		if c.prefetch {
			continue
		}
		prev := log.calls[i-1]
		if !prev.prefetch || !slices.Equal(prev.toks, c.toks) {
			t.Fatalf("call %d: forward %v follows %v, not the prefetch of its tokens", i, c.toks, prev)
		}
		if len(c.toks) > 1 {
			verifies++
			if pp := log.calls[i-2]; !pp.prefetch || !slices.Equal(pp.toks, c.toks[:1]) {
				t.Fatalf("call %d: verify %v: before drafting %v, not the prefetch of its first token", i, c.toks, pp)
			}
		}
	}
	if verifies == 0 {
		t.Fatalf("no verify forwards: %v", log.calls)
	}
	t.Logf("%d calls, %d verify forwards", len(log.calls), verifies)
}
