package metal

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

func TestCommandsValidate(t *testing.T) {
	ok := Dispatch{Kernel: "k", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{32, 1, 1}, SplitOff: -1}
	for _, tc := range []struct {
		name string
		edit func(d *Dispatch)
		want string
	}{
		{"threads", func(d *Dispatch) { d.TG = [3]uint32{1024, 2, 1} }, "threads per threadgroup"},
		{"no threads", func(d *Dispatch) { d.TG = [3]uint32{0, 1, 1} }, "threads per threadgroup"},
		{"empty grid", func(d *Dispatch) { d.Grid = [3]uint32{0, 1, 1} }, "empty grid"},
		{"tg memory", func(d *Dispatch) { d.TGMem = map[int]int{0: 16 << 10, 1: 16<<10 + 16} }, "threadgroup memory"},
		{"tg granularity", func(d *Dispatch) { d.TGMem = map[int]int{0: 20} }, "multiple of 16"},
		{"unsplittable", func(d *Dispatch) { d.Grid = [3]uint32{1 << 20, 1, 1}; d.TG = [3]uint32{64, 1, 1} }, "cannot be split"},
		{"bound twice", func(d *Dispatch) { d.Bufs = map[int]BufRef{0: {}}; d.Bytes = map[int][]byte{0: {1}} }, "bound twice"},
	} {
		d := ok
		tc.edit(&d)
		var c Commands
		c.Dispatch(d)
		if err := c.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	var c Commands
	c.Dispatch(ok)
	c.Barrier()
	c.Barrier()
	if c.Err() != nil || c.Len() != 1 || c.Barriers() != 1 {
		t.Errorf("valid dispatch: err %v, %d dispatches, %d barriers", c.Err(), c.Len(), c.Barriers())
	}
}

// The grid-size guard cuts grid.x so that no part exceeds MaxGridThreads
// and the parts' first threadgroups tile the grid.
func TestGridGuardSplit(t *testing.T) {
	var c Commands
	MatVec{T: ggml.F32, Rows: 151936 * 64, Cols: 32, W: BufRef{}, X: BufRef{}, Y: BufRef{}, Geometry: MatVecGeometry{NSG: 1, NR: 1}}.Encode(&c)
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
	next := uint32(0)
	for _, it := range c.items {
		d := it.d
		if d.Threads() > MaxGridThreads {
			t.Fatalf("part of %d threads", d.Threads())
		}
		if base := binary.LittleEndian.Uint32(d.Bytes[0][36:]); base != next {
			t.Fatalf("part starts at threadgroup %d, want %d", base, next)
		}
		next += d.Grid[0]
	}
	if next != 151936*64 || c.Len() < 2 {
		t.Errorf("%d parts cover %d threadgroups, want %d", c.Len(), next, 151936*64)
	}
}
