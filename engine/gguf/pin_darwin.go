package gguf

import (
	"os"

	"golang.org/x/sys/unix"
)

// noCache turns the page cache off for fd's reads (F_NOCACHE on macOS),
// so what Pin copies is not also kept as cache.
func noCache(fd *os.File) { _, _ = unix.FcntlInt(fd.Fd(), unix.F_NOCACHE, 1) }

// dropCache does nothing here: noCache kept the reads out of the cache.
func dropCache(*os.File, int64, int64) {}
