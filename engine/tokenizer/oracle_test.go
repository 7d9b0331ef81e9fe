package tokenizer_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/synth"
	"github.com/strata-llm/strata/engine/tokenizer"
	"github.com/strata-llm/strata/internal/oracle"
	"github.com/strata-llm/strata/internal/testfix"
)

func loadFixture(t testing.TB, name string) (*tokenizer.Tokenizer, string) {
	t.Helper()
	path := testfix.Path(t, name)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tok, path
}

// vocabPieces returns the decoded text of the vocabulary's normal tokens that
// are valid UTF-8, to build corpus strings that exercise long merges.
func vocabPieces(tok *tokenizer.Tokenizer) []string {
	var out []string
	for id := range int32(tok.NVocab()) {
		if tok.IsControl(id) {
			continue
		}
		if b := tok.TokenBytes(id); len(b) > 1 && utf8.Valid(b) {
			out = append(out, string(b))
		}
	}
	return out
}

// corpus is what TestMatchesLlamaCpp sends to llama.cpp: texts as they go to
// our Encode and, for invalid UTF-8, the valid string llama.cpp reads them as.
type corpus struct {
	ours, theirs []string
}

func buildCorpus(tok *tokenizer.Tokenizer) (c corpus, skipped []string) {
	add := func(s, eq string) {
		c.ours = append(c.ours, s)
		c.theirs = append(c.theirs, eq)
	}
	for _, s := range handCases {
		add(s, s)
	}
	for _, s := range genCorpus(1, 560, vocabPieces(tok)) {
		add(s, s)
	}
	invalid := append([]string{"\xff", "a\xffb", "\xe4\xb8", "\xe4\xb8\xadx\xe4", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\xf7\xbf\xbf\xbf", "<|im_end|>\xff", "\xff<|im_end|>", "\xe4<|im_end|>\xb8"}, genInvalid(2, 80)...)
	for _, s := range invalid {
		eq, ok := llamaEquivalent(s)
		if !ok {
			skipped = append(skipped, s)
			continue
		}
		add(s, eq)
	}
	return c, skipped
}

// variant copies the GGUF file src to dst with some metadata replaced (the
// tensors are unchanged), to test tokenizer settings on llama.cpp.
func variant(t testing.TB, src, dst string, set map[string]gguf.Value) {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	seen := map[string]bool{}
	for _, kv := range f.KV {
		v := kv.Value
		if nv, ok := set[kv.Key]; ok {
			v = nv
			seen[kv.Key] = true
		}
		w.AddKV(kv.Key, v)
	}
	for k, v := range set {
		if !seen[k] {
			w.AddKV(k, v)
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		w.AddTensor(ti.Name, ti.Type, ti.Dims, func(out io.Writer) error {
			_, err := out.Write(f.Data(ti))
			return err
		})
	}
	if err := w.WriteFile(dst); err != nil {
		t.Fatal(err)
	}
}

// vocabCase is one vocabulary checked against llama.cpp.
type vocabCase struct {
	name string
	path string
	tok  *tokenizer.Tokenizer
}

func openVocab(t testing.TB, name, path string) vocabCase {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return vocabCase{name: name, path: path, tok: tok}
}

// TestMatchesLlamaCpp compares Encode with llama.cpp's llama_tokenize, for
// parse_special true and false and with add_special, on the fixture
// vocabulary, on a larger synthetic one, and on variants of the fixture with
// other pre-tokenizers and settings.
func TestMatchesLlamaCpp(t *testing.T) {
	o := oracle.Require(t)
	fixture := testfix.Path(t, "tiny-qwen3moe-Q8_0.gguf")
	dir := t.TempDir()
	synthPath := filepath.Join(dir, "synth-4096.gguf")
	cfg := synth.Defaults("qwen3moe")
	cfg.Vocab = 4096
	if err := synth.Write(context.Background(), synthPath, cfg); err != nil {
		t.Fatal(err)
	}
	vp := func(name string) string { return filepath.Join(dir, name+".gguf") }
	imStart := func() gguf.Value {
		tok, _ := loadFixture(t, "tiny-qwen3moe-Q8_0.gguf")
		types := make([]int32, tok.NVocab())
		for i := range types {
			types[i] = tokenizer.TypeNormal
			if tok.IsControl(int32(i)) {
				types[i] = tokenizer.TypeControl
			}
		}
		id, _ := tok.ID("<|im_start|>")
		types[id] = tokenizer.TypeUserDefined
		return gguf.Int32s(types)
	}
	variant(t, fixture, vp("qwen35"), map[string]gguf.Value{"tokenizer.ggml.pre": gguf.String("qwen35")})
	variant(t, fixture, vp("llama3"), map[string]gguf.Value{"tokenizer.ggml.pre": gguf.String("llama3"),
		"tokenizer.ggml.add_bos_token": gguf.Bool(true), "tokenizer.ggml.add_eos_token": gguf.Bool(true)})
	variant(t, fixture, vp("gpt2"), map[string]gguf.Value{"tokenizer.ggml.pre": gguf.String("gpt-2")})
	variant(t, fixture, vp("userdefined"), map[string]gguf.Value{"tokenizer.ggml.token_type": imStart()})

	vocabs := []vocabCase{
		openVocab(t, "fixture", fixture),
		openVocab(t, "synthetic 4096", synthPath),
		openVocab(t, "fixture pre=qwen35", vp("qwen35")),
		openVocab(t, "fixture pre=llama3 add_bos add_eos", vp("llama3")),
		openVocab(t, "fixture pre=gpt-2", vp("gpt2")),
		openVocab(t, "fixture <|im_start|> user-defined", vp("userdefined")),
	}
	type mode struct{ addSpecial, parseSpecial bool }
	modes := []mode{{false, true}, {false, false}, {true, true}}
	corpora := make([]corpus, len(vocabs))
	var jobs []oracle.Job
	for i, v := range vocabs {
		c, skipped := buildCorpus(v.tok)
		if len(c.ours) < 500 {
			t.Fatalf("%s: corpus has %d strings, want at least 500", v.name, len(c.ours))
		}
		corpora[i] = c
		job := oracle.Job{Model: v.path}
		for _, m := range modes {
			job.Ops = append(job.Ops, oracle.Tokenize{Texts: c.theirs, AddSpecial: m.addSpecial, ParseSpecial: m.parseSpecial})
		}
		jobs = append(jobs, job)
		for _, s := range skipped {
			// llama.cpp itself throws on these (a codepoint it cannot
			// re-encode); ours must still tokenize them.
			if ids := v.tok.Encode(s, false, true); len(ids) == 0 {
				t.Errorf("%s: %q: no tokens", v.name, s)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := o.RunJobs(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vocabs {
		if res[i].Err != nil {
			t.Errorf("%s: %v", v.name, res[i].Err)
			continue
		}
		c := corpora[i]
		for k, m := range modes {
			want := res[i].Results[k].Tokens
			if len(want) != len(c.ours) {
				t.Fatalf("%s %+v: llama.cpp returned %d results for %d texts", v.name, m, len(want), len(c.ours))
			}
			match := 0
			var bad []string
			for j, s := range c.ours {
				got := v.tok.Encode(s, m.addSpecial, m.parseSpecial)
				if slices.Equal(got, want[j]) || len(got) == 0 && len(want[j]) == 0 {
					match++
					continue
				}
				if len(bad) < 10 {
					bad = append(bad, fmt.Sprintf("%q:\n    ours  %v\n    llama %v", s, got, want[j]))
				}
			}
			t.Logf("%s, addSpecial=%v parseSpecial=%v: %d/%d strings identical to llama.cpp",
				v.name, m.addSpecial, m.parseSpecial, match, len(c.ours))
			if match != len(c.ours) {
				t.Errorf("%s, addSpecial=%v parseSpecial=%v: %d of %d strings differ from llama.cpp:\n  %s",
					v.name, m.addSpecial, m.parseSpecial, len(c.ours)-match, len(c.ours), strings.Join(bad, "\n  "))
			}
		}
	}
}

// TestFixturesShareVocab checks that every fixture's tokenizer loads and
// that they agree with each other (they were converted from one vocabulary).
func TestFixturesShareVocab(t *testing.T) {
	paths := testfix.GGUFs
	ref, _ := loadFixture(t, paths[0])
	for _, p := range paths[1:] {
		tok, _ := loadFixture(t, p)
		for _, s := range handCases {
			if a, b := ref.Encode(s, true, true), tok.Encode(s, true, true); !slices.Equal(a, b) {
				t.Errorf("%s vs %s: %q: %v vs %v", paths[0], p, s, a, b)
			}
		}
	}
}
