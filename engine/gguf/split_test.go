package gguf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/internal/testfix"
)

// splitFixture splits the Q4_K_M fixture (51 tensors) into parts of at most
// maxTensors tensors in a temporary folder.
func splitFixture(t *testing.T, maxTensors int) (src *File, parts []string) {
	t.Helper()
	src, err := Open(testfix.Path(t, testfix.Qwen3MoEQ4_K_M))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	parts, err = WriteSplit(context.Background(), src, filepath.Join(t.TempDir(), "tiny"), SplitOptions{MaxTensors: maxTensors})
	if err != nil {
		t.Fatal(err)
	}
	return src, parts
}

// Open and Load of the first part give the whole model: the metadata of
// the original, every tensor with the same shape, type and bytes.
func TestSplitRoundTrip(t *testing.T) {
	src, parts := splitFixture(t, 20)
	if len(parts) != 3 || filepath.Base(parts[0]) != "tiny-00001-of-00003.gguf" || filepath.Base(parts[2]) != "tiny-00003-of-00003.gguf" {
		t.Fatalf("parts %v", parts)
	}
	var total int64
	for i, p := range parts {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
		alone, err := OpenPart(p)
		if err != nil {
			t.Fatalf("part %d alone: %v", i+1, err)
		}
		if no, _ := alone.Uint(KeySplitNo); int(no) != i {
			t.Errorf("part %d: split.no %d", i+1, no)
		}
		if want := min(20, len(src.Tensors)-20*i); len(alone.Tensors) != want {
			t.Errorf("part %d holds %d tensors, want %d", i+1, len(alone.Tensors), want)
		}
		alone.Close()
	}
	open := map[string]func(string) (*File, error){
		"Open": Open,
		"Load": func(p string) (*File, error) { return Load(context.Background(), p) },
	}
	for name, openFn := range open {
		t.Run(name, func(t *testing.T) {
			f, err := openFn(parts[0])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Size != total || !slices.Equal(f.SplitParts(), parts) {
				t.Errorf("Size %d (parts total %d), parts %v", f.Size, total, f.SplitParts())
			}
			var keys []string
			for _, kv := range f.KV {
				if !strings.HasPrefix(kv.Key, "split.") {
					keys = append(keys, kv.Key)
					if want, _ := src.Get(kv.Key); want.String() != kv.Value.String() {
						t.Errorf("%s = %v, want %v", kv.Key, kv.Value, want)
					}
				}
			}
			if len(keys) != len(src.KV) {
				t.Errorf("%d metadata keys besides split.*, the original has %d", len(keys), len(src.KV))
			}
			if len(f.Tensors) != len(src.Tensors) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(src.Tensors))
			}
			for i := range src.Tensors {
				a, b := &src.Tensors[i], &f.Tensors[i]
				got, ok := f.Tensor(a.Name)
				if !ok || got != b || b.Name != a.Name || b.Type != a.Type || !slices.Equal(a.Dims, b.Dims) || b.Part != i/20 {
					t.Fatalf("tensor %d: %+v, want %+v in part %d", i, b, a, i/20)
				}
				if !bytes.Equal(f.Data(b), src.Data(a)) {
					t.Fatalf("tensor %s: data differs", a.Name)
				}
			}
			// Splitting the split model again gives the same files.
			again, err := WriteSplit(context.Background(), f, filepath.Join(t.TempDir(), "tiny"), SplitOptions{MaxTensors: 20})
			if err != nil {
				t.Fatal(err)
			}
			for i := range again {
				a, _ := os.ReadFile(parts[i])
				b, _ := os.ReadFile(again[i])
				if !bytes.Equal(a, b) {
					t.Errorf("re-split part %d differs", i+1)
				}
			}
		})
	}
}

func TestSplitBySize(t *testing.T) {
	src, err := Open(testfix.Path(t, testfix.Qwen3MoEQ8_0))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	const limit = 3 << 20
	parts, err := WriteSplit(context.Background(), src, filepath.Join(t.TempDir(), "m"), SplitOptions{MaxBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	for _, p := range parts {
		f, err := OpenPart(p)
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, tt := range f.Tensors {
			n += pad(tt.Size, DefaultAlignment)
		}
		if n > limit && len(f.Tensors) > 1 {
			t.Errorf("%s: %d bytes of tensors over %d tensors, limit %d", p, n, len(f.Tensors), limit)
		}
		f.Close()
	}
	if _, err := WriteSplit(context.Background(), src, "x", SplitOptions{}); err == nil {
		t.Error("WriteSplit without a limit succeeded")
	}
}

// A split model opens only whole, from its first part, with parts that
// agree; every other case is a clear error and leaves nothing open.
func TestSplitErrors(t *testing.T) {
	_, parts := splitFixture(t, 20)

	copyTo := func(t *testing.T, names map[int]string) string {
		t.Helper()
		d := t.TempDir()
		for i, p := range parts {
			name := filepath.Base(p)
			if n, ok := names[i]; ok {
				name = n
			}
			if name == "" {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	tests := []struct {
		name  string
		path  func(t *testing.T) string
		want  string
		isFmt bool
	}{
		{"second part", func(*testing.T) string { return parts[1] }, "open " + parts[0], true},
		{"missing part", func(t *testing.T) string {
			return filepath.Join(copyTo(t, map[int]string{2: ""}), "tiny-00001-of-00003.gguf")
		}, "part 3 of 3", false},
		{"parts swapped", func(t *testing.T) string {
			return filepath.Join(copyTo(t, map[int]string{1: "tiny-00003-of-00003.gguf", 2: "tiny-00002-of-00003.gguf"}), "tiny-00001-of-00003.gguf")
		}, "says it is part 3 of 3, want part 2 of 3", true},
		{"first part renamed", func(t *testing.T) string {
			return filepath.Join(copyTo(t, map[int]string{0: "tiny.gguf"}), "tiny.gguf")
		}, "does not end in", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, open := range []func(string) (*File, error){Open, func(p string) (*File, error) { return Load(context.Background(), p) }} {
				f, err := open(tc.path(t))
				if err == nil {
					f.Close()
					t.Fatal("opened")
				}
				if !strings.Contains(err.Error(), tc.want) || (tc.isFmt && !errors.Is(err, ErrInvalid)) {
					t.Errorf("error %q, want %q (ErrInvalid: %v)", err, tc.want, tc.isFmt)
				}
			}
		})
	}
}

// The split keys are validated as llama.cpp reads them.
func TestSplitKeys(t *testing.T) {
	file := func(kvs func(w *Writer)) []byte {
		w := NewWriter()
		kvs(w)
		fn, _ := randomData(1, 32*4)
		w.AddTensor("a", ggml.F32, []uint64{32}, fn)
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	tests := []struct {
		name string
		kvs  func(w *Writer)
		want string // "" parses
	}{
		{"none", func(w *Writer) {}, ""},
		{"merged (count 0)", func(w *Writer) {
			w.AddKV(KeySplitNo, Uint16(0))
			w.AddKV(KeySplitCount, Uint16(0))
			w.AddKV(KeySplitTensors, Int32(1))
		}, ""},
		{"one part", func(w *Writer) { w.AddKV(KeySplitCount, Uint16(1)) }, ""},
		{"part 2 of 2", func(w *Writer) {
			w.AddKV(KeySplitNo, Uint16(1))
			w.AddKV(KeySplitCount, Uint16(2))
			w.AddKV(KeySplitTensors, Int32(2))
		}, ""},
		{"count u32", func(w *Writer) { w.AddKV(KeySplitCount, Uint32(2)) }, "kv split.count"},
		{"no missing", func(w *Writer) {
			w.AddKV(KeySplitCount, Uint16(2))
			w.AddKV(KeySplitTensors, Int32(2))
		}, "kv split.no"},
		{"no out of range", func(w *Writer) {
			w.AddKV(KeySplitNo, Uint16(2))
			w.AddKV(KeySplitCount, Uint16(2))
			w.AddKV(KeySplitTensors, Int32(2))
		}, "part 2 of 2"},
		{"tensors i64", func(w *Writer) {
			w.AddKV(KeySplitNo, Uint16(0))
			w.AddKV(KeySplitCount, Uint16(2))
			w.AddKV(KeySplitTensors, Int64(2))
		}, "type i64, want i32"},
		{"tensors too few", func(w *Writer) {
			w.AddKV(KeySplitNo, Uint16(0))
			w.AddKV(KeySplitCount, Uint16(2))
			w.AddKV(KeySplitTensors, Int32(0))
		}, "0 tensors in all parts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(file(tc.kvs), tc.name)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}

	// The whole model must hold split.tensors.count tensors, each once.
	dir := t.TempDir()
	write := func(name string, no, count, total int, tensors ...string) {
		w := NewWriter()
		w.AddKV(KeySplitNo, Uint16(uint16(no)))
		w.AddKV(KeySplitCount, Uint16(uint16(count)))
		w.AddKV(KeySplitTensors, Int32(int32(total)))
		for _, n := range tensors {
			fn, _ := randomData(2, 32*4)
			w.AddTensor(n, ggml.F32, []uint64{32}, fn)
		}
		if err := w.WriteFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("a-00001-of-00002.gguf", 0, 2, 3, "x")
	write("a-00002-of-00002.gguf", 1, 2, 3, "y")
	if _, err := Open(filepath.Join(dir, "a-00001-of-00002.gguf")); err == nil || !strings.Contains(err.Error(), "3 tensors expected, the 2 parts hold 2") {
		t.Errorf("too few tensors: %v", err)
	}
	write("b-00001-of-00002.gguf", 0, 2, 2, "x")
	write("b-00002-of-00002.gguf", 1, 2, 2, "x")
	if _, err := Open(filepath.Join(dir, "b-00001-of-00002.gguf")); err == nil || !strings.Contains(err.Error(), "tensor x is also in an earlier part") {
		t.Errorf("duplicate tensor: %v", err)
	}
	write("c-00001-of-00002.gguf", 0, 2, 2, "x")
	write("c-00002-of-00002.gguf", 1, 2, 3, "y")
	if _, err := Open(filepath.Join(dir, "c-00001-of-00002.gguf")); err == nil || !strings.Contains(err.Error(), "says the model has 3 tensors") {
		t.Errorf("parts disagree on the count: %v", err)
	}
}

// WriteSplit writes the same bytes as llama.cpp's gguf-split (the build of
// the oracle's llama.cpp): the sha256 of each part gguf-split wrote from
// the fixtures, with `--split-max-tensors 20` and `--split-max-size 3M`.
func TestSplitMatchesGGUFSplit(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		opts    SplitOptions
		sums    []string
	}{
		{testfix.Qwen3MoEQ4_K_M, SplitOptions{MaxTensors: 20}, []string{
			"a31d0c7e56f6daf8396de10cc61055dc1bea25fe210e26f8952a3efe0bc25145",
			"291719ef65031dd374b3b8966f832681547ec5116cbd07167f28a1ed338d20a8",
			"aac7c4d801d1ae3ae639955806318515c42ef81b3d186c7308d05fa79039e7c4",
		}},
		{testfix.Qwen3NextQ8_0, SplitOptions{MaxBytes: 3_000_000}, []string{
			"4aff559df141949ca12cb603896dfbad2bf462cdf2c08ec6778aa14abd26849e",
			"966024c2632d264873b32e864c5df22f79fa7a4bfdcd8adfacd801f76ca88bb0",
			"1e36f5d2c1acf1fd18e96af40180bdfbebe713ee1b8758263cf110577a0faf0e",
			"e4c3e9a7444f9dd8276048b1e7f5bc38fcd4e93c2f2a5d8585e5e25d4a4d5b3a",
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			src, err := Open(testfix.Path(t, tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			parts, err := WriteSplit(context.Background(), src, filepath.Join(t.TempDir(), "m"), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != len(tc.sums) {
				t.Fatalf("%d parts, gguf-split wrote %d", len(parts), len(tc.sums))
			}
			for i, p := range parts {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != tc.sums[i] {
					t.Errorf("part %d: sha256 %s, gguf-split's %s", i+1, got, tc.sums[i])
				}
			}
		})
	}
}

// Location names the part holding each tensor and its offset there.
func TestSplitLocation(t *testing.T) {
	_, parts := splitFixture(t, 20)
	f, err := Open(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range f.Tensors {
		tt := &f.Tensors[i]
		path, off, size := f.Location(tt)
		st, err := os.Stat(path)
		if err != nil || path != parts[tt.Part] || size != st.Size() {
			t.Fatalf("%s: Location %s (size %d), want %s (size %d)", tt.Name, path, size, parts[tt.Part], st.Size())
		}
		b, _ := os.ReadFile(path)
		if !bytes.Equal(b[off:off+int64(tt.Size)], f.Data(tt)) {
			t.Fatalf("%s: the bytes at %s+%d are not its data", tt.Name, path, off)
		}
	}
}
