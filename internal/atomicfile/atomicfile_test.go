package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.json")
	tests := []struct {
		data string
		perm os.FileMode
	}{
		{`{"v":1}`, 0o600},
		{`{"v":2, "longer": true}`, 0o600},
		{``, 0o644},
	}
	for _, tt := range tests {
		if err := WriteFile(path, []byte(tt.data), tt.perm); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tt.data {
			t.Fatalf("read %q %v, want %q", got, err, tt.data)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tt.perm {
			t.Errorf("mode %v, want %v", fi.Mode().Perm(), tt.perm)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Fatalf("folder holds %d entries, want only the file: %v", len(ents), ents)
	}
}

func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The target is a non-empty folder: the rename fails, nothing changes.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(blocked, []byte("new"), 0o600); err == nil {
		t.Fatal("writing over a non-empty folder succeeded")
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("writing into a missing folder succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("old file changed: %q", got)
	}
}
