package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		msg  string
		typ  string
		want any
	}{
		{`{"type":"hello","id":"1","params":{"token":"abc","protocol":1}}`, TypeHello, &HelloParams{Token: "abc", Protocol: 1}},
		{`{"type":"complete","id":"a","params":{"prompt":"hi","max_tokens":4,"temperature":0}}`, TypeComplete, nil},
		{`{"type":"complete","id":"a","params":{"tokens":[1,2,3]}}`, TypeComplete, nil},
		{`{"type":"chat","id":"c","params":{"messages":[{"role":"user","content":"hi"}],"keep_alive":"5m"}}`, TypeChat, nil},
		{`{"type":"cancel","id":"x","params":{"id":"a"}}`, TypeCancel, &CancelParams{ID: "a"}},
		{`{"type":"models.list","id":"m"}`, TypeModelsList, nil},
		{`{"type":"models.list","id":"m","params":{}}`, TypeModelsList, nil},
		{`{"type":"models.pull","id":"p","params":{"name":"https://example.com/a.gguf"}}`, TypeModelsPull, &ModelParams{Name: "https://example.com/a.gguf"}},
		{`{"type":"models.select","id":"p","params":{"name":"Qwen/Qwen3-GGUF/q4.gguf"}}`, TypeModelsSelect, &ModelParams{Name: "Qwen/Qwen3-GGUF/q4.gguf"}},
		{`{"type":"engine.load","id":"l","params":{}}`, TypeEngineLoad, &EngineLoadParams{}},
		{`{"type":"settings.set","id":"s","params":{"settings":{"threads":2}}}`, TypeSettingsSet, nil},
		{`{"type":"stats.subscribe","id":"s","params":{"interval_ms":250}}`, TypeStatsSubscribe, &StatsSubscribeParams{IntervalMS: 250}},
		{`{"type":"stats.unsubscribe","id":"u","params":{"id":"s"}}`, TypeStatsUnsubscribe, &StatsUnsubscribeParams{ID: "s"}},
	}
	for _, tt := range tests {
		req, p, err := Decode([]byte(tt.msg))
		if err != nil {
			t.Errorf("%s: %v", tt.msg, err)
			continue
		}
		if req.Type != tt.typ {
			t.Errorf("%s: type %q", tt.msg, req.Type)
		}
		if tt.want != nil {
			a, _ := json.Marshal(p)
			b, _ := json.Marshal(tt.want)
			if string(a) != string(b) {
				t.Errorf("%s: params %s, want %s", tt.msg, a, b)
			}
		}
	}
	_, p, _ := Decode([]byte(`{"type":"chat","id":"c","params":{"messages":[{"role":"user","content":"hi"}],"keep_alive":"5m","temperature":0.5}}`))
	cp := p.(*ChatParams)
	if cp.KeepAlive == nil || cp.KeepAlive.D != 5*time.Minute || *cp.Temperature != 0.5 {
		t.Errorf("chat params %+v", cp)
	}
}

func TestDecodeInvalid(t *testing.T) {
	tests := []struct {
		msg    string
		wantID string
		substr string
	}{
		{`{`, "", "malformed"},
		{`[]`, "", "malformed"},
		{`{"type":"hello"}`, "", "no id"},
		{`{"type":"hello","id":"` + strings.Repeat("x", 200) + `"}`, "", "id longer"},
		{`{"type":"hello","id":"a\u0001"}`, "", "control"},
		{`{"type":"nope","id":"1"}`, "1", "unknown type"},
		{`{"id":"1"}`, "1", "no type"},
		{`{"type":"hello","id":"1","extra":1}`, "1", "unknown field"},
		{`{"type":"hello","id":"1"} {}`, "1", "trailing"},
		{`{"type":"hello","id":"1","params":{"protocol":2}}`, "1", "not supported"},
		{`{"type":"complete","id":"1","params":{}}`, "1", "exactly one"},
		{`{"type":"complete","id":"1","params":{"prompt":"a","tokens":[1]}}`, "1", "exactly one"},
		{`{"type":"complete","id":"1","params":{"tokens":[-1]}}`, "1", "negative"},
		{`{"type":"complete","id":"1","params":{"prompt":"a","temperature":9}}`, "1", "temperature"},
		{`{"type":"complete","id":"1","params":{"prompt":"a","top_p":2}}`, "1", "top_p"},
		{`{"type":"complete","id":"1","params":{"prompt":"a","max_tokens":-1}}`, "1", "max_tokens"},
		{`{"type":"complete","id":"1","params":{"prompt":"a","bogus":1}}`, "1", "unknown field"},
		{`{"type":"complete","id":"1","params":{"prompt":"a","keep_alive":"soon"}}`, "1", "keep_alive"},
		{`{"type":"chat","id":"1","params":{"messages":[]}}`, "1", "at least one"},
		{`{"type":"chat","id":"1","params":{"messages":[{"role":"root","content":"x"}]}}`, "1", "unknown role"},
		{`{"type":"models.delete","id":"1","params":{"name":"../../etc/passwd"}}`, "1", "more than 3 parts"},
		{`{"type":"models.delete","id":"1","params":{"name":"../etc"}}`, "1", "invalid character"},
		{`{"type":"models.select","id":"1","params":{"name":"/etc/passwd"}}`, "1", "empty part"},
		{`{"type":"models.select","id":"1","params":{"name":"a\\b"}}`, "1", "invalid character"},
		{`{"type":"models.select","id":"1","params":{"name":"a/../b"}}`, "1", "invalid character"},
		{`{"type":"models.pull","id":"1","params":{"name":"http://example.com/a"}}`, "1", "https"},
		{`{"type":"models.pull","id":"1","params":{"name":"https://u:p@example.com/a"}}`, "1", "credentials"},
		{`{"type":"engine.load","id":"1","params":{"model":".hidden"}}`, "1", "invalid character"},
		{`{"type":"settings.set","id":"1","params":{"settings":[1]}}`, "1", "settings object"},
		{`{"type":"stats.subscribe","id":"1","params":{"interval_ms":5}}`, "1", "interval_ms"},
		{`{"type":"engine.status","id":"1","params":{"x":1}}`, "1", "no params"},
		{"{\"type\":\"hello\",\"id\":\"\xff\"}", "", "UTF-8"},
	}
	for _, tt := range tests {
		req, _, err := Decode([]byte(tt.msg))
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != CodeBadRequest {
			t.Errorf("%s: error %v, want bad_request", tt.msg, err)
			continue
		}
		if !strings.Contains(pe.Message, tt.substr) {
			t.Errorf("%s: message %q lacks %q", tt.msg, pe.Message, tt.substr)
		}
		if req.ID != tt.wantID {
			t.Errorf("%s: id %q, want %q", tt.msg, req.ID, tt.wantID)
		}
	}
}

func TestValidModelName(t *testing.T) {
	for _, ok := range []string{"demo", "qwen3-30b-a3b.Q4_K_M", "Qwen/Qwen3-30B-A3B-GGUF/model-00001-of-00002.gguf"} {
		if err := ValidModelName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "..", ".", "../x", "a/..", "a//b", "/abs", "a/b/c/d", "c:\\x", "a b", "a\x00b", strings.Repeat("a", 201), "-rf", "ü"} {
		if err := ValidModelName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestKeepAliveJSON(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{`300`, 5 * time.Minute}, {`"10s"`, 10 * time.Second}, {`-1`, -1}, {`"-1"`, -1}, {`0`, 0}, {`"-5m"`, -1},
	}
	for _, tt := range tests {
		var k KeepAlive
		if err := json.Unmarshal([]byte(tt.in), &k); err != nil || k.D != tt.want {
			t.Errorf("%s: %v %v, want %v", tt.in, k.D, err, tt.want)
		}
	}
	b, _ := json.Marshal(KeepAlive{D: 90 * time.Second})
	if string(b) != "90" {
		t.Errorf("marshal: %s", b)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","id":"1","params":{"token":"abc","protocol":1}}`,
		`{"type":"complete","id":"a","params":{"prompt":"hi","max_tokens":4,"temperature":0,"stop":["x"],"keep_alive":"5m"}}`,
		`{"type":"chat","id":"c","params":{"messages":[{"role":"user","content":"hi"}]}}`,
		`{"type":"models.pull","id":"p","params":{"name":"https://example.com/a.gguf"}}`,
		`{"type":"models.delete","id":"p","params":{"name":"../x"}}`,
		`{"type":"settings.set","id":"s","params":{"settings":{"threads":2}}}`,
		`{"type":"stats.subscribe","id":"s","params":{"interval_ms":250}}`,
		`{"type":"cancel","id":"x","params":{"id":"a"}}`,
		`{"type":"engine.status","id":"1"}`,
		`{`, `null`, `""`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, p, err := Decode(data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != CodeBadRequest || pe.Message == "" {
				t.Fatalf("error %v is not a bad_request *Error", err)
			}
			if req.ID != "" && checkID(req.ID) != nil {
				t.Fatalf("invalid id %q returned", req.ID)
			}
			return
		}
		if checkID(req.ID) != nil {
			t.Fatalf("accepted invalid id %q", req.ID)
		}
		switch p := p.(type) {
		case *ModelParams:
			if req.Type != TypeModelsPull && ValidModelName(p.Name) != nil {
				t.Fatalf("accepted name %q", p.Name)
			}
			if strings.Contains(p.Name, "..") && !strings.HasPrefix(p.Name, "https://") {
				for _, s := range strings.Split(p.Name, "/") {
					if s == ".." {
						t.Fatalf("accepted traversal %q", p.Name)
					}
				}
			}
		case *CompleteParams:
			if (p.Prompt == "") == (len(p.Tokens) == 0) {
				t.Fatal("accepted complete without exactly one input")
			}
		}
	})
}

func TestValidPullName(t *testing.T) {
	for _, ok := range []string{"demo", "https://example.com/x.gguf", "Qwen/Qwen3-30B-A3B-GGUF@main/Q4_K_M/model-00001-of-00002.gguf", "hf://a/b/c.gguf"} {
		if err := ValidPullName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "http://example.com/x", "file:///etc/passwd", "https://u:p@h/x", "a/../b", "a//b", "/etc/passwd", "hf://../x", "a/.git/config", "https://h/a b"} {
		if err := ValidPullName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestEventJSON(t *testing.T) {
	tests := []struct {
		ev   Event
		want string
	}{
		{Event{Type: EventDelta, ID: "1", Tokens: []int32{7}}, `{"type":"delta","id":"1","tokens":[7],"text":""}`},
		{Event{Type: EventDelta, ID: "1", Text: "hi"}, `{"type":"delta","id":"1","text":"hi"}`},
		{Event{Type: EventQueued, ID: "2", Position: 1}, `{"type":"queued","id":"2","position":1}`},
		{Event{Type: EventError, ID: "3", Code: CodeBusy, Message: "full"}, `{"type":"error","id":"3","code":"busy","message":"full"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.ev)
		if err != nil || string(b) != tt.want {
			t.Errorf("%+v: %s %v, want %s", tt.ev, b, err, tt.want)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil || back.Type != tt.ev.Type || back.Text != tt.ev.Text {
			t.Errorf("round trip %s: %+v %v", b, back, err)
		}
	}
}
