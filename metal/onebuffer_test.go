//go:build linux || darwin

package metal_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

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
		oneBufferMatchesSyncs(t, cfg, qwen3next.Open, decode, routing.CacheRoute{}, arenaCase{slots: 3})
	})
	t.Run("qwen4exp", func(t *testing.T) {
		cfg := synth.Defaults(synth.ArchQwen4Exp)
		cfg.Type, cfg.Seed, cfg.IndexerTopK = ggml.Q4_K, 5, 1
		oneBufferMatchesSyncs(t, cfg, qwen4exp.Open, decode, routing.CacheRoute{}, arenaCase{slots: 3})
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
			routing.CacheRoute{Enabled: true, Lambda: 4, ProtectedTop: 1, AlwaysKept: 1, MaxRank: 6}, arenaCase{slots: 3})
	})
}

// The streaming arena allocated by the backend (AllocHost): the kernels
// read each expert where the provider read it (Bind, no copy), the fetch
// held until the layer's experts have run; the logits stay bit-identical
// to the Sync path's. With the arena cut into small parts, experts in the
// parts past MaxBases are copied instead, in the same layers as bound
// ones; with 3 slots, a layer choosing more experts than the arena holds
// at once has them copied (the provider reuses each slot once copied).
func TestBackendOneBufferBindsArena(t *testing.T) {
	decode := append(splitTokens([]int32{42, 100, 5, 9}), []int32{11, 12}, []int32{13, 14, 15})
	for _, tc := range []struct {
		name string
		arch string
		open func(*gguf.File, model.Options) (model.Model, error)
		a    arenaCase
	}{
		{"qwen3next", synth.ArchQwen3Next, openAny(qwen3next.Open), arenaCase{slots: 8, host: true}},
		{"qwen4exp", synth.ArchQwen4Exp, openAny(qwen4exp.Open), arenaCase{slots: 8, host: true}},
		{"qwen3next-parts", synth.ArchQwen3Next, openAny(qwen3next.Open), arenaCase{slots: 8, host: true, part: 256 << 10}},
		{"qwen3next-3-slots", synth.ArchQwen3Next, openAny(qwen3next.Open), arenaCase{slots: 3, host: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := synth.Defaults(tc.arch)
			cfg.Type, cfg.Seed = ggml.Q4_K, 5
			if tc.arch == synth.ArchQwen4Exp {
				cfg.IndexerTopK = 1
			}
			oneBufferMatchesSyncs(t, cfg, tc.open, decode, routing.CacheRoute{}, tc.a)
		})
	}
}

func openAny[M model.Model](open func(*gguf.File, model.Options) (M, error)) func(*gguf.File, model.Options) (model.Model, error) {
	return func(f *gguf.File, o model.Options) (model.Model, error) { return open(f, o) }
}

// arenaCase is the streaming arena of a decode test.
type arenaCase struct {
	slots int  // experts it holds
	host  bool // allocated by the backend (AllocHost), so experts can be bound
	part  int  // Backend.PartLen
}

type decodeRun struct {
	logits [][]float32 // every row's, step by step
	syncs  []int       // per step
	misses []int64     // per step: experts the handshakes (or Syncs) read from the file
	route  routing.Telemetry
	loads  backend.ExpertLoads
}

func oneBufferMatchesSyncs[M model.Model](t *testing.T, cfg synth.Config, open func(*gguf.File, model.Options) (M, error), decode [][]int32, pol routing.CacheRoute, ac arenaCase) {
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
		mb.PartLen = ac.part
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
			o := experts.StreamOptions{Budget: int64(ac.slots) * slot, Readers: 2}
			if ac.host {
				o.Alloc = mb.AllocHost
			}
			if st, err = experts.NewStream(f, l, o); err != nil {
				return nil, err
			}
			t.Cleanup(func() { st.Close() })
			if s := st.Stats().Slots; s != ac.slots || s >= cfg.Layers*cfg.Experts {
				return nil, fmt.Errorf("arena of %d slots, want %d (of %d experts)", s, ac.slots, cfg.Layers*cfg.Experts)
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
		r.loads = mb.ExpertLoads()
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
	if syncs.loads != (backend.ExpertLoads{}) {
		t.Errorf("the Sync path gave experts through handshakes: %+v", syncs.loads)
	}
	l := one.loads
	switch {
	case !ac.host && l.Bound != 0:
		t.Errorf("%d experts bound in place in an arena the backend did not allocate", l.Bound)
	case ac.host && ac.slots >= 3*cfg.ExpertsUsed && ac.part == 0 && (l.Bound == 0 || l.Copied != 0):
		t.Errorf("arena from AllocHost with room for every layer's experts: %d bound, %d copied; want all bound", l.Bound, l.Copied)
	case ac.host && (ac.part != 0 || ac.slots < 3*cfg.ExpertsUsed) && (l.Bound == 0 || l.Copied == 0):
		t.Errorf("arena in parts past MaxBases, or smaller than a layer's choices: %d bound, %d copied; want both", l.Bound, l.Copied)
	case !ac.host && l.Copied == 0:
		t.Errorf("no expert copied into a slot")
	}
	t.Logf("command buffers per step (prompt first): one buffer %v, Sync path %v; experts read at the decode handshakes: %d (per step %v); routing %+v; experts bound %d, copied %d",
		one.syncs, syncs.syncs, missed, one.misses, one.route, l.Bound, l.Copied)
}

func splitTokens(toks []int32) [][]int32 {
	out := make([][]int32, len(toks))
	for i, tk := range toks {
		out[i] = []int32{tk}
	}
	return out
}

// AfterRun's functions run once the ops after their handshake have
// completed: before the next handshake's function, or at the end of the
// Sync, also when a handshake fails.
func TestBackendAfterRun(t *testing.T) {
	mb := metal.NewBackend(testDevice(t))
	var log []string
	x := mb.Alloc(4)
	mb.Handshake(func(context.Context) error {
		log = append(log, "hs1")
		mb.AfterRun(func() { log = append(log, "after1") })
		return nil
	})
	mb.Add(x, x)
	mb.Handshake(func(context.Context) error {
		log = append(log, "hs2")
		mb.AfterRun(func() { log = append(log, "after2") })
		return nil
	})
	mb.Add(x, x)
	if err := mb.Sync(); err != nil {
		t.Fatal(err)
	}
	mb.Handshake(func(context.Context) error {
		mb.AfterRun(func() { log = append(log, "after3") })
		return fmt.Errorf("read failed")
	})
	mb.Add(x, x)
	mb.Handshake(func(context.Context) error {
		log = append(log, "hs4 (must not run)")
		return nil
	})
	if err := mb.Sync(); err == nil {
		t.Error("a failed handshake: Sync returned no error")
	}
	if got, want := fmt.Sprint(log), "[hs1 after1 hs2 after2 after3]"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// The ops between a Handshake and its Resume run while the host function
// runs (a MoE layer's shared expert while the host loads the routed
// experts): here the host function waits until it sees what such an op
// wrote, which it would never see if the device waited for it first. The
// ops after the Resume start only once it has returned.
func TestBackendHandshakeOverlap(t *testing.T) {
	mb := metal.NewBackend(testDevice(t))
	x, y := mb.Alloc(64), mb.Alloc(64)
	var sawAfter float32 = -1
	mb.Handshake(func(ctx context.Context) error {
		deadline := time.Now().Add(30 * time.Second)
		for atomic.LoadUint32((*uint32)(unsafe.Pointer(&x[63]))) != math.Float32bits(7) {
			if time.Now().After(deadline) {
				return fmt.Errorf("the op queued before Resume did not run while the host function ran")
			}
			time.Sleep(time.Millisecond)
		}
		sawAfter = math.Float32frombits(atomic.LoadUint32((*uint32)(unsafe.Pointer(&y[0]))))
		return nil
	})
	mb.Fill(x, 7)
	mb.Resume()
	mb.Fill(y, 9)
	if err := mb.Sync(); err != nil {
		t.Fatal(err)
	}
	if sawAfter != 0 || y[0] != 9 {
		t.Errorf("the op after Resume: the host function saw y = %g (want 0, not run yet); after the Sync y = %g", sawAfter, y[0])
	}
}
