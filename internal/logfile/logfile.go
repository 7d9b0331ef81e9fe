// Package logfile is a small size-rotating log file: when the current file
// would grow past a limit it is renamed to NAME.1 (older ones shift to
// NAME.2 …) and a fresh file is started; only a fixed number are kept.
package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Rotator is an io.WriteCloser writing to dir/name with rotation.
// It is safe for concurrent use.
type Rotator struct {
	path     string
	maxBytes int64
	keep     int

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (appending) dir/name, rotating once it exceeds maxBytes and
// keeping keep old files (NAME.1 … NAME.keep).
func Open(dir, name string, maxBytes int64, keep int) (*Rotator, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("logfile: max size %d must be positive", maxBytes)
	}
	if keep < 0 {
		keep = 0
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("logfile: %w", err)
	}
	r := &Rotator{path: filepath.Join(dir, name), maxBytes: maxBytes, keep: keep}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

// Path is the current log file's path.
func (r *Rotator) Path() string { return r.path }

func (r *Rotator) open() error {
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("logfile: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("logfile: %w", err)
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first if p would take the file past the limit
// (a single write larger than the limit still goes to one file).
func (r *Rotator) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(p)) > r.maxBytes {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *Rotator) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("logfile: %w", err)
	}
	r.f = nil
	if r.keep == 0 {
		if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("logfile: %w", err)
		}
		return r.open()
	}
	os.Remove(fmt.Sprintf("%s.%d", r.path, r.keep))
	for i := r.keep - 1; i >= 1; i-- {
		old := fmt.Sprintf("%s.%d", r.path, i)
		if err := os.Rename(old, fmt.Sprintf("%s.%d", r.path, i+1)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("logfile: %w", err)
		}
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		return fmt.Errorf("logfile: %w", err)
	}
	return r.open()
}

// Close closes the current file.
func (r *Rotator) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
