package metal

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
	"github.com/strata-llm/strata/engine/routing"
)

// Result is one kernel check: the kernel's output against the CPU code
// (engine/quant, engine/cpu) on the same inputs.
type Result struct {
	Check string  // kernel and case
	Err   float64 // the measured error (see Bound)
	Bound float64 // the largest error accepted
	Fail  error   // nil: passed
	Time  time.Duration
}

// Passed reports whether every result passed.
func Passed(rs []Result) bool {
	for _, r := range rs {
		if r.Fail != nil {
			return false
		}
	}
	return len(rs) > 0
}

// PrintResults writes rs as a table.
func PrintResults(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tERROR\tBOUND\tTIME\tRESULT")
	for _, r := range rs {
		res := "ok"
		if r.Fail != nil {
			res = "FAIL: " + r.Fail.Error()
		}
		fmt.Fprintf(tw, "%s\t%.3g\t%.3g\t%v\t%s\n", r.Check, r.Err, r.Bound, r.Time.Round(time.Millisecond), res)
	}
	tw.Flush()
}

// SelftestOptions configure Selftest.
type SelftestOptions struct {
	// Quick runs fewer shapes (the emulator under sanitizers is slow).
	Quick bool
	// Types limits the mat-vec checks to these weight types (nil: all).
	Types []ggml.Type
}

// Selftest checks every kernel on dev against the CPU code, on random and
// edge-case data, and returns one result per check.
func Selftest(ctx context.Context, dev Device, o SelftestOptions) []Result {
	s := &selftest{ctx: ctx, dev: dev, rng: rand.New(rand.NewPCG(7, 11)), quick: o.Quick}
	types := o.Types
	if types == nil {
		for _, w := range weightTypes {
			types = append(types, w.Type)
		}
	}
	for _, t := range types {
		s.matVec(t)
		s.matMul(t)
		s.getRows(t)
	}
	s.rmsNorm()
	s.rope()
	s.softmax()
	s.router()
	s.routerCache()
	s.attention()
	s.attentionRows()
	s.flashAttention()
	s.recurrent()
	s.hyper()
	s.sparseAttention()
	s.graphOps()
	s.normRope()
	s.elementwise()
	s.gridGuard()
	return s.out
}

type selftest struct {
	ctx   context.Context
	dev   Device
	rng   *rand.Rand
	quick bool
	out   []Result
}

func (s *selftest) add(name string, start time.Time, got, bound float64, err error) {
	if err == nil && !(got <= bound) {
		err = fmt.Errorf("error %.3g over the bound %.3g", got, bound)
	}
	s.out = append(s.out, Result{Check: name, Err: got, Bound: bound, Fail: err, Time: time.Since(start)})
}

func (s *selftest) buf(n int) (Buffer, error) { return s.dev.Alloc(max(n, 4)) }

func (s *selftest) floats(vals []float32) (Buffer, error) {
	b, err := s.buf(4 * len(vals))
	if err == nil {
		putF32(b.Bytes(), vals)
	}
	return b, err
}

func putF32(b []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
}

func getF32(b []byte, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func putI32(b []byte, v []int32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
}

func (s *selftest) randFloats(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * (2*s.rng.Float32() - 1)
	}
	return v
}

func (s *selftest) run(c *Commands) error { return s.dev.Run(s.ctx, c) }

// relErr is max_i |got_i - want_i| / scale_i, scale_i = max(mag_i, floor).
func relErr(got []float32, want, mag []float64, floor float64) float64 {
	e := 0.0
	for i := range want {
		d := math.Abs(float64(got[i]) - want[i])
		if math.IsNaN(float64(got[i])) {
			return math.Inf(1)
		}
		e = max(e, d/max(mag[i], floor))
	}
	return e
}

func (s *selftest) matVec(t ggml.Type) {
	wt, _ := weightType(t)
	k, err := quant.For(t)
	if err != nil {
		s.add("mv "+t.String(), time.Now(), 0, 0, err)
		return
	}
	type shape struct {
		rows, cols, n int
		g             MatVecGeometry
		mode          mvMode
		zeroX         bool
	}
	shapes := []shape{
		{67, 512, 1, MatVecGeometry{4, 2}, mvDense, false},
		{33, 768, 1, MatVecGeometry{2, 4}, mvDense, false},
		{5, 256, 3, MatVecGeometry{1, 1}, mvSlots, false},
		{7, 256, 3, MatVecGeometry{2, 2}, mvLocated, false},
		{9, 256, 1, MatVecGeometry{8, 1}, mvDense, true},
	}
	if s.quick {
		shapes = []shape{{37, 512, 1, MatVecGeometry{2, 2}, mvDense, false}, {5, 256, 2, MatVecGeometry{1, 3}, mvSlots, false},
			{5, 256, 3, MatVecGeometry{1, 2}, mvLocated, false}}
	}
	for _, sh := range shapes {
		start := time.Now()
		name := fmt.Sprintf("mv %s %dx%d n%d nsg%d nr%d", t, sh.rows, sh.cols, sh.n, sh.g.NSG, sh.g.NR)
		switch sh.mode {
		case mvSlots:
			name += " slots"
		case mvLocated:
			name += " located"
		}
		if sh.zeroX {
			name += " x=0"
		}
		e, err := s.matVecCase(k, wt, sh.rows, sh.cols, sh.n, sh.g, sh.mode, sh.zeroX)
		s.add(name, start, e, 2e-5, err)
	}
}

// mvMode is how a mat-vec finds its matrices.
type mvMode int

const (
	mvDense   mvMode = iota // consecutive
	mvSlots                 // a slot map into one arena
	mvLocated               // a location table into several buffers
)

func (s *selftest) matVecCase(k *quant.Kernel, wt WeightType, rows, cols, n int, g MatVecGeometry, mode mvMode, zeroX bool) (float64, error) {
	rb := wt.RowBytes(cols)
	mat := rows * rb
	nmat := n
	if mode != mvDense {
		nmat = 5 // the arena holds more experts than are used (slots 0..4)
	}
	w := make([]byte, nmat*mat)
	k.Random(w, s.rng, 0.5)
	xs := n
	x := s.randFloats(xs*cols, 1)
	if zeroX {
		clear(x)
	}
	wb, err := s.buf(len(w))
	if err != nil {
		return 0, err
	}
	copy(wb.Bytes(), w)
	xb, err := s.floats(x)
	if err != nil {
		return 0, err
	}
	yb, err := s.buf(4 * n * rows)
	if err != nil {
		return 0, err
	}
	putF32(yb.Bytes(), s.randFloats(n*rows, 100)) // must be overwritten
	m := MatVec{T: wt.Type, Rows: rows, Cols: cols, N: n, W: BufRef{Buf: wb}, X: BufRef{Buf: xb}, Y: BufRef{Buf: yb},
		XStride: cols, MatBytes: mat, Geometry: g}
	// which matrix each output uses
	which := make([]int, n)
	for i := range which {
		which[i] = i
	}
	switch mode {
	case mvLocated:
		// ids pick experts; the table (3 entries per expert, the second
		// one used) sends expert e to matrix which of w, found in base
		// buffer part (0: W, else Bases[part-1]) at an offset: every
		// base holds all 5 matrices, shifted by a different gap.
		ids := []int32{4, 1, 3}[:n]
		matOf := []int{3, 0, 4, 1, 2}
		partOf := []int{2, 0, 4, 1, 3}
		ib, err := s.buf(4 * len(ids))
		if err != nil {
			return 0, err
		}
		putI32(ib.Bytes(), ids)
		m.Bases = make([]BufRef, MaxBases)
		gaps := []int{0, 16, 48, 0, 32}
		for p := 1; p <= MaxBases; p++ {
			bb, err := s.buf(len(w) + 4096)
			if err != nil {
				return 0, err
			}
			k.Random(bb.Bytes(), s.rng, 0.5) // garbage around the matrices
			copy(bb.Bytes()[256+gaps[p]:], w)
			m.Bases[p-1] = BufRef{Buf: bb, Off: 256}
		}
		locs := make([]byte, 8*3*len(matOf))
		for e := range matOf {
			p := partOf[e]
			off := uint64(matOf[e]*mat + gaps[p])
			if p == 0 {
				off = uint64(matOf[e] * mat)
			}
			binary.LittleEndian.PutUint64(locs[8*(3*e+1):], uint64(p)<<56|off)
			binary.LittleEndian.PutUint64(locs[8*3*e:], ^uint64(0)) // unused entries
			binary.LittleEndian.PutUint64(locs[8*(3*e+2):], ^uint64(0))
		}
		lb, err := s.buf(len(locs))
		if err != nil {
			return 0, err
		}
		copy(lb.Bytes(), locs)
		m.IDs, m.Locs, m.LocStride, m.LocIndex, m.MatBytes = &BufRef{Buf: ib}, &BufRef{Buf: lb}, 3, 1, 0
		for i, id := range ids {
			which[i] = matOf[id]
		}
	case mvSlots:
		// ids pick experts; the slot map sends expert e to arena slot slot[e]
		ids := []int32{2, 0, 3}[:n]
		slot := []int32{4, 1, 0, 2, 3}
		ib, err := s.buf(4 * len(ids))
		if err != nil {
			return 0, err
		}
		putI32(ib.Bytes(), ids)
		sb, err := s.buf(4 * len(slot))
		if err != nil {
			return 0, err
		}
		putI32(sb.Bytes(), slot)
		m.IDs, m.Slots, m.SlotBytes, m.MatBytes = &BufRef{Buf: ib}, &BufRef{Buf: sb}, mat, 0
		for i, id := range ids {
			which[i] = int(slot[id])
		}
	}
	var c Commands
	m.Encode(&c)
	if err := s.run(&c); err != nil {
		return 0, err
	}
	got := getF32(yb.Bytes(), n*rows)
	want, mag := make([]float64, n*rows), make([]float64, n*rows)
	row := make([]float32, cols)
	for i := 0; i < n; i++ {
		for r := 0; r < rows; r++ {
			k.Dequantize(w[which[i]*mat+r*rb:which[i]*mat+(r+1)*rb], row)
			var sum, abs float64
			for j, v := range row {
				p := float64(v) * float64(x[i*cols+j])
				sum += p
				abs += math.Abs(p)
			}
			want[i*rows+r], mag[i*rows+r] = sum, abs
		}
	}
	return relErr(got, want, mag, 1e-30), nil
}

// matMul checks the prefill kernel: tiles cut by the row and activation
// counts on both sides, strided inputs and outputs, and rows picked by ids.
func (s *selftest) matMul(t ggml.Type) {
	wt, _ := weightType(t)
	k, err := quant.For(t)
	if err != nil {
		s.add("mm "+t.String(), time.Now(), 0, 0, err)
		return
	}
	type shape struct {
		rows, cols, ntok int
		ids              bool
	}
	// Two shapes keep go test ./metal's time modest (25 types × 3 lane
	// orders): 67×37 cuts the 32×32 tile on both sides.
	shapes := []shape{{67, 512, 37, false}, {33, 256, 5, true}}
	if s.quick {
		shapes = []shape{{37, 256, 9, true}}
	}
	for _, sh := range shapes {
		start := time.Now()
		name := fmt.Sprintf("mm %s %dx%d t%d", t, sh.rows, sh.cols, sh.ntok)
		if sh.ids {
			name += " ids"
		}
		e, err := s.matMulCase(k, wt, sh.rows, sh.cols, sh.ntok, sh.ids)
		s.add(name, start, e, 2e-5, err)
	}
}

func (s *selftest) matMulCase(k *quant.Kernel, wt WeightType, rows, cols, ntok int, useIDs bool) (float64, error) {
	rb := wt.RowBytes(cols)
	w := make([]byte, rows*rb)
	k.Random(w, s.rng, 0.5)
	xStride, yStride := cols+32, rows+3 // padded rows: the strides must be honoured
	nx := ntok
	ids := make([]int32, ntok)
	for i := range ids {
		ids[i] = int32(i)
	}
	if useIDs {
		nx = ntok + 4
		for i := range ids {
			ids[i] = int32((i*7 + 3) % nx)
		}
	}
	x := s.randFloats(nx*xStride, 1)
	wb, err := s.buf(len(w))
	if err != nil {
		return 0, err
	}
	copy(wb.Bytes(), w)
	xb, err := s.floats(x)
	if err != nil {
		return 0, err
	}
	yb, err := s.buf(4 * ntok * yStride)
	if err != nil {
		return 0, err
	}
	sentinel := s.randFloats(ntok*yStride, 100)
	putF32(yb.Bytes(), sentinel) // outputs must be overwritten, the padding kept
	m := MatMul{T: wt.Type, Rows: rows, Cols: cols, NTok: ntok, W: BufRef{Buf: wb}, X: BufRef{Buf: xb}, Y: BufRef{Buf: yb},
		XStride: xStride, YStride: yStride}
	if useIDs {
		ib, err := s.buf(4 * ntok)
		if err != nil {
			return 0, err
		}
		putI32(ib.Bytes(), ids)
		m.IDs = &BufRef{Buf: ib}
	}
	var c Commands
	m.Encode(&c)
	if err := s.run(&c); err != nil {
		return 0, err
	}
	all := getF32(yb.Bytes(), ntok*yStride)
	got := make([]float32, ntok*rows)
	want, mag := make([]float64, ntok*rows), make([]float64, ntok*rows)
	deq := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		k.Dequantize(w[r*rb:(r+1)*rb], deq[r*cols:(r+1)*cols])
	}
	for t := 0; t < ntok; t++ {
		for j := rows; j < yStride; j++ {
			if all[t*yStride+j] != sentinel[t*yStride+j] {
				return 0, fmt.Errorf("wrote outside its rows (activation %d, padding %d)", t, j-rows)
			}
		}
		xr := x[int(ids[t])*xStride:]
		for r := 0; r < rows; r++ {
			var sum, abs float64
			for j, v := range deq[r*cols : (r+1)*cols] {
				p := float64(v) * float64(xr[j])
				sum += p
				abs += math.Abs(p)
			}
			got[t*rows+r] = all[t*yStride+r]
			want[t*rows+r], mag[t*rows+r] = sum, abs
		}
	}
	return relErr(got, want, mag, 1e-30), nil
}

func (s *selftest) getRows(t ggml.Type) {
	start := time.Now()
	wt, _ := weightType(t)
	k, err := quant.For(t)
	if err != nil {
		s.add("get_rows "+t.String(), start, 0, 0, err)
		return
	}
	const rows, cols = 11, 512
	rb := wt.RowBytes(cols)
	w := make([]byte, rows*rb)
	k.Random(w, s.rng, 1)
	ids := []int32{3, 10, 0, 3}
	e, err := func() (float64, error) {
		wb, err := s.buf(len(w))
		if err != nil {
			return 0, err
		}
		copy(wb.Bytes(), w)
		ib, err := s.buf(16)
		if err != nil {
			return 0, err
		}
		putI32(ib.Bytes(), ids)
		ob, err := s.buf(4 * len(ids) * cols)
		if err != nil {
			return 0, err
		}
		var c Commands
		GetRows{T: t, Cols: cols, N: len(ids), W: BufRef{Buf: wb}, IDs: BufRef{Buf: ib}, Out: BufRef{Buf: ob}}.Encode(&c)
		if err := s.run(&c); err != nil {
			return 0, err
		}
		got := getF32(ob.Bytes(), len(ids)*cols)
		want, mag := make([]float64, len(got)), make([]float64, len(got))
		row := make([]float32, cols)
		for i, id := range ids {
			k.Dequantize(w[int(id)*rb:(int(id)+1)*rb], row)
			for j, v := range row {
				want[i*cols+j], mag[i*cols+j] = float64(v), math.Abs(float64(v))
			}
		}
		return relErr(got, want, mag, 1e-6), nil
	}()
	s.add(fmt.Sprintf("get_rows %s %dx%d", t, len(ids), cols), start, e, 1e-6, err)
}

func (s *selftest) rmsNorm() {
	for _, tc := range []struct {
		n, rows int
		scale   float32
	}{{1024, 3, 1}, {128, 8, 1e-3}, {48, 1, 300}} {
		start := time.Now()
		e, err := func() (float64, error) {
			x := s.randFloats(tc.n*tc.rows, tc.scale)
			w := s.randFloats(tc.n, 2)
			xb, err := s.floats(x)
			if err != nil {
				return 0, err
			}
			wb, err := s.floats(w)
			if err != nil {
				return 0, err
			}
			var c Commands
			RMSNorm{N: tc.n, Rows: tc.rows, Eps: 1e-6, X: BufRef{Buf: xb}, W: BufRef{Buf: wb}, Out: BufRef{Buf: xb}}.Encode(&c)
			if err := s.run(&c); err != nil {
				return 0, err
			}
			got := getF32(xb.Bytes(), len(x))
			want := make([]float32, len(x))
			for r := 0; r < tc.rows; r++ {
				cpu.RMSNorm(want[r*tc.n:(r+1)*tc.n], x[r*tc.n:(r+1)*tc.n], w, 1e-6)
			}
			return maxRel32(got, want), nil
		}()
		s.add(fmt.Sprintf("rms_norm %dx%d in place", tc.rows, tc.n), start, e, 1e-5, err)
	}
}

// maxRel32 is max |got-want| / max(|want|, 1e-3·max|want|).
func maxRel32(got, want []float32) float64 {
	mx := 0.0
	for _, v := range want {
		mx = max(mx, math.Abs(float64(v)))
	}
	w64, mag := make([]float64, len(want)), make([]float64, len(want))
	for i, v := range want {
		w64[i], mag[i] = float64(v), math.Abs(float64(v))
	}
	return relErr(got, w64, mag, max(1e-3*mx, 1e-30))
}

func (s *selftest) rope() {
	for _, tc := range []struct {
		hd, dims, heads, pos int
		yarn                 bool
	}{{128, 128, 4, 0, false}, {128, 128, 4, 37, false}, {64, 32, 3, 511, false}, {128, 128, 2, 300, true}} {
		start := time.Now()
		r := backend.Rope{Dims: tc.dims, FreqBase: 1e6, FreqScale: 1, AttnFactor: 1, CtxOrig: 4096, BetaFast: 32, BetaSlow: 1}
		if tc.yarn {
			r.FreqBase, r.FreqScale, r.ExtFactor = 1e4, 0.25, 1
		}
		e, err := func() (float64, error) {
			x := s.randFloats(tc.hd*tc.heads, 1)
			xb, err := s.floats(x)
			if err != nil {
				return 0, err
			}
			pb, err := s.buf(4)
			if err != nil {
				return 0, err
			}
			putI32(pb.Bytes(), []int32{int32(tc.pos)})
			op := Rope{HeadDim: tc.hd, Heads: tc.heads, Dims: tc.dims, FreqBase: r.FreqBase, FreqScale: r.FreqScale,
				ExtFactor: r.ExtFactor, AttnFactor: r.AttnFactor, X: BufRef{Buf: xb}, Pos: BufRef{Buf: pb}}
			op.Corr = RopeCorrDims(r)
			var c Commands
			op.Encode(&c)
			if err := s.run(&c); err != nil {
				return 0, err
			}
			got := getF32(xb.Bytes(), len(x))
			cs := make([]float32, tc.dims)
			r.Cache(tc.pos, cs)
			want := append([]float32(nil), x...)
			for h := 0; h < tc.heads; h++ {
				cpu.ApplyNeox(want[h*tc.hd:(h+1)*tc.hd], cs, tc.dims)
			}
			return maxAbs32(got, want), nil
		}()
		name := fmt.Sprintf("rope_neox hd%d dims%d pos%d", tc.hd, tc.dims, tc.pos)
		if tc.yarn {
			name += " yarn"
		}
		// Angles are pos·θ_i: float32 rounding of the angle grows with pos.
		s.add(name, start, e, 2e-6*float64(max(tc.pos, 8)), err)
	}
}

// RopeCorrDims are the YaRN correction dimensions of r, as ggml computes them.
func RopeCorrDims(r backend.Rope) [2]float32 {
	if r.ExtFactor == 0 {
		return [2]float32{}
	}
	corr := func(nRot float32) float32 {
		return float32(r.Dims) * float32(math.Log(float64(float32(r.CtxOrig)/(nRot*2*math.Pi)))) / (2 * float32(math.Log(float64(r.FreqBase))))
	}
	start := float32(math.Floor(float64(corr(r.BetaFast))))
	end := float32(math.Ceil(float64(corr(r.BetaSlow))))
	return [2]float32{max(0, start), min(float32(r.Dims-1), end)}
}

func maxMag(v []float32) float64 {
	m := 1e-30
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

func maxAbs32(got, want []float32) float64 {
	e := 0.0
	for i := range want {
		d := math.Abs(float64(got[i] - want[i]))
		if math.IsNaN(float64(got[i])) {
			return math.Inf(1)
		}
		e = max(e, d)
	}
	return e
}

func (s *selftest) softmax() {
	for _, tc := range []struct {
		n, rows int
		scale   float32
	}{{1000, 2, 5}, {7, 3, 100}, {128, 1, 0}} {
		start := time.Now()
		e, err := func() (float64, error) {
			x := s.randFloats(tc.n*tc.rows, tc.scale)
			xb, err := s.floats(x)
			if err != nil {
				return 0, err
			}
			var c Commands
			Softmax{N: tc.n, Rows: tc.rows, X: BufRef{Buf: xb}}.Encode(&c)
			if err := s.run(&c); err != nil {
				return 0, err
			}
			want := append([]float32(nil), x...)
			for r := 0; r < tc.rows; r++ {
				cpu.Softmax(want[r*tc.n : (r+1)*tc.n])
			}
			return maxRel32(getF32(xb.Bytes(), len(x)), want), nil
		}()
		s.add(fmt.Sprintf("softmax %dx%d scale %g", tc.rows, tc.n, tc.scale), start, e, 1e-5, err)
	}
}

func (s *selftest) router() {
	for _, tc := range []struct {
		experts, k, tokens int
		scale              float32
		ties               bool
	}{{128, 8, 1, 0, false}, {512, 10, 2, 2.5, false}, {60, 4, 1, 0, true}, {33, 32, 1, 0, false}} {
		start := time.Now()
		e, err := func() (float64, error) {
			x := s.randFloats(tc.experts*tc.tokens, 4)
			if tc.ties {
				for i := range x {
					x[i] = float32(i % 3) // many equal logits: ties go to the lower index
				}
			}
			lb, err := s.floats(x)
			if err != nil {
				return 0, err
			}
			ib, err := s.buf(4 * tc.k * tc.tokens)
			if err != nil {
				return 0, err
			}
			wb, err := s.buf(4 * tc.k * tc.tokens)
			if err != nil {
				return 0, err
			}
			var c Commands
			Router{Experts: tc.experts, K: tc.k, Tokens: tc.tokens, Scale: tc.scale, Logits: BufRef{Buf: lb}, IDs: BufRef{Buf: ib}, Weights: BufRef{Buf: wb}}.Encode(&c)
			if err := s.run(&c); err != nil {
				return 0, err
			}
			gotW := getF32(wb.Bytes(), tc.k*tc.tokens)
			var want []float32
			for t := 0; t < tc.tokens; t++ {
				ids, w := RouteCPU(x[t*tc.experts:(t+1)*tc.experts], tc.k, tc.scale)
				for j, id := range ids {
					if got := int32(binary.LittleEndian.Uint32(ib.Bytes()[4*(t*tc.k+j):])); got != id {
						return 0, fmt.Errorf("token %d choice %d: expert %d, want %d", t, j, got, id)
					}
				}
				want = append(want, w...)
			}
			return maxRel32(gotW, want), nil
		}()
		name := fmt.Sprintf("router top%d of %d x%d", tc.k, tc.experts, tc.tokens)
		if tc.ties {
			name += " ties"
		}
		s.add(name, start, e, 1e-5, err)
	}
}

// RouteCPU is the CPU's routing rule (engine/routing.Exact after the
// CPU's softmax): the top k (ties to the lower index), renormalised and
// scaled.
func RouteCPU(logits []float32, k int, scale float32) ([]int32, []float32) {
	p := append([]float32(nil), logits...)
	cpu.Softmax(p)
	ids, w := make([]int32, k), make([]float32, k)
	routing.Exact(p, k, scale, make([]int, 0, k), ids, w)
	return ids, w
}

func (s *selftest) attention() {
	for _, tc := range []struct{ hd, heads, kvHeads, nCtx, pos int }{{128, 4, 2, 64, 0}, {128, 8, 2, 300, 200}, {64, 3, 1, 40, 39}} {
		start := time.Now()
		e, err := s.attentionCase(tc.hd, tc.heads, tc.kvHeads, tc.nCtx, tc.pos)
		s.add(fmt.Sprintf("attn_decode hd%d h%d kv%d pos%d", tc.hd, tc.heads, tc.kvHeads, tc.pos), start, e, 1e-4, err)
	}
}

func (s *selftest) attentionCase(hd, heads, kvHeads, nCtx, pos int) (float64, error) {
	kvDim := hd * kvHeads
	q := s.randFloats(hd*heads, 1)
	kNew, vNew := s.randFloats(kvDim, 1), s.randFloats(kvDim, 1)
	// Earlier positions already in the caches; this position stored by kernel_kv_store.
	kc, vc := make([]uint16, nCtx*kvDim), make([]uint16, nCtx*kvDim)
	for i := 0; i < pos*kvDim; i++ {
		kc[i] = quant.Float32ToFP16(3 * (2*s.rng.Float32() - 1))
		vc[i] = quant.Float32ToFP16(2*s.rng.Float32() - 1)
	}
	alloc := func(n int) (Buffer, error) { return s.buf(n) }
	qb, err := s.floats(q)
	if err != nil {
		return 0, err
	}
	kb, err := s.floats(kNew)
	if err != nil {
		return 0, err
	}
	vb, err := s.floats(vNew)
	if err != nil {
		return 0, err
	}
	kcb, err := alloc(2 * len(kc))
	if err != nil {
		return 0, err
	}
	vcb, err := alloc(2 * len(vc))
	if err != nil {
		return 0, err
	}
	for i := range kc {
		binary.LittleEndian.PutUint16(kcb.Bytes()[2*i:], kc[i])
		binary.LittleEndian.PutUint16(vcb.Bytes()[2*i:], vc[i])
	}
	pb, err := alloc(4)
	if err != nil {
		return 0, err
	}
	putI32(pb.Bytes(), []int32{int32(pos)})
	sb, err := alloc(4 * heads * nCtx)
	if err != nil {
		return 0, err
	}
	ob, err := alloc(4 * heads * hd)
	if err != nil {
		return 0, err
	}
	var c Commands
	KVStore{KVDim: kvDim, K: BufRef{Buf: kb}, V: BufRef{Buf: vb}, KC: BufRef{Buf: kcb}, VC: BufRef{Buf: vcb}, Pos: BufRef{Buf: pb}}.Encode(&c)
	c.Barrier()
	scale := float32(1 / math.Sqrt(float64(hd)))
	Attention{HeadDim: hd, Heads: heads, HeadsKV: kvHeads, NCtx: nCtx, Scale: scale, Q: BufRef{Buf: qb}, KC: BufRef{Buf: kcb},
		VC: BufRef{Buf: vcb}, Scores: BufRef{Buf: sb}, Out: BufRef{Buf: ob}, Pos: BufRef{Buf: pb}}.Encode(&c)
	if err := s.run(&c); err != nil {
		return 0, err
	}
	for i := 0; i < kvDim; i++ {
		at := pos*kvDim + i
		kc[at], vc[at] = quant.Float32ToFP16(kNew[i]), quant.Float32ToFP16(vNew[i])
		if g := binary.LittleEndian.Uint16(kcb.Bytes()[2*at:]); g != kc[at] {
			return 0, fmt.Errorf("kv_store: K[%d] = %#x, want %#x", i, g, kc[at])
		}
		if g := binary.LittleEndian.Uint16(vcb.Bytes()[2*at:]); g != vc[at] {
			return 0, fmt.Errorf("kv_store: V[%d] = %#x, want %#x", i, g, vc[at])
		}
	}
	want := AttentionCPU(q, kc, vc, hd, heads, kvHeads, pos+1, scale)
	// Outputs are averages of ±1 values: compare to the largest, not each
	// (a near-zero output has no meaningful relative error).
	return maxAbs32(getF32(ob.Bytes(), len(want)), want) / maxMag(want), nil
}

// AttentionCPU is the CPU backend's decode attention (engine/model/qwen3moe)
// over caches laid out [position][kvDim]: Q rounded to fp16, softmax in
// float32, the probabilities rounded to fp16.
func AttentionCPU(q []float32, kc, vc []uint16, hd, heads, kvHeads, npos int, scale float32) []float32 {
	kvDim := hd * kvHeads
	out := make([]float32, heads*hd)
	q16 := make([]float32, hd)
	sc := make([]float32, npos)
	for h := 0; h < heads; h++ {
		kvh := h / (heads / kvHeads)
		quant.RoundFP16(q16, q[h*hd:(h+1)*hd])
		for j := 0; j < npos; j++ {
			var s float32
			for d := 0; d < hd; d++ {
				s += q16[d] * quant.FP16ToFloat32(kc[j*kvDim+kvh*hd+d])
			}
			sc[j] = s * scale
		}
		cpu.Softmax(sc)
		quant.RoundFP16(sc, sc)
		for d := 0; d < hd; d++ {
			var o float32
			for j := 0; j < npos; j++ {
				o += sc[j] * quant.FP16ToFloat32(vc[j*kvDim+kvh*hd+d])
			}
			out[h*hd+d] = o
		}
	}
	return out
}

func (s *selftest) elementwise() {
	start := time.Now()
	const n = 3*256 + 17
	e, err := func() (float64, error) {
		g, u := s.randFloats(n, 8), s.randFloats(n, 2)
		gb, err := s.floats(g)
		if err != nil {
			return 0, err
		}
		ub, err := s.floats(u)
		if err != nil {
			return 0, err
		}
		ob, err := s.buf(4 * n)
		if err != nil {
			return 0, err
		}
		var c Commands
		SwiGLU{N: n, Gate: BufRef{Buf: gb}, Up: BufRef{Buf: ub}, Out: BufRef{Buf: ob}}.Encode(&c)
		c.Barrier()
		Add{N: n, X: BufRef{Buf: ob}, Y: BufRef{Buf: ub}}.Encode(&c)
		if err := s.run(&c); err != nil {
			return 0, err
		}
		want := make([]float32, n)
		cpu.SwiGLU(want, g, u)
		cpu.Add(want, u)
		return maxRel32(getF32(ob.Bytes(), n), want), nil
	}()
	s.add(fmt.Sprintf("swiglu+add %d", n), start, e, 1e-5, err)

	start = time.Now()
	const embd, k = 2*256 + 3, 6
	e, err = func() (float64, error) {
		x, down, w := s.randFloats(embd, 1), s.randFloats(k*embd, 1), s.randFloats(k, 1)
		xb, err := s.floats(x)
		if err != nil {
			return 0, err
		}
		db, err := s.floats(down)
		if err != nil {
			return 0, err
		}
		wb, err := s.floats(w)
		if err != nil {
			return 0, err
		}
		var c Commands
		Combine{Embd: embd, K: k, X: BufRef{Buf: xb}, Down: BufRef{Buf: db}, Weights: BufRef{Buf: wb}}.Encode(&c)
		if err := s.run(&c); err != nil {
			return 0, err
		}
		want := append([]float32(nil), x...)
		out := make([]float32, embd)
		for j := 0; j < k; j++ {
			for i := range out {
				if j == 0 {
					out[i] = down[i] * w[0]
				} else {
					out[i] += float32(down[j*embd+i] * w[j])
				}
			}
		}
		cpu.Add(want, out)
		return maxRel32(getF32(xb.Bytes(), embd), want), nil
	}()
	s.add(fmt.Sprintf("moe_combine k%d %d", k, embd), start, e, 1e-6, err)

	start = time.Now()
	e, err = func() (float64, error) {
		y, x := s.randFloats(embd, 1), s.randFloats(embd, 1)
		yb, err := s.floats(y)
		if err != nil {
			return 0, err
		}
		xb, err := s.floats(x)
		if err != nil {
			return 0, err
		}
		var c Commands
		Axpy{N: embd, W: 0.75, Y: BufRef{Buf: yb}, X: BufRef{Buf: xb}}.Encode(&c)
		c.Barrier()
		Axpy{N: embd, W: -1.5, Accumulate: true, Y: BufRef{Buf: yb}, X: BufRef{Buf: xb}}.Encode(&c)
		if err := s.run(&c); err != nil {
			return 0, err
		}
		want := make([]float32, embd)
		for i := range want {
			want[i] = x[i] * 0.75
			want[i] += float32(x[i] * -1.5)
		}
		return maxRel32(getF32(yb.Bytes(), embd), want), nil
	}()
	s.add(fmt.Sprintf("axpy %d", embd), start, e, 1e-6, err)
}

// gridGuard checks that a dispatch over the guard is split and still
// covers every element: an Add of 2^25+300 floats.
func (s *selftest) gridGuard() {
	start := time.Now()
	n := MaxGridThreads + 300
	if s.quick {
		s.add("grid guard (skipped in quick mode: 128 MiB)", start, 0, 0, nil)
		return
	}
	e, err := func() (float64, error) {
		xb, err := s.buf(4 * n)
		if err != nil {
			return 0, err
		}
		yb, err := s.buf(4 * n)
		if err != nil {
			return 0, err
		}
		x, y := xb.Bytes(), yb.Bytes()
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(float32(i%1000)))
			binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(1))
		}
		var c Commands
		Add{N: n, X: BufRef{Buf: xb}, Y: BufRef{Buf: yb}}.Encode(&c)
		if c.Len() < 2 {
			return 0, fmt.Errorf("a dispatch of %d threads was not split", n)
		}
		if err := s.run(&c); err != nil {
			return 0, err
		}
		bad := 0
		for i := 0; i < n; i++ {
			if math.Float32frombits(binary.LittleEndian.Uint32(x[4*i:])) != float32(i%1000)+1 {
				bad++
			}
		}
		return float64(bad), nil
	}()
	s.add(fmt.Sprintf("grid guard: add of %d floats", n), start, e, 0, err)
}

// attentionRows checks the prefill form: several new rows at once, V
// transposed as the CPU backend lays it out.
func (s *selftest) attentionRows() {
	start := time.Now()
	const hd, heads, kvHeads, nCtx, pos0, rows = 64, 4, 2, 48, 5, 3
	e, err := func() (float64, error) {
		kvDim := hd * kvHeads
		q := s.randFloats(rows*heads*hd, 1)
		k, v := s.randFloats(rows*kvDim, 1), s.randFloats(rows*kvDim, 1)
		kc, vcT := make([]uint16, nCtx*kvDim), make([]uint16, nCtx*kvDim) // vcT: [kvDim][nCtx]
		for p := 0; p < pos0; p++ {
			for i := 0; i < kvDim; i++ {
				kc[p*kvDim+i] = quant.Float32ToFP16(2*s.rng.Float32() - 1)
				vcT[i*nCtx+p] = quant.Float32ToFP16(2*s.rng.Float32() - 1)
			}
		}
		bufs := make([]Buffer, 8)
		for i, n := range []int{4 * len(q), 4 * len(k), 4 * len(v), 2 * len(kc), 2 * len(vcT), 4, 4 * rows * heads * nCtx, 4 * rows * heads * hd} {
			b, err := s.buf(n)
			if err != nil {
				return 0, err
			}
			bufs[i] = b
		}
		putF32(bufs[0].Bytes(), q)
		putF32(bufs[1].Bytes(), k)
		putF32(bufs[2].Bytes(), v)
		for i := range kc {
			binary.LittleEndian.PutUint16(bufs[3].Bytes()[2*i:], kc[i])
			binary.LittleEndian.PutUint16(bufs[4].Bytes()[2*i:], vcT[i])
		}
		putI32(bufs[5].Bytes(), []int32{pos0})
		ref := func(i int) BufRef { return BufRef{Buf: bufs[i]} }
		var c Commands
		KVStore{KVDim: kvDim, Rows: rows, VTrans: nCtx, K: ref(1), V: ref(2), KC: ref(3), VC: ref(4), Pos: ref(5)}.Encode(&c)
		c.Barrier()
		scale := float32(0.125)
		Attention{HeadDim: hd, Heads: heads, HeadsKV: kvHeads, NCtx: nCtx, Rows: rows, VTrans: nCtx, Scale: scale,
			Q: ref(0), KC: ref(3), VC: ref(4), Scores: ref(6), Out: ref(7), Pos: ref(5)}.Encode(&c)
		if err := s.run(&c); err != nil {
			return 0, err
		}
		got := getF32(bufs[7].Bytes(), rows*heads*hd)
		worst := 0.0
		for r := 0; r < rows; r++ {
			p := pos0 + r
			for i := 0; i < kvDim; i++ {
				kc[p*kvDim+i] = quant.Float32ToFP16(k[r*kvDim+i])
				vcT[i*nCtx+p] = quant.Float32ToFP16(v[r*kvDim+i])
			}
			vc := make([]uint16, nCtx*kvDim) // [pos][kvDim] for AttentionCPU
			for j := 0; j <= p; j++ {
				for i := 0; i < kvDim; i++ {
					vc[j*kvDim+i] = vcT[i*nCtx+j]
				}
			}
			want := AttentionCPU(q[r*heads*hd:(r+1)*heads*hd], kc, vc, hd, heads, kvHeads, p+1, scale)
			worst = max(worst, maxAbs32(got[r*heads*hd:(r+1)*heads*hd], want)/maxMag(want))
		}
		return worst, nil
	}()
	s.add(fmt.Sprintf("kv_store+attn %d rows at pos%d, V transposed", rows, pos0), start, e, 1e-4, err)
}

// flashAttention checks the flash kernel against AttentionCPU (the CPU
// backend's rule: Q and the probabilities rounded to half) for decode and
// prefill, V plain and transposed, across 32-position blocks and (full
// run) a long context. The bound: the kernel keeps the probabilities in
// float where the CPU rounds them to half (2^-11 relative each), so the
// outputs differ by up to ~5e-4 of their largest magnitude (measured
// 1.7e-4 to 3.4e-4); a bound of 1e-3 catches any real error (a wrong
// position, mask or rescale moves outputs by 1e-2 and more). Against the
// same rule in float64 without that rounding the bound is 1e-5.
func (s *selftest) flashAttention() {
	type shape struct{ hd, heads, kvHeads, pos0, rows, vtrans int }
	shapes := []shape{{128, 4, 2, 70, 1, 0}, {64, 4, 4, 3, 5, 80}, {256, 2, 1, 31, 2, 0}, {32, 8, 2, 0, 40, 64}, {64, 2, 1, 1500, 1, 1600}}
	if s.quick {
		shapes = []shape{{64, 4, 2, 33, 3, 48}}
	}
	for _, sh := range shapes {
		start := time.Now()
		name := fmt.Sprintf("flash_attn hd%d h%d/%d pos%d rows%d", sh.hd, sh.heads, sh.kvHeads, sh.pos0, sh.rows)
		if sh.vtrans > 0 {
			name += " V transposed"
		}
		e, exact, err := s.flashCase(sh.hd, sh.heads, sh.kvHeads, sh.pos0, sh.rows, sh.vtrans)
		s.add(name+" vs CPU", start, e, 1e-3, err)
		s.add(name+" vs float64", start, exact, 1e-5, err)
	}
}

func (s *selftest) flashCase(hd, heads, kvHeads, pos0, rows, vtrans int) (cpuErr, exactErr float64, err error) {
	kvDim, npos := hd*kvHeads, pos0+rows
	q := s.randFloats(rows*heads*hd, 1)
	kc, vc := make([]uint16, npos*kvDim), make([]uint16, npos*kvDim) // [pos][kvDim]
	for i := range kc {
		// Larger K values give peaked softmaxes, where the rescaling matters.
		kc[i] = quant.Float32ToFP16(4 * (2*s.rng.Float32() - 1))
		vc[i] = quant.Float32ToFP16(2*s.rng.Float32() - 1)
	}
	vdev := vc
	if vtrans > 0 {
		vdev = make([]uint16, kvDim*vtrans)
		for p := 0; p < npos; p++ {
			for i := 0; i < kvDim; i++ {
				vdev[i*vtrans+p] = vc[p*kvDim+i]
			}
		}
	}
	bq, err := s.floats(q)
	if err != nil {
		return 0, 0, err
	}
	half := func(x []uint16) (Buffer, error) {
		b, err := s.buf(2 * len(x))
		if err == nil {
			for i, v := range x {
				binary.LittleEndian.PutUint16(b.Bytes()[2*i:], v)
			}
		}
		return b, err
	}
	bk, err := half(kc)
	if err != nil {
		return 0, 0, err
	}
	bv, err := half(vdev)
	if err != nil {
		return 0, 0, err
	}
	bo, err := s.buf(4 * len(q))
	if err != nil {
		return 0, 0, err
	}
	putF32(bo.Bytes(), s.randFloats(len(q), 100))
	bp, err := s.buf(4)
	if err != nil {
		return 0, 0, err
	}
	putI32(bp.Bytes(), []int32{int32(pos0)})
	scale := float32(1 / math.Sqrt(float64(hd)))
	var c Commands
	FlashAttention{HeadDim: hd, Heads: heads, HeadsKV: kvHeads, Rows: rows, VTrans: vtrans, Scale: scale,
		Q: BufRef{Buf: bq}, KC: BufRef{Buf: bk}, VC: BufRef{Buf: bv}, Out: BufRef{Buf: bo}, Pos: BufRef{Buf: bp}}.Encode(&c)
	if err := s.run(&c); err != nil {
		return 0, 0, err
	}
	got := getF32(bo.Bytes(), len(q))
	for r := 0; r < rows; r++ {
		qr, g := q[r*heads*hd:(r+1)*heads*hd], got[r*heads*hd:(r+1)*heads*hd]
		want := AttentionCPU(qr, kc, vc, hd, heads, kvHeads, pos0+r+1, scale)
		cpuErr = max(cpuErr, maxAbs32(g, want)/maxMag(want))
		exact := attentionExact(qr, kc, vc, hd, heads, kvHeads, pos0+r+1, scale)
		exactErr = max(exactErr, maxAbs32(g, exact)/maxMag(exact))
	}
	return cpuErr, exactErr, nil
}

// attentionExact is AttentionCPU's rule in float64 with only Q rounded to
// half (as the kernel does).
func attentionExact(q []float32, kc, vc []uint16, hd, heads, kvHeads, npos int, scale float32) []float32 {
	kvDim := hd * kvHeads
	out := make([]float32, heads*hd)
	q16 := make([]float32, hd)
	sc := make([]float64, npos)
	for h := 0; h < heads; h++ {
		kvh := h / (heads / kvHeads)
		quant.RoundFP16(q16, q[h*hd:(h+1)*hd])
		mx := math.Inf(-1)
		for j := range sc {
			var d float64
			for i := 0; i < hd; i++ {
				d += float64(q16[i]) * float64(quant.FP16ToFloat32(kc[j*kvDim+kvh*hd+i]))
			}
			sc[j] = d * float64(scale)
			mx = max(mx, sc[j])
		}
		var sum float64
		for j := range sc {
			sc[j] = math.Exp(sc[j] - mx)
			sum += sc[j]
		}
		for i := 0; i < hd; i++ {
			var o float64
			for j := range sc {
				o += sc[j] * float64(quant.FP16ToFloat32(vc[j*kvDim+kvh*hd+i]))
			}
			out[h*hd+i] = float32(o / sum)
		}
	}
	return out
}

// normRope checks the per-head RMSNorm + RoPE with the host's cos/sin rows
// against the CPU's RMSNorm and ApplyNeox.
func (s *selftest) normRope() {
	for _, tc := range []struct {
		hd, heads, rows, dims int
		norm                  bool
	}{{128, 4, 3, 128, true}, {64, 2, 2, 16, true}, {64, 3, 1, 0, true}, {128, 2, 2, 64, false}} {
		start := time.Now()
		e, err := func() (float64, error) {
			x := s.randFloats(tc.rows*tc.heads*tc.hd, 3)
			w := s.randFloats(tc.hd, 1)
			r := backend.Rope{Dims: max(tc.dims, 2), FreqBase: 1e6, FreqScale: 1, AttnFactor: 1}
			cs := make([]float32, tc.rows*tc.dims)
			for i := 0; i < tc.rows && tc.dims > 0; i++ {
				r.Cache(10+7*i, cs[i*tc.dims:(i+1)*tc.dims])
			}
			xb, err := s.floats(x)
			if err != nil {
				return 0, err
			}
			op := NormRope{HeadDim: tc.hd, Heads: tc.heads, Rows: tc.rows, RopeDims: tc.dims, Eps: 1e-6, X: BufRef{Buf: xb}}
			if tc.norm {
				wb, err := s.floats(w)
				if err != nil {
					return 0, err
				}
				op.W = BufRef{Buf: wb}
			}
			if tc.dims > 0 {
				cb, err := s.floats(cs)
				if err != nil {
					return 0, err
				}
				op.CS = BufRef{Buf: cb}
			}
			var c Commands
			op.Encode(&c)
			if err := s.run(&c); err != nil {
				return 0, err
			}
			want := append([]float32(nil), x...)
			for i := 0; i < tc.rows; i++ {
				for h := 0; h < tc.heads; h++ {
					v := want[(i*tc.heads+h)*tc.hd : (i*tc.heads+h+1)*tc.hd]
					if tc.norm {
						cpu.RMSNorm(v, v, w, 1e-6)
					}
					if tc.dims > 0 {
						cpu.ApplyNeox(v, cs[i*tc.dims:(i+1)*tc.dims], tc.dims)
					}
				}
			}
			return maxAbs32(getF32(xb.Bytes(), len(x)), want) / maxMag(want), nil
		}()
		s.add(fmt.Sprintf("norm_rope hd%d h%d rows%d dims%d norm=%v", tc.hd, tc.heads, tc.rows, tc.dims, tc.norm), start, e, 2e-6, err)
	}
}

// routerCache checks the cache-aware router against engine/routing.CacheRoute
// on random probabilities and residency.
func (s *selftest) routerCache() {
	swaps := 0 // choices that differ from exact routing: the policy did something
	defer func() {
		var err error
		if swaps == 0 {
			err = fmt.Errorf("no choice differed from exact routing: the checks above prove nothing of MoCE")
		}
		s.add(fmt.Sprintf("router_cache: %d choices differ from exact routing", swaps), time.Now(), 0, 0, err)
	}()
	for _, tc := range []struct {
		name       string
		experts, k int
		c          routing.CacheRoute
	}{
		{"J1 M16 λ1.5", 128, 8, routing.CacheRoute{Enabled: true, Lambda: 1.5, ProtectedTop: 1, AlwaysKept: 1, MaxRank: 16}},
		{"J2 M12 λ3", 512, 10, routing.CacheRoute{Enabled: true, Lambda: 3, ProtectedTop: 2, AlwaysKept: 2, MaxRank: 12}},
		{"unbounded λ2", 64, 4, routing.CacheRoute{Enabled: true, Lambda: 2, AlwaysKept: 0}},
		{"mass 0.6 λ4", 128, 8, routing.CacheRoute{Enabled: true, Lambda: 4, ProtectedTop: 1, AlwaysKept: 1, MaxMass: 0.6}},
	} {
		start := time.Now()
		const tokens = 3
		e, err := func() (float64, error) {
			x := s.randFloats(tc.experts*tokens, 3)
			res := make([]bool, tc.experts)
			ri := make([]int32, tc.experts)
			for i := range res {
				res[i] = s.rng.IntN(3) == 0
				if res[i] {
					ri[i] = 1
				}
			}
			lb, err := s.floats(x)
			if err != nil {
				return 0, err
			}
			rb, err := s.buf(4 * tc.experts)
			if err != nil {
				return 0, err
			}
			putI32(rb.Bytes(), ri)
			ib, err := s.buf(4 * tc.k * tokens)
			if err != nil {
				return 0, err
			}
			wb, err := s.buf(4 * tc.k * tokens)
			if err != nil {
				return 0, err
			}
			var c Commands
			Router{Experts: tc.experts, K: tc.k, Tokens: tokens, Logits: BufRef{Buf: lb}, IDs: BufRef{Buf: ib}, Weights: BufRef{Buf: wb},
				Cache: tc.c, Resident: BufRef{Buf: rb}}.Encode(&c)
			if err := s.run(&c); err != nil {
				return 0, err
			}
			gotW := getF32(wb.Bytes(), tc.k*tokens)
			var want []float32
			var sc routing.Scratch
			for t := 0; t < tokens; t++ {
				p := append([]float32(nil), x[t*tc.experts:(t+1)*tc.experts]...)
				cpu.Softmax(p)
				ids, w := make([]int32, tc.k), make([]float32, tc.k)
				d := tc.c.Route(p, tc.k, 0, res, &sc, ids, w)
				swaps += d.Swapped
				for j, id := range ids {
					if got := int32(binary.LittleEndian.Uint32(ib.Bytes()[4*(t*tc.k+j):])); got != id {
						return 0, fmt.Errorf("token %d choice %d: expert %d, want %d", t, j, got, id)
					}
				}
				want = append(want, w...)
			}
			return maxRel32(gotW, want), nil
		}()
		s.add(fmt.Sprintf("router_cache %s top%d of %d", tc.name, tc.k, tc.experts), start, e, 1e-5, err)
	}
}
