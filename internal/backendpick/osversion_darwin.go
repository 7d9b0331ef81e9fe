package backendpick

import "golang.org/x/sys/unix"

// osVersion is the macOS product version ("15.1"), "" if unknown.
func osVersion() string {
	v, err := unix.Sysctl("kern.osproductversion")
	if err != nil {
		return ""
	}
	return v
}
