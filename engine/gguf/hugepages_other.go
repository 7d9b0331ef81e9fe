//go:build unix && !linux

package gguf

// adviseHugePages does nothing where the kernel has no transparent huge
// pages to ask for (macOS maps 16 KiB pages on Apple silicon anyway).
func adviseHugePages([]byte) {}
