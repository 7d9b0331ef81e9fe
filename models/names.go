package models

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen bounds model and file names, in bytes.
const MaxNameLen = 200

// ErrBadName is returned (wrapped) for names that could escape the store.
var ErrBadName = errors.New("invalid name")

// ValidateName checks a model or file name from outside before it is used
// as one path element: not empty, at most MaxNameLen bytes of valid UTF-8,
// no '/', '\\' or ':', not "." or "..", not starting with '.', '-' or a
// space, no control characters.
func ValidateName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrBadName, name, why) }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > MaxNameLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxNameLen))
	case !utf8.ValidString(name):
		return bad("not UTF-8")
	case name == "." || name == ".." || strings.Contains(name, ".."):
		return bad(`contains ".."`)
	case strings.ContainsAny(name, `/\:`):
		return bad("contains a path separator")
	case strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, " ") || strings.HasSuffix(name, " "):
		return bad("starts with '.', '-' or a space, or ends with a space")
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return bad("contains a control character")
		}
	}
	return nil
}

// validateRemotePath checks a file path inside a repository or URL
// ("Q4_K_M/model-00001-of-00002.gguf"): relative, no empty, "." or ".."
// segments, and a base name that passes ValidateName.
func validateRemotePath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return fmt.Errorf("%w %q: not a relative path", ErrBadName, p)
	}
	segs := strings.Split(p, "/")
	for _, s := range segs[:len(segs)-1] {
		if s == "" || s == "." || s == ".." {
			return fmt.Errorf("%w %q: bad path segment %q", ErrBadName, p, s)
		}
	}
	return ValidateName(segs[len(segs)-1])
}

var splitRe = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// splitShards expands the path of one shard of a split GGUF to all of its
// shards, in order; any other path comes back alone.
func splitShards(p string) ([]string, error) {
	dir, base := path.Split(p)
	m := splitRe.FindStringSubmatch(base)
	if m == nil {
		return []string{p}, nil
	}
	n, _ := strconv.Atoi(m[3])
	i, _ := strconv.Atoi(m[2])
	if n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("%w %q: shard %d of %d", ErrBadName, p, i, n)
	}
	out := make([]string, n)
	for k := range n {
		out[k] = fmt.Sprintf("%s%s-%05d-of-%05d.gguf", dir, m[1], k+1, n)
	}
	return out, nil
}

// nameFromFile derives a model name from a GGUF file name: the base name
// without ".gguf" and without a split suffix.
func nameFromFile(p string) string {
	base := path.Base(p)
	if m := splitRe.FindStringSubmatch(base); m != nil {
		return m[1]
	}
	return strings.TrimSuffix(base, ".gguf")
}
