package cpu

import (
	"math"

	"github.com/strata-llm/strata/engine/routing"
)

// The small ops that were host code in the model graphs (routing, the
// clearing and widening of tensors, qwen4exp's PLE gate), moved here
// unchanged so the CPU path computes what it computed before, bit for bit.
// They are cheap next to the products and run on the calling thread; like
// every op but Linear they forget Linear's converted input (they may write
// its memory).

// Route implements backend.Backend: engine/routing's rule, row by row.
func (b *Backend) Route(p []float32, rows, experts, k int, scale float32, pol routing.CacheRoute, resident []bool, sel []int32, wts []float32) {
	b.invalidate()
	for r := 0; r < rows; r++ {
		pol.Route(p[r*experts:(r+1)*experts], k, scale, resident, &b.rsc, sel[r*k:(r+1)*k], wts[r*k:(r+1)*k])
	}
}

// Fill implements backend.Backend.
func (b *Backend) Fill(x []float32, v float32) {
	b.invalidate()
	for i := range x {
		x[i] = v
	}
}

// Repeat implements backend.Backend.
func (b *Backend) Repeat(dst, src []float32, rows, copies, n int) {
	b.invalidate()
	for r := 0; r < rows; r++ {
		s := src[r*n : (r+1)*n]
		for c := 0; c < copies; c++ {
			copy(dst[(r*copies+c)*n:(r*copies+c+1)*n], s)
		}
	}
}

// PLEGate implements backend.Backend.
func (b *Backend) PLEGate(gate, key, qry []float32, groups, n int) {
	b.invalidate()
	PLEGate(gate, key, qry, groups, n)
}

// PLEGate is the PLE gate of groups groups of n values (see
// backend.Backend.PLEGate).
func PLEGate(gate, key, qry []float32, groups, n int) {
	scale := 1 / float32(math.Sqrt(float64(n)))
	for i := 0; i < groups; i++ {
		k, q := key[i*n:(i+1)*n], qry[i*n:(i+1)*n]
		var sum float64
		for j, kj := range k {
			sum += float64(kj * q[j])
		}
		s := float32(sum) * scale
		mag := float32(math.Sqrt(float64(max(float32(math.Abs(float64(s))), 1e-6))))
		switch {
		case s > 0:
			gate[i] = mag
		case s < 0:
			gate[i] = -mag
		default:
			gate[i] = 0
		}
	}
}
