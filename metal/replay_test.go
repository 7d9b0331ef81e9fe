//go:build linux || darwin

package metal_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/model/qwen4exp"
	"github.com/strata-llm/strata/engine/routing"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/metal"
)

// A session's decode steps are recorded once per shape and then replayed
// (the recorded command list run again with the new token and position):
// the logits equal, bit for bit, those of the same steps recorded anew
// every token, through a prompt, decode steps past the recorded shapes'
// cycle (the hybrids' recurrent state rotates through 9 sets; qwen4exp's
// QSA indexer pools a block every 4 positions and scores blocks from
// position 4, its PLE rows gathered at every step), a rollback, a 2-row
// batch (recorded every time) and more decode steps, with the experts
// streamed through a small arena.
func TestBackendReplaysSteps(t *testing.T) {
	for _, tc := range []struct {
		arch string
		open func(*gguf.File, model.Options) (model.Model, error)
		// the steps recorded: one shape for qwen3moe; for qwen3next one
		// per pair of recurrent sets read and written (9 in a row; the
		// rollback starts other pairs)
		minSteps, maxSteps int
		pol                routing.CacheRoute
	}{
		{arch: synth.ArchQwen3MoE, open: openAny(qwen3moe.Open), minSteps: 1, maxSteps: 1},
		{arch: synth.ArchQwen3Next, open: openAny(qwen3next.Open), minSteps: 9, maxSteps: 18},
		{arch: synth.ArchQwen4Exp, open: openAny(qwen4exp.Open), minSteps: 9, maxSteps: 30},
		// Cache-aware routing: the first MoE layer's residency snapshot,
		// taken by the host before the step, is taken again at a replay
		// (Redo); the others are written by the handshakes, which run
		// again. The choices and their telemetry are the same.
		{arch: synth.ArchQwen3Next, open: openAny(qwen3next.Open), minSteps: 9, maxSteps: 18,
			pol: routing.CacheRoute{Enabled: true, Lambda: 4, ProtectedTop: 1, AlwaysKept: 1, MaxRank: 6}},
	} {
		name := tc.arch
		if tc.pol.Enabled {
			name += "-moce"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cfg := synth.Defaults(tc.arch)
			cfg.Type, cfg.Seed = ggml.Q4_K, 7
			if tc.arch == synth.ArchQwen4Exp {
				cfg.IndexerTopK = 1 // QSA selecting
			}
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := synth.Write(ctx, path, cfg); err != nil {
				t.Fatal(err)
			}
			run := func(replay bool) ([][]float32, metal.ReplayStats, routing.Telemetry) {
				f, err := gguf.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				mb := metal.NewBackend(testDevice(t))
				mb.NoReplay = !replay
				newStream := func(l *model.ExpertLayout) (model.ExpertProvider, error) {
					st, err := experts.NewStream(f, l, experts.StreamOptions{Budget: 1 << 20, Readers: 2, Alloc: mb.AllocHost})
					if err == nil {
						t.Cleanup(func() { st.Close() })
					}
					return st, err
				}
				rs := &routing.State{Policy: tc.pol}
				m, err := tc.open(f, model.Options{Backend: mb, NewExperts: newStream, Routing: rs})
				if err != nil {
					t.Fatal(err)
				}
				s, err := m.NewSession(64)
				if err != nil {
					t.Fatal(err)
				}
				var out [][]float32
				fwd := func(toks ...int32) {
					flags := make([]bool, len(toks))
					for i := range flags {
						flags[i] = true
					}
					b := model.Batch{Tokens: toks, Logits: flags}
					n0 := mb.Syncs()
					if err := s.Forward(ctx, &b); err != nil {
						t.Fatal(err)
					}
					if len(toks) == 1 && mb.Syncs()-n0 != 1 {
						t.Fatalf("a decode step ran %d command buffers", mb.Syncs()-n0)
					}
					for _, row := range b.Out {
						out = append(out, append([]float32(nil), row...))
					}
				}
				fwd(3, 99, 200, 7, 7)
				for i := range 20 {
					fwd(int32(11 + 37*i%900))
				}
				if err := s.Truncate(s.Len() - 2); err != nil {
					t.Fatal(err)
				}
				for i := range 5 {
					fwd(int32(500 + i))
				}
				fwd(12, 13)
				for i := range 5 {
					fwd(int32(700 + 3*i))
				}
				st := mb.ReplayStats()
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if after := mb.ReplayStats(); after.Steps != 0 {
					t.Errorf("the session closed, %d of its steps kept", after.Steps)
				}
				return out, st, rs.Stats
			}
			want, none, wantRoute := run(false)
			got, st, gotRoute := run(true)
			if gotRoute != wantRoute || (tc.pol.Enabled && gotRoute.Swapped == 0) {
				t.Errorf("routing telemetry %+v replayed, %+v recorded anew", gotRoute, wantRoute)
			}
			if none.Steps != 0 || none.Replays != 0 {
				t.Fatalf("NoReplay: %+v", none)
			}
			for r := range want {
				for i, v := range got[r] {
					if math.Float32bits(v) != math.Float32bits(want[r][i]) {
						t.Fatalf("row %d (prompt first) logit %d: %g replayed, %g recorded anew", r, i, v, want[r][i])
					}
				}
			}
			// Every decode step is a replay or a recording.
			if st.Replays+st.Steps+st.Dropped != 30 || st.Dropped != 0 || st.Steps < tc.minSteps || st.Steps > tc.maxSteps {
				t.Errorf("replay stats %+v over 30 decode steps: want %d..%d shapes recorded, the rest replayed", st, tc.minSteps, tc.maxSteps)
			}
			t.Logf("replay stats over 30 decode steps: %+v; routing %+v", st, gotRoute)
		})
	}
}
