//go:build unix

package gguf

import (
	"context"
	"fmt"
	"os"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pinChunk is how much Pin reads between checks of ctx.
const pinChunk = 16 << 20

// Pin moves the bytes of the tensors keep selects out of the page cache
// and into the process's own anonymous memory, at the same addresses, so
// the views Data returns are unchanged. A mapped page is page cache: under
// memory pressure the kernel may drop it and read it again on the next
// touch (a stall mid-token, and on a cgroup-limited process a charge that
// competes with the expert arena); a pinned page stays. It is how a
// streamed model holds its dense part (attention, norms, routers, shared
// experts, embeddings, head) while its routed experts are read from the
// SSD. The page-rounded superset of each selected tensor is pinned;
// neighbouring bytes of unselected tensors on the same pages come along.
// Reads bypass the page cache where the OS lets us drop it behind us.
//
// Pin only works on a File from Open (a memory map of the file); it does
// nothing on one from Load or Parse, which are in memory already. It
// returns the bytes pinned. On error (ctx, a read error), every range it
// touched is mapped from the file again, so the File is as before.
func (f *File) Pin(ctx context.Context, keep func(*TensorInfo) bool) (int64, error) {
	var total int64
	for part := 0; part <= len(f.parts); part++ {
		src := f
		if part > 0 {
			src = f.parts[part-1]
		}
		if src.unmap == nil || src.pinned {
			continue // not a file mapping (Parse), or pinned already
		}
		var ranges [][2]int64
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if t.Part != part || t.Size == 0 || !keep(t) {
				continue
			}
			start := src.DataOffset + int64(t.Offset)
			ranges = append(ranges, [2]int64{start, start + int64(t.Size)})
		}
		n, err := src.pinRanges(ctx, ranges)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// pinRanges pins the page-rounded, merged ranges of f's own mapping.
func (f *File) pinRanges(ctx context.Context, ranges [][2]int64) (int64, error) {
	if len(ranges) == 0 {
		return 0, nil
	}
	page := int64(os.Getpagesize())
	size := int64(len(f.data))
	for i := range ranges {
		ranges[i][0] = ranges[i][0] / page * page
		ranges[i][1] = min((ranges[i][1]+page-1)/page*page, (size+page-1)/page*page)
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i][0] < ranges[j][0] })
	// Merge overlapping ones and ones closer than 64 KiB: fewer mappings,
	// fewer reads, a few pages of experts more.
	merged := ranges[:1]
	for _, r := range ranges[1:] {
		last := &merged[len(merged)-1]
		if r[0] <= last[1]+64<<10 {
			last[1] = max(last[1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	fd, err := os.Open(f.Name)
	if err != nil {
		return 0, fmt.Errorf("gguf %s: pin: %w", f.Name, err)
	}
	defer fd.Close()
	noCache(fd)
	if st, err := fd.Stat(); err != nil || st.Size() != size {
		return 0, fmt.Errorf("gguf %s: pin: the file changed since it was opened", f.Name)
	}
	base := unsafe.Pointer(unsafe.SliceData(f.data))
	var done []([2]int64)
	undo := func() {
		for _, r := range done {
			// Map the file back over the range: the File reads as before.
			_, _ = unix.MmapPtr(int(fd.Fd()), r[0], unsafe.Add(base, r[0]), uintptr(r[1]-r[0]),
				unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
		}
	}
	var total int64
	for _, r := range merged {
		if err := ctx.Err(); err != nil {
			undo()
			return 0, err
		}
		addr := unsafe.Add(base, r[0])
		n := r[1] - r[0]
		if _, err := unix.MmapPtr(-1, 0, addr, uintptr(n), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED); err != nil {
			undo()
			return 0, fmt.Errorf("gguf %s: pin %d bytes: %w", f.Name, n, err)
		}
		done = append(done, r)
		buf := unsafe.Slice((*byte)(addr), n)
		adviseHugePages(buf)
		end := min(r[1], size) // the last page may run past the end of the file
		for off := r[0]; off < end; off += pinChunk {
			if err := ctx.Err(); err != nil {
				undo()
				return 0, err
			}
			m := min(pinChunk, end-off)
			if _, err := fd.ReadAt(buf[off-r[0]:off-r[0]+m], off); err != nil {
				undo()
				return 0, fmt.Errorf("gguf %s: pin: read at %d: %w", f.Name, off, err)
			}
			dropCache(fd, off, m)
		}
		if err := unix.Mprotect(buf, unix.PROT_READ); err != nil {
			undo()
			return 0, fmt.Errorf("gguf %s: pin: %w", f.Name, err)
		}
		total += n
	}
	f.pinned = true
	return total, nil
}
