package qwen4exp

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
)

// readRecorder is the expert stream with its raw reads (the PLE table's
// rows) recorded by phase; in the phase fail names it fails them, at once
// ("sync": ReadRaw refuses) or in the readers ("async": the reads point
// past the end of the file).
type readRecorder struct {
	*experts.Stream
	mu    sync.Mutex
	phase string
	rows  map[string]int // rows requested, by phase
	fail  string         // "", "sync" or "async": how the prefetch phase's reads fail
}

func (r *readRecorder) set(phase string) {
	r.mu.Lock()
	r.phase = phase
	r.mu.Unlock()
}

func (r *readRecorder) take(phase string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.rows[phase]
	delete(r.rows, phase)
	return n
}

func (r *readRecorder) ReadRaw(path string, reqs []experts.RawRead, urgent bool) (*experts.RawReads, error) {
	r.mu.Lock()
	ph, fail := r.phase, r.fail
	r.rows[ph] += len(reqs)
	r.mu.Unlock()
	if ph == "prefetch" {
		switch fail {
		case "sync":
			return nil, errors.New("injected read error")
		case "async":
			bad := slices.Clone(reqs)
			for i := range bad {
				bad[i].Off = 1 << 40
			}
			return r.Stream.ReadRaw(path, bad, urgent)
		}
	}
	return r.Stream.ReadRaw(path, reqs, urgent)
}

// TestPLEPrefetch: Session.Prefetch of a coming batch's tokens (as the
// speculation loop calls it with a verify's tokens once the drafter has
// returned them) requests their PLE rows before that batch's forward
// starts, so the forward requests none of them itself; the logits are the
// mapped model's bit for bit whether the guess was right, a prefix of the
// batch, or wrong (other tokens), after rollbacks, and when the prefetch's
// reads fail at once or in the readers (the forward reads the rows
// itself). Prefetched rows no forward used do not make the cache grow.
func TestPLEPrefetch(t *testing.T) {
	path := spWrite(t, spConfig(ggml.Q8_0))
	_, ref := spOpen(t, path, model.Options{})
	var rec *readRecorder
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	// The recorder is the expert provider: the PLE table streams through it.
	_, m := spOpenFile(t, f, model.Options{NewExperts: func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		st, err := experts.NewStream(f, l, experts.StreamOptions{Budget: 1 << 20, Readers: 2})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { st.Close() })
		rec = &readRecorder{Stream: st, rows: map[string]int{}}
		return rec, nil
	}})
	if !m.pleTab.Streamed() || ref.pleTab.Streamed() {
		t.Fatal("table modes")
	}
	cache0 := m.pleTab.CacheBytes()
	sa, sr := spSession(t, m, 512), spSession(t, ref, 512)
	rng := rand.New(rand.NewPCG(21, 22))
	same := func(step int, toks []int32) {
		t.Helper()
		rec.set("forward")
		ga, gr := spForward(t, sa, toks), spForward(t, sr, toks)
		for i := range gr {
			if !spSame(ga[i], gr[i]) {
				t.Fatalf("step %d: row %d's logits differ from the mapped model's", step, i)
			}
		}
	}
	same(-1, spTokens(rng, 20, 512))
	if rec.take("forward") == 0 {
		t.Fatal("the prompt read no PLE rows")
	}
	early := 0
	for step := 0; step < 60; step++ {
		toks := spTokens(rng, 1+rng.IntN(4), 512)
		guess := toks
		mode := step % 3
		switch mode {
		case 1: // the first token right, the drafts wrong
			guess = append([]int32{toks[0]}, spTokens(rng, 3, 512)...)
		case 2: // all wrong
			guess = spTokens(rng, 4, 512)
		}
		rec.set("prefetch")
		sa.Prefetch(guess[:1]) // before drafting
		sa.Prefetch(guess)     // once the drafter has returned
		early += rec.take("prefetch")
		same(step, toks)
		if n := rec.take("forward"); mode == 0 && n != 0 {
			t.Fatalf("step %d: the forward requested %d PLE rows itself after a right prefetch", step, n)
		}
		// Rejected drafts: back by up to len(toks)−1 positions.
		if back := rng.IntN(len(toks)); back > 0 {
			for _, s := range []*Session{sa, sr} {
				if err := s.Truncate(s.Len() - back); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	st := m.pleTab.Stats()
	if early == 0 || st.Prefetched == 0 || st.Prefetched > int64(early) {
		t.Fatalf("%d rows requested by prefetches, stats %+v", early, st)
	}
	if got := m.pleTab.CacheBytes(); got != cache0 {
		t.Fatalf("row cache %d bytes after unused prefetches, %d at the start", got, cache0)
	}
	t.Logf("%d rows read early by Prefetch; table stats %+v", early, st)

	for _, fail := range []string{"sync", "async"} {
		rec.mu.Lock()
		rec.fail = fail
		rec.mu.Unlock()
		for step := 0; step < 4; step++ {
			toks := spTokens(rng, 4, 512)
			rec.set("prefetch")
			sa.Prefetch(toks)
			same(step, toks)
			if n := rec.take("forward"); n == 0 {
				t.Fatalf("%s failure: the forward read no rows itself", fail)
			}
		}
	}
	// A bad token is no error for a hint (the forward refuses it).
	sa.Prefetch([]int32{-1, 512})
}
