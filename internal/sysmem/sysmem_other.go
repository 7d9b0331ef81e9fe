//go:build !linux && !darwin

package sysmem

// Total returns the machine's physical memory in bytes (0 if unknown).
func Total() uint64 { return 0 }
