package experts

import (
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens path for reads that bypass the page cache (O_DIRECT:
// offsets, lengths and buffers aligned to directAlign). If the file
// system refuses O_DIRECT (tmpfs), it falls back to buffered reads and
// says so.
func openDirect(path string) (f *os.File, direct bool, err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err == nil {
		return os.NewFile(uintptr(fd), path), true, nil
	}
	f, err = os.Open(path)
	return f, false, err
}

// allocArena returns n bytes of anonymous memory, locked into RAM where
// the process may lock that much (never swapped out under the caller).
func allocArena(n int) ([]byte, func(), error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, err
	}
	_ = unix.Mlock(b) // best effort: RLIMIT_MEMLOCK is often small
	return b, func() { unix.Munmap(b) }, nil
}
