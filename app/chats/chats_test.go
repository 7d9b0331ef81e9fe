package chats

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "chats"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := New(t0)
	a.Title, a.System, a.Model = "Sea poems", "Answer in verse.", "Qwen3 30B"
	a.Messages = append(a.Messages, Message{Role: RoleUser, Content: "A haiku?", Time: t0},
		Message{Role: RoleAssistant, Content: "Waves *fold*\nover waves", Stopped: true, TokensPerSecond: 12.5})
	b := New(t0.Add(time.Minute))
	b.Updated = t0.Add(time.Hour)
	for _, c := range []*Chat{a, b} {
		if err := s.Save(c); err != nil {
			t.Fatal(err)
		}
	}
	list, notices, err := s.Load()
	if err != nil || len(notices) != 0 {
		t.Fatalf("load: %v %q", err, notices)
	}
	if len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID {
		t.Fatalf("order: %+v", list)
	}
	got := list[1]
	if got.Title != a.Title || got.System != a.System || got.Model != a.Model || len(got.Messages) != 2 ||
		got.Messages[1] != a.Messages[1] || !got.Messages[0].Time.Equal(t0) {
		t.Fatalf("round trip: %+v", got)
	}
	fi, err := os.Stat(s.path(a.ID))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode: %v %v", fi, err)
	}
	if err := s.Delete(a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a.ID); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	if list, _, _ := s.Load(); len(list) != 1 || list[0].ID != b.ID {
		t.Fatalf("after delete: %+v", list)
	}
	for _, id := range []string{"", "../x", "a/b", "a.b", strings.Repeat("a", 65)} {
		if err := s.Delete(id); err == nil {
			t.Errorf("Delete(%q) accepted", id)
		}
		if err := s.Save(&Chat{ID: id}); err == nil {
			t.Errorf("Save(%q) accepted", id)
		}
	}
}

func TestCorruptFilesSetAside(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	good := New(time.Now())
	if err := s.Save(good); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"truncated":    `{"version":1,"id":"truncated","messages":[{"role":"us`,
		"not-json":     "\x00\x01binary",
		"version":      `{"version":7,"id":"version","messages":[]}`,
		"other-id":     `{"version":1,"id":"someone-else","messages":[]}`,
		"role":         `{"version":1,"id":"role","messages":[{"role":"system","content":"x"}]}`,
		"trailing":     `{"version":1,"id":"trailing","messages":[]} {}`,
		"wrong-shape":  `{"version":1,"id":"wrong-shape","messages":{"role":"user"}}`,
		"empty":        ``,
		"bad id chars": `{"version":1,"id":"../../etc","messages":[]}`,
	}
	for name, data := range bad {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	list, notices, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != good.ID {
		for _, c := range list {
			t.Logf("loaded %+v", c)
		}
		t.Fatalf("loaded %d", len(list))
	}
	if len(notices) != len(bad) {
		t.Fatalf("%d notices for %d bad files: %q", len(notices), len(bad), notices)
	}
	for name, data := range bad {
		aside := filepath.Join(dir, name+".json.corrupt-20261201-120000")
		kept, err := os.ReadFile(aside)
		if err != nil || string(kept) != data {
			t.Errorf("%s: set-aside copy %q %v", name, kept, err)
		}
		if !strings.Contains(strings.Join(notices, "\n"), name+".json could not be read") {
			t.Errorf("no notice names %s.json: %q", name, notices)
		}
	}
	// Set-aside files are not read again.
	if list, notices, _ := s.Load(); len(list) != 1 || len(notices) != 0 {
		t.Fatalf("second load: %d chats, notices %q", len(list), notices)
	}
}

func TestMarkdown(t *testing.T) {
	c := New(time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC))
	c.Title, c.Model, c.Demo, c.System = "Hello  there", "Demo model (random weights)", true, "Be brief."
	c.Messages = []Message{{Role: RoleUser, Content: "Hi"}, {Role: RoleAssistant, Content: "moot **zeb**\n", Stopped: true}}
	want := "# Hello there\n\nModel: Demo model (random weights)\nStarted: 2026-12-01 09:30\n\n" +
		"> This chat is with the demo model. Its weights are random, so its words are random too.\n\n" +
		"## System prompt\n\nBe brief.\n\n## You\n\nHi\n\n## Demo model (random weights)\n\nmoot **zeb**\n\n*(stopped)*\n\n"
	if got := c.Markdown(); got != want {
		t.Fatalf("markdown:\n%s\nwant:\n%s", got, want)
	}
}

func TestTitleFrom(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  Write a haiku\nabout the sea", "Write a haiku"},
		{"", "New chat"},
		{"   \n\n", "New chat"},
		{strings.Repeat("é", 70), strings.Repeat("é", 59) + "…"},
	}
	for _, tt := range tests {
		if got := TitleFrom(tt.in); got != tt.want {
			t.Errorf("TitleFrom(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"id":"a-1","title":"t","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"version":1,"id":"a","messages":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if !validID(c.ID) || c.Version != Version || c.Messages == nil {
			t.Fatalf("accepted an invalid chat: %+v", c)
		}
		_ = c.Markdown()
	})
}
