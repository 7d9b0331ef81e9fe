package metal

import "fmt"

// The recurrent ops of qwen3next (kernels/recurrent.metal); each mirrors
// engine/backend.Backend's method of the same name.

// SplitHeads splits Rows·Heads groups of D0+D1 floats of X into Dst0 (the
// first D0 of each) and Dst1 (the rest).
type SplitHeads struct {
	Rows, Heads, D0, D1 int
	X, Dst0, Dst1       BufRef
}

// Encode appends the dispatch to c.
func (s SplitHeads) Encode(c *Commands) {
	n := s.Rows * s.Heads * (s.D0 + s.D1)
	a := (&argBuilder{}).u32(uint32(n)).u32(uint32(s.D0)).u32(uint32(s.D1)).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_split_heads", Grid: [3]uint32{uint32((n + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: s.X, 2: s.Dst0, 3: s.Dst1}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 12})
}

// SigmoidMul multiplies the N floats of X by sigmoid(G[i/Per]): Per 1, a
// gate per value; Per the row length, one gate per row.
type SigmoidMul struct {
	N, Per int
	X, G   BufRef
}

// Encode appends the dispatch to c.
func (s SigmoidMul) Encode(c *Commands) {
	a := (&argBuilder{}).u32(uint32(s.N)).u32(uint32(max(s.Per, 1))).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_sigmoid_mul", Grid: [3]uint32{uint32((s.N + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: s.X, 2: s.G}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 8})
}

// GatedRMSNorm replaces each of Groups groups of N floats of X by
// RMSNorm(x)·W·silu(z), Z laid out as X.
type GatedRMSNorm struct {
	N, Groups int
	Eps       float32
	X, Z, W   BufRef
}

// Encode appends the dispatch to c.
func (s GatedRMSNorm) Encode(c *Commands) {
	t := reduceThreads(s.N)
	c.Dispatch(Dispatch{Kernel: "kernel_gated_rms_norm", Grid: [3]uint32{uint32(s.Groups), 1, 1}, TG: [3]uint32{uint32(t), 1, 1},
		Bufs: map[int]BufRef{1: s.X, 2: s.Z, 3: s.W}, Bytes: map[int][]byte{0: (&argBuilder{}).u32(uint32(s.N)).f32(s.Eps).bytes()},
		TGMem: map[int]int{0: tgMem(4 * t / SimdWidth)}, SplitOff: -1})
}

// CausalConv is the causal depthwise convolution with SiLU over Rows rows
// of Channels (X, Out: [Rows][Channels]) after State ([Channels][Taps-1],
// replaced by the last Taps-1 inputs; not read with one tap), W
// [Channels][Taps]; NSnap states after the last NSnap rows go to Snaps
// ([NSnap][Channels][Taps-1]).
type CausalConv struct {
	Rows, Channels, Taps, NSnap int
	Out, X, State, W, Snaps     BufRef
}

// Encode appends the dispatch to c.
func (s CausalConv) Encode(c *Commands) {
	if s.Taps < 1 || s.NSnap > s.Rows {
		c.fail(fmt.Errorf("causal conv: %d taps, %d snapshots of %d rows", s.Taps, s.NSnap, s.Rows))
		return
	}
	snaps := s.Snaps
	if s.NSnap == 0 {
		snaps = s.State // bound, never written
	}
	a := (&argBuilder{}).u32(uint32(s.Channels)).u32(uint32(s.Taps)).u32(uint32(s.Rows)).u32(uint32(s.NSnap)).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_causal_conv", Grid: [3]uint32{uint32((s.Channels + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs:  map[int]BufRef{1: s.Out, 2: s.X, 3: s.State, 4: s.W, 5: snaps},
		Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 16})
}

// DeltaNetDim reports whether GatedDeltaNet supports head size d (one
// thread per state row: a multiple of the SIMD width, at most 1024).
func DeltaNetDim(d int) bool { return d > 0 && d%SimdWidth == 0 && d <= MaxThreadsPerTG }

// GatedDeltaNet is the gated delta rule (engine/backend.DeltaNetParams)
// over Rows rows: QKV [Rows][2·KeyHeads·Dim + ValueHeads·Dim], B and A
// [Rows][ValueHeads], State [ValueHeads][Dim][Dim] updated in place, Out
// [Rows][ValueHeads·Dim]; NSnap states after the last NSnap rows go to
// Snaps ([NSnap][ValueHeads][Dim][Dim]). DtBias and A hold ValueHeads
// floats. Value head h reads key head h/(ValueHeads/KeyHeads), or h mod
// KeyHeads with KeyTiled.
type GatedDeltaNet struct {
	KeyHeads, ValueHeads, Dim, Rows, NSnap int
	KeyTiled                               bool
	Eps                                    float32
	QKV, B, A, State, Out, DtBias, Decay   BufRef
	Snaps                                  BufRef
}

// Encode appends the dispatch to c.
func (s GatedDeltaNet) Encode(c *Commands) {
	if !DeltaNetDim(s.Dim) || s.KeyHeads <= 0 || s.ValueHeads%s.KeyHeads != 0 || s.NSnap > s.Rows {
		c.fail(fmt.Errorf("gated delta net: %d value heads over %d key heads of %d (a multiple of 32, at most 1024), %d snapshots of %d rows",
			s.ValueHeads, s.KeyHeads, s.Dim, s.NSnap, s.Rows))
		return
	}
	snaps := s.Snaps
	if s.NSnap == 0 {
		snaps = s.State
	}
	a := (&argBuilder{}).u32(uint32(s.KeyHeads)).u32(uint32(s.ValueHeads)).u32(uint32(s.Dim)).u32(uint32(s.Rows)).
		u32(uint32(s.NSnap)).f32(s.Eps).u32(b2u(s.KeyTiled)).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_gated_delta_net", Grid: [3]uint32{uint32(s.ValueHeads), 1, 1}, TG: [3]uint32{uint32(s.Dim), 1, 1},
		Bufs:  map[int]BufRef{1: s.QKV, 2: s.B, 3: s.A, 4: s.State, 5: s.Out, 6: s.DtBias, 7: s.Decay, 8: snaps},
		Bytes: map[int][]byte{0: a}, TGMem: map[int]int{0: tgMem(4 * (2*s.Dim + s.Dim/SimdWidth))}, SplitOff: -1})
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
