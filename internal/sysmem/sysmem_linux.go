// Package sysmem reports how much physical memory this machine has.
package sysmem

import "golang.org/x/sys/unix"

// Total returns the machine's physical memory in bytes (0 if unknown).
func Total() uint64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
