package metal

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Limits of Apple-silicon GPUs that the geometry respects.
const (
	SimdWidth        = 32
	MaxThreadsPerTG  = 1024
	MaxTGMemory      = 32 << 10
	MaxGridThreads   = 1 << 25 // larger dispatches are split (GPUs were seen to skip threadgroups past ~5.4e7)
	BufferAlignment  = 16384   // page size: newBufferWithBytesNoCopy needs page-aligned memory
	tgMemGranularity = 16
)

// Buffer is memory shared by the CPU and the GPU: Bytes may be read and
// written by the host between (or, at a handshake, during) command lists.
type Buffer interface {
	Bytes() []byte
}

// Device runs command lists on a GPU (or its emulator).
type Device interface {
	// Name describes the device.
	Name() string
	// Alloc returns a zeroed shared buffer of n bytes.
	Alloc(n int) (Buffer, error)
	// MaxThreads is the largest threadgroup the kernel's pipeline allows
	// with these function constants.
	MaxThreads(kernel string, fc map[int]int32) (int, error)
	// Run encodes c (on a GPU: into one command buffer), commits it and
	// returns when it has completed, calling c's handshakes as the GPU
	// reaches them.
	Run(ctx context.Context, c *Commands) error
	// Close releases the device.
	Close() error
}

// BufRef binds a buffer at a byte offset.
type BufRef struct {
	Buf Buffer
	Off int
}

// Dispatch is one dispatchThreadgroups of a kernel.
type Dispatch struct {
	Kernel   string
	FC       map[int]int32 // [[function_constant(i)]] values (all of type int)
	Grid, TG [3]uint32     // threadgroups per grid, threads per threadgroup
	Bufs     map[int]BufRef
	Bytes    map[int][]byte // setBytes: small argument structs
	TGMem    map[int]int    // [[threadgroup(i)]] lengths
	// Split names the argument struct (Bytes[SplitArg]) holding, at byte
	// SplitOff, the uint32 first threadgroup of the dispatch, so that the
	// grid-size guard can cut grid.x. SplitOff < 0: the kernel cannot be
	// split.
	SplitArg, SplitOff int
}

// Threads is the number of threads the dispatch launches.
func (d *Dispatch) Threads() uint64 {
	return uint64(d.Grid[0]) * uint64(d.Grid[1]) * uint64(d.Grid[2]) * uint64(d.TG[0]) * uint64(d.TG[1]) * uint64(d.TG[2])
}

func (d *Dispatch) check() error {
	n := d.TG[0] * d.TG[1] * d.TG[2]
	if n == 0 || n > MaxThreadsPerTG {
		return fmt.Errorf("%s: %d threads per threadgroup (1..%d)", d.Kernel, n, MaxThreadsPerTG)
	}
	if d.Grid[0] == 0 || d.Grid[1] == 0 || d.Grid[2] == 0 {
		return fmt.Errorf("%s: empty grid %v", d.Kernel, d.Grid)
	}
	total := 0
	for i, m := range d.TGMem {
		if m <= 0 || m%tgMemGranularity != 0 {
			return fmt.Errorf("%s: threadgroup(%d) of %d bytes (a positive multiple of %d)", d.Kernel, i, m, tgMemGranularity)
		}
		total += m
	}
	if total > MaxTGMemory {
		return fmt.Errorf("%s: %d bytes of threadgroup memory (at most %d)", d.Kernel, total, MaxTGMemory)
	}
	for i := range d.Bufs {
		if _, dup := d.Bytes[i]; dup || i < 0 || i > 30 {
			return fmt.Errorf("%s: buffer(%d) bound twice or out of range", d.Kernel, i)
		}
	}
	return nil
}

// split applies the grid-size guard: a dispatch of more than
// MaxGridThreads threads becomes several along grid.x, each told its
// first threadgroup.
func (d Dispatch) split() ([]Dispatch, error) {
	if d.Threads() <= MaxGridThreads {
		return []Dispatch{d}, nil
	}
	if d.SplitOff < 0 || d.Bytes[d.SplitArg] == nil {
		return nil, fmt.Errorf("%s: %d threads exceed the grid-size guard (%d) and the kernel cannot be split", d.Kernel, d.Threads(), MaxGridThreads)
	}
	perTG := uint64(d.TG[0]*d.TG[1]*d.TG[2]) * uint64(d.Grid[1]) * uint64(d.Grid[2])
	per := uint32(MaxGridThreads / perTG)
	if per == 0 {
		return nil, fmt.Errorf("%s: one column of threadgroups exceeds the grid-size guard", d.Kernel)
	}
	var out []Dispatch
	for base := uint32(0); base < d.Grid[0]; base += per {
		c := d
		c.Grid[0] = min(per, d.Grid[0]-base)
		c.Bytes = map[int][]byte{}
		for k, v := range d.Bytes {
			c.Bytes[k] = v
		}
		a := append([]byte(nil), d.Bytes[d.SplitArg]...)
		binary.LittleEndian.PutUint32(a[d.SplitOff:], binary.LittleEndian.Uint32(a[d.SplitOff:])+base)
		c.Bytes[d.SplitArg] = a
		out = append(out, c)
	}
	return out, nil
}

// Commands is a list of dispatches, barriers and host handshakes, run
// in order by Device.Run. Dispatches between two barriers may run
// concurrently (on a GPU, in a concurrent compute encoder): put a Barrier
// between a dispatch and the next one that reads what it wrote.
type Commands struct {
	items []item
	err   error
}

type item struct {
	d       *Dispatch
	barrier bool
	host    func(ctx context.Context) error // a Signal
	resume  bool                            // a Resume
}

// Dispatch appends d (split by the grid-size guard if it is too large).
// An invalid dispatch makes Err (and Device.Run) fail.
func (c *Commands) Dispatch(d Dispatch) {
	if c.err != nil {
		return
	}
	if err := d.check(); err != nil {
		c.err = err
		return
	}
	parts, err := d.split()
	if err != nil {
		c.err = err
		return
	}
	for i := range parts {
		c.items = append(c.items, item{d: &parts[i]})
	}
}

// Barrier makes the dispatches after it see the writes of those before.
func (c *Commands) Barrier() {
	if n := len(c.items); n > 0 && c.items[n-1].barrier {
		return
	}
	c.items = append(c.items, item{barrier: true})
}

// Handshake stops the GPU after everything before it has completed, runs
// fn on the host (which may read and write shared buffers), and lets the
// GPU go on when fn returns: a Signal and its Resume with nothing between.
// An error from fn aborts the command list. On a GPU this is a pair of
// MTLSharedEvent signal/wait, waited on by one spinning host thread.
func (c *Commands) Handshake(fn func(ctx context.Context) error) {
	c.Signal(fn)
	c.Resume()
}

// Signal runs fn on the host once everything before it has completed,
// while the GPU goes on with the dispatches queued after it up to the
// next Resume (they must not touch what fn reads or writes); the
// dispatches after that Resume start once fn has returned. An error from
// fn aborts the command list there. A Signal left open is resumed by the
// next Signal or the end of the list. On a GPU: the shared event's signal
// here, its wait at the Resume.
func (c *Commands) Signal(fn func(ctx context.Context) error) {
	c.Resume()
	c.Barrier()
	c.items = append(c.items, item{host: fn, barrier: true})
}

// Resume ends the open Signal's overlap (nothing if none is open).
func (c *Commands) Resume() {
	for i := len(c.items) - 1; i >= 0; i-- {
		switch it := c.items[i]; {
		case it.resume:
			return
		case it.host != nil:
			c.items = append(c.items, item{resume: true, barrier: true})
			return
		}
	}
}

// Err is the first invalid dispatch's error.
func (c *Commands) Err() error { return c.err }

// Len is the number of dispatches.
func (c *Commands) Len() int {
	n := 0
	for _, it := range c.items {
		if it.d != nil {
			n++
		}
	}
	return n
}

// Barriers is the number of barriers (handshakes included).
func (c *Commands) Barriers() int {
	n := 0
	for _, it := range c.items {
		if it.barrier {
			n++
		}
	}
	return n
}

// argBuilder writes an argument struct with C layout (MSL's): each field
// aligned to its size, the whole padded to its largest alignment.
type argBuilder struct {
	b     []byte
	align int
}

func (a *argBuilder) pad(n int) {
	for len(a.b)%n != 0 {
		a.b = append(a.b, 0)
	}
	a.align = max(a.align, n)
}

func (a *argBuilder) u32(v uint32) *argBuilder {
	a.pad(4)
	a.b = binary.LittleEndian.AppendUint32(a.b, v)
	return a
}

func (a *argBuilder) f32(v float32) *argBuilder { return a.u32(math.Float32bits(v)) }

func (a *argBuilder) u64(v uint64) *argBuilder {
	a.pad(8)
	a.b = binary.LittleEndian.AppendUint64(a.b, v)
	return a
}

func (a *argBuilder) bytes() []byte {
	a.pad(max(a.align, 4))
	return a.b
}

func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
