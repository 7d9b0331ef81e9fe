package gguf

import (
	"os"

	"golang.org/x/sys/unix"
)

// noCache turns the kernel's read-ahead off for fd: with it on, each
// range read pulled up to read_ahead_kb (8 MB here) of the expert tensor
// after it into the page cache, 680 MB of cache for a 590 MB dense part of
// a 48-layer model, which a cgroup limit charged against the arena.
// dropCache drops what was read itself.
func noCache(fd *os.File) { _ = unix.Fadvise(int(fd.Fd()), 0, 0, unix.FADV_RANDOM) }

// dropCache drops the page-cache pages of a range Pin has copied: the
// bytes live in the process's memory now, and a cgroup limit charges
// page cache too.
func dropCache(fd *os.File, off, n int64) { _ = unix.Fadvise(int(fd.Fd()), off, n, unix.FADV_DONTNEED) }
