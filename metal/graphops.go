package metal

import (
	"fmt"
	"math"
)

// The small graph ops that were host code between the model's ops
// (engine/backend's Fill, Repeat and PLEGate; Route is the Router with
// Probs), so that a decode step needs no Sync for them.

// Fill sets the N floats of X to V.
type Fill struct {
	N int
	V float32
	X BufRef
}

// Encode appends the dispatch to c.
func (f Fill) Encode(c *Commands) {
	a := (&argBuilder{}).u32(uint32(f.N)).u32(0).f32(f.V).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_fill", Grid: [3]uint32{uint32((f.N + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: f.X}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 4})
}

// Repeat writes Copies copies of each of Rows rows of Width floats of Src
// into Dst ([Rows][Copies][Width]).
type Repeat struct {
	Rows, Copies, Width int
	Dst, Src            BufRef
}

// Encode appends the dispatch to c.
func (r Repeat) Encode(c *Commands) {
	n := r.Rows * r.Copies * r.Width
	if n > math.MaxUint32 || r.Copies <= 0 || r.Width <= 0 {
		c.fail(fmt.Errorf("repeat: %d rows of %d×%d values", r.Rows, r.Copies, r.Width))
		return
	}
	a := (&argBuilder{}).u32(uint32(n)).u32(0).u32(uint32(r.Width)).u32(uint32(r.Copies)).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_repeat", Grid: [3]uint32{uint32((n + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: r.Dst, 2: r.Src}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 4})
}

// PLEGate writes qwen4exp's PLE gate of each of Groups groups of N floats
// of Key and Qry into Gate (one float per group; see
// engine/backend.Backend.PLEGate).
type PLEGate struct {
	N, Groups      int
	Gate, Key, Qry BufRef
}

// Encode appends the dispatch to c.
func (p PLEGate) Encode(c *Commands) {
	if p.N <= 0 {
		c.fail(fmt.Errorf("ple gate: groups of %d values", p.N))
		return
	}
	t := reduceThreads(p.N)
	scale := 1 / float32(math.Sqrt(float64(p.N))) // as the CPU rounds it
	a := (&argBuilder{}).u32(uint32(p.N)).u32(0).f32(scale).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_ple_gate", Grid: [3]uint32{uint32(p.Groups), 1, 1}, TG: [3]uint32{uint32(t), 1, 1},
		Bufs: map[int]BufRef{1: p.Gate, 2: p.Key, 3: p.Qry}, Bytes: map[int][]byte{0: a},
		TGMem: map[int]int{0: tgMem(4 * t / SimdWidth)}, SplitArg: 0, SplitOff: 4})
}
