//go:build unix

package download

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FreeSpace returns the bytes available to an unprivileged user on the file
// system holding dir.
func FreeSpace(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
