package metal

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/quant"
	"github.com/strata-llm/strata/engine/routing"
)

// graphOps checks the ops that replaced host code between the model's ops
// (engine/backend's Route, Fill, Repeat, PLEGate, StoreF16, QSAPool and
// QSASelect) through Backend
// against the CPU backend on the same inputs. Route: the same experts in
// the same order (ties to the lower index, as engine/routing), the
// weights within 1e-6 (a division where the CPU divides too; fast math
// may round it otherwise); with the cache-aware policy the scores are
// float32 where the CPU's are float64, which may only change a choice
// between scores within a rounding (none here; the check counts the
// choices the policy changed, so it proves something of the policy).
// Fill and Repeat: bit for bit. PLEGate: 1e-5 of the largest gate (a float
// sum where the CPU sums the float products in float64; measured on the
// emulator ≤ 1.1e-6), with a zero group (gate 0), a tiny score (the 1e-6
// floor: ±1e-3) and negative scores. StoreF16, QSAPool: bit for bit.
// QSASelect: the masks bit for bit (see the cases).
func (s *selftest) graphOps() {
	type tc struct {
		name  string
		bound float64
		run   func(mb *Backend, cb *cpu.Backend) (float64, error)
	}
	rows := 3
	if s.quick {
		rows = 2
	}
	// probs returns rows rows of n router probabilities (the CPU's
	// softmax of random logits), or with ties many equal ones.
	probs := func(n int, ties bool) []float32 {
		p := s.randFloats(rows*n, 3)
		for r := 0; r < rows; r++ {
			row := p[r*n : (r+1)*n]
			if ties {
				for i := range row {
					row[i] = float32((i * 7 % 5) % 3) // three values, each at many indices
				}
			}
			cpu.Softmax(row)
		}
		return p
	}
	route := func(n, k int, scale float32, pol routing.CacheRoute, ties, hostOut bool) func(mb *Backend, cb *cpu.Backend) (float64, error) {
		return func(mb *Backend, cb *cpu.Backend) (float64, error) {
			p := probs(n, ties)
			var res []bool
			if pol.Enabled {
				res = make([]bool, n)
				for i := range res {
					res[i] = s.rng.IntN(3) == 0
				}
			}
			// sel and wts in host memory (copied back at Sync), as the
			// MoE layer keeps them, or in device memory.
			sel, wts := make([]int32, rows*k), make([]float32, rows*k)
			if !hostOut {
				wts = mb.Alloc(rows * k)
				f := mb.Alloc(rows * k) // int32s in device memory
				sel = unsafeInt32s(f)
			}
			mb.Route(devCopy(mb, p), rows, n, k, scale, pol, res, sel, wts)
			wsel, wwts := make([]int32, rows*k), make([]float32, rows*k)
			cb.Route(p, rows, n, k, scale, pol, res, wsel, wwts)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			if !slices.Equal(sel, wsel) {
				return 0, fmt.Errorf("chose %v, want %v", sel, wsel)
			}
			if pol.Enabled {
				var ex []int32
				idx := make([]int, 0, k)
				for r := 0; r < rows; r++ {
					e, w := make([]int32, k), make([]float32, k)
					routing.Exact(p[r*n:(r+1)*n], k, scale, idx, e, w)
					ex = append(ex, e...)
				}
				if slices.Equal(ex, wsel) {
					return 0, fmt.Errorf("the policy changed no choice: the check proves nothing of it")
				}
			}
			return maxRel32(wts, wwts), nil
		}
	}
	mass := routing.CacheRoute{Enabled: true, Lambda: 4, ProtectedTop: 1, AlwaysKept: 1, MaxMass: 0.6}
	window := routing.CacheRoute{Enabled: true, Lambda: 3, ProtectedTop: 1, AlwaysKept: 1, MaxRank: 16}
	cases := []tc{
		{fmt.Sprintf("route %d rows top8 of 128", rows), 1e-6, route(128, 8, 0, routing.CacheRoute{}, false, true)},
		{fmt.Sprintf("route %d rows top4 of 60 ties, scale 2.5, device out", rows), 1e-6, route(60, 4, 2.5, routing.CacheRoute{}, true, false)},
		{fmt.Sprintf("route %d rows top10 of 512 cache-aware M16", rows), 1e-6, route(512, 10, 0, window, false, true)},
		{fmt.Sprintf("route %d rows top8 of 128 cache-aware mass 0.6", rows), 1e-6, route(128, 8, 0, mass, false, false)},
		{"fill 1000 and 7", 0, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			a, b := devCopy(mb, s.randFloats(1000, 1)), devCopy(mb, s.randFloats(7, 1))
			mb.Fill(a, 0)
			mb.Fill(b, -2.5)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			for i, v := range a {
				if math.Float32bits(v) != 0 {
					return 1, fmt.Errorf("value %d is %g, want +0", i, v)
				}
			}
			for i, v := range b {
				if v != -2.5 {
					return 1, fmt.Errorf("value %d is %g, want -2.5", i, v)
				}
			}
			return 0, nil
		}},
	}
	for _, sh := range [][2]int{{4, 96}, {3, 1000}, {1, 33}} { // copies, width
		cp, w := sh[0], sh[1]
		cases = append(cases, tc{fmt.Sprintf("repeat %d rows ×%d of %d", rows, cp, w), 0, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			src := s.randFloats(rows*w, 2)
			dd, d := devCopy(mb, s.randFloats(rows*cp*w, 1)), make([]float32, rows*cp*w)
			mb.Repeat(dd, devCopy(mb, src), rows, cp, w)
			cb.Repeat(d, src, rows, cp, w)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			return maxAbs32(dd, d), nil
		}})
	}
	for _, sh := range [][2]int{{4, 96}, {3, 2048}, {2, 17}} { // streams, values per stream
		hc, n := sh[0], sh[1]
		if s.quick && n == 2048 {
			continue
		}
		cases = append(cases, tc{fmt.Sprintf("ple_gate %d rows of %d×%d", rows, hc, n), 1e-5, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			g := rows * hc
			key, qry := s.randFloats(g*n, 2), s.randFloats(g*n, 2)
			clear(key[:n])           // group 0: s = 0, gate 0
			for j := 0; j < n; j++ { // group 1: |s| under the 1e-6 floor
				key[n+j], qry[n+j] = 1e-5, 1e-5
			}
			for j := 0; j < n && g > 2; j++ { // group 2: a negative score whatever the random draw
				qry[2*n+j] = -key[2*n+j]
			}
			gd, gw := mb.Alloc(g), make([]float32, g)
			mb.PLEGate(gd, devCopy(mb, key), devCopy(mb, qry), g, n)
			cb.PLEGate(gw, key, qry, g, n)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			if gd[0] != 0 || gw[0] != 0 || gd[1] != gw[1] {
				return 1, fmt.Errorf("edge groups: gates %g, %g, want %g, %g", gd[0], gd[1], gw[0], gw[1])
			}
			neg := false
			for _, v := range gw {
				neg = neg || v < 0
			}
			if !neg {
				return 1, fmt.Errorf("no negative score: the sign is untested")
			}
			return maxAbs32(gd, gw) / maxMag(gw), nil
		}})
	}
	cases = append(cases, tc{"store_f16 edges and random", 0, func(mb *Backend, cb *cpu.Backend) (float64, error) {
		src := s.randFloats(1000, 3)
		copy(src, []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, -1e6, 1e-8, 2.9802322e-08, 5.9604645e-08, 6.1e-5, 1.00048828125, 1.00146484375})
		dd, d := backend.AllocU16(mb, len(src)), make([]uint16, len(src))
		mb.StoreF16(dd, devCopy(mb, src))
		cb.StoreF16(d, src)
		if err := mb.Sync(); err != nil {
			return 0, err
		}
		for i := range d {
			if dd[i] != d[i] {
				return 1, fmt.Errorf("value %d (%g): %#04x, want %#04x", i, src[i], dd[i], d[i])
			}
		}
		return 0, nil
	}})
	for _, sh := range [][3]int{{3, 4, 64}, {2, 7, 48}, {5, 1, 32}} { // blocks, ratio, dim
		nb, r, d := sh[0], sh[1], sh[2]
		cases = append(cases, tc{fmt.Sprintf("qsa_pool %d blocks of %d×%d", nb, r, d), 0, func(mb *Backend, cb *cpu.Backend) (float64, error) {
			raw := make([]uint16, nb*r*d)
			for i, v := range s.randFloats(len(raw), 4) {
				raw[i] = quant.Float32ToFP16(v)
			}
			rd := backend.AllocU16(mb, len(raw))
			copy(rd, raw)
			od, o := mb.Alloc(nb*d), make([]float32, nb*d)
			mb.QSAPool(od, rd, nb, r, d)
			cb.QSAPool(o, raw, nb, r, d)
			if err := mb.Sync(); err != nil {
				return 0, err
			}
			return maxAbs32(od, o), nil
		}})
	}
	// QSASelect: integer-valued queries and keys make every score exact
	// in float32 and float64 alike, full of ties (equal blocks, ReLU
	// zeros): the masks must be the CPU's bit for bit, whichever cells of
	// a tied block libstdc++'s heap keeps; random values check the scores'
	// sums (masks equal: their near-ties are improbable). Prefill rows
	// that keep every cell, rows past the width, masks of several words.
	type qsaShape struct {
		name                            string
		rows, pos0, heads, dim, r, topK int
		ints                            bool
	}
	qsaShapes := []qsaShape{
		{"ties prefill", 24, 0, 2, 64, 4, 5, true},
		{"ties decode", 1, 150, 3, 32, 4, 9, true},
		{"ties ratio 7", 3, 200, 2, 48, 7, 30, true},
		{"random", 4, 90, 2, 64, 4, 6, false},
		{"ties ratio 1", 2, 70, 1, 32, 1, 3, true},
	}
	for _, sh := range qsaShapes {
		cases = append(cases, tc{fmt.Sprintf("qsa_select %s: %d rows at %d, %d heads of %d, ratio %d, top %d", sh.name, sh.rows, sh.pos0, sh.heads, sh.dim, sh.r, sh.topK), 0,
			func(mb *Backend, cb *cpu.Backend) (float64, error) {
				nb := (sh.pos0 + sh.rows) / sh.r
				q, keys := s.randFloats(sh.rows*sh.heads*sh.dim, 1), s.randFloats(max(nb, 1)*sh.dim, 1)
				if sh.ints {
					for i := range q {
						q[i] = float32(s.rng.IntN(3) - 1)
					}
					for i := range keys {
						keys[i] = float32(s.rng.IntN(2))
					}
					for b := 0; b+1 < nb; b += 3 { // equal blocks
						copy(keys[(b+1)*sh.dim:(b+2)*sh.dim], keys[b*sh.dim:(b+1)*sh.dim])
					}
				}
				words := (sh.pos0 + sh.rows + 63) / 64
				width := sh.topK + sh.r - 1
				sd, sc := backend.AllocU64(mb, sh.rows*words), make([]uint64, sh.rows*words)
				for i := range sc { // stale masks: the op rewrites what it covers
					sd[i], sc[i] = 0xdeadbeefcafef00d, 0xdeadbeefcafef00d
				}
				mb.QSASelect(sd, devCopy(mb, q), devCopy(mb, keys), sh.rows, sh.pos0, sh.heads, sh.dim, sh.r, width, words)
				cb.QSASelect(sc, q, keys, sh.rows, sh.pos0, sh.heads, sh.dim, sh.r, width, words)
				if err := mb.Sync(); err != nil {
					return 0, err
				}
				selected := false
				for t := 0; t < sh.rows; t++ {
					n := sh.pos0 + t + 1
					for w := 0; w < (n+63)/64; w++ {
						if g, want := sd[t*words+w], sc[t*words+w]; g != want {
							return 1, fmt.Errorf("row %d word %d: %#016x, want %#016x", t, w, g, want)
						}
					}
					selected = selected || n > width
				}
				if !selected {
					return 1, fmt.Errorf("no row past the width: the selection is untested")
				}
				return 0, nil
			}})
	}
	s.runBackendCases(len(cases), func(i int) (string, float64) { return cases[i].name, cases[i].bound },
		func(i int, mb *Backend, cb *cpu.Backend) (float64, error) { return cases[i].run(mb, cb) })
}

// unsafeInt32s views f (device memory) as int32s.
func unsafeInt32s(f []float32) []int32 {
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}
