package model_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/strata-llm/strata/"

// TestArchitecturesUseOnlyTheSeams: no architecture package imports the CPU
// backend or the kernels (only the backend interface and the shared
// blocks), and none imports another architecture.
func TestArchitecturesUseOnlyTheSeams(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "blocks" && e.Name() != "testdata" && e.Name() != "internal" { // internal: test helpers shared by the architectures
			archs = append(archs, e.Name())
		}
	}
	if len(archs) == 0 {
		t.Fatal("no architecture packages found under engine/model")
	}
	forbidden := map[string]string{
		module + "engine/cpu":   "the CPU backend",
		module + "engine/quant": "the kernels",
	}
	for _, a := range archs {
		forbidden[module+"engine/model/"+a] = "another architecture"
	}
	for _, a := range archs {
		files, _ := filepath.Glob(filepath.Join(a, "*.go"))
		checked := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			pf, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, imp := range pf.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path == module+"engine/model/"+a {
					continue
				}
				for bad, what := range forbidden {
					if path == bad || strings.HasPrefix(path, bad+"/") {
						t.Errorf("%s imports %s (%s)", f, path, what)
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("architecture %s has no Go files", a)
		}
	}
}
