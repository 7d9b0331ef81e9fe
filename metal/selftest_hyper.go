package metal

import (
	"fmt"
	"math"
	"time"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/quant"
)

// hyper checks qwen4exp's hyper-connection kernels through Backend (device
// memory from Backend.Alloc, as the model uses them) against the CPU
// backend on the same inputs, random and at the edges (an all-zero stream,
// tiny and large values, saturated gates). Bounds, relative to the largest
// magnitude: GroupRMSNorm 1e-5 (a float sum of squares where the CPU sums
// in float64), ScaledSiLU, HyperMix and HyperCombine 1e-6 (fast-math exp
// where the CPU rounds math.Exp). Measured on the emulator: ≤ 2.4e-7,
// 1.2e-7, 1.2e-7 and 1.2e-7.
func (s *selftest) hyper() {
	type tc struct {
		name  string
		bound float64
		run   func(mb *Backend, cb *cpu.Backend) (float64, error)
	}
	rows := 5
	if s.quick {
		rows = 2
	}
	// streams gives the edge cases a row of hc streams of n values gets.
	streams := func(hc, n int) []float32 {
		x := s.randFloats(rows*hc*n, 2)
		clear(x[n : 2*n]) // stream 1 of row 0: all zero, eps alone
		x[0], x[1], x[2] = 1e-30, 3e4, -3e4
		return x
	}
	cases := []tc{}
	for _, sh := range [][2]int{{4, 96}, {3, 2048}, {2, 17}} { // hc, n: partial simdgroups, many values per lane, one simdgroup
		hc, n := sh[0], sh[1]
		if s.quick && n == 2048 {
			continue
		}
		cases = append(cases, tc{fmt.Sprintf("group_rms_norm %d rows of %d×%d, in place and not", rows, hc, n), 1e-5,
			func(mb *Backend, cb *cpu.Backend) (float64, error) {
				x, w := streams(hc, n), s.randFloats(hc*n, 1.5)
				xd, od, o := devCopy(mb, x), mb.Alloc(len(x)), make([]float32, len(x))
				mb.GroupRMSNorm(od, xd, w, rows, n, 1e-6)
				mb.GroupRMSNorm(xd, xd, w, rows, n, 1e-6)
				cb.GroupRMSNorm(o, x, w, rows, n, 1e-6)
				if err := mb.Sync(); err != nil {
					return 0, err
				}
				return max(maxAbs32(od, o), maxAbs32(xd, o)) / maxMag(o), nil
			}})
	}
	cases = append(cases,
		tc{"scaled_silu 1/4", 1e-6, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			x := s.randFloats(rows*256+7, 8)
			x[0], x[1], x[2] = 0, 400, -400 // saturated: v and an exact 0 (or a denormal)
			xd := devCopy(mb, x)
			mb.ScaledSiLU(xd, 0.25)
			cb.ScaledSiLU(x, 0.25)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			return maxAbs32(xd, x) / maxMag(x), nil
		}},
		tc{fmt.Sprintf("hyper_mix %d rows of 4×96", rows), 1e-6, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			const hc, n = 4, 96
			xn, g := streams(hc, n), s.randFloats(rows*hc*n, 4)
			g[0], g[1], g[n] = 100, -100, -100 // saturated gates
			od, o := mb.Alloc(rows*n), make([]float32, rows*n)
			mb.HyperMix(od, devCopy(mb, xn), devCopy(mb, g), rows, hc, n)
			cb.HyperMix(o, xn, g, rows, hc, n)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			return maxAbs32(od, o) / maxMag(o), nil
		}},
		tc{fmt.Sprintf("hyper_combine %d rows of 3×80", rows), 1e-6, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			const hc, n = 3, 80
			x, y, inj := streams(hc, n), s.randFloats(rows*n, 2), s.randFloats(rows*hc, 6)
			inj[0], inj[1] = 1e4, -1e4 // a weight of 2 and of 0
			xd := devCopy(mb, x)
			mb.HyperCombine(xd, devCopy(mb, y), devCopy(mb, inj), rows, hc, n)
			cb.HyperCombine(x, y, inj, rows, hc, n)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			return maxAbs32(xd, x) / maxMag(x), nil
		}},
	)
	s.runBackendCases(len(cases), func(i int) (string, float64) { return cases[i].name, cases[i].bound },
		func(i int, mb *Backend, cb *cpu.Backend) (float64, error) { return cases[i].run(mb, cb) })
}

// runBackendCases runs n checks on a Backend of the selftest's device and
// a one-thread CPU backend; a check fails if any op of it ran on the host.
func (s *selftest) runBackendCases(n int, meta func(int) (string, float64), run func(int, *Backend, *cpu.Backend) (float64, error)) {
	cb := cpu.NewBackend(1)
	defer cb.Close()
	for i := 0; i < n; i++ {
		mb := &Backend{dev: s.dev, ctx: s.ctx} // not closed: the device is the caller's
		name, bound := meta(i)
		start := time.Now()
		e, err := run(i, mb, cb)
		if err == nil && mb.host != nil {
			err = fmt.Errorf("ran on the host, not on the kernels")
		}
		s.add(name, start, e, bound, err)
	}
}

// sparseAttention checks SparseAttention (qwen4exp's QSA: the attention
// kernels with a mask of kept positions per row) through Backend against
// the CPU backend, on the flash kernel's head sizes and the score-row
// kernel's (48), decode and prefill, with masks that skip whole 32- and
// 64-position blocks, keep a single position (the first, the row's own)
// and keep all. Bounds as for the kernels unmasked: the flash kernel keeps
// the probabilities in float where the CPU rounds them to half (1e-3),
// the score-row kernel rounds them as the CPU does (1e-4).
func (s *selftest) sparseAttention() {
	type shape struct{ hd, heads, kvHeads, pos0, rows int }
	shapes := []shape{{64, 4, 2, 150, 1}, {128, 2, 1, 40, 30}, {48, 4, 2, 70, 3}}
	if s.quick {
		shapes = []shape{{64, 4, 2, 70, 3}, {48, 2, 1, 33, 2}}
	}
	s.runBackendCases(len(shapes), func(i int) (string, float64) {
		sh := shapes[i]
		bound := 1e-3
		if !FlashHeadDim(sh.hd) {
			bound = 1e-4
		}
		return fmt.Sprintf("sparse_attn hd%d h%d/%d pos%d rows%d", sh.hd, sh.heads, sh.kvHeads, sh.pos0, sh.rows), bound
	}, func(i int, mb *Backend, cb *cpu.Backend) (float64, error) {
		sh := shapes[i]
		npos := sh.pos0 + sh.rows
		nCtx := npos + 13
		kvDim := sh.hd * sh.kvHeads
		p := backend.AttnParams{Heads: sh.heads, HeadsKV: sh.kvHeads, HeadDim: sh.hd, Scale: float32(1 / math.Sqrt(float64(sh.hd)))}
		attn := []bool{false, true}
		mc, cc := mb.NewKVCache(attn, nCtx, kvDim), cb.NewKVCache(attn, nCtx, kvDim)
		// Larger K values give peaked softmaxes, where the rescaling matters.
		k, v := s.randFloats(npos*kvDim, 4), s.randFloats(npos*kvDim, 1)
		mb.StoreKV(mc, 1, devCopy(mb, k), devCopy(mb, v), npos, 0)
		cb.StoreKV(cc, 1, k, v, npos, 0)
		words := (nCtx + 63) / 64
		sel := make([]uint64, sh.rows*words)
		for r := 0; r < sh.rows; r++ {
			m := sel[r*words : (r+1)*words]
			q := sh.pos0 + r
			switch r % 4 {
			case 0: // random, with positions 0..63 and 96..127 skipped
				for j := 0; j <= q; j++ {
					if (j >= 64 && (j < 96 || j >= 128)) && s.rng.IntN(3) == 0 || j == q {
						m[j/64] |= 1 << (j % 64)
					}
				}
			case 1: // the first position alone
				m[0] = 1
			case 2: // the row's own position alone
				m[q/64] = 1 << (q % 64)
			case 3: // all (and bits past the row's position, which it must ignore)
				for w := range m {
					m[w] = ^uint64(0)
				}
			}
		}
		q := s.randFloats(sh.rows*sh.heads*sh.hd, 1)
		od, o := mb.Alloc(len(q)), make([]float32, len(q))
		mb.SparseAttention(mc, 1, devCopy(mb, q), sh.rows, sh.pos0, p, sel, words, od)
		cb.SparseAttention(cc, 1, q, sh.rows, sh.pos0, p, sel, words, o)
		if err := mb.Sync(); err != nil {
			return 0, err
		}
		e := 0.0
		qd := sh.heads * sh.hd
		for r := 0; r < sh.rows; r++ {
			e = max(e, maxAbs32(od[r*qd:(r+1)*qd], o[r*qd:(r+1)*qd])/maxMag(o[r*qd:(r+1)*qd]))
		}
		if sh.rows > 1 { // row 1 keeps the first position alone: its output is V[0] (as half) per head
			const r = 1
			for h := 0; h < sh.heads; h++ {
				for d := 0; d < sh.hd; d++ {
					want := quant.FP16ToFloat32(quant.Float32ToFP16(v[(h/(sh.heads/sh.kvHeads))*sh.hd+d]))
					if got := od[r*qd+h*sh.hd+d]; math.Abs(float64(got-want)) > 1e-6 {
						return 1, fmt.Errorf("row keeping position 0 alone: head %d value %d is %g, V[0] is %g", h, d, got, want)
					}
				}
			}
		}
		return e, nil
	})
}

// devCopy is a copy of v in b's device memory.
func devCopy(b *Backend, v []float32) []float32 {
	d := b.Alloc(len(v))
	copy(d, v)
	return d
}
