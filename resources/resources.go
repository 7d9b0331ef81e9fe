// Package resources holds the files embedded in the Strata binary: the
// model catalog (and, from the app, its icons).
package resources

import (
	"bytes"
	_ "embed"
)

//go:embed catalog.json
var catalogJSON []byte

// Catalog returns the embedded model catalog, a JSON document read by
// models.LoadCatalog. The caller owns the returned bytes.
func Catalog() []byte { return bytes.Clone(catalogJSON) }
