package gguf

import "golang.org/x/sys/unix"

// adviseHugePages asks for transparent huge pages for b (a hint).
func adviseHugePages(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
