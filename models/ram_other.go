//go:build !linux && !darwin

package models

// TotalRAM returns the machine's physical memory in bytes (0 if unknown).
func TotalRAM() uint64 { return 0 }
