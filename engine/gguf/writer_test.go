package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

func TestWriterRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 64, 1} { // 0: default
		t.Run(fmt.Sprint("align=", align), func(t *testing.T) {
			w := NewWriter()
			if align != 0 {
				w.AddUint32(KeyAlignment, align)
			}
			src, data := sampleWriter()
			for _, kv := range src.kvs {
				w.AddKV(kv.Key, kv.Value)
			}
			for _, tt := range src.tensors {
				w.AddTensor(tt.info.Name, tt.info.Type, tt.info.Dims, tt.data)
			}
			var buf bytes.Buffer
			n, err := w.WriteTo(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(buf.Len()) {
				t.Errorf("WriteTo returned %d, wrote %d", n, buf.Len())
			}
			f, err := Parse(buf.Bytes(), "rt")
			if err != nil {
				t.Fatal(err)
			}
			wantAlign := uint64(align)
			if align == 0 {
				wantAlign = DefaultAlignment
			}
			if f.Alignment != wantAlign || f.Version != 3 {
				t.Errorf("alignment %d version %d", f.Alignment, f.Version)
			}
			if f.Size%int64(wantAlign) != 0 {
				t.Errorf("file size %d not padded to %d", f.Size, wantAlign)
			}
			if !equalKVs(f.KV, w.kvs) {
				t.Errorf("metadata differs after round trip:\n got %v\nwant %v", f.KV, w.kvs)
			}
			if len(f.Tensors) != len(data) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(data))
			}
			for i, ti := range f.Tensors {
				if !reflect.DeepEqual(ti, w.tensors[i].info) {
					t.Errorf("tensor %d: %+v, want %+v", i, ti, w.tensors[i].info)
				}
				if !bytes.Equal(f.Data(&ti), data[ti.Name]) {
					t.Errorf("tensor %s: data differs", ti.Name)
				}
			}
		})
	}
}

func TestWriterDataSizeChecked(t *testing.T) {
	tests := []struct {
		name string
		cb   func(io.Writer) error
		want string
	}{
		{"short", func(w io.Writer) error { _, err := w.Write(make([]byte, 31)); return err }, "wrote 31 bytes, want 32"},
		{"long", func(w io.Writer) error { _, err := w.Write(make([]byte, 33)); return err }, "data exceeds the tensor's size"},
		{"long, error ignored", func(w io.Writer) error { w.Write(make([]byte, 40)); return nil }, "wrote more than 32 bytes"},
		{"callback error", func(io.Writer) error { return errors.New("boom") }, "tensor t: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter()
			w.AddString("general.architecture", "x")
			w.AddTensor("t", ggml.F32, []uint64{8}, tt.cb)
			_, err := w.WriteTo(io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteTo = %v, want error containing %q", err, tt.want)
			}

			// WriteFile leaves neither the target nor a temp file behind,
			// and an existing file untouched.
			dir := t.TempDir()
			path := filepath.Join(dir, "out.gguf")
			if err := w.WriteFile(path); err == nil {
				t.Fatal("WriteFile succeeded")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
			os.WriteFile(path, []byte("old"), 0o644)
			if err := w.WriteFile(path); err == nil {
				t.Fatal("WriteFile succeeded")
			}
			if b, _ := os.ReadFile(path); string(b) != "old" {
				t.Errorf("existing file changed to %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}

func TestWriterRejects(t *testing.T) {
	ok := func(w io.Writer) error { _, err := w.Write(make([]byte, 32)); return err }
	tests := []struct {
		name string
		add  func(w *Writer)
		want string
	}{
		{"duplicate key", func(w *Writer) { w.AddUint32("a", 1); w.AddUint32("a", 2) }, "duplicate key a"},
		{"empty key", func(w *Writer) { w.AddUint32("", 1) }, "length 0"},
		{"zero value", func(w *Writer) { w.AddKV("a", Value{}) }, "invalid value"},
		{"alignment type", func(w *Writer) { w.AddUint64(KeyAlignment, 32) }, "must be a u32 power of two"},
		{"alignment value", func(w *Writer) { w.AddUint32(KeyAlignment, 24) }, "must be a u32 power of two"},
		{"alignment late", func(w *Writer) {
			w.AddTensor("t", ggml.F32, []uint64{8}, ok)
			w.AddUint32(KeyAlignment, 64)
		}, "before the first tensor"},
		{"nested non-array", func(w *Writer) { w.AddKV("a", Arrays([]Value{Uint8(1)})) }, "element 0 of an array of arrays is a u8"},
		{"too deep", func(w *Writer) {
			v := Uint8s(nil)
			for range MaxDepth {
				v = Arrays([]Value{v})
			}
			w.AddKV("a", v)
		}, "nest deeper"},
		{"duplicate tensor", func(w *Writer) {
			w.AddTensor("t", ggml.F32, []uint64{8}, ok)
			w.AddTensor("t", ggml.F32, []uint64{8}, ok)
		}, "duplicate tensor t"},
		{"long name", func(w *Writer) { w.AddTensor(strings.Repeat("n", 64), ggml.F32, []uint64{8}, ok) }, "name length 64"},
		{"nil data", func(w *Writer) { w.AddTensor("t", ggml.F32, []uint64{8}, nil) }, "nil data callback"},
		{"unknown type", func(w *Writer) { w.AddTensor("t", ggml.Type(5), []uint64{8}, ok) }, "unknown ggml type 5"},
		{"zero dim", func(w *Writer) { w.AddTensor("t", ggml.F32, []uint64{8, 0}, ok) }, "dimension 1 is zero"},
		{"5 dims", func(w *Writer) { w.AddTensor("t", ggml.F32, []uint64{1, 1, 1, 1, 1}, ok) }, "5 dimensions"},
		{"block size", func(w *Writer) { w.AddTensor("t", ggml.Q6_K, []uint64{128}, ok) }, "not a multiple of the Q6_K block size 256"},
		{"overflow", func(w *Writer) { w.AddTensor("t", ggml.F32, []uint64{1 << 40, 1 << 40}, ok) }, "overflows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter()
			tt.add(w)
			if err := w.Err(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Err = %v, want error containing %q", err, tt.want)
			}
			if _, err := w.WriteTo(io.Discard); err == nil {
				t.Fatal("WriteTo succeeded after an Add error")
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	os.WriteFile(path, []byte("old contents"), 0o644)
	w, data := sampleWriter()
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %v, want only m.gguf", entries)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Tensors) != len(data) {
		t.Errorf("%d tensors", len(f.Tensors))
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
}

// TestWriterStreams checks that WriteTo does not hold tensor data: a
// tensor larger than the writer's buffer passes through in pieces.
func TestWriterStreams(t *testing.T) {
	const n = 8 << 20 // 8 MiB of F32: 2M elements
	w := NewWriter()
	pieces := 0
	w.AddTensor("big", ggml.F32, []uint64{1 << 21}, func(dst io.Writer) error {
		chunk := make([]byte, 64<<10)
		for i := 0; i < n/len(chunk); i++ {
			if _, err := dst.Write(chunk); err != nil {
				return err
			}
			pieces++
		}
		return nil
	})
	cw := &countWriter{w: io.Discard}
	if _, err := w.WriteTo(cw); err != nil {
		t.Fatal(err)
	}
	if cw.n < n || pieces != n/(64<<10) {
		t.Errorf("wrote %d bytes in %d pieces", cw.n, pieces)
	}
}

func equalKVs(a, b []KV) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !a[i].Value.Equal(b[i].Value) {
			return false
		}
	}
	return true
}

func TestValueEqual(t *testing.T) {
	tests := []struct {
		a, b Value
		want bool
	}{
		{Uint32(1), Uint32(1), true},
		{Uint32(1), Int32(1), false},
		{Uint32(1), Uint32(2), false},
		{String("a"), String("a"), true},
		{Uint32s(nil), Uint32s([]uint32{}), true},
		{Uint32s(nil), Int32s(nil), false},
		{Strings([]string{"a", "b"}), Strings([]string{"ab", ""}), false},
		{Arrays([]Value{Uint8s([]uint8{1})}), Arrays([]Value{Uint8s([]uint8{1})}), true},
		{Arrays([]Value{Uint8s([]uint8{1})}), Arrays([]Value{Int8s([]int8{1})}), false},
		{Value{}, Value{}, true},
		{Value{}, Uint8(0), false},
	}
	for _, tt := range tests {
		if got := tt.a.Equal(tt.b); got != tt.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
