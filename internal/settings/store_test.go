package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadMissingGivesDefaults(t *testing.T) {
	st, notice, err := Load(filepath.Join(t.TempDir(), "cfg", FileName))
	if err != nil || notice != "" || st.Get() != Defaults() {
		t.Fatalf("Load = %+v %q %v", st, notice, err)
	}
}

func TestLoadBadFileKeptAside(t *testing.T) {
	tests := []struct {
		name    string
		content string
		perm    os.FileMode
		inNote  string
	}{
		{"garbage", "not json at all", 0o600, "invalid character"},
		{"invalid value", `{"speculation":{"max_draft_tokens":1000}}`, 0o600, "speculation.max_draft_tokens"},
		{"empty file", "", 0o600, "EOF"},
		{"a directory", "", os.ModeDir, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), FileName)
			if tt.perm == os.ModeDir {
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(p, []byte(tt.content), tt.perm); err != nil {
				t.Fatal(err)
			}
			st, notice, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Get() != Defaults() {
				t.Errorf("not defaults: %+v", st.Get())
			}
			if !strings.Contains(notice, p+".bad") || !strings.Contains(notice, tt.inNote) {
				t.Errorf("notice %q lacks the .bad path or %q", notice, tt.inNote)
			}
			if _, err := os.Stat(p + ".bad"); err != nil {
				t.Errorf("bad file not kept: %v", err)
			}
			if tt.perm != os.ModeDir {
				got, _ := os.ReadFile(p + ".bad")
				if string(got) != tt.content {
					t.Errorf(".bad holds %q", got)
				}
			}
			// Saving now works and a reload gives the defaults without a notice.
			if err := st.Save(); err != nil {
				t.Fatal(err)
			}
			st2, notice2, err := Load(p)
			if err != nil || notice2 != "" || st2.Get() != Defaults() {
				t.Fatalf("reload: %v %q", err, notice2)
			}
		})
	}
}

func TestSetPersistsAndNotifies(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", FileName)
	st, _, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	ch, cancel := st.Subscribe()
	defer cancel()

	s := st.Get()
	s.API.Port = 12345
	s.Advanced.Threads = 3
	if err := st.Set(s); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ch:
		if got != s {
			t.Fatalf("notified %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	st2, notice, err := Load(p)
	if err != nil || notice != "" || st2.Get() != s {
		t.Fatalf("reload = %+v %q %v", st2.Get(), notice, err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}

	// An invalid Set changes nothing, on disk or in memory, and notifies no one.
	bad := s
	bad.Speculation.MinDraftProb = 2
	err = st.Set(bad)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "speculation.min_draft_probability" {
		t.Fatalf("Set(bad) = %v", err)
	}
	if st.Get() != s {
		t.Fatal("invalid Set changed the settings")
	}
	select {
	case got := <-ch:
		t.Fatalf("notified of an invalid Set: %+v", got)
	default:
	}

	if err := st.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := <-ch; got != Defaults() {
		t.Fatalf("after Reset notified %+v", got)
	}
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("channel open after cancel")
	}
}

func TestSetFailsWhenFolderUnwritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	st, _, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil { // the folder's place is taken by a file
		t.Fatal(err)
	}
	s := st.Get()
	s.API.Port = 2000
	if err := st.Set(s); err == nil || !strings.Contains(err.Error(), "save settings") {
		t.Fatalf("Set = %v", err)
	}
	if st.Get().API.Port != DefaultPort {
		t.Fatal("failed Set changed the settings")
	}
}
