package gguf

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/strata-llm/strata/internal/testfix"
)

func TestInspectFixtures(t *testing.T) {
	tests := []struct {
		file    string
		arch    string
		tensors int
	}{
		{"tiny-qwen3moe-Q8_0.gguf", "qwen3moe", 51},
		{"tiny-qwen3moe-Q4_K_M.gguf", "qwen3moe", 51},
		{"tiny-qwen3next-Q8_0.gguf", "qwen3next", 73},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := Open(testfix.Path(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := Inspect(f)
			if r.Architecture != tt.arch || r.TensorCount != tt.tensors || len(r.Tensors) != tt.tensors {
				t.Errorf("arch %q, %d tensors (%d rows)", r.Architecture, r.TensorCount, len(r.Tensors))
			}
			var sum, experts uint64
			for _, ti := range f.Tensors {
				sum += ti.Size
				if strings.Contains(ti.Name, "_exps") {
					experts += ti.Size
				}
			}
			if experts == 0 || r.TensorBytes != sum || r.RAMAllBytes != sum || r.RAMMinBytes != sum-experts || r.ExpertBytes != experts {
				t.Errorf("bytes: tensors %d all %d min %d experts %d; want %d, %d experts", r.TensorBytes, r.RAMAllBytes, r.RAMMinBytes, r.ExpertBytes, sum, experts)
			}
			tok := r.Tokenizer
			if tok == nil || tok.Model != "gpt2" || tok.Pre != "qwen2" || tok.VocabSize != 1024 || tok.Merges != 765 ||
				tok.BOS == nil || *tok.BOS != 1021 || tok.EOS == nil || *tok.EOS != 1023 || tok.ChatTemplate {
				t.Errorf("tokenizer summary %+v", tok)
			}

			js, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Architecture string         `json:"architecture"`
				HParams      map[string]any `json:"hparams"`
				TensorCount  int            `json:"tensor_count"`
				RAMMin       uint64         `json:"ram_min_bytes"`
				Tensors      []Tensor       `json:"tensors"`
			}
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatalf("JSON does not decode: %v\n%s", err, js)
			}
			if back.Architecture != tt.arch || back.TensorCount != tt.tensors || back.RAMMin != r.RAMMinBytes || len(back.Tensors) != tt.tensors {
				t.Errorf("JSON round trip lost data: %+v", back)
			}
			if bc, ok := back.HParams[tt.arch+".block_count"].(float64); !ok || bc != 4 {
				t.Errorf("JSON hparams block_count = %v", back.HParams[tt.arch+".block_count"])
			}
			if _, ok := back.HParams["general.name"]; !ok {
				t.Errorf("JSON hparams lack general.name")
			}
			if _, ok := back.HParams["tokenizer.ggml.model"]; ok {
				t.Errorf("JSON hparams hold tokenizer keys")
			}

			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			out := text.String()
			for _, want := range []string{
				"architecture:  " + tt.arch,
				tt.arch + ".block_count",
				"vocab size",
				"token_embd.weight",
				"blk.3.ffn_down_exps.weight",
				"RAM minimum:",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("text output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestInspectSample(t *testing.T) {
	w, _ := sampleWriter()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes(), "sample.gguf")
	if err != nil {
		t.Fatal(err)
	}
	r := Inspect(f)
	tok := r.Tokenizer
	if tok == nil || tok.VocabSize != 5 || tok.Merges != 1 || tok.BOS != nil || *tok.EOS != 3 || !tok.ChatTemplate || tok.ChatTemplateLength != 14 {
		t.Errorf("tokenizer %+v", tok)
	}
	exp, _ := f.Tensor("blk.0.ffn_up_exps.weight")
	if r.ExpertBytes != exp.Size || r.RAMMinBytes+exp.Size != r.RAMAllBytes {
		t.Errorf("expert bytes %d, min %d, all %d", r.ExpertBytes, r.RAMMinBytes, r.RAMAllBytes)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		HParams map[string]any `json:"hparams"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	// u8 arrays are numbers, not base64; nested arrays are summarized.
	if got, _ := json.Marshal(back.HParams["qwen3moe.u8s"]); string(got) != "[1,2,255]" {
		t.Errorf("u8s = %s", got)
	}
	if got, _ := json.Marshal(back.HParams["qwen3moe.nested"]); string(got) != `{"len":2,"type":"array"}` {
		t.Errorf("nested = %s", got)
	}
	if got := back.HParams["qwen3moe.flag"]; got != true {
		t.Errorf("flag = %v", got)
	}

	// A file with no architecture and no tokenizer still reports.
	empty := NewWriter()
	buf.Reset()
	if _, err := empty.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err = Parse(buf.Bytes(), "empty.gguf")
	if err != nil {
		t.Fatal(err)
	}
	r = Inspect(f)
	if r.Tokenizer != nil || r.TensorCount != 0 || len(r.HParams) != 0 {
		t.Errorf("empty report %+v", r)
	}
	if js, err := json.Marshal(r); err != nil || !strings.Contains(string(js), `"hparams":{}`) {
		t.Errorf("empty JSON %s, %v", js, err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "(none)") {
		t.Errorf("empty text %q, %v", text.String(), err)
	}
}
