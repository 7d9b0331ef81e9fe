package settings

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultsValid(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestFieldsComplete(t *testing.T) {
	// Every field has a label, a one-sentence help text and a unique key
	// that matches its JSON path.
	raw, err := json.Marshal(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	raw = []byte(strings.Replace(string(raw), `"model":"",`, "", 1))
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "browser") // a list, not a knob: edited by its own control, checked by TestAllowedOrigins
	seen := map[string]bool{}
	n := 0
	for _, f := range Fields() {
		if seen[f.Key] {
			t.Errorf("duplicate key %s", f.Key)
		}
		seen[f.Key] = true
		grp, name, _ := strings.Cut(f.Key, ".")
		if _, ok := doc[grp][name]; !ok {
			t.Errorf("key %s is not a JSON path of Settings", f.Key)
		}
		if f.Label == "" || !strings.HasSuffix(f.Help, ".") || strings.Count(f.Help, ". ") > 1 {
			t.Errorf("%s: label %q help %q", f.Key, f.Label, f.Help)
		}
	}
	for _, g := range doc {
		n += len(g)
	}
	if n != len(seen) {
		t.Errorf("Settings has %d JSON fields, Fields describes %d", n, len(seen))
	}
	for _, k := range []string{"advanced.threads", "advanced.context_length", "memory.keep_loaded_minutes", "api.port", "api.allow_network",
		"routing.enabled", "routing.strength", "routing.protected_ranks", "routing.max_rank_window", "routing.always_kept",
		"memory.expert_cache_gb", "memory.learn_usage", "speculation.enabled", "speculation.auto_depth", "speculation.max_draft_tokens",
		"speculation.min_draft_probability", "speculation.prompt_lookup", "speculation.mtp"} {
		if f, _ := Lookup(k); !f.Live {
			t.Errorf("%s should be live", k)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		key, text string
		want      string // Format after a successful parse
		errPart   string // non-empty: expected error substring
	}{
		{"speculation.max_draft_tokens", "12", "12", ""},
		{"speculation.max_draft_tokens", " 3 ", "3", ""},
		{"speculation.max_draft_tokens", "0", "", "must be a whole number from 1 to 32, got 0"},
		{"speculation.max_draft_tokens", "40", "", "from 1 to 32"},
		{"speculation.max_draft_tokens", "2.5", "", `got "2.5"`},
		{"speculation.max_draft_tokens", "", "", `got ""`},
		{"speculation.min_draft_probability", "0.25", "0.25", ""},
		{"speculation.min_draft_probability", "1.5", "", "from 0 to 1"},
		{"speculation.min_draft_probability", "NaN", "", "must be"},
		{"speculation.enabled", "false", "false", ""},
		{"speculation.enabled", "maybe", "", "on or off"},
		{"memory.expert_cache_gb", "auto", "Auto", ""},
		{"memory.expert_cache_gb", "12.5", "12.5", ""},
		{"memory.expert_cache_gb", "0.1", "", "or Auto"},
		{"memory.keep_loaded_minutes", "Forever", "forever", ""},
		{"memory.keep_loaded_minutes", "-1", "forever", ""},
		{"memory.keep_loaded_minutes", "0", "0", ""},
		{"memory.keep_loaded_minutes", "-2", "", "memory.keep_loaded_minutes (Keep model loaded (minutes))"},
		{"api.port", "80", "", "from 1024 to 65535"},
		{"api.port", "8080", "8080", ""},
		{"advanced.threads", "Auto", "Auto", ""},
		{"advanced.threads", "300", "", "or Auto"},
		{"advanced.context_length", "100", "", "from 256 to 1048576"},
		{"advanced.backend", "metal", "Metal (GPU)", ""},
		{"advanced.backend", "CPU", "CPU", ""},
		{"advanced.backend", " auto ", "Auto", ""},
		{"advanced.backend", "Metal (GPU)", "Metal (GPU)", ""},
		{"advanced.backend", "cuda", "", `one of "auto", "cpu", "metal", got "cuda"`},
	}
	for _, tt := range tests {
		f, ok := Lookup(tt.key)
		if !ok {
			t.Fatalf("no field %s", tt.key)
		}
		s := Defaults()
		before := s
		err := f.Parse(&s, tt.text)
		if tt.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errPart) || !strings.Contains(err.Error(), tt.key) {
				t.Errorf("Parse(%s, %q) = %v, want error containing %q and the key", tt.key, tt.text, err, tt.errPart)
			}
			if s != before {
				t.Errorf("Parse(%s, %q) failed but changed the settings", tt.key, tt.text)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%s, %q): %v", tt.key, tt.text, err)
			continue
		}
		if got := f.Format(s); got != tt.want {
			t.Errorf("Parse(%s, %q) then Format = %q, want %q", tt.key, tt.text, got, tt.want)
		}
	}
}

// TestBackendChoice: advanced.backend persists as its value, a patch with
// another value is refused naming the field, and a file from before the
// setting existed reads as Auto.
func TestBackendChoice(t *testing.T) {
	s, err := Defaults().Patch([]byte(`{"advanced":{"backend":"cpu"}}`))
	if err != nil || s.Advanced.Backend != BackendCPU {
		t.Fatalf("Patch cpu = %+v, %v", s.Advanced, err)
	}
	raw, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(raw), `"backend":"cpu"`) {
		t.Fatalf("Marshal = %s, %v", raw, err)
	}
	for _, bad := range []string{`{"advanced":{"backend":"gpu"}}`, `{"advanced":{"backend":""}}`, `{"advanced":{"backend":3}}`} {
		if _, err := Defaults().Patch([]byte(bad)); err == nil || !strings.Contains(err.Error(), "backend") {
			t.Errorf("Patch %s = %v, want an error naming the backend", bad, err)
		}
	}
	old, err := Decode(Defaults(), []byte(`{"advanced":{"threads":2,"context_length":0}}`))
	if err != nil || old.Advanced.Backend != BackendAuto {
		t.Fatalf("Decode of an older file = %+v, %v", old.Advanced, err)
	}
}

func TestCrossFieldRules(t *testing.T) {
	s := Defaults()
	s.Routing.MaxRankWindow = 4
	s.Routing.AlwaysKept = 5
	s.Routing.ProtectedTop = 6
	errs := s.Check()
	if len(errs) != 2 || errs[0].Key != "routing.always_kept" || errs[1].Key != "routing.protected_ranks" {
		t.Fatalf("Check = %v", errs)
	}
	var fe *FieldError
	if err := s.Validate(); !errors.As(err, &fe) || fe.Key != "routing.always_kept" {
		t.Fatalf("Validate = %v", err)
	}
}

func TestDecode(t *testing.T) {
	d := Defaults()
	tests := []struct {
		name    string
		in      string
		errPart string
		check   func(Settings) bool
	}{
		{"empty object keeps defaults", `{}`, "", func(s Settings) bool { return s == d }},
		{"partial", `{"api":{"port":9000}}`, "", func(s Settings) bool { return s.API.Port == 9000 && s.Speculation == d.Speculation }},
		{"unknown fields ignored", `{"future":{"x":1},"api":{"port":9001,"tls":true}}`, "", func(s Settings) bool { return s.API.Port == 9001 }},
		{"full round trip", mustJSON(t, func() Settings { s := d; s.Routing.Enabled = true; s.Memory.KeepLoadedMinutes = -1; return s }()), "",
			func(s Settings) bool { return s.Routing.Enabled && s.Memory.KeepLoadedMinutes == -1 }},
		{"out of range", `{"api":{"port":22}}`, "api.port", nil},
		{"wrong type", `{"api":{"port":"x"}}`, "cannot unmarshal", nil},
		{"float in int", `{"advanced":{"threads":1.5}}`, "cannot unmarshal", nil},
		{"truncated", `{"api":{"port":90`, "unexpected EOF", nil},
		{"not an object", `[1,2]`, "cannot unmarshal", nil},
		{"trailing data", `{} {}`, "after the JSON object", nil},
		{"empty", ``, "EOF", nil},
		{"model name", `{"model":"qwen3-30b-a3b-q4"}`, "", func(s Settings) bool { return s.Model == "qwen3-30b-a3b-q4" }},
		{"model path refused", `{"model":"../../etc/passwd"}`, "is not a model name", nil},
		{"cross field", `{"routing":{"max_rank_window":2,"always_kept":3}}`, "routing.always_kept", nil},
		{"too large", `{"x":"` + strings.Repeat("a", maxFileSize) + `"}`, "allowed", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Decode(d, []byte(tt.in))
			if tt.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("Decode = %v, want error containing %q", err, tt.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(s) {
				t.Fatalf("Decode gave %+v", s)
			}
		})
	}
}

func TestPatchRefusesUnknown(t *testing.T) {
	_, err := Defaults().Patch([]byte(`{"api":{"prot":9000}}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "prot"`) {
		t.Fatalf("Patch = %v", err)
	}
	s, err := Defaults().Patch([]byte(`{"advanced":{"threads":2}}`))
	if err != nil || s.Advanced.Threads != 2 {
		t.Fatalf("Patch = %+v, %v", s, err)
	}
}

func mustJSON(t *testing.T, s Settings) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(mustJSONF(Defaults())))
	f.Add([]byte(`{"routing":{"max_rank_window":2,"always_kept":3}}`))
	f.Add([]byte(`{"memory":{"expert_cache_gb":1e308,"keep_loaded_minutes":-1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(Defaults(), data)
		if err != nil {
			return
		}
		if verr := s.Validate(); verr != nil {
			t.Fatalf("Decode accepted invalid settings: %v", verr)
		}
		// What was accepted survives a round trip unchanged.
		again, err := Decode(Settings{}, []byte(mustJSONF(s)))
		if err != nil || again != s {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, s)
		}
		// And through the store's file format.
		dir := t.TempDir()
		p := filepath.Join(dir, FileName)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st, notice, err := Load(p)
		if err != nil || notice != "" || st.Get() != s {
			t.Fatalf("Load: %v %q %+v", err, notice, st)
		}
	})
}

func mustJSONF(s Settings) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestAllowedOrigins(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"https://app.example", "https://app.example", true},
		{"http://localhost:3000", "http://localhost:3000", true},
		{"HTTP://LocalHost:3000", "http://localhost:3000", true},
		{"chrome-extension://abcdefghijklmnopabcdefghijklmnop", "chrome-extension://abcdefghijklmnopabcdefghijklmnop", true},
		{"moz-extension://0f1e2d3c-aaaa-bbbb-cccc-0123456789ab", "moz-extension://0f1e2d3c-aaaa-bbbb-cccc-0123456789ab", true},
		{"http://[::1]:8080", "http://[::1]:8080", true},
		{"https://app.example/path", "", false},
		{"https://*.example", "", false},
		{"file://", "", false},
		{"null", "", false},
		{"javascript://x", "", false},
		{"", "", false},
	} {
		got, err := CheckOrigin(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %q %v", tc.in, got, err)
		}
	}
	s := Defaults()
	p, err := s.Patch([]byte(`{"browser":{"allowed_origins":["https://a.example","chrome-extension://abc"]}}`))
	if err != nil || strings.Join(p.Browser.AllowedOrigins.List(), ",") != "https://a.example,chrome-extension://abc" {
		t.Fatalf("patch: %v %v", p.Browser.AllowedOrigins.List(), err)
	}
	if s.Browser.AllowedOrigins.List() != nil {
		t.Error("Patch changed its receiver")
	}
	b, _ := json.Marshal(p)
	back, err := Decode(Defaults(), b)
	if err != nil || back != p {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range []string{`{"browser":{"allowed_origins":["https://a.example/x"]}}`, `{"browser":{"allowed_origins":"https://a"}}`} {
		if _, err := s.Patch([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
