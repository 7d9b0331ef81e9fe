package cores

import "golang.org/x/sys/unix"

// physical is the number of performance cores (hw.perflevel0.physicalcpu,
// macOS 12 and later), else of physical cores.
func physical() int {
	for _, name := range []string{"hw.perflevel0.physicalcpu", "hw.physicalcpu"} {
		if v, err := unix.SysctlUint32(name); err == nil && v > 0 {
			return int(v)
		}
	}
	return 0
}
