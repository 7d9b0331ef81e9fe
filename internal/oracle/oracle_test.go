package oracle_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-llm/strata/internal/oracle"
	"github.com/strata-llm/strata/internal/testfix"
)

func fixture(t *testing.T) string {
	return testfix.Path(t, "tiny-qwen3moe-Q8_0.gguf")
}

// TestFixture runs every op kind against a fixture in one process and checks
// them against each other: the greedy continuation must be the argmax of the
// evaluated distributions, full-vocabulary probabilities must sum to 1.
func TestFixture(t *testing.T) {
	o := oracle.Require(t)
	o.Threads = 2
	model := fixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	texts := []string{"Hello world", "<|im_start|>user\nhi<|im_end|>", "héllo 世界 🙂", ""}
	prompt := []int32{10, 200, 300, 40, 5}
	res, err := o.Run(ctx, model,
		oracle.Tokenize{Texts: texts, ParseSpecial: true},
		oracle.Tokenize{Texts: texts[1:2], ParseSpecial: false},
		oracle.Tokenize{Texts: texts[:1], AddSpecial: true, ParseSpecial: true},
		oracle.Eval{Tokens: prompt, TopK: 1 << 20},
		oracle.Greedy{Tokens: prompt, N: 3},
	)
	if err != nil {
		t.Fatal(err)
	}

	tok := res[0].Tokens
	if len(tok) != len(texts) {
		t.Fatalf("got %d token lists for %d texts", len(tok), len(texts))
	}
	if len(tok[3]) != 0 {
		t.Errorf("empty text gave %v", tok[3])
	}
	// <|im_start|> and <|im_end|> are single control tokens when special
	// tokens are parsed, and plain text otherwise.
	special := tok[1]
	if len(special) < 3 || special[0] == special[len(special)-1] {
		t.Errorf("special tokens: %v", special)
	}
	if plain := res[1].Tokens[0]; len(plain) <= len(special) || plain[0] == special[0] {
		t.Errorf("with parseSpecial=false got %v, with true %v", plain, special)
	}
	// Qwen3 files have add_bos_token = false: add_special changes nothing.
	if a, b := res[2].Tokens[0], tok[0]; !equal(a, b) {
		t.Errorf("addSpecial: %v, without: %v", a, b)
	}

	ev := res[3]
	if ev.Vocab != 1024 {
		t.Errorf("vocab %d, want 1024", ev.Vocab)
	}
	if len(ev.Probs) != len(prompt) {
		t.Fatalf("%d positions for %d tokens", len(ev.Probs), len(prompt))
	}
	for i, pos := range ev.Probs {
		if len(pos) != ev.Vocab {
			t.Fatalf("position %d: %d candidates, want the whole vocabulary", i, len(pos))
		}
		sum := 0.0
		for _, p := range pos {
			sum += p.P
		}
		if math.Abs(sum-1) > 1e-3 {
			t.Errorf("position %d: probabilities sum to %v", i, sum)
		}
	}
	g := res[4].Greedy
	if len(g) != 3 {
		t.Fatalf("greedy: %v", g)
	}
	if last := ev.Probs[len(prompt)-1]; g[0] != last[0].ID {
		t.Errorf("greedy[0] = %d, eval argmax %d", g[0], last[0].ID)
	}

	// The second greedy token is the argmax after prompt+greedy[0].
	probs, err := o.Eval(ctx, model, append(append([]int32{}, prompt...), g[0]), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs[0]) != 2 || probs[0][0].P < probs[0][1].P {
		t.Errorf("top-2 not sorted: %v", probs[0])
	}
	if got := probs[len(probs)-1][0].ID; got != g[1] {
		t.Errorf("greedy[1] = %d, eval argmax %d", g[1], got)
	}
	for i := range prompt {
		if probs[i][0] != ev.Probs[i][0] {
			t.Errorf("position %d: top-1 %v in one run, %v in another", i, probs[i][0], ev.Probs[i][0])
		}
	}
}

func TestErrors(t *testing.T) {
	o := oracle.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	model := fixture(t)

	tests := []struct {
		name  string
		model string
		op    oracle.Op
		want  string
	}{
		{"invalid utf8", model, oracle.Tokenize{Texts: []string{"a\xffb"}}, "not valid UTF-8"},
		{"no tokens", model, oracle.Eval{TopK: 3}, "no tokens"},
		{"negative token", model, oracle.Greedy{Tokens: []int32{1, -2}, N: 1}, "negative"},
		{"topK", model, oracle.Eval{Tokens: []int32{1}}, "topK"},
		{"missing file", filepath.Join(t.TempDir(), "none.gguf"), oracle.Eval{Tokens: []int32{1}, TopK: 1}, "none.gguf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := o.Run(ctx, tt.model, tt.op)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestFindOutsideModule(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := oracle.Find(); err == nil || !strings.Contains(err.Error(), "go.mod") {
		t.Fatalf("Find outside the module: %v", err)
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestJobs runs several models in one process; a file llama.cpp refuses
// fails its own job only.
func TestJobs(t *testing.T) {
	o := oracle.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ops := []oracle.Op{oracle.Eval{Tokens: []int32{1, 2}, TopK: 2}}
	jobs := []oracle.Job{
		{Model: testfix.Path(t, testfix.Qwen3MoEQ8_0), Ops: ops},
		{Model: testfix.Path(t, "README.md"), Ops: ops},
		{Model: testfix.Path(t, testfix.Qwen3NextQ8_0), Ops: ops},
	}
	res, err := o.RunJobs(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true} {
		if ok := res[i].Err == nil; ok != want {
			t.Errorf("job %d (%s): err = %v", i, jobs[i].Model, res[i].Err)
		}
	}
	if err := res[1].Err; err == nil || !strings.Contains(err.Error(), "README.md") {
		t.Errorf("refused file: %v", err)
	}
	if p := res[2].Results[0].Probs; len(p) != 2 || p[0][0].P <= 0 {
		t.Errorf("qwen3next: %v", p)
	}
}
