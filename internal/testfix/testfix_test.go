package testfix

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFixturesDir(t *testing.T) {
	dir := FixturesDir(t)
	if !filepath.IsAbs(dir) {
		t.Fatalf("FixturesDir = %q, want an absolute path", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Fatalf("fixtures folder has no README.md: %v", err)
	}
}

func TestModuleRoot(t *testing.T) {
	tmp := t.TempDir()
	deep := filepath.Join(tmp, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "a", "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := moduleRoot(deep)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(tmp, "a"); got != want {
		t.Fatalf("moduleRoot = %q, want %q", got, want)
	}
}
