package metal

import (
	"fmt"
	"time"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
)

// recurrent checks the recurrent kernels (qwen3next's, and qwen4exp's
// dilated PLE convolution, one-tap convolution and tiled delta rule)
// through Backend (device memory from Backend.Alloc, as the model uses
// them) against the CPU backend on the same inputs. Bounds: SplitHeads and
// the conv state and snapshots are copies (exact); the others are float
// math in another order than ggml-cpu's (and without its float64 sums in
// the L2 norm), so relative to the largest magnitude: SigmoidMul 1e-6,
// GatedRMSNorm, the conv output and the delta rule's output, state and
// snapshots (every row fed back through the state) 1e-5. Measured on the
// emulator: 0, 6e-8, 1.2e-7 and 3.8e-7.
func (s *selftest) recurrent() {
	type tc struct {
		name  string
		bound float64
		run   func(mb *Backend, cb *cpu.Backend) (float64, error)
	}
	rows := 7
	if s.quick {
		rows = 3
	}
	cases := []tc{
		{"split_heads", 0, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			const heads, d0, d1 = 3, 64, 32
			x := s.randFloats(rows*heads*(d0+d1), 1)
			a0, a1, b0, b1 := mb.Alloc(rows*heads*d0), mb.Alloc(rows*heads*d1), make([]float32, rows*heads*d0), make([]float32, rows*heads*d1)
			xd := mb.Alloc(len(x))
			copy(xd, x)
			mb.SplitHeads(a0, a1, xd, rows, heads, d0, d1)
			cb.SplitHeads(b0, b1, x, rows, heads, d0, d1)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			return max(maxAbs32(a0, b0), maxAbs32(a1, b1)), nil
		}},
		{"sigmoid_mul per value and per row", 1e-6, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			const cols = 96
			e := 0.0
			for _, ng := range []int{rows * cols, rows} {
				x, g := s.randFloats(rows*cols, 3), s.randFloats(ng, 6)
				xd, gd := mb.Alloc(len(x)), mb.Alloc(len(g))
				copy(xd, x)
				copy(gd, g)
				mb.SigmoidMul(xd, gd, rows)
				cb.SigmoidMul(x, g, rows)
				if err := mb.Sync(); err != nil {
					return 0, err
				}
				e = max(e, maxAbs32(xd, x)/maxMag(x))
			}
			return e, nil
		}},
		{"gated_rms_norm", 1e-5, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			const n, groups = 64, 12
			x, z, w := s.randFloats(groups*n, 2), s.randFloats(groups*n, 3), s.randFloats(n, 1)
			xd, zd := mb.Alloc(len(x)), mb.Alloc(len(z))
			copy(xd, x)
			copy(zd, z)
			mb.GatedRMSNorm(xd, zd, w, groups, 1e-6)
			cb.GatedRMSNorm(x, z, w, groups, 1e-6)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			return maxAbs32(xd, x) / maxMag(x), nil
		}},
		{fmt.Sprintf("causal_conv 4 taps %d rows, 2 snapshots", rows), 1e-5, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			const ch, taps = 300, 4
			k := taps - 1
			x, st, w := s.randFloats(rows*ch, 1), s.randFloats(ch*k, 1), s.randFloats(ch*taps, 1)
			xd, fromd, std, od, o := mb.Alloc(len(x)), mb.Alloc(len(st)), mb.Alloc(len(st)), mb.Alloc(rows*ch), make([]float32, rows*ch)
			copy(xd, x)
			copy(fromd, st)
			sd, sc := [][]float32{mb.Alloc(ch * k), mb.Alloc(ch * k)}, [][]float32{make([]float32, ch*k), make([]float32, ch*k)}
			// The window read from one buffer and written to another (the
			// checkpoint ring's use), on both backends.
			stc := make([]float32, len(st))
			mb.CausalConv(od, xd, fromd, std, w, rows, ch, taps, sd)
			cb.CausalConv(o, x, st, stc, w, rows, ch, taps, sc)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			if maxAbs32(fromd, st) != 0 {
				return 1, fmt.Errorf("the conv wrote the state it was to read from")
			}
			if maxAbs32(std, stc) != 0 || maxAbs32(sd[0], sc[0]) != 0 || maxAbs32(sd[1], sc[1]) != 0 {
				return 1, fmt.Errorf("conv state or snapshots differ from the CPU's (they are copies)")
			}
			return maxAbs32(od, o) / maxMag(o), nil
		}},
		{fmt.Sprintf("causal_conv 10 taps dilated by 3 (qwen4exp's PLE), %d rows, a snapshot after each (one skipped)", rows), 1e-5, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			// More taps than rows: the new state is part old state, part x.
			return s.convCase(mb, cb, rows, 200, 10, 3, rows, true)
		}},
		{fmt.Sprintf("causal_conv 1 tap, %d rows", rows), 1e-5, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			return s.convCase(mb, cb, rows, 70, 1, 1, 1, false)
		}},
		{fmt.Sprintf("gated_delta_net 2/4 heads of 64 tiled (qwen4exp), %d rows, 2 snapshots", rows), 1e-5, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			return s.deltaCase(mb, cb, rows, true)
		}},
		{fmt.Sprintf("gated_delta_net 2/4 heads of 64, %d rows, 1 snapshot", rows), 1e-5, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			return s.deltaCase(mb, cb, rows, false)
		}},
	}
	mb := &Backend{dev: s.dev, ctx: s.ctx} // not closed: the device is the caller's
	cb := cpu.NewBackend(1)
	defer cb.Close()
	for _, c := range cases {
		start := time.Now()
		e, err := c.run(mb, cb)
		if err == nil && mb.host != nil {
			err = fmt.Errorf("ran on the host, not on the kernels")
		}
		s.add(c.name, start, e, c.bound, err)
	}
}

// convCase runs CausalConv on rows rows of ch channels with taps taps
// (every dilation-th one non-zero, the rest exact zeros, as qwen4exp lays
// out its dilated PLE convolution), on both backends, the window read
// from a separate buffer when from is set (the checkpoint ring's use);
// the state and the nsnap snapshots must be equal (they are copies).
func (s *selftest) convCase(mb *Backend, cb *cpu.Backend, rows, ch, taps, dilation, nsnap int, from bool) (float64, error) {
	k := taps - 1
	x, st, w := s.randFloats(rows*ch, 1), s.randFloats(ch*k, 1), make([]float32, ch*taps)
	for c := 0; c < ch; c++ {
		for i := 0; i < taps; i += dilation {
			w[c*taps+i] = 2*s.rng.Float32() - 1
		}
	}
	xd, std, od, o := devCopy(mb, x), devCopy(mb, st), mb.Alloc(rows*ch), make([]float32, rows*ch)
	var fromd, fromc []float32
	stc := append([]float32(nil), st...)
	if from {
		fromd, fromc = devCopy(mb, st), st
		stc = make([]float32, len(st))
		clear(std)
	}
	var sd, sc [][]float32
	for i := 0; i < nsnap; i++ {
		sd, sc = append(sd, mb.Alloc(ch*k)), append(sc, make([]float32, ch*k))
	}
	if nsnap > 1 {
		sd[0], sc[0] = nil, nil // a snapshot the caller skips
	}
	mb.CausalConv(od, xd, fromd, std, w, rows, ch, taps, sd)
	cb.CausalConv(o, x, fromc, stc, w, rows, ch, taps, sc)
	if err := mb.Sync(); err != nil {
		return 0, err
	}
	if from && maxAbs32(fromd, st) != 0 {
		return 1, fmt.Errorf("the conv wrote the state it was to read from")
	}
	if maxAbs32(std, stc) != 0 {
		return 1, fmt.Errorf("conv state differs from the CPU's (it is a copy)")
	}
	for i := range sd {
		if maxAbs32(sd[i], sc[i]) != 0 {
			return 1, fmt.Errorf("conv snapshot %d differs from the CPU's (it is a copy)", i)
		}
	}
	return maxAbs32(od, o) / maxMag(o), nil
}

// deltaCase runs GatedDeltaNet with 2 key heads and 4 value heads of 64,
// value heads mapped to key heads qwen3next's way or (tiled) qwen4exp's.
func (s *selftest) deltaCase(mb *Backend, cb *cpu.Backend, rows int, tiled bool) (float64, error) {
	p := backend.DeltaNetParams{KeyHeads: 2, ValueHeads: 4, Dim: 64, Eps: 1e-6, KeyTiled: tiled,
		DtBias: s.randFloats(4, 1), A: []float32{-0.5, -1, -2, -0.1}}
	nsnap := 1
	if tiled {
		nsnap = min(2, rows)
	}
	conv := 2*p.KeyHeads*p.Dim + p.ValueHeads*p.Dim
	qkv, bb, aa := s.randFloats(rows*conv, 1), s.randFloats(rows*p.ValueHeads, 2), s.randFloats(rows*p.ValueHeads, 2)
	nst := p.ValueHeads * p.Dim * p.Dim
	st := s.randFloats(nst, 0.1)
	std, od, o := devCopy(mb, st), mb.Alloc(rows*p.ValueHeads*p.Dim), make([]float32, rows*p.ValueHeads*p.Dim)
	var sd, sc [][]float32
	for i := 0; i < nsnap; i++ {
		sd, sc = append(sd, mb.Alloc(nst)), append(sc, make([]float32, nst))
	}
	mb.GatedDeltaNet(p, devCopy(mb, qkv), devCopy(mb, bb), devCopy(mb, aa), rows, nil, std, sd, od)
	cb.GatedDeltaNet(p, qkv, bb, aa, rows, nil, st, sc, o)
	if err := mb.Sync(); err != nil {
		return 0, err
	}
	e := max(maxAbs32(od, o)/maxMag(o), maxAbs32(std, st)/maxMag(st))
	for i := range sd {
		e = max(e, maxAbs32(sd[i], sc[i])/maxMag(sc[i]))
	}
	return e, nil
}
