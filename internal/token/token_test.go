package token

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOpenCreatesPersistsAndRegenerates(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok := s.String()
	if !valid(tok) {
		t.Fatalf("token %q is not 64 hex digits", tok)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s2.String() != tok {
		t.Errorf("reopened token %q, want %q", s2.String(), tok)
	}
	if !s.Valid(tok) || s.Valid(tok[:63]) || s.Valid("") || s.Valid(tok+"0") {
		t.Error("Valid accepts the wrong tokens or refuses the right one")
	}
	nt, err := s.Regenerate()
	if err != nil {
		t.Fatal(err)
	}
	if nt == tok || s.Valid(tok) || !s.Valid(nt) {
		t.Error("regenerated token does not replace the old one")
	}
	s3, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s3.String() != nt {
		t.Error("regenerated token not persisted")
	}
}

func TestOpenReplacesInvalidAndTightensMode(t *testing.T) {
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		keep    bool
	}{
		{"garbage", "not a token\n", 0o600, false},
		{"short", "abcd", 0o600, false},
		{"valid but open", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", 0o644, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, FileName)
			if err := os.WriteFile(p, []byte(tt.content), tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.String() + "\n"; (got == tt.content) != tt.keep {
				t.Errorf("token %q kept=%v, want kept=%v", s.String(), got == tt.content, tt.keep)
			}
			fi, _ := os.Stat(p)
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}
