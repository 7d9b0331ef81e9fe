package engine_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/routing"
	"github.com/strata-llm/strata/engine/sample"
	"github.com/strata-llm/strata/engine/speculation"
	"github.com/strata-llm/strata/engine/speculation/gate"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/engine/tokenizer"
)

// replay is a drafter for tests and benchmarks: it proposes the tokens a
// plain run generated (ref, after a prompt of promptLen tokens), each
// corrupted with probability 1−a, with no probability of its own (NaN).
// Whether the token at a position is corrupted, and into what, is a
// function of Seed and the position alone, so drafters with one seed
// propose the same tokens at the same positions however deep they draft
// (a benchmark's configurations then meet the same corruptions).
type replay struct {
	ref       []int32
	promptLen int
	a         float64
	vocab     int
	Seed      uint64
}

func newReplay(ref []int32, promptLen int, a float64, vocab int, seed uint64) *replay {
	return &replay{ref: ref, promptLen: promptLen, a: a, vocab: vocab, Seed: seed}
}

func (r *replay) Source() gate.Source { return gate.Source{Name: "replay", Priors: []float64{0.5}} }

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func (r *replay) Draft(_ context.Context, ctx []int32, max int, d *speculation.Draft) error {
	pos := len(ctx) - r.promptLen // index in ref of the first token to draft
	for j := 0; j < max && pos+j < len(r.ref) && pos+j >= 0; j++ {
		tok := r.ref[pos+j]
		h := mix(r.Seed<<32 ^ uint64(pos+j))
		if float64(h>>11)/(1<<53) >= r.a {
			tok = int32((int(tok) + 1 + int(mix(h)%uint64(r.vocab-1))) % r.vocab)
		}
		d.Add(tok, math.NaN())
	}
	return nil
}

// peakedModel writes a small peaked qwen3moe whose greedy text falls into
// repetition (prompt lookup finds it).
func peakedModel(t testing.TB, edit func(*synth.Config)) string {
	t.Helper()
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Layers, cfg.WeightScale, cfg.Experts, cfg.ExpertsUsed, cfg.Seed = 2, 8, 16, 4, 21
	if edit != nil {
		edit(&cfg)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t testing.TB, opts engine.Options, path string, req engine.Request) ([]int32, engine.Stats) {
	t.Helper()
	eng := engine.New(opts)
	defer eng.Close()
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	return runOn(t, eng, req)
}

func runOn(t testing.TB, eng *engine.Engine, req engine.Request) ([]int32, engine.Stats) {
	t.Helper()
	var ids []int32
	st, err := eng.Generate(context.Background(), req, func(tk engine.Token) error {
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

// TestSpeculativeGreedyIsExact: with speculation on (prompt lookup, a
// replay drafter with wrong drafts, fixed depths and the gate), greedy
// decoding gives exactly plain decoding's tokens, in memory and with
// experts streamed through a small cache, and drafts are both accepted
// and rejected along the way.
func TestSpeculativeGreedyIsExact(t *testing.T) {
	path := peakedModel(t, nil)
	prompt := []int32{11, 12, 13, 14, 11, 12, 13, 15, 16, 11, 12}
	req := engine.Request{Tokens: prompt, Sampling: engine.Sampling{MaxTokens: 96}}
	for _, mem := range []struct {
		name string
		o    engine.Options
	}{
		{"in memory", engine.Options{Threads: 2, ContextLength: 512, Streaming: engine.StreamNever}},
		{"streaming", engine.Options{Threads: 2, ContextLength: 512, Streaming: engine.StreamAlways, ExpertCache: 1 << 20}},
	} {
		want, plain := run(t, mem.o, path, req)
		if plain.Speculation != nil || len(want) < 64 {
			t.Fatalf("%s: plain run: %d tokens, speculation %+v", mem.name, len(want), plain.Speculation)
		}
		for _, sc := range []struct {
			name   string
			spec   engine.Speculation
			replay float64 // 0: no replay drafter
		}{
			{"lookup depth 1", engine.Speculation{Enabled: true, MaxDraft: 1, Lookup: true}, 0},
			{"lookup depth 5", engine.Speculation{Enabled: true, MaxDraft: 5, Lookup: true}, 0},
			{"lookup gate", engine.Speculation{Enabled: true, Gate: true, MaxDraft: 8, Lookup: true}, 0},
			{"replay 0.6 depth 3", engine.Speculation{Enabled: true, MaxDraft: 3}, 0.6},
			{"replay 0.6 depth 15", engine.Speculation{Enabled: true, MaxDraft: 15}, 0.6},
			{"replay 0.9 gate + lookup", engine.Speculation{Enabled: true, Gate: true, MaxDraft: 8, Lookup: true}, 0.9},
		} {
			o := mem.o
			o.Speculation = sc.spec
			if sc.replay > 0 {
				o.Speculation.Drafter = newReplay(want, len(prompt), sc.replay, 1024, 3)
			}
			got, st := run(t, o, path, req)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %s: tokens differ from plain decoding at %d", mem.name, sc.name, firstDiff(got, want))
			}
			s := st.Speculation
			// The gate may find lookup's drafts not worth their rows where
			// experts stream (here each row waits for its own experts
			// about as long as a plain step computes: depth 5's 6-row
			// verifies cost ~5.9 plain steps): it then probes, seldom,
			// and with the replay drafter it drafts.
			declined := sc.spec.Gate && sc.replay == 0 && mem.name == "streaming" && s != nil && s.Declined > 0
			if s == nil || (s.Accepted == 0 && !declined) || s.Verifies == 0 || s.Accepted > s.Verified || s.Proposed != s.Verified+s.Declined {
				t.Fatalf("%s, %s: stats %+v", mem.name, sc.name, s)
			}
			if sc.replay > 0 && sc.replay < 0.9 && s.Accepted == s.Verified {
				t.Fatalf("%s, %s: no draft was rejected: %+v", mem.name, sc.name, s)
			}
			if s.PlainSteps > 1 && (s.T1MS <= 0 || len(s.TRatio) < 2 && !declined || s.TRatio[0] != 1) {
				t.Fatalf("%s, %s: timings %+v", mem.name, sc.name, s)
			}
			t.Logf("%s, %s: %d proposed, %d verified, %d accepted, %d verifies, %d plain; T(n)/T(1) %.2f",
				mem.name, sc.name, s.Proposed, s.Verified, s.Accepted, s.Verifies, s.PlainSteps, s.TRatio)
		}
	}
}

// doubtful is a replay drafter that gives every draft probability p.
type doubtful struct {
	*replay
	p float64
}

func (d doubtful) Draft(ctx context.Context, history []int32, max int, dr *speculation.Draft) error {
	if err := d.replay.Draft(ctx, history, max, dr); err != nil {
		return err
	}
	for i := range dr.Probs {
		dr.Probs[i] = d.p
	}
	return nil
}

// TestDeclinedDraftsScored: a first draft the gate declines is scored
// against the token plain decoding then gives, so acceptance is measured
// while the gate decodes plainly: a drafter whose drafts are right but
// which calls them doubtful (probability 0.01, below MinDraftProb 0.2) is
// found right, its calibration rises and its drafts are verified; one
// whose drafts are all wrong is measured near 0. Tokens stay plain
// decoding's.
func TestDeclinedDraftsScored(t *testing.T) {
	path := peakedModel(t, nil)
	prompt := []int32{11, 12, 13, 14, 11, 12, 13, 15, 16, 11, 12}
	req := engine.Request{Tokens: prompt, Sampling: engine.Sampling{MaxTokens: 64}}
	o := engine.Options{Threads: 2, ContextLength: 512, Streaming: engine.StreamNever}
	want, _ := run(t, o, path, req)
	for _, tc := range []struct {
		a            float64 // the replay's share of right drafts
		accLo, accHi float64 // the first position's acceptance after the run
		verifies     bool    // whether drafts end up verified
	}{
		{1, 0.9, 1, true},
		{1e-9, 0, 0.1, false},
	} {
		o := o
		o.Speculation = engine.Speculation{Enabled: true, Gate: true, MaxDraft: 4, MinDraftProb: 0.2,
			Drafter: doubtful{newReplay(want, len(prompt), tc.a, 1024, 5), 0.01}}
		got, st := run(t, o, path, req)
		if !slices.Equal(got, want) {
			t.Fatalf("a=%v: tokens differ from plain decoding at %d", tc.a, firstDiff(got, want))
		}
		s := st.Speculation
		acc := s.Acceptance["replay"]
		if len(acc) == 0 || acc[0] < tc.accLo || acc[0] > tc.accHi || (s.Verifies > 0) != tc.verifies {
			t.Fatalf("a=%v: acceptance %v, %d verifies (want acceptance in [%v, %v], verifies %v); stats %+v",
				tc.a, acc, s.Verifies, tc.accLo, tc.accHi, tc.verifies, s)
		}
	}
}

// TestSpeculationStopsAndPrefixReuse: a speculative generation stops at
// max tokens exactly, and a later request on the same engine (which reuses
// the session's prefix, drafts included) still gives plain decoding's
// tokens.
func TestSpeculationStopsAndPrefixReuse(t *testing.T) {
	path := peakedModel(t, nil)
	prompt := []int32{21, 22, 23, 21, 22, 23, 21, 22}
	plainEng := engine.New(engine.Options{Threads: 2, ContextLength: 256})
	defer plainEng.Close()
	if err := plainEng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Threads: 2, ContextLength: 256,
		Speculation: engine.Speculation{Enabled: true, MaxDraft: 5, Lookup: true}})
	defer eng.Close()
	if err := eng.Load(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 7, 40, 3} {
		req := engine.Request{Tokens: prompt, Sampling: engine.Sampling{MaxTokens: n}}
		want, _ := runOn(t, plainEng, req)
		got, st := runOn(t, eng, req)
		if !slices.Equal(got, want) || st.GeneratedTokens != len(want) {
			t.Fatalf("max %d: %v (%d generated), want %v", n, got, st.GeneratedTokens, want)
		}
		// The next request starts from this one's tokens.
		prompt = append(append([]int32(nil), prompt...), got...)
	}
}

// TestSpeculativeSamplingDistribution: at temperature 0.8 on a flat model
// with a 260-token vocabulary, the 2nd and 3rd generated tokens (decided by
// verifies against drafts of the most common tokens) are distributed as
// in plain sampling: a two-sample χ² test over 1500 seeded runs each, at
// p = 0.001.
func TestSpeculativeSamplingDistribution(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	path := peakedModel(t, func(c *synth.Config) {
		c.Vocab, c.WeightScale, c.Layers, c.Embd, c.Experts, c.ExpertsUsed, c.FFExpert = 260, 1.5, 1, 64, 4, 2, 64
		c.Heads, c.HeadsKV, c.HeadDim, c.RopeDim = 2, 1, 32, 32
	})
	prompt := []int32{5, 6, 7, 8}
	const runs = 1500
	sample := func(spec engine.Speculation, seed uint64) [][3]int32 {
		eng := engine.New(engine.Options{Threads: 1, ContextLength: 64, Speculation: spec})
		defer eng.Close()
		if err := eng.Load(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		out := make([][3]int32, runs)
		for i := range out {
			ids, _ := runOn(t, eng, engine.Request{Tokens: prompt,
				Sampling: engine.Sampling{Temperature: 0.8, MaxTokens: 3, Seed: seed + uint64(i)}})
			if len(ids) == 3 {
				out[i] = [3]int32{ids[0], ids[1], ids[2]}
			} else {
				out[i] = [3]int32{-1, -1, -1}
			}
		}
		return out
	}
	plain := sample(engine.Speculation{}, 1000)
	// The drafter proposes the commonest 2nd and 3rd tokens of the plain runs.
	mode := func(pos int) int32 {
		c := map[int32]int{}
		for _, r := range plain {
			c[r[pos]]++
		}
		best := int32(0)
		for k, v := range c {
			if v > c[best] || v == c[best] && k < best {
				best = k
			}
		}
		return best
	}
	fixed := fixedDrafter{toks: []int32{mode(1), mode(2)}, promptLen: len(prompt)}
	spec := sample(engine.Speculation{Enabled: true, MaxDraft: 2, Drafter: &fixed}, 1_000_000) // independent seeds
	if fixed.drafted == 0 {
		t.Fatal("nothing was drafted")
	}
	for pos := 1; pos < 3; pos++ {
		a, b := map[int32]float64{}, map[int32]float64{}
		for i := range runs {
			a[plain[i][pos]]++
			b[spec[i][pos]]++
		}
		chi2, df := twoSampleChi2(a, b)
		crit := chi2Crit(df)
		t.Logf("token %d: χ² %.1f, df %d, critical %.1f (drafted %d, draft %d: plain %v×, speculative %v×)",
			pos+1, chi2, df, crit, fixed.drafted, fixed.toks[pos-1], a[fixed.toks[pos-1]], b[fixed.toks[pos-1]])
		if chi2 > crit {
			t.Errorf("token %d: distributions differ: χ² %.1f > %.1f (df %d)", pos+1, chi2, crit, df)
		}
	}
}

// fixedDrafter proposes the same tokens after the first generated one.
type fixedDrafter struct {
	toks      []int32
	promptLen int
	drafted   int
}

func (f *fixedDrafter) Source() gate.Source {
	return gate.Source{Name: "fixed", Priors: []float64{0.5}}
}

func (f *fixedDrafter) Draft(_ context.Context, ctx []int32, max int, d *speculation.Draft) error {
	if len(ctx) != f.promptLen+1 {
		return nil
	}
	for j := 0; j < max && j < len(f.toks); j++ {
		d.Add(f.toks[j], math.NaN())
		f.drafted++
	}
	return nil
}

// twoSampleChi2 compares two equal-sized samples' counts; categories with
// fewer than 10 in both together are pooled.
func twoSampleChi2(a, b map[int32]float64) (float64, int) {
	keys := map[int32]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var ks []int32
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	var chi2, pa, pb float64
	df := -1
	for _, k := range ks {
		if a[k]+b[k] < 10 {
			pa += a[k]
			pb += b[k]
			continue
		}
		chi2 += (a[k] - b[k]) * (a[k] - b[k]) / (a[k] + b[k])
		df++
	}
	if pa+pb > 0 {
		chi2 += (pa - pb) * (pa - pb) / (pa + pb)
		df++
	}
	return chi2, df
}

// chi2Crit is the χ² critical value at p = 0.001 (Wilson–Hilferty).
func chi2Crit(df int) float64 {
	k := float64(max(df, 1))
	h := 2 / (9 * k)
	x := 1 - h + 3.09*math.Sqrt(h)
	return k * x * x * x
}

// TestSpeculationUnderCacheRouting: with cache-aware routing on and experts
// streamed, speculative greedy decoding routes each verify's rows against
// one residency snapshot, so its tokens are reproducible run to run (they
// need not equal plain decoding's under MoCE: docs/speculation.md), and
// with routing off they equal plain decoding's again on the same engine.
func TestSpeculationUnderCacheRouting(t *testing.T) {
	path := peakedModel(t, nil)
	prompt := []int32{11, 12, 13, 14, 11, 12, 13, 15, 16, 11, 12}
	req := engine.Request{Tokens: prompt, Sampling: engine.Sampling{MaxTokens: 64}}
	o := engine.Options{Threads: 2, ContextLength: 256, Streaming: engine.StreamAlways, ExpertCache: 1 << 20,
		Routing:     routing.CacheRoute{Enabled: true, Lambda: 4, AlwaysKept: 1, MaxRank: 8},
		Speculation: engine.Speculation{Enabled: true, MaxDraft: 4, Lookup: true}}
	a, st := run(t, o, path, req)
	b, _ := run(t, o, path, req)
	if !slices.Equal(a, b) || st.Speculation == nil || st.Speculation.Verifies == 0 || st.Routing == nil {
		t.Fatalf("runs differ at %d, or no verify/routing: %+v %+v", firstDiff(a, b), st.Speculation, st.Routing)
	}
	o.Routing = routing.CacheRoute{}
	plainOpts := o
	plainOpts.Speculation = engine.Speculation{}
	want, _ := run(t, plainOpts, path, req)
	got, _ := run(t, o, path, req)
	if !slices.Equal(got, want) {
		t.Fatalf("routing off: speculative tokens differ from plain at %d", firstDiff(got, want))
	}
}

// allowAll is a constraint that forbids nothing and counts its tokens.
type allowAll struct{ n int }

func (a *allowAll) Mask([]float32)     {}
func (a *allowAll) Accept(int32) error { a.n++; return nil }
func (a *allowAll) Done() bool         { return false }

// TestNoDraftingUnderConstraint: a request with a structured-output
// constraint decodes plainly even with speculation on, and every token
// passes through the constraint.
func TestNoDraftingUnderConstraint(t *testing.T) {
	path := peakedModel(t, nil)
	prompt := []int32{11, 12, 13, 14, 11, 12, 13, 15, 16, 11, 12}
	c := &allowAll{}
	req := engine.Request{Tokens: prompt, Sampling: engine.Sampling{MaxTokens: 32},
		Constraint: func(*tokenizer.Tokenizer) (sample.Constraint, error) { return c, nil }}
	o := engine.Options{Threads: 2, ContextLength: 256, Speculation: engine.Speculation{Enabled: true, MaxDraft: 4, Lookup: true}}
	got, st := run(t, o, path, req)
	if st.Speculation != nil || c.n != len(got) {
		t.Fatalf("constrained request: speculation %+v, %d tokens, %d accepted by the constraint", st.Speculation, len(got), c.n)
	}
	want, _ := run(t, engine.Options{Threads: 2, ContextLength: 256}, path, engine.Request{Tokens: prompt, Sampling: req.Sampling})
	if !slices.Equal(got, want) {
		t.Fatalf("constrained tokens differ at %d", firstDiff(got, want))
	}
}
