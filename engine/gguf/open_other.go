//go:build !unix

package gguf

import (
	"context"
	"fmt"
	"os"
)

// Open reads the file at path into memory (this platform has no mmap
// support here) and validates it with the same checks as Parse.
func Open(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return Parse(data, path)
}

// Load is Open on this platform.
func Load(_ context.Context, path string) (*File, error) { return Open(path) }
