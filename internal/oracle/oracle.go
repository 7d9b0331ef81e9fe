// Package oracle runs llama.cpp as the reference for Strata's tests: it
// tokenizes text, computes next-token probabilities and greedy continuations
// for a GGUF file through the Node tool in tools/oracle (node-llama-cpp with
// its prebuilt CPU build of llama.cpp), and returns typed results.
//
// One call starts one Node process, which loads each model once and serves
// every operation of the call, so batch operations with Run and models with
// RunJobs.
package oracle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"
)

// Version is the node-llama-cpp version tools/oracle pins.
const Version = "3.21.1"

// Oracle runs tools/oracle/oracle.mjs with Node.
type Oracle struct {
	// Node is the path of the node executable.
	Node string
	// Dir is the tools/oracle folder (holding oracle.mjs and node_modules).
	Dir string
	// Threads is the number of CPU threads llama.cpp uses; 0 lets
	// node-llama-cpp choose.
	Threads int
}

// Find locates the oracle: tools/oracle with its node_modules installed, in
// the module root above the working directory, and node on PATH.
func Find() (*Oracle, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find oracle: %w", err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return nil, fmt.Errorf("find oracle: %w", err)
	}
	dir := filepath.Join(root, "tools", "oracle")
	if _, err := os.Stat(filepath.Join(dir, "oracle.mjs")); err != nil {
		return nil, fmt.Errorf("find oracle: %w", err)
	}
	pkg := filepath.Join(dir, "node_modules", "node-llama-cpp", "package.json")
	data, err := os.ReadFile(pkg)
	if err != nil {
		return nil, fmt.Errorf("find oracle: node-llama-cpp is not installed (run `npm ci` in %s): %w", dir, err)
	}
	var meta struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("find oracle: %s: %w", pkg, err)
	}
	if meta.Version != Version {
		return nil, fmt.Errorf("find oracle: %s has node-llama-cpp %s, want %s (run `npm ci` in %s)", pkg, meta.Version, Version, dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("find oracle: %w", err)
	}
	return &Oracle{Node: node, Dir: dir}, nil
}

// Require returns the oracle for a test. When it is missing the test is
// skipped, or fails if the environment has CI=true (CI must never skip
// oracle tests silently).
func Require(t testing.TB) *Oracle {
	t.Helper()
	o, err := Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("llama.cpp oracle is required under CI=true: %v", err)
		}
		t.Skipf("llama.cpp oracle not available: %v", err)
	}
	return o
}

// moduleRoot walks up from dir to the first folder holding go.mod.
func moduleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found above the working directory")
		}
		dir = parent
	}
}

// Prob is one candidate next token and its probability.
type Prob struct {
	ID int32
	P  float64
}

// An Op is one operation of a Run: a Tokenize, Eval or Greedy.
type Op interface {
	wire() (wireOp, error)
}

// Tokenize tokenizes each text with llama.cpp's tokenizer. AddSpecial adds
// BOS/EOS as the file's add_bos_token/add_eos_token say (llama_tokenize's
// add_special); ParseSpecial matches control tokens in the text.
// Texts must be valid UTF-8 (the Node bridge cannot carry other bytes).
type Tokenize struct {
	Texts        []string
	AddSpecial   bool
	ParseSpecial bool
}

// Eval asks, for every position i of Tokens, for the TopK most likely next
// tokens after Tokens[0..i], from the softmax of the raw logits over the
// whole vocabulary.
type Eval struct {
	Tokens []int32
	TopK   int
}

// Greedy asks for N argmax tokens following Tokens.
type Greedy struct {
	Tokens []int32
	N      int
}

// Result is the result of one Op; only the fields of its kind are set.
type Result struct {
	// Tokens holds one id list per text of a Tokenize.
	Tokens [][]int32
	// Probs holds, for an Eval, the top-K per position, sorted by P
	// descending; Vocab is the size of the distribution they come from.
	Probs [][]Prob
	Vocab int
	// Greedy holds the continuation of a Greedy.
	Greedy []int32
}

type wireOp struct {
	Op           string   `json:"op"`
	Texts        []string `json:"texts,omitempty"`
	AddSpecial   bool     `json:"addSpecial,omitempty"`
	ParseSpecial bool     `json:"parseSpecial,omitempty"`
	Tokens       []int32  `json:"tokens,omitempty"`
	TopK         int      `json:"topK,omitempty"`
	N            int      `json:"n,omitempty"`
}

func (op Tokenize) wire() (wireOp, error) {
	for i, s := range op.Texts {
		if !utf8.ValidString(s) {
			return wireOp{}, fmt.Errorf("tokenize: text %d is not valid UTF-8", i)
		}
	}
	texts := op.Texts
	if texts == nil {
		texts = []string{}
	}
	return wireOp{Op: "tokenize", Texts: texts, AddSpecial: op.AddSpecial, ParseSpecial: op.ParseSpecial}, nil
}

func checkTokens(what string, tokens []int32) error {
	if len(tokens) == 0 {
		return fmt.Errorf("%s: no tokens", what)
	}
	for i, t := range tokens {
		if t < 0 {
			return fmt.Errorf("%s: token %d is negative (%d)", what, i, t)
		}
	}
	return nil
}

func (op Eval) wire() (wireOp, error) {
	if err := checkTokens("eval", op.Tokens); err != nil {
		return wireOp{}, err
	}
	if op.TopK < 1 {
		return wireOp{}, fmt.Errorf("eval: topK %d < 1", op.TopK)
	}
	return wireOp{Op: "eval", Tokens: op.Tokens, TopK: op.TopK}, nil
}

func (op Greedy) wire() (wireOp, error) {
	if err := checkTokens("greedy", op.Tokens); err != nil {
		return wireOp{}, err
	}
	if op.N < 1 {
		return wireOp{}, fmt.Errorf("greedy: n %d < 1", op.N)
	}
	return wireOp{Op: "greedy", Tokens: op.Tokens, N: op.N}, nil
}

type wireResult struct {
	Tokens json.RawMessage `json:"tokens"`
	Vocab  int             `json:"vocab"`
	Probs  [][]struct {
		ID int32   `json:"id"`
		P  float64 `json:"p"`
	} `json:"probs"`
}

// maxStderr bounds the Node error output kept for error messages.
const maxStderr = 8 << 10

// Job is one model and the ops to perform on it.
type Job struct {
	Model string
	Ops   []Op
}

// JobResult is the outcome of one Job: its results, or the error llama.cpp
// gave for it (for instance when it refuses to load the file).
type JobResult struct {
	Results []Result
	Err     error
}

// Run loads the model once in llama.cpp and performs ops in order.
func (o *Oracle) Run(ctx context.Context, modelPath string, ops ...Op) ([]Result, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	jr, err := o.RunJobs(ctx, []Job{{Model: modelPath, Ops: ops}})
	if err != nil {
		return nil, err
	}
	return jr[0].Results, jr[0].Err
}

// RunJobs runs several jobs in one Node process, loading each model in turn
// (starting llama.cpp costs about a second, loading a tiny model much less).
// A job that fails does not stop the others: its JobResult carries the
// error. The returned error is for failures of the whole run.
func (o *Oracle) RunJobs(ctx context.Context, jobs []Job) ([]JobResult, error) {
	type wireJob struct {
		Model string   `json:"model"`
		Ops   []wireOp `json:"ops"`
	}
	req := struct {
		Threads int       `json:"threads,omitempty"`
		Jobs    []wireJob `json:"jobs"`
	}{Threads: o.Threads}
	if len(jobs) == 0 {
		return nil, nil
	}
	for i, job := range jobs {
		abs, err := filepath.Abs(job.Model)
		if err != nil {
			return nil, fmt.Errorf("oracle %s: %w", job.Model, err)
		}
		if len(job.Ops) == 0 {
			return nil, fmt.Errorf("oracle %s: job %d has no ops", job.Model, i)
		}
		wj := wireJob{Model: abs}
		for j, op := range job.Ops {
			w, err := op.wire()
			if err != nil {
				return nil, fmt.Errorf("oracle %s: op %d: %w", job.Model, j, err)
			}
			wj.Ops = append(wj.Ops, w)
		}
		req.Jobs = append(req.Jobs, wj)
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	what := jobs[0].Model
	if len(jobs) > 1 {
		what = fmt.Sprintf("%d models", len(jobs))
	}

	cmd := exec.CommandContext(ctx, o.Node, filepath.Join(o.Dir, "oracle.mjs"))
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "NODE_LLAMA_CPP_SKIP_DOWNLOAD=true")
	cmd.Stdin = bytes.NewReader(in)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: maxStderr}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("oracle %s: %w", what, ctx.Err())
		}
		return nil, fmt.Errorf("oracle %s: %w: %s", what, err, bytes.TrimSpace(stderr.buf))
	}

	var resp struct {
		Jobs []struct {
			Results []wireResult `json:"results"`
			Error   *string      `json:"error"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("oracle %s: bad output: %w", what, err)
	}
	if len(resp.Jobs) != len(jobs) {
		return nil, fmt.Errorf("oracle %s: %d results for %d jobs", what, len(resp.Jobs), len(jobs))
	}
	out := make([]JobResult, len(jobs))
	for i, job := range jobs {
		wj := resp.Jobs[i]
		if wj.Error != nil {
			out[i].Err = fmt.Errorf("oracle %s: llama.cpp: %s", job.Model, *wj.Error)
			continue
		}
		if len(wj.Results) != len(job.Ops) {
			out[i].Err = fmt.Errorf("oracle %s: %d results for %d ops", job.Model, len(wj.Results), len(job.Ops))
			continue
		}
		out[i].Results = make([]Result, len(job.Ops))
		for j, op := range job.Ops {
			r, err := convert(op, wj.Results[j])
			if err != nil {
				out[i] = JobResult{Err: fmt.Errorf("oracle %s: op %d: %w", job.Model, j, err)}
				break
			}
			out[i].Results[j] = r
		}
	}
	return out, nil
}

func convert(op Op, w wireResult) (Result, error) {
	switch op := op.(type) {
	case Tokenize:
		var toks [][]int32
		if err := json.Unmarshal(w.Tokens, &toks); err != nil {
			return Result{}, fmt.Errorf("tokenize result: %w", err)
		}
		if len(toks) != len(op.Texts) {
			return Result{}, fmt.Errorf("tokenize: %d results for %d texts", len(toks), len(op.Texts))
		}
		return Result{Tokens: toks}, nil
	case Eval:
		if len(w.Probs) != len(op.Tokens) {
			return Result{}, fmt.Errorf("eval: %d positions for %d tokens", len(w.Probs), len(op.Tokens))
		}
		probs := make([][]Prob, len(w.Probs))
		for i, pos := range w.Probs {
			if len(pos) == 0 || len(pos) > op.TopK {
				return Result{}, fmt.Errorf("eval: position %d has %d candidates, want 1..%d", i, len(pos), op.TopK)
			}
			probs[i] = make([]Prob, len(pos))
			for j, c := range pos {
				if math.IsNaN(c.P) || c.P < 0 || c.P > 1 {
					return Result{}, fmt.Errorf("eval: position %d: token %d has probability %v", i, c.ID, c.P)
				}
				if c.ID < 0 || int(c.ID) >= w.Vocab {
					return Result{}, fmt.Errorf("eval: position %d: token id %d outside vocabulary of %d", i, c.ID, w.Vocab)
				}
				if j > 0 && c.P > pos[j-1].P {
					return Result{}, fmt.Errorf("eval: position %d: probabilities not sorted", i)
				}
				probs[i][j] = Prob{ID: c.ID, P: c.P}
			}
		}
		return Result{Probs: probs, Vocab: w.Vocab}, nil
	case Greedy:
		var toks []int32
		if err := json.Unmarshal(w.Tokens, &toks); err != nil {
			return Result{}, fmt.Errorf("greedy result: %w", err)
		}
		if len(toks) != op.N {
			return Result{}, fmt.Errorf("greedy: %d tokens, want %d", len(toks), op.N)
		}
		return Result{Greedy: toks}, nil
	}
	return Result{}, fmt.Errorf("unknown op %T", op)
}

// Tokenize tokenizes each text with llama.cpp (see the Tokenize op).
func (o *Oracle) Tokenize(ctx context.Context, modelPath string, texts []string, addSpecial, parseSpecial bool) ([][]int32, error) {
	r, err := o.Run(ctx, modelPath, Tokenize{Texts: texts, AddSpecial: addSpecial, ParseSpecial: parseSpecial})
	if err != nil {
		return nil, err
	}
	return r[0].Tokens, nil
}

// Eval returns, for every position i of tokens, the topK most likely next
// tokens after tokens[0..i] with their probabilities, sorted by P descending.
func (o *Oracle) Eval(ctx context.Context, modelPath string, tokens []int32, topK int) ([][]Prob, error) {
	r, err := o.Run(ctx, modelPath, Eval{Tokens: tokens, TopK: topK})
	if err != nil {
		return nil, err
	}
	return r[0].Probs, nil
}

// Greedy returns the n argmax tokens llama.cpp generates after tokens.
func (o *Oracle) Greedy(ctx context.Context, modelPath string, tokens []int32, n int) ([]int32, error) {
	r, err := o.Run(ctx, modelPath, Greedy{Tokens: tokens, N: n})
	if err != nil {
		return nil, err
	}
	return r[0].Greedy, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}
