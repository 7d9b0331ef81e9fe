//go:build unix

package gguf

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// pinFile writes a file with two dense tensors around a routed-expert one,
// each spanning several pages, and returns its path and the tensors' data.
func pinFile(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	w := NewWriter()
	w.AddString("general.architecture", "qwen3moe")
	data := map[string][]byte{}
	for i, x := range []struct {
		name string
		n    uint64
	}{{"blk.0.attn_q.weight", 40000}, {"blk.0.ffn_up_exps.weight", 90000}, {"output.weight", 33333}} {
		cb, b := randomData(uint64(i+10), int(x.n*4))
		data[x.name] = b
		w.AddTensor(x.name, ggml.F32, []uint64{x.n}, cb)
	}
	path := filepath.Join(t.TempDir(), "pin.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func dense(t *TensorInfo) bool { return !strings.Contains(t.Name, "_exps.") }

// overwrite replaces every tensor's bytes in the file on disk.
func overwrite(t *testing.T, f *File, path string) map[string][]byte {
	t.Helper()
	fd, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	now := map[string][]byte{}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		_, b := randomData(uint64(100+i), int(ti.Size))
		if _, err := fd.WriteAt(b, f.DataOffset+int64(ti.Offset)); err != nil {
			t.Fatal(err)
		}
		now[ti.Name] = b
	}
	return now
}

func TestPinHoldsDenseTensorsInOwnMemory(t *testing.T) {
	path, want := pinFile(t)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Pin(context.Background(), dense)
	if err != nil {
		t.Fatal(err)
	}
	if n < int64(len(want["blk.0.attn_q.weight"])+len(want["output.weight"])) {
		t.Fatalf("pinned %d bytes, less than the dense tensors", n)
	}
	for name, b := range want {
		ti, _ := f.Tensor(name)
		if !bytes.Equal(f.Data(ti), b) {
			t.Fatalf("%s reads other bytes after Pin", name)
		}
	}
	// The file changes under the map: pinned tensors keep their bytes, the
	// still-mapped expert tensor shows the new ones (away from the pages it
	// shares with its pinned neighbours).
	now := overwrite(t, f, path)
	for name, b := range want {
		ti, _ := f.Tensor(name)
		got := f.Data(ti)
		if dense(ti) {
			if !bytes.Equal(got, b) {
				t.Errorf("pinned %s changed with the file", name)
			}
			continue
		}
		page := os.Getpagesize()
		mid := got[2*page : len(got)-2*page]
		if !bytes.Equal(mid, now[name][2*page:len(got)-2*page]) {
			t.Errorf("mapped %s does not read the file any more", name)
		}
	}
	// Pinning again does nothing.
	if n, err := f.Pin(context.Background(), dense); err != nil || n != 0 {
		t.Fatalf("second Pin: %d bytes, %v", n, err)
	}
}

func TestPinCancelledLeavesFileMapped(t *testing.T) {
	path, want := pinFile(t)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Pin(ctx, dense); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pin with a cancelled context: %v", err)
	}
	for name, b := range want {
		ti, _ := f.Tensor(name)
		if !bytes.Equal(f.Data(ti), b) {
			t.Fatalf("%s reads other bytes after a cancelled Pin", name)
		}
	}
	now := overwrite(t, f, path)
	ti, _ := f.Tensor("blk.0.attn_q.weight")
	if !bytes.Equal(f.Data(ti), now[ti.Name]) {
		t.Fatal("after a cancelled Pin the dense tensor no longer reads the file")
	}
}

func TestPinOfLoadedFileDoesNothing(t *testing.T) {
	path, want := pinFile(t)
	f, err := Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := f.Pin(context.Background(), dense); err != nil || n != 0 {
		t.Fatalf("Pin of a loaded file: %d bytes, %v", n, err)
	}
	ti, _ := f.Tensor("output.weight")
	if !bytes.Equal(f.Data(ti), want[ti.Name]) {
		t.Fatal("data changed")
	}
}
