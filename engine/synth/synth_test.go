package synth_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/quant"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/internal/testfix"
)

func write(t *testing.T, cfg synth.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%s.gguf", cfg.Arch, cfg.Type))
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

func open(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestMatchesFixtures compares the defaults of qwen3moe and qwen3next with
// the fixtures written by llama.cpp's converter and quantizer with the same
// shapes: same tensors (names, types, shapes) and metadata.
func TestMatchesFixtures(t *testing.T) {
	for _, arch := range []string{synth.ArchQwen3MoE, synth.ArchQwen3Next} {
		t.Run(arch, func(t *testing.T) {
			ref := open(t, testfix.Path(t, "tiny-"+arch+"-Q8_0.gguf"))
			got := open(t, write(t, synth.Defaults(arch)))

			tensors := func(f *gguf.File) []string {
				var s []string
				for _, ti := range f.Tensors {
					s = append(s, fmt.Sprintf("%s %s %v", ti.Name, ti.Type, ti.Dims))
				}
				sort.Strings(s)
				return s
			}
			if a, b := tensors(got), tensors(ref); !slices.Equal(a, b) {
				t.Errorf("tensors differ from the fixture:\n got %q\nwant %q", a, b)
			}
			for _, kv := range ref.KV {
				v, ok := got.Get(kv.Key)
				switch {
				case !ok:
					t.Errorf("missing key %s", kv.Key)
				case kv.Key == "general.name" || strings.HasPrefix(kv.Key, "tokenizer.ggml.") && kv.Value.Type() == gguf.TypeArray:
					if v.Type() != kv.Value.Type() || v.ElemType() != kv.Value.ElemType() || v.Len() != kv.Value.Len() && kv.Key != "tokenizer.ggml.merges" {
						t.Errorf("%s: %s[%s] × %d, fixture %s[%s] × %d", kv.Key, v.Type(), v.ElemType(), v.Len(), kv.Value.Type(), kv.Value.ElemType(), kv.Value.Len())
					}
				case v.Type() != kv.Value.Type() || v.String() != kv.Value.String():
					t.Errorf("%s = %s (%s), fixture %s (%s)", kv.Key, v, v.Type(), kv.Value, kv.Value.Type())
				}
			}
			for _, kv := range got.KV {
				if _, ok := ref.Get(kv.Key); !ok && kv.Key != "tokenizer.chat_template" {
					t.Errorf("extra key %s", kv.Key)
				}
			}
		})
	}
}

// TestRoundTrip writes every architecture, reads it back with the strict
// reader and checks metadata, tensor data sizes, determinism and seeds.
func TestRoundTrip(t *testing.T) {
	for _, arch := range synth.Archs {
		t.Run(arch, func(t *testing.T) {
			cfg := synth.Defaults(arch)
			cfg.Type = ggml.Q4_K
			cfg.Vocab = 600
			cfg.RouterSkew = 1
			p1 := write(t, cfg)
			p2 := write(t, cfg)
			b1, err := os.ReadFile(p1)
			if err != nil {
				t.Fatal(err)
			}
			b2, err := os.ReadFile(p2)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b1, b2) {
				t.Error("two writes of the same config differ")
			}
			cfg.Seed++
			if b3, err := os.ReadFile(write(t, cfg)); err != nil || bytes.Equal(b1, b3) {
				t.Errorf("another seed gives the same bytes (err %v)", err)
			}

			f := open(t, p1)
			if f.Arch() != arch {
				t.Errorf("architecture %q", f.Arch())
			}
			wantU := map[string]uint64{
				"block_count": 4, "embedding_length": 256, "expert_count": 8, "expert_used_count": 2,
				"expert_feed_forward_length": 256, "attention.head_count": 4, "attention.head_count_kv": 2,
			}
			for k, want := range wantU {
				if v, ok := f.ArchUint(k); !ok || v != want {
					t.Errorf("%s = %d, %v; want %d", k, v, ok, want)
				}
			}
			toks, _ := f.Strings("tokenizer.ggml.tokens")
			if len(toks) != 600 || toks[597] != synth.TokenEndOfText || toks[599] != synth.TokenIMEnd {
				t.Errorf("tokens: %d, last %q", len(toks), toks[len(toks)-3:])
			}
			if eos, _ := f.Uint("tokenizer.ggml.eos_token_id"); eos != 599 {
				t.Errorf("eos %d", eos)
			}
			if tmpl, _ := f.String("tokenizer.chat_template"); !strings.Contains(tmpl, "<|im_start|>") {
				t.Error("chat template missing")
			}
			// The skew constant needs a quantizer: Q4_K if engine/quant has
			// one, else Q8_0.
			wantEmb := ggml.Q8_0
			if k, err := quant.For(ggml.Q4_K); err == nil && k.Quantize != nil {
				wantEmb = ggml.Q4_K
			}
			emb, ok := f.Tensor("token_embd.weight")
			if !ok || emb.Type != wantEmb || !slices.Equal(emb.Dims, []uint64{256, 600}) {
				t.Errorf("token_embd: %+v, want %s", emb, wantEmb)
			}
			exps, ok := f.Tensor("blk.1.ffn_down_exps.weight")
			if !ok || exps.Type != ggml.Q4_K || !slices.Equal(exps.Dims, []uint64{256, 256, 8}) {
				t.Errorf("ffn_down_exps: %+v", exps)
			}
			for _, ti := range f.Tensors {
				if len(ti.Dims) == 1 && ti.Type != ggml.F32 || strings.Contains(ti.Name, "ffn_gate_inp") && ti.Type != ggml.F32 {
					t.Errorf("%s is %s, want F32", ti.Name, ti.Type)
				}
				if ti.Type == ggml.F32 {
					for i, x := range floats(f.Data(&ti)) {
						if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
							t.Fatalf("%s[%d] = %v", ti.Name, i, x)
						}
					}
				}
			}
		})
	}
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return out
}

func dequant(t *testing.T, f *gguf.File, name string) ([]float32, *gguf.TensorInfo) {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	k, err := quant.For(ti.Type)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, ti.Elements)
	k.Dequantize(f.Data(ti), out)
	return out, ti
}

// routerCounts routes n random tokens' embeddings through layer 0's router
// (RMS norm, norm weight, router matrix, top-k) and counts the picks.
func routerCounts(t *testing.T, path string, n int) []int {
	f := open(t, path)
	emb, embInfo := dequant(t, f, "token_embd.weight")
	norm, _ := dequant(t, f, "blk.0.ffn_norm.weight")
	router, rInfo := dequant(t, f, "blk.0.ffn_gate_inp.weight")
	embd, vocab, experts := int(embInfo.Dims[0]), int(embInfo.Dims[1]), int(rInfo.Dims[1])
	used, _ := f.ArchUint("expert_used_count")
	rng := rand.New(rand.NewPCG(7, 7))
	counts := make([]int, experts)
	x := make([]float64, embd)
	for range n {
		row := emb[rng.IntN(vocab)*embd:][:embd]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		rms := math.Sqrt(ss/float64(embd) + 1e-6)
		for i, v := range row {
			x[i] = float64(v) / rms * float64(norm[i])
		}
		logits := make([]float64, experts)
		ids := make([]int, experts)
		for e := range experts {
			ids[e] = e
			for i, w := range router[e*embd:][:embd] {
				logits[e] += float64(w) * x[i]
			}
		}
		sort.Slice(ids, func(a, b int) bool { return logits[ids[a]] > logits[ids[b]] })
		for _, e := range ids[:used] {
			counts[e]++
		}
	}
	return counts
}

// TestRouterSkew checks that with a skew the hottest expert is picked far
// more often than uniform routing would, and without one it is not.
func TestRouterSkew(t *testing.T) {
	const n = 2000
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Type = ggml.Q4_K
	uniform := float64(n*cfg.ExpertsUsed) / float64(cfg.Experts)
	for _, tt := range []struct {
		skew     float64
		min, max float64 // bounds of hottest/uniform
	}{
		{0, 1, 1.6},
		{1, 2, 4},
		{2, 3, 4},
	} {
		cfg.RouterSkew = tt.skew
		counts := routerCounts(t, write(t, cfg), n)
		ratio := float64(slices.Max(counts)) / uniform
		t.Logf("skew %.1f: picks per expert %v, hottest/uniform %.2f", tt.skew, counts, ratio)
		if ratio < tt.min || ratio > tt.max {
			t.Errorf("skew %.1f: hottest expert picked %.2f× uniform, want %.1f..%.1f", tt.skew, ratio, tt.min, tt.max)
		}
	}
}

func TestValidate(t *testing.T) {
	mod := func(arch string, f func(*synth.Config)) synth.Config {
		c := synth.Defaults(arch)
		f(&c)
		return c
	}
	tests := []struct {
		name string
		cfg  synth.Config
		want string
	}{
		{"arch", mod("llama", func(*synth.Config) {}), "unknown architecture"},
		{"type", mod(synth.ArchQwen3MoE, func(c *synth.Config) { c.Type = ggml.Q8_K }), "not supported"},
		{"zero embd", mod(synth.ArchQwen3MoE, func(c *synth.Config) { c.Embd = 0 }), "embd"},
		{"gqa", mod(synth.ArchQwen3MoE, func(c *synth.Config) { c.HeadsKV = 3 }), "heads-kv"},
		{"used", mod(synth.ArchQwen3Next, func(c *synth.Config) { c.ExpertsUsed = 9 }), "experts used"},
		{"vocab", mod(synth.ArchQwen3MoE, func(c *synth.Config) { c.Vocab = 100 }), "vocab"},
		{"scale", mod(synth.ArchQwen3MoE, func(c *synth.Config) { c.WeightScale = float32(math.NaN()) }), "weight scale"},
		{"mtp", mod(synth.ArchQwen3MoE, func(c *synth.Config) { c.MTP = 1 }), "MTP"},
		{"mtp blocks", mod(synth.ArchQwen4Exp, func(c *synth.Config) { c.MTP = 5 }), "MTP"},
		{"ssm heads", mod(synth.ArchQwen3Next, func(c *synth.Config) { c.SSMVHeads = 3 }), "ssm-v-heads"},
		{"hc", mod(synth.ArchQwen4Exp, func(c *synth.Config) { c.HCCount = 1 }), "hc-count"},
		{"ple layer", mod(synth.ArchQwen4Exp, func(c *synth.Config) { c.PLELayer = 3 }), "PLE layer"},
		{"rope", mod(synth.ArchQwen3MoE, func(c *synth.Config) { c.RopeDim = 16 }), "rope-dim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			err := synth.Write(context.Background(), path, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file was left: %v", err)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	err := synth.Write(ctx, filepath.Join(dir, "m.gguf"), synth.Defaults(synth.ArchQwen3MoE))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
}

func TestCLI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.gguf")
	var stdout bytes.Buffer
	err := synth.Main(context.Background(), []string{
		"--arch", "qwen3next", "--quant", "q4_k", "--layers", "8", "--experts", "4", "--used", "1",
		"--vocab", "512", "--seed", "3", "--scale", "8", "--router-skew", "1.5", "--out", out,
	}, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), out) {
		t.Errorf("stdout %q", stdout.String())
	}
	f := open(t, out)
	for k, want := range map[string]uint64{"block_count": 8, "expert_count": 4, "expert_used_count": 1} {
		if v, _ := f.ArchUint(k); v != want {
			t.Errorf("%s = %d, want %d", k, v, want)
		}
	}
	if ti, ok := f.Tensor("blk.7.attn_q.weight"); !ok || ti.Type != ggml.Q4_K {
		t.Errorf("blk.7.attn_q: %+v", ti)
	}

	for _, args := range [][]string{
		{"--arch", "qwen3moe"},
		{"--arch", "qwen3moe", "--quant", "Q9_K", "--out", out},
		{"--arch", "gpt", "--out", out},
		{"--bogus", "--out", out},
	} {
		if err := synth.Main(context.Background(), args, &stdout); err == nil {
			t.Errorf("Main(%q) succeeded", args)
		}
	}
}

func TestVocab(t *testing.T) {
	for _, size := range []int{260, 1024, 5000, 40000} {
		v, err := synth.BuildVocab(size)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Tokens) != size || len(v.Types) != size {
			t.Fatalf("size %d: %d tokens", size, len(v.Tokens))
		}
		seen := map[string]bool{}
		for _, tok := range v.Tokens {
			if seen[tok] {
				t.Fatalf("size %d: duplicate token %q", size, tok)
			}
			seen[tok] = true
		}
		for _, m := range v.Merges {
			l, r, ok := strings.Cut(m, " ")
			if !ok || !seen[l] || !seen[r] || !seen[l+r] {
				t.Fatalf("size %d: merge %q uses unknown tokens", size, m)
			}
		}
		if v.Tokens[v.IMStart] != synth.TokenIMStart || v.Types[v.IMEnd] != 3 || v.Types[100] != 1 {
			t.Errorf("size %d: control tokens wrong", size)
		}
	}
	v, _ := synth.BuildVocab(1024)
	// The corpus is English: frequent words become single tokens.
	idx := slices.Index(v.Tokens, "Ġthe")
	if idx < 0 {
		t.Error(`no token for " the"`)
	}
	if got := string(synth.Decode("Ġthe")); got != " the" {
		t.Errorf("Decode = %q", got)
	}
}

// TestMixQ4KM checks the Q4_K_M mixture against llama-quantize's rules
// (src/llama-quant.cpp, llama_tensor_get_type) for an 8-layer qwen3moe:
// the more-bits layers are 0, 3, 6 and 7.
func TestMixQ4KM(t *testing.T) {
	typ, mix, err := synth.ParseQuant("q4_k_m", false)
	if err != nil || typ != ggml.Q4_K || mix != "Q4_K_M" {
		t.Fatalf("ParseQuant(q4_k_m) = %v, %q, %v", typ, mix, err)
	}
	if _, _, err := synth.ParseQuant("Q4_K_X", false); err == nil {
		t.Error("ParseQuant(Q4_K_X): no error")
	}
	cfg := synth.Defaults(synth.ArchQwen3MoE)
	cfg.Layers = 8
	cfg.Experts = 16 // llama-quantize treats 8 experts apart (attn_v, attn_k Q8_0)
	cfg.Type, cfg.Mix = typ, mix
	f := open(t, write(t, cfg))
	more := map[int]bool{0: true, 3: true, 6: true, 7: true}
	got := map[string]ggml.Type{}
	for _, ti := range f.Tensors {
		got[ti.Name] = ti.Type
	}
	want := map[string]ggml.Type{"output.weight": ggml.Q6_K, "token_embd.weight": ggml.Q4_K}
	for il := 0; il < 8; il++ {
		hi := ggml.Q4_K
		if more[il] {
			hi = ggml.Q6_K
		}
		p := fmt.Sprintf("blk.%d.", il)
		for name, typ := range map[string]ggml.Type{
			"attn_q.weight": ggml.Q4_K, "attn_k.weight": ggml.Q4_K, "attn_v.weight": hi, "attn_output.weight": ggml.Q4_K,
			"ffn_gate_exps.weight": ggml.Q4_K, "ffn_up_exps.weight": ggml.Q4_K, "ffn_down_exps.weight": hi,
			"ffn_gate_inp.weight": ggml.F32, "attn_norm.weight": ggml.F32,
		} {
			want[p+name] = typ
		}
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: %v (present %v), want %v", name, g, ok, w)
		}
	}
	if ft, _ := f.Uint("general.file_type"); ft != 15 {
		t.Errorf("general.file_type = %d, want 15 (MOSTLY_Q4_K_M)", ft)
	}
	cfg.Type = ggml.Q8_0
	if err := cfg.Validate(); err == nil {
		t.Error("Q4_K_M on Q8_0 validated")
	}
}
