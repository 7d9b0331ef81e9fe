package llamasrc_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/strata-llm/strata/internal/llamasrc"
)

func TestReadFile(t *testing.T) {
	if _, err := llamasrc.Bundle("."); errors.Is(err, llamasrc.ErrNoBundle) && os.Getenv("CI") != "true" {
		t.Skip(err) // CI installs the oracle and must run this
	}
	b, err := llamasrc.ReadFile(context.Background(), "ggml/src/ggml-common.h")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("GGML_TABLE_BEGIN(uint64_t, iq2xxs_grid, 256)")) {
		t.Errorf("ggml-common.h (%d bytes) lacks the iq2xxs grid", len(b))
	}
	if _, err := llamasrc.ReadFile(context.Background(), "no/such/file.h"); err == nil {
		t.Error("a missing file read without an error")
	}
}

func TestBundleMissing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/go.mod", []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := llamasrc.Bundle(dir); !errors.Is(err, llamasrc.ErrNoBundle) {
		t.Errorf("Bundle in a module without the oracle: %v, want ErrNoBundle", err)
	}
}
