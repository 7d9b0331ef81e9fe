package qwen3moe

import (
	"context"
	"fmt"
	"math"
	"unsafe"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/quant"
)

// Session is one sequence's F16 KV cache and the buffers of its forward
// passes. Buffers grow to the largest batch seen and are then reused, so
// decoding allocates nothing per token.
type Session struct {
	m     *Model
	nCtx  int
	n     int // positions held
	kvDim int
	k, v  [][]uint16 // per layer: [nCtx][kvDim] F16

	scratch [][]float32 // per thread: attention scores
	half    [][]uint16  // per thread: F16 query and probabilities

	// batch buffers
	cap   int
	x     []float32 // residual stream [n][embd]
	xn    []float32 // normed [n][embd]
	q     []float32 // [n][heads*headDim]
	kc    []float32 // [n][kvDim]
	vc    []float32 // [n][kvDim]
	att   []float32 // attention output [n][heads*headDim]
	proj  []float32 // [n][embd]
	rope  []float32 // [n][ropeDims] cos/sin
	acts  cpu.Acts
	acts2 cpu.Acts
	moe   moeBuf
	attn  attnTask
	out   []float32 // logits
	rows  [][]float32
}

// MemoryBytes is what the session holds: its F16 KV cache and the
// batch buffers grown so far.
func (s *Session) MemoryBytes() int64 {
	var n int64
	for i := range s.k {
		n += 2 * int64(len(s.k[i])+len(s.v[i]))
	}
	for _, b := range [][]float32{s.x, s.xn, s.q, s.kc, s.vc, s.att, s.proj, s.rope, s.out} {
		n += 4 * int64(cap(b))
	}
	return n
}

// Len implements model.Session.
func (s *Session) Len() int { return s.n }

// Cap implements model.Session.
func (s *Session) Cap() int { return s.nCtx }

// Truncate implements model.Session.
func (s *Session) Truncate(n int) error {
	if n < 0 || n > s.n {
		return fmt.Errorf("truncate to %d: session holds %d positions", n, s.n)
	}
	s.n = n
	return nil
}

// Close implements model.Session.
func (s *Session) Close() error {
	s.k, s.v, s.scratch, s.half = nil, nil, nil, nil
	return nil
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

func (s *Session) ensure(n int) {
	if n <= s.cap {
		return
	}
	hp := s.m.hp
	s.cap = n
	s.x = grow(s.x, n*hp.Embd)
	s.xn = grow(s.xn, n*hp.Embd)
	s.q = grow(s.q, n*hp.Heads*hp.HeadDim)
	s.kc = grow(s.kc, n*s.kvDim)
	s.vc = grow(s.vc, n*s.kvDim)
	s.att = grow(s.att, n*hp.Heads*hp.HeadDim)
	s.proj = grow(s.proj, n*hp.Embd)
	s.rope = grow(s.rope, n*hp.RopeDims)
}

// Forward implements model.Session.
func (s *Session) Forward(ctx context.Context, tokens []int32, all bool) ([][]float32, error) {
	m, hp := s.m, s.m.hp
	nt := len(tokens)
	if nt == 0 {
		return nil, fmt.Errorf("forward: no tokens")
	}
	if s.n+nt > s.nCtx {
		return nil, fmt.Errorf("forward: %d positions held + %d new exceed the context of %d", s.n, nt, s.nCtx)
	}
	for _, id := range tokens {
		if id < 0 || int(id) >= hp.Vocab {
			return nil, fmt.Errorf("forward: token id %d outside the vocabulary of %d", id, hp.Vocab)
		}
	}
	s.ensure(nt)
	e := hp.Embd
	x := s.x[:nt*e]
	for t, id := range tokens {
		row := m.embd.data[int(id)*m.embd.rowBytes : (int(id)+1)*m.embd.rowBytes]
		m.embd.k.Dequantize(row, x[t*e:(t+1)*e])
	}
	for t := 0; t < nt; t++ {
		m.rope.Cache(s.n+t, s.rope[t*hp.RopeDims:(t+1)*hp.RopeDims])
	}
	for il := range m.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.attention(il, nt)
		if err := s.moeLayer(ctx, il, nt); err != nil {
			return nil, err
		}
	}
	// Output norm and head: only the rows asked for.
	first := 0
	if !all {
		first = nt - 1
	}
	nOut := nt - first
	xn := s.xn[:nOut*e]
	for t := 0; t < nOut; t++ {
		cpu.RMSNorm(xn[t*e:(t+1)*e], x[(first+t)*e:(first+t+1)*e], m.outNorm, hp.Eps)
	}
	s.acts.Quantize(m.pool, m.output.VecDotType(), xn, nOut, e)
	s.out = grow(s.out, nOut*hp.Vocab)
	cpu.MatMul(m.pool, &m.output, &s.acts, s.out)
	s.n += nt
	if cap(s.rows) < nOut {
		s.rows = make([][]float32, nOut)
	}
	s.rows = s.rows[:nOut]
	for t := range s.rows {
		s.rows[t] = s.out[t*hp.Vocab : (t+1)*hp.Vocab]
	}
	return s.rows, nil
}

// linear computes out = w·in for nt rows of in, quantizing in for w.
func (s *Session) linear(w *cpu.Weight, in []float32, nt int, out []float32) {
	s.acts.Quantize(s.m.pool, w.VecDotType(), in, nt, w.Cols)
	cpu.MatMul(s.m.pool, w, &s.acts, out)
}

func (s *Session) attention(il, nt int) {
	m, hp := s.m, s.m.hp
	l := &m.layers[il]
	e, hd := hp.Embd, hp.HeadDim
	qDim := hp.Heads * hd
	x, xn := s.x[:nt*e], s.xn[:nt*e]
	for t := 0; t < nt; t++ {
		cpu.RMSNorm(xn[t*e:(t+1)*e], x[t*e:(t+1)*e], l.attnNorm, hp.Eps)
	}
	// Q, K and V share the quantized input when their weights share a type.
	s.acts.Quantize(m.pool, l.wq.VecDotType(), xn, nt, e)
	cpu.MatMul(m.pool, &l.wq, &s.acts, s.q[:nt*qDim])
	if l.wk.VecDotType() != s.acts.Type {
		s.acts.Quantize(m.pool, l.wk.VecDotType(), xn, nt, e)
	}
	cpu.MatMul(m.pool, &l.wk, &s.acts, s.kc[:nt*s.kvDim])
	if l.wv.VecDotType() != s.acts.Type {
		s.acts.Quantize(m.pool, l.wv.VecDotType(), xn, nt, e)
	}
	cpu.MatMul(m.pool, &l.wv, &s.acts, s.vc[:nt*s.kvDim])

	// Q/K norm, RoPE, and K/V into the F16 cache: K by position (one row of
	// kvDim per position), V transposed (one row of nCtx per channel), as
	// llama.cpp lays them out without flash attention.
	kcache, vcache := s.k[il], s.v[il]
	for t := 0; t < nt; t++ {
		cs := s.rope[t*hp.RopeDims : (t+1)*hp.RopeDims]
		for h := 0; h < hp.Heads; h++ {
			q := s.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
			cpu.RMSNorm(q, q, l.qNorm, hp.Eps)
			cpu.ApplyNeox(q, cs, hp.RopeDims)
		}
		pos := s.n + t
		for h := 0; h < hp.HeadsKV; h++ {
			k := s.kc[t*s.kvDim+h*hd : t*s.kvDim+(h+1)*hd]
			cpu.RMSNorm(k, k, l.kNorm, hp.Eps)
			cpu.ApplyNeox(k, cs, hp.RopeDims)
		}
		kdst := kcache[pos*s.kvDim : (pos+1)*s.kvDim]
		for i := range kdst {
			kdst[i] = quant.Float32ToFP16(s.kc[t*s.kvDim+i])
			vcache[i*s.nCtx+pos] = quant.Float32ToFP16(s.vc[t*s.kvDim+i])
		}
	}

	// Causal attention, one item per (token, head), as llama.cpp computes it
	// without flash attention: Q rounded to F16 for the F16 dot with K, a
	// softmax in F32, the probabilities rounded to F16 for the F16 dot with
	// each channel of V.
	s.attn = attnTask{s: s, kb: f16Bytes(kcache), vb: f16Bytes(vcache),
		scale: float32(1 / math.Sqrt(float64(hd))), group: hp.Heads / hp.HeadsKV}
	m.pool.Run(nt*hp.Heads, &s.attn)
	s.linear(&l.wo, s.att[:nt*qDim], nt, s.proj[:nt*e])
	cpu.Add(x, s.proj[:nt*e])
}

// attnTask is one layer's attention, one item per (token, head).
type attnTask struct {
	s      *Session
	kb, vb []byte // the layer's K and V caches
	scale  float32
	group  int // query heads per KV head
}

func (a *attnTask) Run(w, item int) {
	s := a.s
	hp := s.m.hp
	hd, qDim := hp.HeadDim, hp.Heads*hp.HeadDim
	t, h := item/hp.Heads, item%hp.Heads
	kvh := h / a.group
	npos := s.n + t + 1
	sc := s.scratch[w][:npos]
	q16 := s.half[w][:hd]
	p16 := s.half[w][hd : hd+npos]
	q := s.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
	quant.Float32sToFP16(q16, q)
	// One Gemm call per product (each output is the F16 Dot of one row):
	// K·Q over the positions, whose K rows are kvDim apart, then P·V over
	// the channels, whose V rows are nCtx apart.
	f16 := s.m.f16
	f16.Gemm(hd, a.kb[2*kvh*hd:], 2*s.kvDim, npos, f16Bytes(q16), 0, 1, sc, npos)
	for j := range sc {
		sc[j] *= a.scale
	}
	cpu.Softmax(sc)
	quant.Float32sToFP16(p16, sc)
	out := s.att[t*qDim+h*hd : t*qDim+(h+1)*hd]
	f16.Gemm(npos, a.vb[2*kvh*hd*s.nCtx:], 2*s.nCtx, hd, f16Bytes(p16), 0, 1, out, hd)
}

// moeBuf holds the MoE layer's per-batch buffers.
type moeBuf struct {
	logits  []float32 // [nt][experts]
	sel     []int32   // [nt][used] chosen experts, best first
	wts     []float32 // [nt][used]
	order   []int     // expert ids, in processing order
	groups  [][]int   // per expert: slot indices t*used+k
	gacts   []cpu.Acts
	gate    [][]float32 // per active expert: [m][ff]
	up      [][]float32
	down    [][]float32 // per active expert: [m][embd]
	hacts   []cpu.Acts
	y       []float32 // [nt*used][embd]
	weights []model.ExpertWeights
	mats    expertMats
	idx     []int

	upTask   moeUpTask
	downTask moeDownTask
}

// expertChunks cuts each of m matrices of rows rows into contiguous
// pieces so that the pool gets about cpu.ItemsPerThread items per thread
// in all; it returns the pieces per matrix and their length in rows.
func expertChunks(rows, m, threads int) (per, chunk int) {
	want := (cpu.ItemsPerThread*threads + m - 1) / m
	chunk = cpu.RowsPerItem(rows, want)
	return (rows + chunk - 1) / chunk, chunk
}

// moeUpTask runs the gate and up projections; items are (expert, which,
// row chunk).
type moeUpTask struct {
	b              *moeBuf
	ff, per, chunk int
}

func (u *moeUpTask) Run(_, i int) {
	b := u.b
	a, rest := i/(2*u.per), i%(2*u.per)
	which, c := rest/u.per, rest%u.per
	r0, r1 := c*u.chunk, min((c+1)*u.chunk, u.ff)
	if which == 0 {
		cpu.MatRows(&b.mats.gate[a], &b.gacts[a], b.gate[a], r0, r1)
	} else {
		cpu.MatRows(&b.mats.up[a], &b.gacts[a], b.up[a], r0, r1)
	}
}

// moeDownTask runs the down projections; items are (expert, row chunk).
type moeDownTask struct {
	b             *moeBuf
	e, per, chunk int
}

func (d *moeDownTask) Run(_, i int) {
	b := d.b
	a, c := i/d.per, i%d.per
	cpu.MatRows(&b.mats.down[a], &b.hacts[a], b.down[a], c*d.chunk, min((c+1)*d.chunk, d.e))
}

// topK appends to dst the indices of the k largest values of p, largest
// first; ties go to the lower index.
func topK(p []float32, k int, dst []int) []int {
	for len(dst) < k {
		best := -1
		for i, v := range p {
			if best >= 0 && v <= p[best] {
				continue
			}
			taken := false
			for _, j := range dst {
				if j == i {
					taken = true
					break
				}
			}
			if !taken {
				best = i
			}
		}
		dst = append(dst, best)
	}
	return dst
}

func (s *Session) moeLayer(ctx context.Context, il, nt int) error {
	m, hp := s.m, s.m.hp
	l := &m.layers[il]
	e, ne, nu, ff := hp.Embd, hp.Experts, hp.ExpertsUsed, hp.FFExpert
	x, xn := s.x[:nt*e], s.xn[:nt*e]
	b := &s.moe
	for t := 0; t < nt; t++ {
		cpu.RMSNorm(xn[t*e:(t+1)*e], x[t*e:(t+1)*e], l.ffnNorm, hp.Eps)
	}
	// Router: softmax over experts, top-k, renormalised weights.
	b.logits = grow(b.logits, nt*ne)
	s.linear(&l.router, xn, nt, b.logits)
	if cap(b.sel) < nt*nu {
		b.sel = make([]int32, nt*nu)
		b.wts = make([]float32, nt*nu)
	}
	b.sel, b.wts = b.sel[:nt*nu], b.wts[:nt*nu]
	if cap(b.idx) < ne {
		b.idx = make([]int, ne)
	}
	if len(b.groups) < ne {
		b.groups = make([][]int, ne)
	}
	for i := range b.groups[:ne] {
		b.groups[i] = b.groups[i][:0]
	}
	for t := 0; t < nt; t++ {
		p := b.logits[t*ne : (t+1)*ne]
		cpu.Softmax(p)
		idx := topK(p, nu, b.idx[:0])
		var sum float32
		for k := 0; k < nu; k++ {
			b.sel[t*nu+k] = int32(idx[k])
			b.wts[t*nu+k] = p[idx[k]]
			sum += p[idx[k]]
		}
		sum = max(sum, 6.103515625e-5)
		for k := 0; k < nu; k++ {
			b.wts[t*nu+k] /= sum
			if hp.WeightsScale != 0 && hp.WeightsScale != 1 {
				b.wts[t*nu+k] *= hp.WeightsScale
			}
			ex := idx[k]
			b.groups[ex] = append(b.groups[ex], t*nu+k)
		}
	}
	b.order = b.order[:0]
	for ex := 0; ex < ne; ex++ {
		if len(b.groups[ex]) > 0 {
			b.order = append(b.order, ex)
		}
	}
	na := len(b.order)
	// Acquire the active experts' weights.
	b.weights = b.weights[:0]
	for _, ex := range b.order {
		w, err := m.experts.Acquire(ctx, il, ex)
		if err != nil {
			for i := range b.weights {
				m.experts.Release(il, b.order[i])
			}
			return fmt.Errorf("layer %d expert %d: %w", il, ex, err)
		}
		b.weights = append(b.weights, w)
	}
	defer func() {
		for _, ex := range b.order {
			m.experts.Release(il, ex)
		}
	}()
	ws := &b.mats
	if err := ws.set(b.weights, ff, e); err != nil {
		return fmt.Errorf("layer %d: %w", il, err)
	}

	// Gather each active expert's rows of the normed input, quantized once.
	for len(b.gacts) < na {
		b.gacts = append(b.gacts, cpu.Acts{})
		b.hacts = append(b.hacts, cpu.Acts{})
		b.gate = append(b.gate, nil)
		b.up = append(b.up, nil)
		b.down = append(b.down, nil)
	}
	vdt := ws.gate[0].VecDotType()
	s.acts2.Quantize(m.pool, vdt, xn, nt, e)
	for a, ex := range b.order {
		g := &b.gacts[a]
		rows := b.groups[ex]
		g.Type, g.N, g.Cols, g.Size = vdt, len(rows), e, s.acts2.Size
		if need := len(rows) * g.Size; cap(g.Buf) < need {
			g.Buf = make([]byte, need)
		} else {
			g.Buf = g.Buf[:need]
		}
		for r, slot := range rows {
			copy(g.Buf[r*g.Size:(r+1)*g.Size], s.acts2.Row(slot/nu))
		}
		b.gate[a] = grow(b.gate[a], len(rows)*ff)
		b.up[a] = grow(b.up[a], len(rows)*ff)
		b.down[a] = grow(b.down[a], len(rows)*e)
	}
	for a := range b.order {
		if ws.gate[a].VecDotType() != vdt || ws.up[a].VecDotType() != vdt {
			return fmt.Errorf("layer %d: experts of mixed weight types (%s, %s) are not supported", il, ws.gate[a].Type, ws.up[a].Type)
		}
	}
	// Gate and up projections: items are (expert, row chunk).
	per, chunk := expertChunks(ff, 2*na, m.pool.Threads())
	b.upTask = moeUpTask{b: b, ff: ff, per: per, chunk: chunk}
	m.pool.Run(na*2*per, &b.upTask)
	// SwiGLU, then quantize for the down projection.
	for a := range b.order {
		n := b.gacts[a].N
		cpu.SwiGLU(b.gate[a][:n*ff], b.gate[a][:n*ff], b.up[a][:n*ff])
		b.hacts[a].Quantize(m.pool, ws.down[a].VecDotType(), b.gate[a][:n*ff], n, ff)
	}
	// Down projection, per expert, then scattered to the slots.
	perD, chunkD := expertChunks(e, na, m.pool.Threads())
	b.downTask = moeDownTask{b: b, e: e, per: perD, chunk: chunkD}
	m.pool.Run(na*perD, &b.downTask)
	b.y = grow(b.y, nt*nu*e)
	for a, ex := range b.order {
		for j, slot := range b.groups[ex] {
			copy(b.y[slot*e:(slot+1)*e], b.down[a][j*e:(j+1)*e])
		}
	}
	// Weighted sum in slot order, as ggml adds the expert views, then the
	// residual.
	for t := 0; t < nt; t++ {
		out := s.proj[t*e : (t+1)*e]
		for k := 0; k < nu; k++ {
			y := b.y[(t*nu+k)*e : (t*nu+k+1)*e]
			wk := b.wts[t*nu+k]
			if k == 0 {
				for i := range out {
					out[i] = y[i] * wk
				}
			} else {
				for i := range out {
					out[i] += float32(y[i] * wk) // no FMA on arm64: round as ggml's mul then add
				}
			}
		}
		cpu.Add(x[t*e:(t+1)*e], out)
	}
	return nil
}

// expertMats are the active experts' weights as matrices.
type expertMats struct {
	gate, up, down []cpu.Weight
}

func (em *expertMats) set(ws []model.ExpertWeights, ff, e int) error {
	em.gate, em.up, em.down = em.gate[:0], em.up[:0], em.down[:0]
	for _, w := range ws {
		g, err := cpu.NewWeight(w.GateT, w.Gate, ff, e)
		if err != nil {
			return fmt.Errorf("expert gate: %w", err)
		}
		u, err := cpu.NewWeight(w.UpT, w.Up, ff, e)
		if err != nil {
			return fmt.Errorf("expert up: %w", err)
		}
		d, err := cpu.NewWeight(w.DownT, w.Down, e, ff)
		if err != nil {
			return fmt.Errorf("expert down: %w", err)
		}
		em.gate = append(em.gate, g)
		em.up = append(em.up, u)
		em.down = append(em.down, d)
	}
	return nil
}

// f16Bytes views F16 values as the bytes the dot kernels take.
func f16Bytes(h []uint16) []byte {
	if len(h) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*len(h))
}
