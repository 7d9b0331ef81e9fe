package models_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-llm/strata/models"
)

func TestValidateName(t *testing.T) {
	good := []string{"qwen3-30b-a3b-q4_k_m", "Qwen3.8-Flash-Next-IQ2_XS.gguf", "model-00001-of-00002.gguf", "a", "名前", strings.Repeat("x", models.MaxNameLen)}
	bad := []string{"", ".", "..", "../x", "a/b", `a\b`, "/abs", "C:x", "a..b", ".hidden", "-flag", " x", "x ", "a\x00b", "a\nb", "\xff", strings.Repeat("x", models.MaxNameLen+1)}
	for _, n := range good {
		if err := models.ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v", n, err)
		}
	}
	for _, n := range bad {
		if err := models.ValidateName(n); err == nil {
			t.Errorf("ValidateName(%q) accepted", n)
		}
	}
}

// FuzzValidateName: an accepted name is always exactly one path element
// directly under the store.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"a", "..", "a/../b", "x.gguf", "..\\x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if models.ValidateName(name) != nil {
			return
		}
		root := "/store"
		p := filepath.Join(root, name)
		if filepath.Dir(p) != root || filepath.Base(p) != name {
			t.Fatalf("accepted %q escapes or changes: %s", name, p)
		}
	})
}

func TestDefaultCatalog(t *testing.T) {
	cat, err := models.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]map[string]bool{}
	for _, e := range cat {
		if !e.Unchecked {
			t.Errorf("%s: not marked unchecked, but no hub was reachable when it was written", e.Name)
		}
		for _, f := range e.Files {
			if f.SHA256 != "" {
				t.Errorf("%s: carries a sha256 nobody could check", e.Name)
			}
		}
		if e.RAMMin == 0 || e.RAMRecommended < e.RAMMin || e.Description == "" {
			t.Errorf("%s: incomplete: %+v", e.Name, e)
		}
		if families[e.Arch] == nil {
			families[e.Arch] = map[string]bool{}
		}
		bits := "4"
		if strings.Contains(e.Quant, "2") {
			bits = "2"
		}
		families[e.Arch][bits] = true
	}
	for _, arch := range []string{"qwen3moe", "qwen3next", "qwen4exp"} {
		if !families[arch]["2"] || !families[arch]["4"] {
			t.Errorf("%s: want a 2-bit and a 4-bit entry, have %v", arch, families[arch])
		}
	}
}

func FuzzLoadCatalog(f *testing.F) {
	f.Add([]byte(`{"version":1,"models":[{"name":"a","display":"A","arch":"x","quant":"q","hf":{"repo":"o/r"},"files":[{"path":"d/a.gguf"}]}]}`))
	f.Add([]byte(`{"version":1,"models":[{"name":"a","display":"A","arch":"x","quant":"q","files":[{"url":"https://h/a.gguf"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cat, err := models.LoadCatalog(b)
		if err != nil {
			return
		}
		for _, e := range cat {
			if models.ValidateName(e.Name) != nil {
				t.Fatalf("bad name %q accepted", e.Name)
			}
			for _, fl := range e.Files {
				p := fl.Path
				if p == "" {
					p = fl.URL
				}
				if models.ValidateName(filepath.Base(p)) != nil || strings.Contains(p, "/../") {
					t.Fatalf("bad file %q accepted", p)
				}
			}
		}
	})
}

func TestClassify(t *testing.T) {
	const gb = 1 << 30
	e := models.Entry{RAMRecommended: 24 * gb, RAMMin: 8 * gb}
	for _, tc := range []struct {
		ram  uint64
		want models.Fit
	}{{32 * gb, models.FitInRAM}, {24 * gb, models.FitInRAM}, {16 * gb, models.FitStreaming}, {4 * gb, models.FitTooLarge}, {0, models.FitUnknown}} {
		if got := models.Classify(e, tc.ram); got != tc.want {
			t.Errorf("Classify(%d GB) = %s, want %s", tc.ram/gb, got, tc.want)
		}
	}
	if got := models.Classify(models.Entry{}, 16*gb); got != models.FitUnknown {
		t.Errorf("no figures: %s", got)
	}
}

// A catalog entry with several files lists the parts of one split GGUF, in
// order.
func TestCatalogSplitFiles(t *testing.T) {
	doc := func(files ...string) []byte {
		var fs []string
		for _, f := range files {
			fs = append(fs, `{"path":"`+f+`","size":0,"sha256":""}`)
		}
		return []byte(`{"version":1,"models":[{"name":"m","display":"M","arch":"qwen3moe","quant":"Q4_K_M",
			"hf":{"repo":"o/r","revision":"main"},"files":[` + strings.Join(fs, ",") + `]}]}`)
	}
	for _, tc := range []struct {
		files []string
		ok    bool
	}{
		{[]string{"m.gguf"}, true},
		{[]string{"Q4/m-00001-of-00002.gguf", "Q4/m-00002-of-00002.gguf"}, true},
		{[]string{"m-00002-of-00002.gguf", "m-00001-of-00002.gguf"}, false},
		{[]string{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf"}, false},
		{[]string{"a-00001-of-00002.gguf", "b-00002-of-00002.gguf"}, false},
		{[]string{"a.gguf", "b.gguf"}, false},
	} {
		_, err := models.LoadCatalog(doc(tc.files...))
		if (err == nil) != tc.ok {
			t.Errorf("%v: %v", tc.files, err)
		}
	}
}
