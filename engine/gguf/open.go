//go:build unix

package gguf

import (
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// Open memory-maps the file at path read-only and validates it with the same
// checks as Parse. Tensor data returned by Data views the map. Close the
// File to unmap it.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf %s: not a regular file", path)
	}
	if size < 4 {
		return nil, &FormatError{File: path, Field: "header", Msg: fmt.Sprintf("file is %d bytes, too small for a GGUF header", size)}
	}
	if uint64(size) > math.MaxInt {
		return nil, fmt.Errorf("gguf %s: file of %d bytes is too large to map", path, size)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gguf %s: mmap: %w", path, err)
	}
	f, err := Parse(data, path)
	if err != nil {
		unix.Munmap(data)
		return nil, err
	}
	f.unmap = unix.Munmap
	return f, nil
}
