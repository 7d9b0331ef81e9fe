package gguf

import (
	"os"

	"golang.org/x/sys/unix"
)

// noCache does nothing on Linux: dropCache drops what was read instead.
func noCache(*os.File) {}

// dropCache drops the page-cache pages of a range Pin has copied: the
// bytes live in the process's memory now, and a cgroup limit charges
// page cache too.
func dropCache(fd *os.File, off, n int64) { _ = unix.Fadvise(int(fd.Fd()), off, n, unix.FADV_DONTNEED) }
