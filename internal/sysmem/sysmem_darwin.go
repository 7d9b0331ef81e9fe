package sysmem

import "golang.org/x/sys/unix"

// Total returns the machine's physical memory in bytes (0 if unknown).
func Total() uint64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return n
}
