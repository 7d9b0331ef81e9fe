package gguf

import (
	"encoding/binary"
	"io"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// raw builds GGUF bytes by hand, so tests can express files the Writer
// refuses to produce.
type raw struct {
	buf []byte
}

func (r *raw) u8(v uint8) *raw   { r.buf = append(r.buf, v); return r }
func (r *raw) u32(v uint32) *raw { r.buf = binary.LittleEndian.AppendUint32(r.buf, v); return r }
func (r *raw) u64(v uint64) *raw { r.buf = binary.LittleEndian.AppendUint64(r.buf, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.buf = append(r.buf, s...); return r }
func (r *raw) bytes(b []byte) *raw {
	r.buf = append(r.buf, b...)
	return r
}

// header writes magic, version and counts.
func (r *raw) header(version uint32, nTensors, nKV uint64) *raw {
	r.buf = append(r.buf, "GGUF"...)
	return r.u32(version).u64(nTensors).u64(nKV)
}

// kvU32 writes a u32 pair.
func (r *raw) kvU32(key string, v uint32) *raw { return r.str(key).u32(uint32(TypeUint32)).u32(v) }

// tensor writes a tensor info.
func (r *raw) tensor(name string, typ ggml.Type, dims []uint64, off uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(uint32(typ)).u64(off)
}

// padTo pads with zeros to a multiple of a.
func (r *raw) padTo(a int) *raw {
	for len(r.buf)%a != 0 {
		r.buf = append(r.buf, 0)
	}
	return r
}

func (r *raw) zeros(n int) *raw {
	r.buf = append(r.buf, make([]byte, n)...)
	return r
}

// randomData returns a callback writing n deterministic pseudo-random bytes
// and the bytes themselves.
func randomData(seed uint64, n int) (func(io.Writer) error, []byte) {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return func(w io.Writer) error {
		// Write in uneven pieces to exercise the streaming path.
		for rest := b; len(rest) > 0; {
			k := min(len(rest), 1+len(rest)/3)
			if _, err := w.Write(rest[:k]); err != nil {
				return err
			}
			rest = rest[k:]
		}
		return nil
	}, b
}

// sampleWriter returns a Writer with every value type and a few tensors,
// and the tensors' data by name.
func sampleWriter() (*Writer, map[string][]byte) {
	w := NewWriter()
	w.AddString("general.architecture", "qwen3moe")
	w.AddString("general.name", "sample")
	w.AddUint32("qwen3moe.block_count", 2)
	w.AddUint64("qwen3moe.context_length", 4096)
	w.AddFloat32("qwen3moe.rope.freq_base", 1e6)
	w.AddFloat64("qwen3moe.f64", -2.5)
	w.AddBool("qwen3moe.flag", true)
	w.AddInt32("qwen3moe.neg", -7)
	w.AddInt64("qwen3moe.i64", -1<<40)
	w.AddUint8("qwen3moe.u8", 200)
	w.AddKV("qwen3moe.i8", Int8(-3))
	w.AddKV("qwen3moe.u16", Uint16(65535))
	w.AddKV("qwen3moe.i16", Int16(-300))
	w.AddInt32s("qwen3moe.layers", []int32{1, -2, 3})
	w.AddUint32s("qwen3moe.u32s", []uint32{4, 5})
	w.AddFloat32s("qwen3moe.scales", []float32{0.5, -1})
	w.AddBools("qwen3moe.swa", []bool{true, false, true})
	w.AddKV("qwen3moe.u8s", Uint8s([]uint8{1, 2, 255}))
	w.AddKV("qwen3moe.i8s", Int8s([]int8{-1, 2}))
	w.AddKV("qwen3moe.u16s", Uint16s([]uint16{7}))
	w.AddKV("qwen3moe.i16s", Int16s([]int16{-7}))
	w.AddKV("qwen3moe.u64s", Uint64s([]uint64{1 << 63}))
	w.AddKV("qwen3moe.i64s", Int64s([]int64{-1 << 62}))
	w.AddKV("qwen3moe.f64s", Float64s([]float64{1.25}))
	w.AddKV("qwen3moe.empty", Uint32s(nil))
	w.AddKV("qwen3moe.nested", Arrays([]Value{Strings([]string{"a", "b"}), Arrays([]Value{Uint8s([]uint8{9})})}))
	w.AddString("tokenizer.ggml.model", "gpt2")
	w.AddString("tokenizer.ggml.pre", "qwen2")
	w.AddStrings("tokenizer.ggml.tokens", []string{"a", "b", "", "<|im_end|>", "ü"})
	w.AddStrings("tokenizer.ggml.merges", []string{"a b"})
	w.AddUint32("tokenizer.ggml.eos_token_id", 3)
	w.AddString("tokenizer.chat_template", "{{ messages }}")

	data := map[string][]byte{}
	add := func(name string, typ ggml.Type, dims ...uint64) {
		_, size, err := TensorSize(typ, dims)
		if err != nil {
			panic(err)
		}
		cb, b := randomData(uint64(len(data)), int(size))
		data[name] = b
		w.AddTensor(name, typ, dims, cb)
	}
	add("token_embd.weight", ggml.Q8_0, 64, 5)
	add("output_norm.weight", ggml.F32, 3) // 12 bytes: forces padding
	add("blk.0.ffn_up_exps.weight", ggml.Q4_K, 256, 2, 4)
	add("blk.0.attn_q.weight", ggml.F16, 7, 3)
	return w, data
}
