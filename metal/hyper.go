package metal

import (
	"fmt"
	"math"
)

// The hyper-connection ops of qwen4exp (kernels/hyper.metal); each mirrors
// engine/backend.Backend's method of the same name.

// GroupRMSNorm normalises each of Rows·Span groups of N floats of X (Span
// groups per row) by its own RMS and multiplies group g by the N floats of
// W at (g mod Span)·N, into Out (which may be X).
type GroupRMSNorm struct {
	N, Span, Rows int
	Eps           float32
	X, W, Out     BufRef
}

// Encode appends the dispatch to c.
func (s GroupRMSNorm) Encode(c *Commands) {
	if s.N <= 0 || s.Span <= 0 {
		c.fail(fmt.Errorf("group rms norm: %d groups of %d values per row", s.Span, s.N))
		return
	}
	t := reduceThreads(s.N)
	a := (&argBuilder{}).u32(uint32(s.N)).u32(uint32(s.Span)).f32(s.Eps).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_group_rms_norm", Grid: [3]uint32{uint32(s.Rows * s.Span), 1, 1}, TG: [3]uint32{uint32(t), 1, 1},
		Bufs: map[int]BufRef{1: s.X, 2: s.W, 3: s.Out}, Bytes: map[int][]byte{0: a},
		TGMem: map[int]int{0: tgMem(4 * t / SimdWidth)}, SplitArg: 0, SplitOff: 12})
}

// ScaledSiLU replaces each of the N floats of X by silu(Scale·x).
type ScaledSiLU struct {
	N     int
	Scale float32
	X     BufRef
}

// Encode appends the dispatch to c.
func (s ScaledSiLU) Encode(c *Commands) {
	a := (&argBuilder{}).u32(uint32(s.N)).f32(s.Scale).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_scaled_silu", Grid: [3]uint32{uint32((s.N + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: s.X}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 8})
}

// maxHyperValues bounds the values a hyper-connection dispatch indexes
// (the kernels count them in 32 bits).
const maxHyperValues = math.MaxUint32

// HyperMix writes Out[r] ([Rows][N]) = (Σ_c XN[r][c]·sigmoid(Gate[r][c]))·
// (1/Streams), XN and Gate [Rows][Streams][N].
type HyperMix struct {
	N, Streams, Rows int
	XN, Gate, Out    BufRef
}

// Encode appends the dispatch to c.
func (s HyperMix) Encode(c *Commands) {
	total := s.Rows * s.N
	if s.N <= 0 || s.Streams <= 0 || uint64(total)*uint64(s.Streams) > maxHyperValues {
		c.fail(fmt.Errorf("hyper mix: %d rows of %d streams of %d values", s.Rows, s.Streams, s.N))
		return
	}
	a := (&argBuilder{}).u32(uint32(s.N)).u32(uint32(s.Streams)).u32(uint32(total)).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_hyper_mix", Grid: [3]uint32{uint32((total + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: s.XN, 2: s.Gate, 3: s.Out}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 12})
}

// HyperCombine adds Y[r] ([Rows][N]) into every stream c of X
// ([Rows][Streams][N]) scaled by 2·sigmoid(Inject[r·Streams+c]/Streams).
type HyperCombine struct {
	N, Streams, Rows int
	X, Y, Inject     BufRef
}

// Encode appends the dispatch to c.
func (s HyperCombine) Encode(c *Commands) {
	total := s.Rows * s.Streams * s.N
	if s.N <= 0 || s.Streams <= 0 || uint64(total) > maxHyperValues {
		c.fail(fmt.Errorf("hyper combine: %d rows of %d streams of %d values", s.Rows, s.Streams, s.N))
		return
	}
	a := (&argBuilder{}).u32(uint32(s.N)).u32(uint32(s.Streams)).u32(uint32(total)).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_hyper_combine", Grid: [3]uint32{uint32((total + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: s.X, 2: s.Y, 3: s.Inject}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 12})
}
