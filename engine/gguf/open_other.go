//go:build !unix

package gguf

import (
	"context"
	"fmt"
	"os"
)

// Open reads the file at path into memory (this platform has no mmap
// support here) and validates it with the same checks as Parse; for the
// first part of a split model, all parts (see File).
func Open(path string) (*File, error) {
	f, err := OpenPart(path)
	if err != nil {
		return nil, err
	}
	if err := openSplit(context.Background(), f, func(_ context.Context, p string) (*File, error) { return OpenPart(p) }); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenPart is Open for exactly the file at path.
func OpenPart(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return Parse(data, path)
}

// Load is Open on this platform.
func Load(_ context.Context, path string) (*File, error) { return Open(path) }

// Pin does nothing on this platform: Open read the file into memory.
func (f *File) Pin(context.Context, func(*TensorInfo) bool) (int64, error) { return 0, nil }

// LoadProgress is Open on this platform, telling read the file's size
// once it is read.
func LoadProgress(_ context.Context, path string, read func(n int64)) (*File, error) {
	f, err := Open(path)
	if err == nil && read != nil {
		read(f.Size)
	}
	return f, err
}
