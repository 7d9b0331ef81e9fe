// Package resources holds the files embedded in the Strata binary: the
// model catalog, the shipped expert-usage profiles (and, from the app, its
// icons).
package resources

import (
	"bytes"
	"embed"
	"io/fs"
)

//go:embed catalog.json
var catalogJSON []byte

// Catalog returns the embedded model catalog, a JSON document read by
// models.LoadCatalog. The caller owns the returned bytes.
func Catalog() []byte { return bytes.Clone(catalogJSON) }

//go:embed profiles
var profiles embed.FS

// Profiles returns the static expert-usage profiles shipped in the binary,
// each at the root and named by its model's identity, as the engine's
// Options.Profiles reads them (profiles/README.md says how one is made).
func Profiles() fs.FS {
	sub, err := fs.Sub(profiles, "profiles")
	if err != nil { // the pattern is the directive's own: cannot fail
		panic(err)
	}
	return sub
}
