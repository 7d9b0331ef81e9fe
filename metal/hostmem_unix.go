//go:build unix

package metal

import "golang.org/x/sys/unix"

// mapAnon returns n bytes of anonymous memory (page-aligned, zeroed),
// locked where the process may.
func mapAnon(n int) ([]byte, func(), error) {
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, err
	}
	_ = unix.Mlock(m) // best effort: RLIMIT_MEMLOCK is often small
	return m, func() { unix.Munmap(m) }, nil
}
