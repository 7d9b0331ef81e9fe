package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-llm/strata/models/download"
)

const (
	manifestFile = "manifest.json"
	pullFile     = "pull.json"
)

// Manifest describes an installed model. It lives in the model's folder
// and is written only after all its files are in place.
type Manifest struct {
	Version     int            `json:"version"`
	Name        string         `json:"name"`
	Display     string         `json:"display"`
	Arch        string         `json:"arch,omitempty"`
	Quant       string         `json:"quant,omitempty"`
	Source      Source         `json:"source"`
	Files       []ManifestFile `json:"files"`
	Verified    bool           `json:"verified"` // every file matched an expected sha256
	InstalledAt time.Time      `json:"installed_at"`
	VerifiedAt  time.Time      `json:"verified_at,omitzero"` // last successful hash check against expected hashes
}

// ManifestFile is one file of an installed model.
type ManifestFile struct {
	Name   string `json:"name"`
	URL    string `json:"url,omitempty"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // as computed
	// Expected is the sha256 the file was checked against ("" when none
	// was known: the file is unverified) and HashSource where it came from.
	Expected   string `json:"expected_sha256,omitempty"`
	HashSource string `json:"hash_source,omitempty"`
}

func (m *Manifest) check(name string) error {
	if m.Version != 1 {
		return fmt.Errorf("version %d, want 1", m.Version)
	}
	if m.Name != name {
		return fmt.Errorf("names model %q, in folder %q", m.Name, name)
	}
	if len(m.Files) == 0 {
		return errors.New("no files")
	}
	for _, f := range m.Files {
		if err := ValidateName(f.Name); err != nil {
			return err
		}
	}
	return nil
}

func readManifest(folder, name string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(folder, manifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", name, err)
	}
	if err := m.check(name); err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", name, err)
	}
	return &m, nil
}

func readPlan(folder, name string) (*plan, error) {
	b, err := os.ReadFile(filepath.Join(folder, pullFile))
	if err != nil {
		return nil, err
	}
	var p plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("pull record of %s: %w", name, err)
	}
	if p.Name != name || len(p.Files) == 0 {
		return nil, fmt.Errorf("pull record of %s: inconsistent", name)
	}
	for _, f := range p.Files {
		if err := ValidateName(f.Name); err != nil {
			return nil, fmt.Errorf("pull record of %s: %w", name, err)
		}
	}
	return &p, nil
}

// writeJSONAtomic writes v to folder/name via a temp file, fsync, rename
// and an fsync of the folder: readers see the old file or the whole new
// one, never a part.
func writeJSONAtomic(folder, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	f, err := os.CreateTemp(folder, "."+name+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(folder, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s in %s: %w", name, folder, err)
	}
	return download.SyncDir(folder)
}

// removeSync removes folder/name if present and makes that durable.
func removeSync(folder, name string) error {
	if err := os.Remove(filepath.Join(folder, name)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return download.SyncDir(folder)
}
