package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestRotateKeepsNFiles(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, "strata.log", 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := fmt.Fprintf(r, "line %02d %s\n", i, strings.Repeat("x", 30)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	want := []string{"strata.log", "strata.log.1", "strata.log.2"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	for _, n := range names {
		fi, _ := os.Stat(filepath.Join(dir, n))
		if fi.Size() > 100 {
			t.Errorf("%s is %d bytes, limit 100", n, fi.Size())
		}
	}
	cur, _ := os.ReadFile(filepath.Join(dir, "strata.log"))
	if !strings.Contains(string(cur), "line 19") {
		t.Errorf("newest line not in current file: %q", cur)
	}
	old, _ := os.ReadFile(filepath.Join(dir, "strata.log.2"))
	if strings.Contains(string(old), "line 00") {
		t.Error("oldest lines should have been dropped")
	}
}

func TestAppendsAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		r, err := Open(dir, "a.log", 1<<20, 1)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(r, "run %d\n", i)
		r.Close()
	}
	b, _ := os.ReadFile(filepath.Join(dir, "a.log"))
	if string(b) != "run 0\nrun 1\n" {
		t.Errorf("got %q", b)
	}
	if _, err := Open(dir, "b.log", 0, 1); err == nil {
		t.Error("zero max size accepted")
	}
}
