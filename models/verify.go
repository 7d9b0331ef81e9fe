package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-llm/strata/models/download"
)

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Name  string       `json:"name"`
	Files []VerifyFile `json:"files"`
	// Verified: every file matched the sha256 it was installed with.
	// Unverified models (no expected hash was known) are hashed and
	// validated but stay unverified.
	Verified bool `json:"verified"`
}

// VerifyFile is one file's outcome.
type VerifyFile struct {
	Name     string `json:"name"`
	SHA256   string `json:"sha256"`
	Expected string `json:"expected_sha256,omitempty"`
	Valid    bool   `json:"valid"` // passed the GGUF validator
}

// Verify re-hashes an installed model's files (every part of a split
// model) against its manifest and runs the GGUF validator on the model. progress, if not nil, gets bytes hashed and
// the total. A mismatch returns download.ErrHashMismatch; an invalid file
// ErrInvalidGGUF; the report is filled either way. On success the
// manifest's verified time is updated.
func (m *Manager) Verify(ctx context.Context, name string, progress func(done, total int64)) (VerifyReport, error) {
	folder, err := m.folder(name)
	if err != nil {
		return VerifyReport{}, err
	}
	m.mu.Lock()
	t, pulling := m.pulls[name]
	m.mu.Unlock()
	if pulling {
		select {
		case <-t.done:
		default:
			return VerifyReport{}, fmt.Errorf("verify %s: a download is running", name)
		}
	}
	man, err := readManifest(folder, name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return VerifyReport{}, fmt.Errorf("verify %s: %w", name, ErrNotInstalled)
		}
		return VerifyReport{}, fmt.Errorf("verify %s: %w", name, err)
	}
	var total, base int64
	for _, f := range man.Files {
		total += f.Size
	}
	rep := VerifyReport{Name: name, Verified: true}
	var errs []error
	verr := m.opts.Validate(filepath.Join(folder, man.Files[0].Name))
	if verr != nil {
		errs = append(errs, fmt.Errorf("%w: %v", ErrInvalidGGUF, verr))
	}
	for _, f := range man.Files {
		path := filepath.Join(folder, f.Name)
		b := base
		sum, err := download.HashFile(ctx, path, func(done, _ int64) {
			if progress != nil {
				progress(b+done, total)
			}
		})
		if err != nil {
			return rep, fmt.Errorf("verify %s: %w", name, err)
		}
		base += f.Size
		vf := VerifyFile{Name: f.Name, SHA256: sum, Expected: f.Expected}
		switch {
		case f.Expected != "" && sum != f.Expected:
			errs = append(errs, fmt.Errorf("%s: %w: expected %s, got %s", f.Name, download.ErrHashMismatch, f.Expected, sum))
			rep.Verified = false
		case f.Expected == "" && sum != f.SHA256:
			errs = append(errs, fmt.Errorf("%s: %w: the file changed since it was installed (was %s, now %s)", f.Name, download.ErrHashMismatch, f.SHA256, sum))
			rep.Verified = false
		case f.Expected == "":
			rep.Verified = false
		}
		vf.Valid = verr == nil
		rep.Files = append(rep.Files, vf)
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("verify %s: %w", name, errors.Join(errs...))
	}
	if rep.Verified {
		man.Verified = true
		man.VerifiedAt = time.Now().UTC()
		if err := writeJSONAtomic(folder, manifestFile, man); err != nil {
			return rep, fmt.Errorf("verify %s: %w", name, err)
		}
	}
	return rep, nil
}

// VerifyPath hashes a GGUF file (with all the parts of a split model whose
// first part it is, found by name) and runs the validator on the model
// (for `strata verify FILE`). It returns each file's sha256.
func (m *Manager) VerifyPath(ctx context.Context, path string, progress func(done, total int64)) ([]VerifyFile, error) {
	paths := []string{path}
	if sm := splitRe.FindStringSubmatch(filepath.Base(path)); sm != nil && sm[2] == "00001" {
		paths, _ = splitShards(path)
	}
	var out []VerifyFile
	for _, p := range paths {
		sum, err := download.HashFile(ctx, p, progress)
		if err != nil {
			return out, err
		}
		out = append(out, VerifyFile{Name: p, SHA256: sum})
	}
	if err := m.opts.Validate(path); err != nil {
		return out, fmt.Errorf("%s: %w: %v", path, ErrInvalidGGUF, err)
	}
	for i := range out {
		out[i].Valid = true
	}
	return out, nil
}
