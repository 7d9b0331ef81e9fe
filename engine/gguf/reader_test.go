package gguf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/internal/testfix"
)

func TestFixtures(t *testing.T) {
	tests := []struct {
		file     string
		arch     string
		tensors  int
		types    []ggml.Type // types that must occur
		hasShexp bool
	}{
		{"tiny-qwen3moe-Q8_0.gguf", "qwen3moe", 51, []ggml.Type{ggml.Q8_0, ggml.F32}, false},
		{"tiny-qwen3moe-Q4_K_M.gguf", "qwen3moe", 51, []ggml.Type{ggml.Q4_K, ggml.Q6_K, ggml.F32}, false},
		{"tiny-qwen3next-Q8_0.gguf", "qwen3next", 73, []ggml.Type{ggml.Q8_0, ggml.F32}, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := testfix.Path(t, tt.file)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Arch() != tt.arch {
				t.Errorf("Arch = %q, want %q", f.Arch(), tt.arch)
			}
			if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
				t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
			}
			if n, ok := f.ArchUint("block_count"); !ok || n != 4 {
				t.Errorf("block_count = %d, %v; want 4", n, ok)
			}
			if n, ok := f.ArchUint("embedding_length"); !ok || n != 256 {
				t.Errorf("embedding_length = %d, %v; want 256", n, ok)
			}
			if e, ok := f.ArchFloat("attention.layer_norm_rms_epsilon"); !ok || math.Abs(e-1e-6) > 1e-9 {
				t.Errorf("rms eps = %v, %v", e, ok)
			}
			toks, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(toks) != 1024 || toks[1023] != "<|im_end|>" {
				t.Errorf("tokens: %d entries, ok %v", len(toks), ok)
			}
			if types, ok := f.Ints("tokenizer.ggml.token_type"); !ok || len(types) != 1024 {
				t.Errorf("token_type: %d, %v", len(types), ok)
			}
			if len(f.Tensors) != tt.tensors {
				t.Errorf("%d tensors, want %d", len(f.Tensors), tt.tensors)
			}
			seen := map[ggml.Type]bool{}
			var end uint64
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				seen[ti.Type] = true
				d := f.Data(ti)
				if uint64(len(d)) != ti.Size {
					t.Errorf("%s: Data has %d bytes, want %d", ti.Name, len(d), ti.Size)
				}
				end = max(end, ti.Offset+ti.Size)
			}
			if got := uint64(f.Size - f.DataOffset); got < end {
				t.Errorf("data section %d bytes, tensors end at %d", got, end)
			}
			for _, typ := range tt.types {
				if !seen[typ] {
					t.Errorf("no tensor of type %s", typ)
				}
			}
			if _, err := f.Expect("token_embd.weight", 256, 1024); err != nil {
				t.Error(err)
			}
			if _, err := f.Expect("blk.0.ffn_down_exps.weight", 256, 256, 8); err != nil {
				t.Error(err)
			}
			if _, ok := f.Tensor("blk.0.ffn_down_shexp.weight"); ok != tt.hasShexp {
				t.Errorf("shared expert present = %v, want %v", ok, tt.hasShexp)
			}

			// The same bytes through Parse give the same result.
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := Parse(raw, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.KV) != len(f.KV) || len(g.Tensors) != len(f.Tensors) || g.DataOffset != f.DataOffset {
				t.Errorf("Parse and Open disagree")
			}
			last := &g.Tensors[len(g.Tensors)-1]
			if !bytes.Equal(g.Data(last), f.Data(&f.Tensors[len(f.Tensors)-1])) {
				t.Errorf("tensor data differs between Parse and Open")
			}
		})
	}
}

func TestExpect(t *testing.T) {
	w, _ := sampleWriter()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes(), "sample.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if ti, err := f.Expect("token_embd.weight", 64, 5); err != nil || ti.Type != ggml.Q8_0 {
		t.Errorf("Expect: %v, %v", ti, err)
	}
	tests := []struct {
		name string
		dims []uint64
		want string
	}{
		{"nope.weight", []uint64{1}, "missing tensor nope.weight"},
		{"token_embd.weight", []uint64{5, 64}, "tensor token_embd.weight has shape [64 5], want [5 64]"},
		{"token_embd.weight", []uint64{64}, "want [64]"},
	}
	for _, tt := range tests {
		_, err := f.Expect(tt.name, tt.dims...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "sample.gguf") {
			t.Errorf("Expect(%s, %v) = %v, want error containing %q and the file name", tt.name, tt.dims, err, tt.want)
		}
	}
}

func TestGetters(t *testing.T) {
	w, _ := sampleWriter()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes(), "sample")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want any, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s: not ok", name)
			return
		}
		if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want); g != w {
			t.Errorf("%s = %s, want %s", name, g, w)
		}
	}
	u, ok := f.ArchUint("block_count")
	check("ArchUint(block_count)", u, uint64(2), ok)
	u, ok = f.Uint("qwen3moe.u8")
	check("Uint(u8)", u, uint64(200), ok)
	i, ok := f.Int("qwen3moe.neg")
	check("Int(neg)", i, int64(-7), ok)
	i, ok = f.Int("qwen3moe.i16")
	check("Int(i16)", i, int64(-300), ok)
	fl, ok := f.ArchFloat("rope.freq_base")
	check("ArchFloat(rope.freq_base)", fl, 1e6, ok)
	fl, ok = f.Float("qwen3moe.block_count")
	check("Float(int)", fl, 2.0, ok)
	fl, ok = f.Float("qwen3moe.f64")
	check("Float(f64)", fl, -2.5, ok)
	b, ok := f.ArchBool("flag")
	check("ArchBool", b, true, ok)
	s, ok := f.String("general.name")
	check("String", s, "sample", ok)
	ss, ok := f.Strings("tokenizer.ggml.tokens")
	check("Strings", ss, []string{"a", "b", "", "<|im_end|>", "ü"}, ok)
	is, ok := f.ArchInts("layers")
	check("ArchInts", is, []int64{1, -2, 3}, ok)
	is, ok = f.Ints("qwen3moe.u8s")
	check("Ints(u8s)", is, []int64{1, 2, 255}, ok)
	fs, ok := f.Floats("qwen3moe.scales")
	check("Floats", fs, []float64{0.5, -1}, ok)
	fs, ok = f.Floats("qwen3moe.u32s")
	check("Floats(u32s)", fs, []float64{4, 5}, ok)
	bs, ok := f.Bools("qwen3moe.swa")
	check("Bools", bs, []bool{true, false, true}, ok)

	// Conversions that must refuse.
	refuse := []struct {
		name string
		ok   bool
	}{
		{"Uint(missing)", second(f.Uint("no.such.key"))},
		{"Int(missing)", second(f.Int("no.such.key"))},
		{"Float(missing)", second(f.Float("no.such.key"))},
		{"Bool(missing)", second(f.Bool("no.such.key"))},
		{"Uint(negative)", second(f.Uint("qwen3moe.neg"))},
		{"Uint(float)", second(f.Uint("qwen3moe.rope.freq_base"))},
		{"Uint(string)", second(f.Uint("general.name"))},
		{"String(int)", second(f.String("qwen3moe.block_count"))},
		{"Bool(int)", second(f.Bool("qwen3moe.block_count"))},
		{"Float(string)", second(f.Float("general.name"))},
		{"Ints(u64 > MaxInt64)", second(f.Ints("qwen3moe.u64s"))},
		{"Ints(strings)", second(f.Ints("tokenizer.ggml.tokens"))},
		{"Strings(ints)", second(f.Strings("qwen3moe.layers"))},
		{"Floats(bools)", second(f.Floats("qwen3moe.swa"))},
		{"Bools(scalar)", second(f.Bools("qwen3moe.flag"))},
		{"Ints(scalar)", second(f.Ints("qwen3moe.block_count"))},
	}
	for _, r := range refuse {
		if r.ok {
			t.Errorf("%s: ok, want refusal", r.name)
		}
	}
	if v, ok := f.Get("no.such.key"); ok || v.Type() != TypeInvalid {
		t.Errorf("Get(missing) = %v (%s), %v", v, v.Type(), ok)
	}
	if u, ok := Uint64(math.MaxUint64).Int(); ok {
		t.Errorf("Uint64(max).Int() = %d, ok", u)
	}
	if f.Arch() != "qwen3moe" || f.ArchKey("x") != "qwen3moe.x" {
		t.Errorf("Arch %q", f.Arch())
	}
}

func second[T any](_ T, ok bool) bool { return ok }

// validFile returns a valid file with one F32 tensor of 8 elements.
func validFile() []byte {
	r := &raw{}
	r.header(3, 1, 1).kvU32("general.alignment", 32)
	r.tensor("t", ggml.F32, []uint64{8}, 0)
	r.padTo(32).zeros(32)
	return r.buf
}

func TestValidFileParses(t *testing.T) {
	if _, err := Parse(validFile(), "valid"); err != nil {
		t.Fatal(err)
	}
	// Version 2 has the same layout.
	b := validFile()
	b[4] = 2
	if f, err := Parse(b, "v2"); err != nil || f.Version != 2 {
		t.Fatalf("v2: %v", err)
	}
	// No tensors: the data section may be absent.
	r := (&raw{}).header(3, 0, 1).kvU32("x", 1)
	if _, err := Parse(r.buf, "notensors"); err != nil {
		t.Fatalf("no tensors: %v", err)
	}
}

func TestCorrupt(t *testing.T) {
	f32 := func(name string, dims []uint64, off uint64) *raw {
		return (&raw{}).tensor(name, ggml.F32, dims, off)
	}
	// build assembles a file: header with the given counts, kv bytes,
	// tensor-info bytes, padding to 32, then dataLen zero bytes.
	build := func(version uint32, nTensors, nKV uint64, kvs, infos []byte, dataLen int) []byte {
		r := (&raw{}).header(version, nTensors, nKV).bytes(kvs).bytes(infos)
		return r.padTo(32).zeros(dataLen).buf
	}
	one := func(infos *raw, dataLen int) []byte { return build(3, 1, 0, nil, infos.buf, dataLen) }
	kv := func(b *raw) []byte { return build(3, 0, 1, b.buf, nil, 0) }
	nested := func(depth int) *raw {
		r := (&raw{}).str("deep").u32(uint32(TypeArray))
		for i := 0; i < depth-1; i++ {
			r.u32(uint32(TypeArray)).u64(1)
		}
		return r.u32(uint32(TypeUint8)).u64(0)
	}
	valid := validFile()

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"bad magic", append([]byte("GGUX"), valid[4:]...), `bad magic "GGUX"`},
		{"version 1", build(1, 0, 0, nil, nil, 0), "version 1 is not supported"},
		{"version 4", build(4, 0, 0, nil, nil, 0), "unsupported version 4"},
		{"big endian", build(3<<24, 0, 0, nil, nil, 0), "big-endian"},
		{"truncated header", valid[:12], "tensor count needs 8 bytes"},
		{"tensor count limit", build(3, MaxTensors+1, 0, nil, nil, 0), "tensor count 1048577 exceeds the limit"},
		{"kv count limit", build(3, 0, MaxKVs+1, nil, nil, 0), "metadata count 1048577 exceeds the limit"},
		{"counts vs file size", build(3, 1000, 1000, nil, nil, 0), "1000 metadata pairs and 1000 tensor infos needs"},
		{"huge string length", kv((&raw{}).str("k").u32(uint32(TypeString)).u64(1 << 40)), "string length 1099511627776 exceeds the limit of 16777216 bytes"},
		{"string past end", kv((&raw{}).str("k").u32(uint32(TypeString)).u64(100).zeros(20)), "string needs 100 bytes"},
		{"huge key length", kv((&raw{}).u64(1 << 62).zeros(20)), "key length 4611686018427387904 exceeds the limit"},
		{"empty key", kv((&raw{}).str("").u32(uint32(TypeUint8)).u8(0).zeros(8)), "empty key"},
		{"huge array count", kv((&raw{}).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint32)).u64(1 << 40)), "array length 1099511627776 exceeds the limit of 16777216"},
		{"array count vs file", kv((&raw{}).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint32)).u64(1 << 20).zeros(64)), "array of 1048576 u32 needs 4194304 bytes"},
		{"string array count vs file", kv((&raw{}).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1000).zeros(64)), "array of 1000 string needs 8000 bytes"},
		{"string in array too long", kv((&raw{}).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1).u64(MaxStringLen + 1).zeros(64)), "string 0 length 16777217 exceeds"},
		{"unknown value type", kv((&raw{}).str("k").u32(13).zeros(16)), "kv k (at byte 33): unknown value type 13"},
		{"unknown array element type", kv((&raw{}).str("k").u32(uint32(TypeArray)).u32(99).u64(0)), "unknown array element type 99"},
		{"nesting too deep", kv(nested(MaxDepth + 1)), "arrays nest deeper than 8"},
		{"bad bool", kv((&raw{}).str("k").u32(uint32(TypeBool)).u8(2)), "bool value 2 is neither 0 nor 1"},
		{"bad bool in array", kv((&raw{}).str("k").u32(uint32(TypeArray)).u32(uint32(TypeBool)).u64(2).u8(1).u8(7)), "bool array element 1 is 7"},
		{"duplicate key", build(3, 0, 2, (&raw{}).kvU32("a", 1).kvU32("a", 2).buf, nil, 0), "kv a (at byte 41): duplicate key"},
		{"alignment 0", build(3, 0, 1, (&raw{}).kvU32("general.alignment", 0).buf, nil, 0), "alignment 0 is not a power of two"},
		{"alignment 48", build(3, 0, 1, (&raw{}).kvU32("general.alignment", 48).buf, nil, 0), "alignment 48 is not a power of two"},
		{"alignment u64", build(3, 0, 1, (&raw{}).str("general.alignment").u32(uint32(TypeUint64)).u64(32).buf, nil, 0), "general.alignment (at byte 53): type u64, want u32"},
		{"truncated tensor infos", build(3, 2, 0, nil, append(f32("t", []uint64{8}, 0).buf, f32(strings.Repeat("u", 40), []uint64{8}, 0).buf...), 0)[:24+33+8+40+4], "tensor uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu (at byte 109): dimension needs 8 bytes, only 0 left"},
		{"truncated tensor infos (count)", build(3, 3, 0, nil, f32("t", []uint64{8}, 0).buf, 64), "tensor #1"},
		{"tensor name too long", one(f32(strings.Repeat("x", 64), []uint64{8}, 0), 32), "tensor name length 64 exceeds the limit of 63"},
		{"empty tensor name", one(f32("", []uint64{8}, 0), 32), "empty tensor name"},
		{"duplicate tensor names", build(3, 2, 0, nil, append(f32("t", []uint64{8}, 0).buf, f32("t", []uint64{8}, 32).buf...), 64), "tensor t (at byte 57): duplicate tensor name"},
		{"unknown type", one((&raw{}).tensor("t", ggml.Type(4), []uint64{8}, 0), 32), "tensor t (at byte 45): unknown ggml type 4"},
		{"unknown type 40", one((&raw{}).tensor("t", ggml.Type(40), []uint64{8}, 0), 32), "unknown ggml type 40"},
		{"5 dims", one(f32("t", []uint64{1, 1, 1, 1, 1}, 0), 32), "5 dimensions, want 1 to 4"},
		{"0 dims", one(f32("t", nil, 0), 32), "0 dimensions, want 1 to 4"},
		{"zero dim", one(f32("t", []uint64{8, 0}, 0), 32), "tensor t (at byte 45): dimension 1 is zero"},
		{"negative dim", one(f32("t", []uint64{1 << 63}, 0), 32), "dimension 0 is 9223372036854775808, above the int64 limit"},
		{"element count overflow", one(f32("t", []uint64{1 << 32, 1 << 32}, 0), 32), "element count of shape [4294967296 4294967296] overflows int64"},
		{"byte size overflow", one(f32("t", []uint64{1 << 31, 1 << 31}, 0), 32), "byte size"},
		{"block divisibility", one((&raw{}).tensor("q", ggml.Q4_K, []uint64{100, 2}, 0), 512), "tensor q (at byte 53): row length 100 is not a multiple of the Q4_K block size 256"},
		{"block divisibility Q8_0", one((&raw{}).tensor("q", ggml.Q8_0, []uint64{48}, 0), 512), "row length 48 is not a multiple of the Q8_0 block size 32"},
		{"misaligned offset", one(f32("t", []uint64{8}, 4), 64), "tensor t (at byte 49): offset 4 is not a multiple of the alignment 32"},
		{"offset+size past EOF", one(f32("t", []uint64{16}, 0), 32), "tensor t (at byte 64): data [0, +64) runs past the end of the data section (32 bytes)"},
		{"offset past EOF", one(f32("t", []uint64{1}, 1<<40), 32), "data [1099511627776, +4) runs past the end"},
		{"offset+size overflows", one(f32("t", []uint64{8}, math.MaxUint64-31), 32), "runs past the end"},
		{"data section missing", build(3, 1, 0, nil, f32("t", []uint64{8}, 0).buf, 0)[:61], "data section starts at 64, past the end of the file (61 bytes)"},
		{"overlapping tensors", build(3, 2, 0, nil, append(f32("a", []uint64{16}, 0).buf, f32("b", []uint64{8}, 32).buf...), 64), "tensor b (at byte 96): data at 32 overlaps tensor a [0, +64)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.data, "bad.gguf")
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q\nwant it to contain %q", msg, tt.want)
			}
			if !strings.HasPrefix(msg, "gguf bad.gguf: ") {
				t.Errorf("error %q does not name the file", msg)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %q is not ErrInvalid", msg)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	w, data := sampleWriter()
	path := filepath.Join(dir, "m.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range data {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("missing %s", name)
		}
		if !bytes.Equal(f.Data(ti), want) {
			t.Errorf("%s: data differs", name)
		}
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	name, _ := f.String("general.name")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Metadata is copied out of the map: still readable after Close.
	if strings.Join(toks, ",") != "a,b,,<|im_end|>,ü" || name != "sample" {
		t.Errorf("metadata after Close: %q %q", toks, name)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if d := f.Data(&f.Tensors[0]); d != nil {
		t.Errorf("Data after Close = %d bytes, want nil", len(d))
	}

	// Failures: missing file, tiny file, corrupt file; all name the path.
	bad := filepath.Join(dir, "bad.gguf")
	tiny := filepath.Join(dir, "tiny.gguf")
	os.WriteFile(bad, append([]byte("GGUF"), make([]byte, 100)...), 0o644)
	os.WriteFile(tiny, []byte("GG"), 0o644)
	for _, p := range []string{filepath.Join(dir, "absent.gguf"), tiny, bad, dir} {
		if _, err := Open(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Open(%s) = %v, want an error naming the file", p, err)
		}
	}
	if _, err := Open(bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(bad) = %v, want ErrInvalid", err)
	}
}

func TestValueTypes(t *testing.T) {
	if got := slices.Collect(func(yield func(string) bool) {
		for vt := TypeUint8; vt <= TypeFloat64; vt++ {
			if !yield(vt.String()) {
				return
			}
		}
	}); strings.Join(got, ",") != "u8,i8,u16,i16,u32,i32,f32,bool,string,array,u64,i64,f64" {
		t.Errorf("names %v", got)
	}
	if ValueType(13).String() != "type(13)" || TypeInvalid.String() != "invalid" {
		t.Errorf("invalid type names")
	}
}

func TestLoadReadsIntoMemory(t *testing.T) {
	path := testfix.Path(t, "tiny-qwen3moe-Q8_0.gguf")
	mapped, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	loaded, err := Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	if len(loaded.Tensors) != len(mapped.Tensors) || loaded.Arch() != mapped.Arch() {
		t.Fatalf("Load: %d tensors of %q, Open: %d of %q", len(loaded.Tensors), loaded.Arch(), len(mapped.Tensors), mapped.Arch())
	}
	for i := range mapped.Tensors {
		if !bytes.Equal(loaded.Data(&loaded.Tensors[i]), mapped.Data(&mapped.Tensors[i])) {
			t.Fatalf("tensor %s differs", mapped.Tensors[i].Name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, path); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Load: %v", err)
	}
	if _, err := Load(context.Background(), filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}
