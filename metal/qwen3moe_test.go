//go:build linux || darwin

package metal_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
	"github.com/strata-llm/strata/engine/quant"
	"github.com/strata-llm/strata/engine/routing"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/metal"
)

// logitBound is the accepted difference between the GPU step's logits and
// the CPU engine's, relative to the CPU logits' standard deviation. The
// kernels multiply dequantized weights with float activations, while the
// CPU engine quantizes activations to the weights' dot type (Q8_0, Q8_K) as
// llama.cpp does; so the CPU engine runs on a copy of the model with every
// weight dequantized to F32 (the same values), where its activations stay
// float. The distance to the CPU on the quantized file itself is logged:
// it includes activation quantization and, at near ties, other experts.
// 0.02: Backend's flash attention keeps the softmax probabilities in float
// where the CPU rounds them to half (2^-11 relative each); with it the
// 12-row prompts (then used for all five weight types) measured 0.0001–0.0102 σ (Q4_K:
// 0.0023 σ, against 0.0002 σ with the score-row kernel, which rounds as
// the CPU does).
const logitBound = 0.02

// One full decode of a small synthetic qwen3moe, token by token, through
// the emulator equals the CPU engine's logits within logitBound, with the
// same top token, for several weight types; the arena is smaller than the
// experts so that experts are evicted and loaded again.
func TestQwen3MoEStepMatchesCPU(t *testing.T) {
	dev := testDevice(t)
	for _, typ := range []ggml.Type{ggml.Q8_0, ggml.Q4_K, ggml.Q6_K, ggml.IQ2_XS, ggml.F16} {
		t.Run(typ.String(), func(t *testing.T) { checkStep(t, dev, typ) })
	}
}

func checkStep(t *testing.T, dev metal.Device, typ ggml.Type) {
	ctx := context.Background()
	{
		{
			cfg := synth.Defaults("qwen3moe")
			cfg.Type = typ
			cfg.Seed = 3
			cfg.Layers = 2
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := synth.Write(ctx, path, cfg); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f32, err := gguf.Open(dequantized(t, f))
			if err != nil {
				t.Fatal(err)
			}
			defer f32.Close()
			m, err := qwen3moe.Open(f32, model.Options{Backend: cpu.NewBackend(1)})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			sess, err := m.NewSession(16)
			if err != nil {
				t.Fatal(err)
			}
			mq, err := qwen3moe.Open(f, model.Options{Backend: cpu.NewBackend(1)})
			if err != nil {
				t.Fatal(err)
			}
			defer mq.Close()
			sessQ, err := mq.NewSession(16)
			if err != nil {
				t.Fatal(err)
			}
			hp := m.Hparams()
			step, err := metal.NewQwen3MoE(dev, f, mq, metal.Qwen3MoEOptions{Context: 16, Slots: hp.ExpertsUsed + 1})
			if err != nil {
				t.Fatal(err)
			}
			tokens := []int32{5, 900, 17, 17, 333, 1}
			worst, worstQ, topQ := 0.0, 0.0, 0
			for i, tok := range tokens {
				want, err := forward(ctx, sess, tok)
				if err != nil {
					t.Fatal(err)
				}
				got, err := step.Step(ctx, tok)
				if err != nil {
					t.Fatal(err)
				}
				wantQ, err := forward(ctx, sessQ, tok)
				if err != nil {
					t.Fatal(err)
				}
				if dq, sdq, same := compareLogits(got, wantQ); true {
					worstQ = max(worstQ, dq/sdq)
					if same {
						topQ++
					}
				}
				d, sd, agree := compareLogits(got, want)
				worst = max(worst, d/sd)
				if d/sd > logitBound || !agree {
					t.Fatalf("token %d: max |Δlogit| %.4g = %.3g σ (bound %g σ), same top token %v", i, d, d/sd, logitBound, agree)
				}
			}
			a := step.Arena()
			t.Logf("%s: worst max |Δlogit| %.3g σ over %d steps vs the CPU on F32 weights (%.3g σ, same top token %d/%d, vs the CPU on the quantized file); %d dispatches, %d barriers per step; arena hits %d misses %d",
				typ, worst, len(tokens), worstQ, topQ, len(tokens), step.Commands().Len(), step.Commands().Barriers(), a.Hits, a.Misses)
			if a.Misses <= hp.Layers*hp.ExpertsUsed {
				t.Errorf("arena of %d slots never evicted (misses %d)", hp.ExpertsUsed+1, a.Misses)
			}
			if _, err := step.Step(ctx, int32(hp.Vocab)); err == nil {
				t.Error("token outside the vocabulary: no error")
			}
		}
	}
}

// forward runs one token through a CPU session and returns its logits.
func forward(ctx context.Context, s model.Session, tok int32) ([]float32, error) {
	b := model.Batch{Tokens: []int32{tok}, Logits: []bool{true}}
	if err := s.Forward(ctx, &b); err != nil {
		return nil, err
	}
	return append([]float32(nil), b.Out[0]...), nil
}

func compareLogits(got, want []float32) (maxDiff, sd float64, sameTop bool) {
	var mean float64
	for _, v := range want {
		mean += float64(v)
	}
	mean /= float64(len(want))
	gt, wt := 0, 0
	for i := range want {
		sd += (float64(want[i]) - mean) * (float64(want[i]) - mean)
		maxDiff = max(maxDiff, math.Abs(float64(got[i]-want[i])))
		if got[i] > got[gt] {
			gt = i
		}
		if want[i] > want[wt] {
			wt = i
		}
	}
	sd = math.Sqrt(sd / float64(len(want)))
	return maxDiff, sd, gt == wt || math.Abs(float64(want[gt]-want[wt])) < 1e-3*sd
}

// dequantized writes a copy of f with every tensor converted to F32.
func dequantized(t *testing.T, f *gguf.File) string {
	t.Helper()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if kv.Key != "general.alignment" {
			w.AddKV(kv.Key, kv.Value)
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := f.Data(ti)
		k, err := quant.For(ti.Type)
		if err != nil {
			t.Fatal(err)
		}
		w.AddTensor(ti.Name, ggml.F32, ti.Dims, func(dst io.Writer) error {
			v := make([]float32, ti.Elements)
			k.Dequantize(data, v)
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			_, err := dst.Write(b)
			return err
		})
	}
	path := filepath.Join(t.TempDir(), "f32.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(fmt.Errorf("write the F32 copy: %w", err))
	}
	return path
}

// With cache-aware routing on, the GPU router sees the arena's residency
// (written at the previous layer's handshake): over the same tokens, a
// small arena hits more often than with exact routing, and the logits stay
// finite. (The rule itself is checked against engine/routing in Selftest.)
func TestQwen3MoEStepCacheRouting(t *testing.T) {
	ctx := context.Background()
	dev := testDevice(t)
	cfg := synth.Defaults("qwen3moe")
	cfg.Type, cfg.Seed, cfg.Layers = ggml.Q4_K, 9, 2
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(ctx, path, cfg); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := qwen3moe.Open(f, model.Options{Backend: cpu.NewBackend(1)})
	if err != nil {
		t.Fatal(err)
	}
	hp := m.Hparams()
	tokens := []int32{5, 900, 17, 17, 333, 1, 77, 512, 3, 3}
	hits := map[bool]int{}
	for _, on := range []bool{false, true} {
		o := metal.Qwen3MoEOptions{Context: 16, Slots: hp.ExpertsUsed + 1}
		if on {
			o.Routing = routing.CacheRoute{Enabled: true, Lambda: 4, ProtectedTop: 1, AlwaysKept: 1, MaxRank: hp.Experts}
		}
		step, err := metal.NewQwen3MoE(dev, f, m, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range tokens {
			logits, err := step.Step(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range logits {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("cache routing %v: logit %v", on, v)
				}
			}
		}
		hits[on] = step.Arena().Hits
	}
	t.Logf("arena hits over %d tokens: exact %d, cache-aware %d", len(tokens), hits[false], hits[true])
	if hits[true] <= hits[false] {
		t.Errorf("cache-aware routing: %d arena hits, exact routing %d", hits[true], hits[false])
	}
}
