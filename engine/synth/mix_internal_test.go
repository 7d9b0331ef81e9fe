package synth

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// TestMixturesMatchLlamaQuantize checks every file type's mixture, tensor
// by tensor, against the types llama.cpp's own llama-quantize chose for the
// same models (testdata/llama-quantize-mixtures.txt, written by
// scripts/llama-quantize-table.sh from llama-quantize --dry-run on the F16
// versions of the models, with and without an importance matrix): the
// same tensor names, each of the same type, including the fallbacks for
// rows that are not whole 256-value blocks (moe8odd's 160-wide experts).
func TestMixturesMatchLlamaQuantize(t *testing.T) {
	f, err := os.Open("testdata/llama-quantize-mixtures.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	models := map[string][]string{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] == "model" {
			models[fields[1]] = fields[2:]
			continue
		}
		if len(fields) < 4 || (fields[0] != "mix" && fields[0] != "imatrix") {
			t.Fatalf("bad line %q", sc.Text())
		}
		lines++
		model, ftype := fields[1], fields[2]
		seen[ftype] = true
		args := append(append([]string(nil), models[model]...), "--quant", ftype, "--mix", "--out", "unused.gguf")
		if fields[0] == "imatrix" {
			args = append(args, "--imatrix")
		}
		cfg, _, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatalf("%s %s: %v", model, ftype, err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s %s: %v", model, ftype, err)
		}
		ts := plan(&cfg)
		assignTypes(&cfg, ts)
		got := map[string]ggml.Type{}
		for _, ti := range ts {
			got[ti.name] = ti.typ
		}
		name := fields[0] + " " + model + " " + ftype
		if len(got) != len(fields)-3 {
			t.Errorf("%s: %d tensors, llama-quantize lists %d", name, len(got), len(fields)-3)
		}
		for _, kv := range fields[3:] {
			tn, ty, _ := strings.Cut(kv, "=")
			want, err := ggml.ParseType(ty)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, kv, err)
			}
			if g, ok := got[tn]; !ok {
				t.Errorf("%s: no tensor %s", name, tn)
			} else if g != want {
				t.Errorf("%s: %s is %s, llama-quantize made it %s", name, tn, g, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range Mixes {
		if !seen[m] {
			t.Errorf("mixture %s is not in the table", m)
		}
	}
	t.Logf("%d model × file type combinations checked", lines)
}
