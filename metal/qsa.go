package metal

import (
	"fmt"
	"math"
)

// The QSA indexer ops of qwen4exp (kernels/qsa.metal); each mirrors
// engine/backend.Backend's method of the same name.

// StoreF16 writes the N floats of Src rounded to half into Dst.
type StoreF16 struct {
	N        int
	Dst, Src BufRef
}

// Encode appends the dispatch to c.
func (s StoreF16) Encode(c *Commands) {
	a := (&argBuilder{}).u32(uint32(s.N)).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_store_f16", Grid: [3]uint32{uint32((s.N + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: s.Dst, 2: s.Src}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 4})
}

// QSAPool writes into Dst ([Blocks][Dim] floats) the mean of each block
// of R consecutive half rows of Raw.
type QSAPool struct {
	Blocks, R, Dim int
	Dst, Raw       BufRef
}

// Encode appends the dispatch to c.
func (p QSAPool) Encode(c *Commands) {
	n := p.Blocks * p.Dim
	if p.R <= 0 || p.Dim <= 0 || n > math.MaxUint32 {
		c.fail(fmt.Errorf("qsa pool: %d blocks of %d rows of %d", p.Blocks, p.R, p.Dim))
		return
	}
	a := (&argBuilder{}).u32(uint32(n)).u32(0).u32(uint32(p.Dim)).u32(uint32(p.R)).f32(1 / float32(p.R)).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_qsa_pool", Grid: [3]uint32{uint32((n + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: p.Dst, 2: p.Raw}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 4})
}

// QSASelect writes each of Rows rows' mask of kept cells into Sel (Words
// uint64s a row): the block scores of the rows that see more than Width
// cells into Scores ([Rows][(Pos0+Rows)/R] floats of scratch), then the
// selection, with Heap ([Rows][Width] int32s of scratch). Q holds the
// rows' Heads×Dim indexer queries, Keys the pooled block keys.
type QSASelect struct {
	Rows, Pos0, Heads, Dim, R, Width, Words int
	Sel, Q, Keys, Scores, Heap              BufRef
}

// ScoreStride is the floats of Scores per row.
func (s QSASelect) ScoreStride() int { return max(1, (s.Pos0+s.Rows)/s.R) }

// Encode appends the dispatches to c (with a barrier between them).
func (s QSASelect) Encode(c *Commands) {
	if s.R <= 0 || s.Width <= 0 || s.Dim <= 0 || s.Heads <= 0 || s.Words*64 < s.Pos0+s.Rows {
		c.fail(fmt.Errorf("qsa select: ratio %d, width %d, %d heads of %d, %d mask words for %d positions", s.R, s.Width, s.Heads, s.Dim, s.Words, s.Pos0+s.Rows))
		return
	}
	stride := s.ScoreStride()
	if s.Pos0+s.Rows > s.Width { // some row scores its blocks
		a := (&argBuilder{}).u32(uint32(s.Pos0)).u32(uint32(s.R)).u32(uint32(s.Width)).u32(uint32(stride)).
			u32(uint32(s.Heads)).u32(uint32(s.Dim)).u32(0).bytes()
		c.Dispatch(Dispatch{Kernel: "kernel_qsa_scores", Grid: [3]uint32{uint32(stride), uint32(s.Rows), 1}, TG: [3]uint32{SimdWidth, 1, 1},
			Bufs: map[int]BufRef{1: s.Scores, 2: s.Q, 3: s.Keys}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 24})
		c.Barrier()
	}
	a := (&argBuilder{}).u32(uint32(s.Pos0)).u32(uint32(s.R)).u32(uint32(s.Width)).u32(uint32(stride)).u32(uint32(s.Words)).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_qsa_select", Grid: [3]uint32{uint32(s.Rows), 1, 1}, TG: [3]uint32{1, 1, 1},
		Bufs: map[int]BufRef{1: s.Sel, 2: s.Scores, 3: s.Heap}, Bytes: map[int][]byte{0: a}, SplitOff: -1})
}
