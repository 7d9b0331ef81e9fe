//go:build !unix

package metal

// mapAnon returns n bytes of zeroed memory (no device here wraps host
// memory: this is never bound in place).
func mapAnon(n int) ([]byte, func(), error) { return make([]byte, n), func() {}, nil }
