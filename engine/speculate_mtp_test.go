package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/synth"
)

// peakedMTPModel writes a small peaked qwen3next or qwen4exp (its
// defaults: QSA and PLE on) with an MTP block.
func peakedMTPModel(t testing.TB, arch string, edit func(*synth.Config)) string {
	t.Helper()
	cfg := synth.Defaults(arch)
	cfg.Experts, cfg.ExpertsUsed, cfg.WeightScale, cfg.RouterSkew, cfg.Seed, cfg.MTP = 16, 4, 8, 1, 12, 1
	if edit != nil {
		edit(&cfg)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSpeculativeGreedyMTPIsExact: on qwen3next and qwen4exp files with an
// MTP block, greedy decoding with the MTP head's drafts (alone, fixed depth or gated,
// and with prompt lookup) gives exactly plain decoding's tokens, in memory
// and with experts streamed through a small cache; the head drafts all
// along (its cache is kept from the prompt on), and later requests that
// reuse the session's prefix still do.
func TestSpeculativeGreedyMTPIsExact(t *testing.T) {
	for _, arch := range []string{synth.ArchQwen3Next, synth.ArchQwen4Exp} {
		t.Run(arch, func(t *testing.T) { testSpeculativeGreedyMTP(t, peakedMTPModel(t, arch, nil)) })
	}
}

func testSpeculativeGreedyMTP(t *testing.T, path string) {
	prompt := []int32{11, 12, 13, 14, 11, 12, 13, 15, 16, 11, 12, 40, 41, 42, 43, 44, 45, 46, 47, 48}
	req := engine.Request{Tokens: prompt, Sampling: engine.Sampling{MaxTokens: 48}}
	for _, mem := range []struct {
		name string
		o    engine.Options
	}{
		{"in memory", engine.Options{Threads: 2, ContextLength: 512, Streaming: engine.StreamNever}},
		{"streaming", engine.Options{Threads: 2, ContextLength: 512, Streaming: engine.StreamAlways, ExpertCache: 1 << 20}},
	} {
		want, _ := run(t, mem.o, path, req)
		if len(want) < 48 {
			t.Fatalf("%s: plain run: %d tokens", mem.name, len(want))
		}
		for _, sc := range []struct {
			name string
			spec engine.Speculation
		}{
			{"mtp depth 3", engine.Speculation{Enabled: true, MaxDraft: 3, MTP: true}},
			{"mtp + lookup gate", engine.Speculation{Enabled: true, Gate: true, MaxDraft: 8, MTP: true, Lookup: true}},
		} {
			o := mem.o
			o.Speculation = sc.spec
			eng := engine.New(o)
			if err := eng.Load(context.Background(), path); err != nil {
				t.Fatal(err)
			}
			got, st := runOn(t, eng, req)
			if !slices.Equal(got, want) {
				eng.Close()
				t.Fatalf("%s, %s: tokens differ from plain decoding at %d", mem.name, sc.name, firstDiff(got, want))
			}
			s := st.Speculation
			acc := s.Acceptance["mtp"]
			if s == nil || s.Verifies == 0 || s.Accepted > s.Verified || s.Proposed != s.Verified+s.Declined || len(acc) == 0 {
				eng.Close()
				t.Fatalf("%s, %s: stats %+v", mem.name, sc.name, s)
			}
			if !sc.spec.Gate && s.Proposed < 30 { // the head drafts on (nearly) every step
				eng.Close()
				t.Fatalf("%s, %s: only %d drafts proposed: %+v", mem.name, sc.name, s.Proposed, s)
			}
			t.Logf("%s, %s: %d proposed, %d verified, %d accepted (%.0f %%), %d verifies, %d plain; acceptance by position %.2f",
				mem.name, sc.name, s.Proposed, s.Verified, s.Accepted, 100*float64(s.Accepted)/float64(max(1, s.Verified)), s.Verifies, s.PlainSteps, acc)
			// A second request reusing the prefix (prompt and generated
			// tokens) drafts again at once and stays exact.
			req2 := engine.Request{Tokens: append(append([]int32(nil), prompt...), got[:20]...), Sampling: engine.Sampling{MaxTokens: 20}}
			got2, st2 := runOn(t, eng, req2)
			eng.Close()
			if !slices.Equal(got2, want[20:40]) {
				t.Fatalf("%s, %s: second request: tokens differ at %d", mem.name, sc.name, firstDiff(got2, want[20:40]))
			}
			if !sc.spec.Gate && st2.Speculation.Proposed == 0 {
				t.Fatalf("%s, %s: second request drafted nothing: %+v", mem.name, sc.name, st2.Speculation)
			}
		}
	}
}
