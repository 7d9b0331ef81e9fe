package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/internal/testfix"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the FuzzParse seed corpus in testdata/fuzz/FuzzParse")

// seedFiles returns small valid GGUF files: hand-built, from the Writer,
// and (if the shared fixtures are present) a fixture's real metadata with
// two of its small tensors.
func seedFiles(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{"minimal": validFile()}
	write := func(name string, w *Writer) {
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatalf("seed %s: %v", name, err)
		}
		seeds[name] = buf.Bytes()
	}
	w, _ := sampleWriter()
	write("sample", w)
	write("empty", NewWriter())
	w = NewWriter()
	w.AddUint32(KeyAlignment, 8)
	w.AddString("general.architecture", "x")
	cb, _ := randomData(7, 18)
	w.AddTensor("q", ggml.Q4_0, []uint64{32}, cb)
	cb, _ = randomData(8, 6)
	w.AddTensor("h", ggml.F16, []uint64{1, 3}, cb)
	write("align8", w)

	if *updateCorpus {
		f, err := Open(testfix.Path(t, testfix.Qwen3MoEQ4_K_M))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w := NewWriter()
		for _, kv := range f.KV {
			w.AddKV(kv.Key, kv.Value)
		}
		for _, name := range []string{"output_norm.weight", "blk.0.attn_k_norm.weight"} {
			ti, _ := f.Tensor(name)
			d := f.Data(ti)
			w.AddTensor(ti.Name, ti.Type, ti.Dims, func(w io.Writer) error { _, err := w.Write(d); return err })
		}
		write("fixture-metadata", w)
	}
	return seeds
}

// TestUpdateFuzzCorpus rewrites the committed seed corpus when run with
// -update-corpus; otherwise it checks the corpus is present.
func TestUpdateFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	if !*updateCorpus {
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			t.Fatalf("seed corpus %s missing (regenerate with -update-corpus): %v", dir, err)
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range seedFiles(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		sum := sha256.Sum256(data)
		path := filepath.Join(dir, fmt.Sprintf("seed-%s-%x", name, sum[:4]))
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzParse checks that Parse never panics, that every error is a
// FormatError, and that every file it accepts is internally consistent and
// survives a round trip through the Writer.
func FuzzParse(f *testing.F) {
	for _, data := range seedFiles(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error is not ErrInvalid: %v", err)
			}
			return
		}
		checkFile(t, g, data)
	})
}

func checkFile(t *testing.T, g *File, data []byte) {
	if g.DataOffset < 0 || uint64(g.DataOffset)%g.Alignment != 0 {
		t.Fatalf("data offset %d, alignment %d", g.DataOffset, g.Alignment)
	}
	for i := range g.Tensors {
		ti := &g.Tensors[i]
		d := g.Data(ti)
		if uint64(len(d)) != ti.Size || ti.Offset%g.Alignment != 0 {
			t.Fatalf("tensor %s: %d bytes at %d, want %d", ti.Name, len(d), ti.Offset, ti.Size)
		}
		if _, err := g.Expect(ti.Name, ti.Dims...); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range g.KV {
		g.Uint(kv.Key)
		g.Int(kv.Key)
		g.Float(kv.Key)
		g.Ints(kv.Key)
		g.Floats(kv.Key)
		_ = kv.Value.String()
	}
	r := Inspect(g)
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("report JSON: %v", err)
	}
	if err := r.WriteText(io.Discard); err != nil {
		t.Fatal(err)
	}

	// Round trip: write the same metadata and tensors, parse again.
	w := NewWriter()
	for _, kv := range g.KV {
		w.AddKV(kv.Key, kv.Value)
	}
	for i := range g.Tensors {
		ti := &g.Tensors[i]
		d := g.Data(ti)
		w.AddTensor(ti.Name, ti.Type, ti.Dims, func(w io.Writer) error { _, err := w.Write(d); return err })
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatalf("writer rejects what the reader accepted: %v", err)
	}
	h, err := Parse(buf.Bytes(), "rewritten")
	if err != nil {
		t.Fatalf("rewritten file does not parse: %v", err)
	}
	if !equalKVs(g.KV, h.KV) || len(g.Tensors) != len(h.Tensors) {
		t.Fatalf("metadata changed in the round trip")
	}
	for i := range g.Tensors {
		a, b := &g.Tensors[i], &h.Tensors[i]
		if a.Name != b.Name || a.Type != b.Type || !slices.Equal(a.Dims, b.Dims) || a.Size != b.Size || !bytes.Equal(g.Data(a), h.Data(b)) {
			t.Fatalf("tensor %s changed in the round trip", a.Name)
		}
	}
}
