package models

import "golang.org/x/sys/unix"

// TotalRAM returns the machine's physical memory in bytes (0 if unknown).
func TotalRAM() uint64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
