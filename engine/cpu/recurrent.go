package cpu

import (
	"math"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
)

// The ops of hybrid architectures (qwen3next): gated DeltaNet layers with a
// causal convolution and a recurrent state, gated attention and a gated
// shared expert. Their numerics follow ggml-cpu's ops.cpp and vec.h.

// dotF32 is ggml_vec_dot_f32 (the F32 kernel's Dot, SIMD where ggml has it).
var dotF32 = func() func(n int, w, a []byte) float32 {
	k, err := quant.For(ggml.F32)
	if err != nil {
		panic("cpu: no F32 kernel: " + err.Error())
	}
	return k.Dot
}()

// f32Bytes views float32s as the bytes the dot kernels take.
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// fmaF32 is a fused multiply-add rounded once to float32 (the product of two
// float32s is exact in float64), as ggml's GGML_F32_VEC_FMA.
func fmaF32(a, b, c float32) float32 { return float32(float64(a)*float64(b) + float64(c)) }

// sigmoid is ggml's op_sigmoid: 1/(1+expf(-x)).
func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// softplus is ggml's op_softplus.
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log(float64(1 + float32(math.Exp(float64(x))))))
}

// l2Normalize writes x/max(‖x‖, eps) into out, as ggml_l2_norm (squares
// summed in float64, the root taken in float32).
func l2Normalize(out, x []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	scale := 1 / max(float32(math.Sqrt(float64(float32(sum)))), eps)
	for i, v := range x {
		out[i] = v * scale
	}
}

// SplitHeads implements backend.Backend.
func (b *Backend) SplitHeads(dst0, dst1, x []float32, rows, heads, d0, d1 int) {
	b.invalidate()
	g := d0 + d1
	for r := 0; r < rows; r++ {
		for h := 0; h < heads; h++ {
			src := x[(r*heads+h)*g:]
			copy(dst0[(r*heads+h)*d0:(r*heads+h+1)*d0], src[:d0])
			copy(dst1[(r*heads+h)*d1:(r*heads+h+1)*d1], src[d0:g])
		}
	}
}

// SigmoidMul implements backend.Backend.
func (b *Backend) SigmoidMul(x, g []float32, rows int) {
	b.invalidate()
	if rows == 0 {
		return
	}
	cols := len(x) / rows
	if len(g) == rows {
		for r := 0; r < rows; r++ {
			s := sigmoid(g[r])
			row := x[r*cols : (r+1)*cols]
			for i := range row {
				row[i] *= s
			}
		}
		return
	}
	g = g[:len(x)]
	for i := range x {
		x[i] *= sigmoid(g[i])
	}
}

// GatedRMSNorm implements backend.Backend.
func (b *Backend) GatedRMSNorm(x, z, w []float32, rows int, eps float32) {
	b.runRows(rows, rowOp{kind: opGatedNorm, x: x, out: z, w: w, cols: len(w), eps: eps})
}

// gatedNorm is one group of GatedRMSNorm: rms_norm, ·w, then ·silu(z)
// (SwiGLU's silu(z)·x is the same product as ggml_mul(x, ggml_silu(z))).
func gatedNorm(x, z, w []float32, eps float32) {
	RMSNorm(x, x, w, eps)
	SwiGLU(x, z, x)
}

// CausalConv implements backend.Backend: one pool item per block of
// channels, each running its channels over all rows.
func (b *Backend) CausalConv(out, x, from, state, w []float32, rows, channels, taps int, snaps [][]float32) {
	b.invalidate()
	// Blocks of whole 8-channel groups, so that each row's SiLU splits
	// into vector and scalar parts where ggml's does.
	per := (channels + 4*b.pool.Threads() - 1) / (4 * b.pool.Threads())
	per = max(8, (per+7)&^7)
	c := &b.conv
	*c = convTask{out: out, x: x, from: from, state: state, w: w, rows: rows, channels: channels, taps: taps, snaps: snaps, per: per, seq: c.seq, one: c.one}
	for len(c.seq) < b.pool.Threads() {
		c.seq = append(c.seq, nil)
	}
	if len(c.one) < per { // SiLU as SwiGLU with an up of ones (x·1 is exact)
		c.one = make([]float32, per)
		for i := range c.one {
			c.one[i] = 1
		}
	}
	b.pool.Run((channels+per-1)/per, c)
	b.conv = convTask{seq: c.seq, one: c.one}
}

type convTask struct {
	out, x, from, state, w    []float32
	rows, channels, taps, per int
	snaps                     [][]float32
	seq                       [][]float32 // per thread: one channel's sequence
	one                       []float32   // per ones for step's SiLU (read-only in Run)
}

func (c *convTask) Run(wk, item int) {
	if c.rows == 1 && c.taps > 1 && noSnaps(c.snaps) {
		c.step(item)
		return
	}
	k := c.taps - 1
	n := k + c.rows
	if len(c.seq[wk]) < n {
		c.seq[wk] = make([]float32, n)
	}
	seq := c.seq[wk][:n]
	c0, c1 := item*c.per, min((item+1)*c.per, c.channels)
	first := c.rows - len(c.snaps)
	for ch := c0; ch < c1; ch++ {
		st := c.state[ch*k : (ch+1)*k]
		if c.from != nil {
			copy(seq, c.from[ch*k:(ch+1)*k])
		} else {
			copy(seq, st)
		}
		for t := 0; t < c.rows; t++ {
			seq[k+t] = c.x[t*c.channels+ch]
		}
		w := c.w[ch*c.taps : (ch+1)*c.taps]
		for t := 0; t < c.rows; t++ {
			// ggml_ssm_conv sums in float32 without FMA.
			var sum float32
			for i, wi := range w {
				sum += float32(seq[t+i] * wi)
			}
			c.out[t*c.channels+ch] = sum
		}
		for i, s := range c.snaps {
			if s == nil {
				continue
			}
			t := first + i
			copy(s[ch*k:(ch+1)*k], seq[t+1:t+1+k])
		}
		copy(st, seq[c.rows:])
	}
	// SiLU of this item's channels, row by row, with ggml's vector silu
	// (SwiGLU with an up of ones: x·1 is exact).
	if len(c.seq[wk]) < n+c1-c0 {
		c.seq[wk] = append(c.seq[wk][:n], make([]float32, c1-c0)...)
	}
	ones := c.seq[wk][n : n+c1-c0]
	for i := range ones {
		ones[i] = 1
	}
	for t := 0; t < c.rows; t++ {
		row := c.out[t*c.channels+c0 : t*c.channels+c1]
		SwiGLU(row, row, ones)
	}
}

// step is Run for a decode step (one row, no snapshots): the same sums in
// the same order, read straight from the window before the row, without
// gathering each channel's sequence first. The gather, five slice copies
// a channel, was most of CausalConv's 5 % of a decoded token on the
// 4-layer Qwen3-Next-shaped Q4_K_M file at one thread (Zen 5).
func (c *convTask) step(item int) {
	k := c.taps - 1
	c0, c1 := item*c.per, min((item+1)*c.per, c.channels)
	src := c.state
	if c.from != nil {
		src = c.from
	}
	for ch := c0; ch < c1; ch++ {
		prev := src[ch*k : (ch+1)*k : (ch+1)*k]
		w := c.w[ch*c.taps : (ch+1)*c.taps : (ch+1)*c.taps]
		x := c.x[ch]
		// ggml_ssm_conv sums in float32 without FMA.
		var sum float32
		for i, v := range prev {
			sum += float32(v * w[i])
		}
		sum += float32(x * w[k])
		c.out[ch] = sum
		st := c.state[ch*k : (ch+1)*k : (ch+1)*k]
		copy(st, prev[1:]) // overlapping when from is nil or state: copy moves
		st[k-1] = x
	}
	row := c.out[c0:c1]
	SwiGLU(row, row, c.one[:c1-c0])
}

// noSnaps reports whether snaps asks for no snapshot (every entry nil).
func noSnaps(snaps [][]float32) bool {
	for _, s := range snaps {
		if s != nil {
			return false
		}
	}
	return true
}

// GatedDeltaNet implements backend.Backend: one pool item per value head,
// each running its head through all rows, as ggml-cpu's
// ggml_compute_forward_gated_delta_net does (the state stored transposed,
// ggml_vec_scale/dot/mad_f32).
func (b *Backend) GatedDeltaNet(p backend.DeltaNetParams, qkv, bb, a []float32, rows int, from, state []float32, snaps [][]float32, out []float32) {
	b.invalidate()
	d := &b.delta
	*d = deltaTask{p: p, qkv: qkv, b: bb, a: a, rows: rows, from: from, state: state, snaps: snaps, out: out, scratch: d.scratch}
	for len(d.scratch) < b.pool.Threads() {
		d.scratch = append(d.scratch, nil)
	}
	b.pool.Run(p.ValueHeads, d)
	b.delta = deltaTask{scratch: d.scratch}
}

type deltaTask struct {
	p          backend.DeltaNetParams
	qkv, b, a  []float32
	rows       int
	from       []float32 // nil: state is read in place
	state, out []float32
	snaps      [][]float32
	scratch    [][]float32 // per thread: q, k
}

func (d *deltaTask) Run(wk, h int) {
	p := d.p
	D, hv := p.Dim, p.ValueHeads
	if len(d.scratch[wk]) < 3*D {
		d.scratch[wk] = make([]float32, 3*D)
	}
	sc := d.scratch[wk]
	q, k := sc[:D], sc[D:2*D]
	kh := h / (hv / p.KeyHeads)
	if p.KeyTiled {
		kh = h % p.KeyHeads
	}
	keyDim := p.KeyHeads * D
	convDim := 2*keyDim + hv*D
	s := d.state[h*D*D : (h+1)*D*D]
	var src []float32 // the state before row 0, when not s
	if d.from != nil {
		src = d.from[h*D*D : (h+1)*D*D]
	}
	qb, kb := f32Bytes(q), f32Bytes(k)
	scale := 1 / float32(math.Sqrt(float64(float32(D))))
	first := d.rows - len(d.snaps)
	for t := 0; t < d.rows; t++ {
		row := d.qkv[t*convDim : (t+1)*convDim]
		l2Normalize(q, row[kh*D:(kh+1)*D], p.Eps)
		l2Normalize(k, row[keyDim+kh*D:keyDim+(kh+1)*D], p.Eps)
		v := row[2*keyDim+h*D : 2*keyDim+(h+1)*D]
		beta := sigmoid(d.b[t*hv+h])
		g := softplus(d.a[t*hv+h]+p.DtBias[h]) * p.A[h]
		eg := float32(math.Exp(float64(g)))
		// ggml scales the whole state, then takes every row's dot with k,
		// adds k·delta[j] to every row, then takes every row's dot with q;
		// each step of row j reads only row j, so doing the four steps row
		// by row (while the row is in cache) computes the same values.
		// ggml_vec_mad_f32: FMA over whole steps of 32, then mul and add.
		np := D &^ 31
		o := d.out[(t*hv+h)*D : (t*hv+h+1)*D]
		for j := 0; j < D; j++ {
			sr := s[j*D : (j+1)*D]
			from := sr
			if t == 0 && src != nil {
				from = src[j*D : (j+1)*D]
			}
			// The same steps in two passes of assembly, reading the
			// checkpoint in place of the copy (measured on a Zen 4, 4-layer
			// Qwen3-Next-shaped Q4_K_M, 1 thread: the copy was 4.4 % of a
			// decoded token and the five calls per row 6.4 %).
			if r, ok := deltaRowArch(sr, from, k, q, eg, v[j], beta); ok {
				o[j] = r * scale
				continue
			}
			if t == 0 && src != nil {
				// Row j of the state before row 0, read where it is kept
				// (the checkpoint) and scaled here: one pass over the
				// state, where a copy into the live state was another.
				copy(sr, src[j*D:(j+1)*D])
			}
			for i := scaleArch(sr, eg); i < D; i++ {
				sr[i] *= eg
			}
			dj := (v[j] - dotF32(D, f32Bytes(sr), kb)) * beta
			for i := madArch(sr, k, np, dj); i < np; i++ {
				sr[i] = fmaF32(k[i], dj, sr[i])
			}
			for i := np; i < D; i++ {
				sr[i] += float32(k[i] * dj)
			}
			o[j] = dotF32(D, f32Bytes(sr), qb) * scale
		}
		if i := t - first; i >= 0 && d.snaps[i] != nil {
			copy(d.snaps[i][h*D*D:(h+1)*D*D], s)
		}
	}
}
