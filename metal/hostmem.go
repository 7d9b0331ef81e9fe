package metal

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
)

// Host memory the device reads in place (backend.HostAllocator and
// MapHost): an expert provider's arena allocated by AllocHost, or the
// model file's mapping wrapped by MapHost, is bound, in up to MaxBases
// parts, by the mat-vecs of SlotExpertsFFN, and ExpertSlots.Bind points
// the location table at an expert where it lies instead of copying it
// into a slot. Arena parts come first: when experts stream, the file's
// mapping holds only what the arena does not.
//
// On a Mac the arena is anonymous memory (locked where allowed) wrapped by
// newBufferWithBytesNoCopy in parts of at most the device's
// maxBufferLength; on the emulator it is one emulator buffer (shared with
// the processes running the kernels), its parts offsets into it. Parts
// start every partLen − overlap bytes, so any slice of at most overlap
// bytes (an expert's matrix) lies whole in one of them.

var _ backend.HostAllocator = (*Backend)(nil)

// hostPart is one device buffer over [start, end) of wrapped host memory:
// ref binds its first byte.
type hostPart struct {
	start, end uintptr
	ref        BufRef
	arena      bool // AllocHost's
}

// maxBufferer is a device that says how large one buffer may be.
type maxBufferer interface {
	MaxBufferLength() int
}

// partLen is the length of the parts host memory is wrapped in.
func (b *Backend) partLen() int {
	if b.PartLen > 0 {
		return b.PartLen
	}
	if mb, ok := b.dev.(maxBufferer); ok && mb.MaxBufferLength() > 0 {
		return mb.MaxBufferLength()
	}
	return mapChunk + mapOverlap
}

// arenaParts returns the [start, end) ranges of the parts of n bytes of
// host memory, each at most partLen bytes (rounded down to pages),
// consecutive ones overlapping by a quarter of that, at most mapOverlap.
func arenaParts(n, partLen int) [][2]int {
	partLen = max(partLen&^(BufferAlignment-1), 4*BufferAlignment)
	if n <= partLen {
		return [][2]int{{0, n}}
	}
	overlap := min(mapOverlap, partLen/4) &^ (BufferAlignment - 1)
	var out [][2]int
	for s := 0; ; s += partLen - overlap {
		e := min(n, s+partLen)
		out = append(out, [2]int{s, e})
		if e == n {
			return out
		}
	}
}

// AllocHost implements backend.HostAllocator. Its parts are wrapped in
// buffers of at most PartLen bytes.
func (b *Backend) AllocHost(n int) ([]byte, func(), error) {
	if n <= 0 {
		return nil, nil, fmt.Errorf("metal backend: host memory of %d bytes", n)
	}
	var mem []byte
	release := func() {}
	var wrap func(lo, hi int) (BufRef, error)
	if nc, ok := b.dev.(NoCopier); ok {
		m, unmap, err := mapAnon(n)
		if err != nil {
			return nil, nil, fmt.Errorf("metal backend: host memory of %d bytes: %w", n, err)
		}
		mem, release = m, unmap
		wrap = func(lo, hi int) (BufRef, error) {
			r, err := nc.NoCopy(mem[lo:hi])
			if err == nil {
				b.addRegion(r.Buf, mem[lo:hi])
			}
			return r, err
		}
	} else {
		buf, err := b.dev.Alloc(n)
		if err != nil {
			return nil, nil, fmt.Errorf("metal backend: host memory of %d bytes: %w", n, err)
		}
		mem = buf.Bytes()[:n:n]
		b.addRegion(buf, mem) // the emulator's buffers live as long as it does
		wrap = func(lo, _ int) (BufRef, error) { return BufRef{Buf: buf, Off: lo}, nil }
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	end := base + uintptr(n)
	// free forgets the arena (no later op binds it) before the memory goes.
	free := func() {
		b.parts = slices.DeleteFunc(b.parts, func(a hostPart) bool { return a.start >= base && a.start < end })
		b.regions = slices.DeleteFunc(b.regions, func(r region) bool { return r.start >= base && r.start < end })
		release()
	}
	for _, p := range arenaParts(n, b.partLen()) {
		r, err := wrap(p[0], p[1])
		if err != nil {
			free()
			return nil, nil, fmt.Errorf("metal backend: wrap host memory: %w", err)
		}
		b.parts = append(b.parts, hostPart{start: base + uintptr(p[0]), end: base + uintptr(p[1]), ref: r, arena: true})
	}
	return mem, free, nil
}

// wrapped reports whether mem starts in host memory already wrapped.
func (b *Backend) wrapped(mem []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	for _, a := range b.parts {
		if p >= a.start && p < a.end {
			return true
		}
	}
	return false
}

// bases are the parts a location table can point into (base i+1): the
// arenas' first, then the file's, at most MaxBases.
func (b *Backend) bases() []hostPart {
	out := make([]hostPart, 0, MaxBases)
	for _, arena := range []bool{true, false} {
		for _, p := range b.parts {
			if p.arena == arena && len(out) < MaxBases {
				out = append(out, p)
			}
		}
	}
	return out
}

// locate returns the location-table entry of mem among bases: the part
// holding it whole (base i+1) and its offset there.
func locate(bases []hostPart, mem []byte) (uint64, bool) {
	if len(mem) == 0 {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	for i, a := range bases {
		if p >= a.start && p+uintptr(len(mem)) <= a.end {
			return uint64(i+1)<<56 | uint64(p-a.start), true
		}
	}
	return 0, false
}
