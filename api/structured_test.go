package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const replySchema = `{"type":"object","properties":{
  "title":{"type":"string","maxLength":8},
  "count":{"type":"integer"},
  "ratio":{"type":"number"},
  "kind":{"enum":["alpha","beta","gamma"]},
  "tags":{"type":"array","items":{"type":"string","maxLength":4},"maxItems":2}},
 "required":["title","count","ratio","kind","tags"],"additionalProperties":false}`

func validator(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// 100 seeded generations of the random-weight demo model under a
// json_schema response format all parse and validate (checked with an
// independent JSON-schema validator), and end with finish_reason stop.
func TestStructuredOutputValidates(t *testing.T) {
	h := start(t, nil)
	val := validator(t, replySchema)
	var tokens int
	t0 := time.Now()
	for seed := 1; seed <= 100; seed++ {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Describe item %d as JSON"}],"seed":%d,"temperature":1,"max_tokens":400,
			"response_format":{"type":"json_schema","json_schema":{"name":"item","strict":true,"schema":%s}}}`, seed, seed, replySchema)
		resp := h.request(t, "POST", "/v1/chat/completions", body, nil)
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if resp.StatusCode != 200 {
			t.Fatalf("seed %d: status %d", seed, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
			t.Fatalf("seed %d: %v %+v", seed, err, out)
		}
		text := out.Choices[0].Message.Content
		var inst any
		if err := json.Unmarshal([]byte(text), &inst); err != nil {
			t.Fatalf("seed %d: reply %q does not parse: %v", seed, text, err)
		}
		if err := val.Validate(inst); err != nil {
			t.Fatalf("seed %d: reply %s does not validate: %v", seed, text, err)
		}
		if out.Choices[0].FinishReason != "stop" {
			t.Errorf("seed %d: finish_reason %q", seed, out.Choices[0].FinishReason)
		}
		tokens += out.Usage.CompletionTokens
	}
	t.Logf("100 replies, %d tokens, %v", tokens, time.Since(t0))
}

func TestStructuredOutputErrors(t *testing.T) {
	h := start(t, nil)
	for _, rf := range []string{
		`{"type":"json_schema"}`,
		`{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"a":{"$ref":"#"}}}}}`,
		`{"type":"xml"}`,
	} {
		resp := h.request(t, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":`+rf+`}`, nil)
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", rf, resp.StatusCode)
		}
	}
	// json_object gives an object.
	resp := h.request(t, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"seed":3,"max_tokens":300,"response_format":{"type":"json_object"}}`, nil)
	var out struct {
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
		t.Fatal(err)
	}
	text := out.Choices[0].Message.Content
	if !strings.HasPrefix(text, "{") {
		t.Errorf("json_object reply %q", text)
	}
	if out.Choices[0].FinishReason == "stop" && !json.Valid([]byte(text)) {
		t.Errorf("complete json_object reply %q is not JSON", text)
	}
}
