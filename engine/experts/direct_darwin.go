package experts

import (
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens path for reads that bypass the unified buffer cache
// (F_NOCACHE) with the kernel's read-ahead off (F_RDAHEAD 0).
func openDirect(path string) (*os.File, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	fd := int(f.Fd())
	_, err1 := unix.FcntlInt(uintptr(fd), unix.F_NOCACHE, 1)
	_, err2 := unix.FcntlInt(uintptr(fd), unix.F_RDAHEAD, 0)
	return f, err1 == nil && err2 == nil, nil
}

// allocArena returns n bytes of anonymous memory, wired where allowed.
func allocArena(n int) ([]byte, func(), error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, err
	}
	_ = unix.Mlock(b)
	return b, func() { unix.Munmap(b) }, nil
}
