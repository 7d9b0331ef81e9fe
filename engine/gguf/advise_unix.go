//go:build unix

package gguf

import "golang.org/x/sys/unix"

// adviseWillNeed asks the kernel to start reading b's pages ahead.
func adviseWillNeed(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_WILLNEED) // only a hint
	}
}
