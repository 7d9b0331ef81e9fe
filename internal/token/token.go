// Package token keeps the per-install API token: 32 random bytes, hex
// encoded, stored with mode 0600 in the config folder. Local apps present it
// to the API; it can be regenerated at any time.
package token

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// FileName is the token's file inside the config folder.
const FileName = "api-token"

// Store holds the current token and the file it lives in.
// All methods are safe for concurrent use.
type Store struct {
	path string

	mu  sync.RWMutex
	tok string
}

// Open loads the token from configDir, creating a new one if the file is
// missing or does not hold a valid token. A token file readable by others
// is tightened to 0600.
func Open(configDir string) (*Store, error) {
	s := &Store{path: filepath.Join(configDir, FileName)}
	b, err := os.ReadFile(s.path)
	switch {
	case err == nil && valid(strings.TrimSpace(string(b))):
		s.tok = strings.TrimSpace(string(b))
		if fi, err := os.Stat(s.path); err == nil && fi.Mode().Perm() != 0o600 {
			if err := os.Chmod(s.path, 0o600); err != nil {
				return nil, fmt.Errorf("token %s: %w", s.path, err)
			}
		}
		return s, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("token %s: %w", s.path, err)
	}
	if _, err := s.Regenerate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Path is the token file's path.
func (s *Store) Path() string { return s.path }

// String returns the current token.
func (s *Store) String() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tok
}

// Valid reports whether candidate is the current token, in constant time.
func (s *Store) Valid(candidate string) bool {
	s.mu.RLock()
	tok := s.tok
	s.mu.RUnlock()
	if tok == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(candidate), []byte(tok)) == 1
}

// Regenerate replaces the token with a new random one, written atomically,
// and returns it. The old token stops working at once.
func (s *Store) Regenerate() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("token: random: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	if err := writeFile(s.path, []byte(tok+"\n")); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.tok = tok
	s.mu.Unlock()
	return tok, nil
}

func valid(tok string) bool {
	if len(tok) != 64 {
		return false
	}
	_, err := hex.DecodeString(tok)
	return err == nil
}

// writeFile writes data to path atomically with mode 0600.
func writeFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("token %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("token %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("token %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("token %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("token %s: %w", path, err)
	}
	return nil
}
