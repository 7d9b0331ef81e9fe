package engine

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
)

// memFile is a parsed GGUF with a dense tensor and an expert tensor of the
// given sizes (bytes, multiples of 4) and the metadata kvEstimate reads.
func memFile(t *testing.T, dense, exps uint64, hybrid bool) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	arch := "qwen3moe"
	if hybrid {
		arch = "qwen3next"
	}
	w.AddString("general.architecture", arch)
	w.AddUint32(arch+".block_count", 8)
	w.AddUint32(arch+".attention.head_count", 4)
	w.AddUint32(arch+".attention.head_count_kv", 2)
	w.AddUint32(arch+".attention.key_length", 64)
	if hybrid {
		w.AddUint32(arch+".ssm.state_size", 16)
		w.AddUint32(arch+".ssm.time_step_rank", 2)
		w.AddUint32(arch+".ssm.group_count", 1)
		w.AddUint32(arch+".ssm.conv_kernel", 4)
		w.AddUint32(arch+".full_attention_interval", 4)
	}
	zeros := func(n uint64) func(io.Writer) error {
		return func(dst io.Writer) error { _, err := dst.Write(make([]byte, n)); return err }
	}
	w.AddTensor("token_embd.weight", ggml.F32, []uint64{dense / 4}, zeros(dense))
	w.AddTensor("blk.0.ffn_up_exps.weight", ggml.F32, []uint64{exps / 4}, zeros(exps))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes(), "mem.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPlanMemory(t *testing.T) {
	const mb = 1 << 20
	f := memFile(t, 4*mb, 60*mb, false) // ~64 MB, 60 of them experts
	kv := kvEstimate(f, 1024)           // 8 layers × 1024 × 2 heads × 64 × 2 (K, V) × 2 bytes = 4 MB
	if kv != 8*1024*2*64*2*2 {
		t.Fatalf("KV estimate %d", kv)
	}
	for _, c := range []struct {
		name          string
		opts          Options
		usable, total uint64
		mode          memoryMode
		arena         int64 // -1: don't check
		err           string
	}{
		{name: "fits half of RAM", usable: 1 << 30, total: 2 << 30, mode: modeInMemory, arena: 0},
		{name: "unknown limits", usable: 0, total: 0, mode: modeMapped, arena: 0},
		{name: "forced streaming takes what is left", opts: Options{Streaming: StreamAlways}, usable: 1 << 30, total: 2 << 30,
			mode: modeStream, arena: 60 * mb}, // all experts fit: capped at their size
		{name: "does not fit: streams", usable: 48 * mb, total: 2 << 30, mode: modeStream,
			arena: 48*mb - int64(f.Size-60*mb) - kv - 6*mb}, // margin: usable/8
		{name: "the user's cache size", opts: Options{ExpertCache: 10 * mb}, usable: 48 * mb, total: 2 << 30, mode: modeStream, arena: 10 * mb},
		{name: "never streams: mapped", opts: Options{Streaming: StreamNever}, usable: 48 * mb, total: 2 << 30, mode: modeMapped, arena: 0},
		{name: "more than half of RAM: mapped", opts: Options{Streaming: StreamNever}, usable: 1 << 30, total: 100 * mb, mode: modeMapped, arena: 0},
		{name: "dense part does not fit", usable: 8 * mb, total: 2 << 30, err: "dense part"},
		{name: "streaming with unknown usable memory", opts: Options{Streaming: StreamAlways}, mode: modeStream, arena: 15 * mb},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := planMemory(f, c.opts, 1024, c.usable, c.total)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one about %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.mode != c.mode || (c.arena >= 0 && p.arena != c.arena) {
				t.Fatalf("plan %v with arena %d, want %v with %d", p.mode, p.arena, c.mode, c.arena)
			}
			if p.dense != f.Size-60*mb {
				t.Fatalf("dense %d", p.dense)
			}
		})
	}
}

// TestKVEstimateHybrid: a hybrid model keeps KV in its attention layers
// only (2 of 8 at interval 4), beside its recurrent state.
func TestKVEstimateHybrid(t *testing.T) {
	f := memFile(t, 4<<20, 4<<20, true)
	kv := kvEstimate(f, 1024) - recurrentEstimate(f, 8)
	if want := int64(2 * 1024 * 2 * 64 * 2 * 2); kv != want {
		t.Fatalf("hybrid KV %d, want %d (2 attention layers of 8)", kv, want)
	}
	if recurrentEstimate(f, 8) <= 0 {
		t.Fatal("no recurrent state counted")
	}
}
