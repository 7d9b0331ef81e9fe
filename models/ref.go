package models

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Source says where a model comes from.
type Source struct {
	Kind     string `json:"kind"` // "catalog", "hf" or "url"
	Ref      string `json:"ref"`  // what the user asked for
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
	// Commit is the repository commit the hub resolved the revision to
	// (X-Repo-Commit), when it said.
	Commit string `json:"commit,omitempty"`
}

// plan is a resolved pull: the files to fetch and where they go.
type plan struct {
	Name    string        `json:"name"`
	Display string        `json:"display"`
	Arch    string        `json:"arch,omitempty"`
	Quant   string        `json:"quant,omitempty"`
	Source  Source        `json:"source"`
	Files   []plannedFile `json:"files"`
	// LastError is the error of the last attempt, for a failed pull.
	LastError string `json:"last_error,omitempty"`
}

type plannedFile struct {
	Name   string `json:"name"` // local file name, passes ValidateName
	URL    string `json:"url"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// HashSource is "catalog" or "hub" when SHA256 is set.
	HashSource string `json:"hash_source,omitempty"`
	// Done records a finished file: its computed hash and whether that
	// matched an expected one.
	Done     bool   `json:"done,omitempty"`
	Got      string `json:"got_sha256,omitempty"`
	Verified bool   `json:"verified,omitempty"`
}

var repoPartRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

func validateRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !repoPartRe.MatchString(owner) || !repoPartRe.MatchString(name) || strings.Contains(repo, "..") {
		return fmt.Errorf("%w: %q is not a Hugging Face repository (owner/name)", ErrBadName, repo)
	}
	return nil
}

func validateRevision(rev string) error {
	if rev == "" || len(rev) > 128 || strings.Contains(rev, "..") || strings.ContainsAny(rev, "\\?#% \t\n") || strings.HasPrefix(rev, "/") {
		return fmt.Errorf("%w: revision %q", ErrBadName, rev)
	}
	return nil
}

// ErrUnknownRef is returned (wrapped) by Pull for a reference that is none
// of: a catalog name, a Hugging Face repo/file, an https URL.
var ErrUnknownRef = errors.New("unknown model")

// hfURL builds the resolve URL of a file in a Hugging Face repository.
func hfURL(hub, repo, rev, file string) string {
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.TrimSuffix(hub, "/") + "/" + repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(segs, "/")
}

func baseName(p string) string { return path.Base(p) }

// resolve turns what the user typed into a plan.
func resolve(cat []CatalogEntry, hub, ref string) (plan, error) {
	ref = strings.TrimSpace(ref)
	if e, ok := findCatalog(cat, ref); ok {
		return catalogPlan(e, hub)
	}
	switch {
	case strings.HasPrefix(ref, "http://"):
		return plan{}, fmt.Errorf("%q: only https URLs are allowed", ref)
	case strings.HasPrefix(ref, "https://"):
		u, err := url.Parse(ref)
		if err != nil || u.Host == "" {
			return plan{}, fmt.Errorf("%w %q: bad URL", ErrUnknownRef, ref)
		}
		if hu, err := url.Parse(hub); err == nil && strings.EqualFold(u.Host, hu.Host) {
			// https://huggingface.co/owner/repo/{resolve,blob}/rev/path
			segs := strings.SplitN(strings.TrimPrefix(u.Path, "/"), "/", 5)
			if len(segs) == 5 && (segs[2] == "resolve" || segs[2] == "blob") {
				return hfPlan(hub, ref, segs[0]+"/"+segs[1], segs[3], segs[4])
			}
		}
		return urlPlan(ref, u)
	}
	hf := strings.TrimPrefix(ref, "hf://")
	segs := strings.SplitN(hf, "/", 3)
	if len(segs) == 3 && strings.HasSuffix(strings.ToLower(segs[2]), ".gguf") {
		repoName, rev, _ := strings.Cut(segs[1], "@")
		if rev == "" {
			rev = "main"
		}
		return hfPlan(hub, ref, segs[0]+"/"+repoName, rev, segs[2])
	}
	return plan{}, fmt.Errorf("%w %q: not in the catalog, not a Hugging Face owner/repo/file.gguf, not an https URL", ErrUnknownRef, ref)
}

func catalogPlan(e CatalogEntry, hub string) (plan, error) {
	p := plan{Name: e.Name, Display: e.Display, Arch: e.Arch, Quant: e.Quant, Source: Source{Kind: "catalog", Ref: e.Name}}
	if e.HF != nil {
		p.Source.Repo = e.HF.Repo
		p.Source.Revision = e.HF.Revision
		if p.Source.Revision == "" {
			p.Source.Revision = "main"
		}
	}
	for _, f := range e.Files {
		pf := plannedFile{URL: f.URL, Size: f.Size, SHA256: strings.ToLower(f.SHA256)}
		if f.SHA256 != "" {
			pf.HashSource = "catalog"
		}
		if f.Path != "" {
			pf.Name = baseName(f.Path)
			pf.URL = hfURL(hub, e.HF.Repo, p.Source.Revision, f.Path)
		} else {
			u, _ := url.Parse(f.URL)
			pf.Name = baseName(u.Path)
		}
		if err := ValidateName(pf.Name); err != nil {
			return plan{}, err
		}
		p.Files = append(p.Files, pf)
	}
	return p, nil
}

func hfPlan(hub, ref, repo, rev, file string) (plan, error) {
	if err := validateRepo(repo); err != nil {
		return plan{}, err
	}
	if err := validateRevision(rev); err != nil {
		return plan{}, err
	}
	if err := validateRemotePath(file); err != nil {
		return plan{}, err
	}
	shards, err := splitShards(file)
	if err != nil {
		return plan{}, err
	}
	p := plan{Name: nameFromFile(file), Source: Source{Kind: "hf", Ref: ref, Repo: repo, Revision: rev}}
	p.Display = p.Name
	if err := ValidateName(p.Name); err != nil {
		return plan{}, err
	}
	for _, s := range shards {
		p.Files = append(p.Files, plannedFile{Name: baseName(s), URL: hfURL(hub, repo, rev, s)})
	}
	return p, nil
}

func urlPlan(ref string, u *url.URL) (plan, error) {
	file := strings.TrimPrefix(u.Path, "/")
	if err := validateRemotePath(file); err != nil {
		return plan{}, err
	}
	shards, err := splitShards(file)
	if err != nil {
		return plan{}, err
	}
	p := plan{Name: nameFromFile(file), Source: Source{Kind: "url", Ref: ref}}
	p.Display = p.Name
	if err := ValidateName(p.Name); err != nil {
		return plan{}, err
	}
	for _, s := range shards {
		su := *u
		su.Path = "/" + s
		su.RawPath = ""
		p.Files = append(p.Files, plannedFile{Name: baseName(s), URL: su.String()})
	}
	return p, nil
}
