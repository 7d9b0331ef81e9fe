//go:build linux

package backendpick

import "golang.org/x/sys/unix"

// osVersion is the kernel release ("6.1.0-18-amd64"), "" if unknown.
func osVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
