package testfix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	for _, name := range append([]string{"README.md"}, GGUFs...) {
		p := Path(t, name)
		if !filepath.IsAbs(p) || filepath.Base(filepath.Dir(p)) != "testdata" {
			t.Errorf("Path(%q) = %q, want an absolute path in testdata/", name, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gguf") && string(b[:4]) != "GGUF" {
			t.Errorf("%s does not start with the GGUF magic", name)
		}
	}
}

func TestPathErrors(t *testing.T) {
	for _, name := range []string{"", "no-such-fixture.gguf", "../go.mod", "sub/x.gguf"} {
		if p, err := path(name); err == nil {
			t.Errorf("path(%q) = %q, want an error", name, p)
		}
	}
}

// A missing fixture fails the test (never skips it).
func TestPathMissingFails(t *testing.T) {
	ft := &fatalTB{TB: t}
	func() {
		defer func() { recover() }()
		Path(ft, "no-such-fixture.gguf")
	}()
	if !ft.failed || ft.skipped {
		t.Errorf("missing fixture: failed=%v skipped=%v, want a failure", ft.failed, ft.skipped)
	}
}

type fatalTB struct {
	testing.TB
	failed, skipped bool
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
func (f *fatalTB) Skipf(string, ...any) {
	f.skipped = true
	panic("skip")
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
