package grammar_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/strata-llm/strata/engine/grammar"
)

// testVocab is a vocabulary of every byte plus multi-byte pieces shaped
// like a BPE vocabulary's (words, JSON punctuation runs, quotes with text,
// digits, whitespace runs, UTF-8) and two control tokens.
type testVocab struct {
	toks    [][]byte
	control map[int32]bool
}

func (v *testVocab) NVocab() int                { return len(v.toks) }
func (v *testVocab) TokenBytes(id int32) []byte { return v.toks[id] }
func (v *testVocab) IsControl(id int32) bool    { return v.control[id] }

func newTestVocab(extra int, seed uint64) *testVocab {
	v := &testVocab{control: map[int32]bool{}}
	for b := range 256 {
		v.toks = append(v.toks, []byte{byte(b)})
	}
	pieces := []string{`{"`, `"}`, `":`, `": "`, `",`, `", "`, `"]`, `["`, `},`, `}]`, `]}`, `},{"`, ` {`, `{`, `}`,
		`true`, `false`, `null`, `nu`, `ll`, `tr`, `ue`, `12`, `345`, `0.`, `.5`, `e+`, `-1`, `1e`, `name`, `age`, `tags`,
		`color`, `red`, `green`, `blue`, ` the`, ` a`, `hello`, `\n`, `\"`, `\\u00e9`, "\n", "\n  ", "  ", "    ", `é`, `日本`,
		`", "color": "`, `"name": "`, `{"name": "`, `"age": `, `"tags": ["`}
	for _, p := range pieces {
		v.toks = append(v.toks, []byte(p))
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	alphabet := []byte(`abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789{}[]":,.-+e\ `)
	for range extra {
		n := 1 + rng.IntN(8)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		v.toks = append(v.toks, b)
	}
	v.control[int32(len(v.toks))] = true
	v.toks = append(v.toks, []byte("<|im_end|>"))
	v.control[int32(len(v.toks))] = true
	v.toks = append(v.toks, []byte("<|endoftext|>"))
	return v
}

// feed runs doc through a fresh constraint byte token by byte token.
func feed(t *testing.T, s *grammar.Schema, v *testVocab, doc string) (accepted, done bool) {
	t.Helper()
	c, err := s.NewConstraint(v)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(doc); i++ {
		if err := c.Accept(int32(doc[i])); err != nil {
			return false, false
		}
	}
	return true, c.Done()
}

const personSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer"},
    "score": {"type": "number"},
    "color": {"enum": ["red", "green", "blue"]},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3},
    "ok": {"type": "boolean"},
    "nick": {"type": ["string", "null"], "maxLength": 5}
  },
  "required": ["name", "age", "score", "color", "tags"],
  "additionalProperties": false
}`

func TestDocuments(t *testing.T) {
	v := newTestVocab(0, 1)
	person, err := grammar.Compile([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		schema *grammar.Schema
		doc    string
		ok     bool // accepted as a complete document
		prefix bool // accepted as a prefix (not complete)
	}{
		{person, `{"name":"Al","age":3,"score":-1.5e+2,"color":"red","tags":["x"]}`, true, false},
		{person, `{ "tags" : ["a","b"], "color":"blue", "score":0, "age":-0, "name":"\u00e9\n", "ok":true, "nick":null }`, true, false},
		{person, "{\n  \"name\": \"日本\",\n  \"age\": 10,\n  \"score\": 0.25,\n  \"color\": \"green\",\n  \"tags\": [\"q\"]\n}", true, false},
		{person, `{"name":"Al","age":3}`, false, false},                                                    // required missing
		{person, `{"name":"Al","name":"B"`, false, false},                                                  // duplicate key
		{person, `{"nam":`, false, false},                                                                  // unknown key
		{person, `{"name":""`, false, false},                                                               // minLength
		{person, `{"name":"0123456789abc"`, false, false},                                                  // maxLength
		{person, `{"age":1.5`, false, false},                                                               // integer
		{person, `{"age":01`, false, false},                                                                // leading zero
		{person, `{"color":"pink"`, false, false},                                                          // enum
		{person, `{"tags":[]`, false, false},                                                               // minItems
		{person, `{"tags":["a","b","c","d"]`, false, false},                                                // maxItems
		{person, `{"name":"Al","age":3,"score":1,"color":"red","tags":["x"],}`, false, false},              // trailing comma
		{person, `{"name":"Al","age":3,"score":1,"color":"red","tags":["x"]} `, false, false},              // nothing after
		{person, `{"name":"Al","age":3,"score":1,"color":"red","tags":["x"]`, false, true},                 // prefix
		{person, `{"name":"a` + "\x01", false, false},                                                      // control character
		{person, `{"name":"\x"`, false, false},                                                             // bad escape
		{person, `{"nick":"toolong"`, false, false},                                                        // maxLength on a union
		{grammar.AnyObject(), `{"a":[1,{"b":null},"c",true,-2.5E-3],"d":{}}`, true, false},                 // any object
		{grammar.AnyObject(), `[1]`, false, false},                                                         // not an object
		{grammar.AnyObject(), `{"a":tru}`, false, false},                                                   // bad literal
		{grammar.AnyObject(), `{"a":1.}`, false, false},                                                    // bad number
		{grammar.AnyObject(), `{"a"` + strings.Repeat(" ", grammar.MaxWhitespace+1) + `:1}`, false, false}, // whitespace run
	}
	for _, tc := range tests {
		acc, done := feed(t, tc.schema, v, tc.doc)
		if tc.ok && !(acc && done) {
			t.Errorf("%s: accepted %v done %v, want a complete document", tc.doc, acc, done)
		}
		if !tc.ok && tc.prefix && !(acc && !done) {
			t.Errorf("%s: accepted %v done %v, want an incomplete prefix", tc.doc, acc, done)
		}
		if !tc.ok && !tc.prefix && acc && done {
			t.Errorf("%s: accepted as complete", tc.doc)
		}
		if !tc.ok && !tc.prefix && acc && !strings.HasSuffix(tc.doc, `"`) && !strings.HasSuffix(tc.doc, `:`) {
			t.Errorf("%s: accepted as a prefix", tc.doc)
		}
		if tc.ok && !json.Valid([]byte(tc.doc)) {
			t.Fatalf("test doc %s is not JSON", tc.doc)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/x"}}}`,
		`{"anyOf":[{"type":"string"}]}`,
		`{"type":"strin"}`,
		`{"enum":[]}`,
		`{"type":"string","maxLength":-1}`,
		`{"type":"object","properties":{"a":{}},"required":["b"]}`,
		`false`,
		`[1]`,
		`{`,
	} {
		if _, err := grammar.Compile([]byte(s)); err == nil {
			t.Errorf("%s compiled", s)
		}
	}
}

func compileValidator(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// Random generations under the mask always finish as a document that
// parses and validates (checked by an independent JSON-schema validator),
// and Mask allows exactly the tokens Allowed accepts.
func TestRandomGenerationsValidate(t *testing.T) {
	v := newTestVocab(1000, 7)
	s, err := grammar.Compile([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	val := compileValidator(t, personSchema)
	logits := make([]float32, v.NVocab())
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 2))
		c, err := s.NewConstraint(v)
		if err != nil {
			t.Fatal(err)
		}
		var doc []byte
		for step := 0; !c.Done(); step++ {
			if step > 2000 {
				t.Fatalf("seed %d: no end after 2000 tokens: %s", seed, doc)
			}
			for i := range logits {
				logits[i] = float32(rng.NormFloat64())
			}
			c.Mask(logits)
			best, n := int32(-1), 0
			for i, l := range logits {
				ok := !math.IsInf(float64(l), -1)
				if seed < 3 && ok != c.Allowed(int32(i)) {
					t.Fatalf("seed %d step %d: Mask and Allowed disagree on %q after %s", seed, step, v.toks[i], doc)
				}
				if ok {
					n++
					if best < 0 || l > logits[best] {
						best = int32(i)
					}
				}
			}
			if n == 0 {
				t.Fatalf("seed %d: no token allowed after %s", seed, doc)
			}
			if err := c.Accept(best); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			doc = append(doc, v.toks[best]...)
		}
		var inst any
		if err := json.Unmarshal(doc, &inst); err != nil {
			t.Fatalf("seed %d: %s does not parse: %v", seed, doc, err)
		}
		if err := val.Validate(inst); err != nil {
			t.Fatalf("seed %d: %s does not validate: %v", seed, doc, err)
		}
	}
}

func FuzzDocument(f *testing.F) {
	f.Add(personSchema, `{"name":"Al","age":3,"score":-1.5e+2,"color":"red","tags":["x"]}`)
	f.Add(`{"type":"array","items":{"enum":[1,12,"a",null,true]},"maxItems":4}`, `[12,1,"a",null]`)
	f.Add(`{"type":"object"}`, `{"a":{"b":[1,2,{"c":"\u0041"}]}}`)
	f.Add(`{"type":["integer","string"]}`, `"x"`)
	v := newTestVocab(0, 1)
	f.Fuzz(func(t *testing.T, schema, doc string) {
		s, err := grammar.Compile([]byte(schema))
		if err != nil {
			return
		}
		acc, done := feed(t, s, v, doc)
		if !acc || !done {
			return
		}
		var inst any
		dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
		if err := dec.Decode(&inst); err != nil || dec.More() {
			t.Fatalf("accepted %q, which is not one JSON value: %v", doc, err)
		}
		val := compileValidatorOrNil(schema)
		if val == nil {
			return
		}
		if err := val.Validate(inst); err != nil {
			t.Fatalf("accepted %q, which does not validate against %s: %v", doc, schema, err)
		}
	})
}

func compileValidatorOrNil(schema string) (s *jsonschema.Schema) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil
	}
	c := jsonschema.NewCompiler()
	if c.AddResource("s.json", doc) != nil {
		return nil
	}
	s, err = c.Compile("s.json")
	if err != nil {
		return nil
	}
	return s
}
