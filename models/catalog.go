package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/strata-llm/strata/models/download"
	"github.com/strata-llm/strata/resources"
)

// CatalogEntry is one downloadable model of the catalog.
type CatalogEntry struct {
	Name        string  `json:"name"` // store name, passes ValidateName
	Display     string  `json:"display"`
	Description string  `json:"description"` // one plain-language line
	Family      string  `json:"family"`
	Arch        string  `json:"arch"` // GGUF general.architecture
	Quant       string  `json:"quant"`
	ParamsB     float64 `json:"params_b"`        // total parameters, billions
	ActiveB     float64 `json:"active_params_b"` // per token
	// SizeBytes is the exact total size (0: unknown); ApproxSizeBytes an
	// estimate for display when the exact size is unknown.
	SizeBytes       int64 `json:"size_bytes"`
	ApproxSizeBytes int64 `json:"approx_size_bytes"`
	// RAMRecommended is the memory to run fully in RAM; RAMMin the least
	// to run with expert streaming from the SSD.
	RAMRecommended uint64 `json:"ram_recommended_bytes"`
	RAMMin         uint64 `json:"ram_min_bytes"`
	// Unchecked marks entries whose repository could not be checked when
	// the catalog was written.
	Unchecked bool       `json:"unchecked"`
	Note      string     `json:"note,omitempty"`
	HF        *HFSource  `json:"hf,omitempty"`
	Files     []FileSpec `json:"files"`
}

// HFSource is a Hugging Face repository at a revision.
type HFSource struct {
	Repo     string `json:"repo"`     // "owner/name"
	Revision string `json:"revision"` // branch, tag or commit; "" = main
}

// FileSpec is one file of a model: a path in the HF repository, or a URL.
type FileSpec struct {
	Path   string `json:"path,omitempty"`
	URL    string `json:"url,omitempty"`
	Size   int64  `json:"size"`   // 0: unknown
	SHA256 string `json:"sha256"` // "": unknown
}

type catalogDoc struct {
	Version int            `json:"version"`
	Models  []CatalogEntry `json:"models"`
}

// DefaultCatalog returns the catalog embedded in the binary.
func DefaultCatalog() ([]CatalogEntry, error) { return LoadCatalog(resources.Catalog()) }

// LoadCatalog parses and checks a catalog document.
func LoadCatalog(b []byte) ([]CatalogEntry, error) {
	var doc catalogDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if doc.Version != 1 {
		return nil, fmt.Errorf("catalog: version %d, want 1", doc.Version)
	}
	seen := map[string]bool{}
	for i := range doc.Models {
		e := &doc.Models[i]
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("catalog entry %d (%q): %w", i, e.Name, err)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("catalog: duplicate name %q", e.Name)
		}
		seen[e.Name] = true
	}
	return doc.Models, nil
}

func (e *CatalogEntry) check() error {
	if err := ValidateName(e.Name); err != nil {
		return err
	}
	if e.Display == "" || e.Arch == "" || e.Quant == "" {
		return errors.New("display, arch and quant are required")
	}
	if len(e.Files) == 0 {
		return errors.New("no files")
	}
	if e.HF != nil {
		if err := validateRepo(e.HF.Repo); err != nil {
			return err
		}
	}
	var total int64
	bases := map[string]bool{}
	var prefix string
	for i, f := range e.Files {
		var p string
		switch {
		case f.Path != "" && f.URL == "" && e.HF != nil:
			p = f.Path
		case f.URL != "" && f.Path == "":
			u, err := url.Parse(f.URL)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return fmt.Errorf("file URL %q: not an https URL", f.URL)
			}
			p = strings.TrimPrefix(u.Path, "/")
		default:
			return errors.New("each file needs a path (with hf) or a url")
		}
		if err := validateRemotePath(p); err != nil {
			return err
		}
		b := baseName(p)
		if bases[b] {
			return fmt.Errorf("two files named %q", b)
		}
		if len(e.Files) > 1 {
			// The parts of a split model, in order, as gguf-split names them.
			m := splitRe.FindStringSubmatch(b)
			if i == 0 && m != nil {
				prefix = m[1]
			}
			if want := fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, i+1, len(e.Files)); m == nil || b != want {
				return fmt.Errorf("file %d of %d is %q: the files of a model are the parts of a split GGUF in order (%s)", i+1, len(e.Files), b, want)
			}
		}
		bases[b] = true
		if f.SHA256 != "" && !download.IsSHA256(f.SHA256) {
			return fmt.Errorf("file %q: sha256 %q is not 64 hex digits", p, f.SHA256)
		}
		if f.Size < 0 {
			return fmt.Errorf("file %q: negative size", p)
		}
		if f.Size == 0 {
			total = -1
		} else if total >= 0 {
			total += f.Size
		}
	}
	if e.SizeBytes != 0 && total > 0 && e.SizeBytes != total {
		return fmt.Errorf("size_bytes %d differs from the files' total %d", e.SizeBytes, total)
	}
	return nil
}

func findCatalog(cat []CatalogEntry, name string) (CatalogEntry, bool) {
	i := slices.IndexFunc(cat, func(e CatalogEntry) bool { return e.Name == name })
	if i < 0 {
		return CatalogEntry{}, false
	}
	return cat[i], true
}
