//go:build linux || darwin

package metal_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/engine/model/qwen4exp"
	"github.com/strata-llm/strata/engine/routing"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/metal"
)

// syncOnly is the Metal backend without its handshakes (only the methods
// of backend.Backend are promoted), so the MoE layers take the Sync path:
// two command buffers per layer and step.
type syncOnly struct{ backend.Backend }

// A decode step of qwen3next and qwen4exp (QSA selecting, blocks pooled on
// the device) through the Metal Backend is one command buffer, with a
// handshake per MoE layer in which the host fetches the chosen experts from
// a streaming provider whose arena holds 3 of the 32 experts (fewer than
// two layers' choices, so nearly every handshake reads experts from the
// file and evicts others), and its logits are bit-identical to the Sync
// path's (the same kernels on the same values in the same order), over a
// prompt, 9 decode tokens and batches of 2 and 3 rows (speculative
// verification: up to handshakeRows rows go through the handshakes).
func TestBackendOneBufferDecode(t *testing.T) {
	decode := append(splitTokens([]int32{42, 100, 5, 9, 300, 17, 1000, 64, 8}), []int32{11, 12}, []int32{13, 14, 15})
	t.Run("qwen3next", func(t *testing.T) {
		cfg := synth.Defaults(synth.ArchQwen3Next)
		cfg.Type, cfg.Seed = ggml.Q4_K, 5
		oneBufferMatchesSyncs(t, cfg, qwen3next.Open, decode, routing.CacheRoute{})
	})
	t.Run("qwen4exp", func(t *testing.T) {
		cfg := synth.Defaults(synth.ArchQwen4Exp)
		cfg.Type, cfg.Seed, cfg.IndexerTopK = ggml.Q4_K, 5, 1
		oneBufferMatchesSyncs(t, cfg, qwen4exp.Open, decode, routing.CacheRoute{})
	})
	// Cache-aware routing (MoCE in a window of the true top 6): each
	// layer routes against the residency the previous layer's handshake
	// wrote into device memory once its experts were in, the prediction
	// is chosen against the next layer's residency at the handshake; the
	// choices, the telemetry and the logits are those of the Sync path.
	t.Run("qwen3next-moce", func(t *testing.T) {
		cfg := synth.Defaults(synth.ArchQwen3Next)
		cfg.Type, cfg.Seed = ggml.Q4_K, 5
		oneBufferMatchesSyncs(t, cfg, qwen3next.Open, decode,
			routing.CacheRoute{Enabled: true, Lambda: 4, ProtectedTop: 1, AlwaysKept: 1, MaxRank: 6})
	})
}

type decodeRun struct {
	logits [][]float32 // every row's, step by step
	syncs  []int       // per step
	misses []int64     // per step: experts the handshakes (or Syncs) read from the file
	route  routing.Telemetry
}

func oneBufferMatchesSyncs[M model.Model](t *testing.T, cfg synth.Config, open func(*gguf.File, model.Options) (M, error), decode [][]int32, pol routing.CacheRoute) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(ctx, path, cfg); err != nil {
		t.Fatal(err)
	}
	run := func(oneBuffer bool) decodeRun {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		mb := metal.NewBackend(testDevice(t))
		var be backend.Backend = mb
		if !oneBuffer {
			be = syncOnly{mb}
		}
		var st *experts.Stream
		newStream := func(l *model.ExpertLayout) (model.ExpertProvider, error) {
			probe, err := experts.NewStream(f, l, experts.StreamOptions{Budget: 1, Readers: 2})
			if err != nil {
				return nil, err
			}
			slot := probe.Stats().SlotBytes
			probe.Close()
			if st, err = experts.NewStream(f, l, experts.StreamOptions{Budget: 3 * slot, Readers: 2}); err != nil {
				return nil, err
			}
			t.Cleanup(func() { st.Close() })
			if s := st.Stats().Slots; s != 3 || s >= cfg.Layers*cfg.Experts {
				return nil, fmt.Errorf("arena of %d slots, want 3 (of %d experts)", s, cfg.Layers*cfg.Experts)
			}
			return st, nil
		}
		rs := &routing.State{Policy: pol}
		m, err := open(f, model.Options{Backend: be, NewExperts: newStream, Routing: rs})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.NewSession(32)
		if err != nil {
			t.Fatal(err)
		}
		var r decodeRun
		for _, toks := range append([][]int32{{3, 99, 200, 7, 7}}, decode...) {
			flags := make([]bool, len(toks))
			for i := range flags {
				flags[i] = true
			}
			b := model.Batch{Tokens: toks, Logits: flags}
			n0, m0 := mb.Syncs(), st.Stats().Misses
			if err := s.Forward(ctx, &b); err != nil {
				t.Fatal(err)
			}
			r.syncs = append(r.syncs, mb.Syncs()-n0)
			r.misses = append(r.misses, st.Stats().Misses-m0)
			for _, row := range b.Out {
				r.logits = append(r.logits, append([]float32(nil), row...))
			}
		}
		r.route = rs.Stats
		return r
	}
	one, syncs := run(true), run(false)
	if pol.Enabled {
		if one.route != syncs.route {
			t.Errorf("routing telemetry: %+v in one command buffer, %+v with Syncs", one.route, syncs.route)
		}
		if one.route.Swapped == 0 || one.route.Resident == 0 {
			t.Errorf("cache-aware routing swapped %d experts for resident ones (%d resident): the policy had no effect", one.route.Swapped, one.route.Resident)
		}
	}
	var missed int64
	for step := 1; step < len(one.syncs); step++ {
		if one.syncs[step] != 1 {
			t.Errorf("decode step %d: %d command buffers, want 1", step, one.syncs[step])
		}
		if syncs.syncs[step] <= 1 {
			t.Errorf("decode step %d on the Sync path: %d command buffers (the comparison is void)", step, syncs.syncs[step])
		}
		missed += one.misses[step]
	}
	if missed == 0 {
		t.Error("no handshake read an expert from the file: the arena held them all")
	}
	for row := range one.logits {
		for i, v := range one.logits[row] {
			if w := syncs.logits[row][i]; math.Float32bits(v) != math.Float32bits(w) {
				t.Fatalf("row %d (prompt first) logit %d: %g in one command buffer, %g with Syncs", row, i, v, w)
			}
		}
	}
	t.Logf("command buffers per step (prompt first): one buffer %v, Sync path %v; experts read at the decode handshakes: %d (per step %v); routing %+v",
		one.syncs, syncs.syncs, missed, one.misses, one.route)
}

func splitTokens(toks []int32) [][]int32 {
	out := make([][]int32, len(toks))
	for i, tk := range toks {
		out[i] = []int32{tk}
	}
	return out
}
