package qwen3moe

import (
	"context"
	"fmt"
	"math"
	"unsafe"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
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
	qf      [][]float32 // per thread: the query rounded to fp16

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

	rowTask rowTask
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
	s.k, s.v, s.scratch, s.qf = nil, nil, nil, nil
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
	s.rowTask = rowTask{s: s, step: stepAttnNorm, l: l}
	m.pool.Run(nt, &s.rowTask)
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

	kcache, vcache := s.k[il], s.v[il]
	s.rowTask = rowTask{s: s, step: stepRope, l: l, il: il}
	m.pool.Run(nt, &s.rowTask)

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

// rowTask runs a per-token step of a layer, one item per token, so that
// a prompt's tokens are spread over the threads (one token runs inline).
type rowTask struct {
	s    *Session
	step int
	l    *layer
	il   int
}

const (
	stepAttnNorm = iota // attention RMSNorm
	stepRope            // Q/K norm, RoPE, K and V into the cache
	stepFFNNorm         // FFN RMSNorm
	stepRoute           // router softmax and top-k
	stepCombine         // weighted sum of the token's experts, residual
)

func (r *rowTask) Run(w, t int) {
	s, l := r.s, r.l
	hp := s.m.hp
	e := hp.Embd
	switch r.step {
	case stepAttnNorm:
		cpu.RMSNorm(s.xn[t*e:(t+1)*e], s.x[t*e:(t+1)*e], l.attnNorm, hp.Eps)
	case stepFFNNorm:
		cpu.RMSNorm(s.xn[t*e:(t+1)*e], s.x[t*e:(t+1)*e], l.ffnNorm, hp.Eps)
	case stepRope:
		s.ropeRow(l, r.il, t)
	case stepRoute:
		s.routeRow(w, t)
	case stepCombine:
		s.combineRow(t)
	}
}

// ropeRow applies the Q/K norms and RoPE to token t and writes its K and V
// into the layer's F16 cache: K by position (one row of kvDim per
// position), V transposed (one row of nCtx per channel), as llama.cpp lays
// them out without flash attention.
func (s *Session) ropeRow(l *layer, il, t int) {
	hp := s.m.hp
	hd := hp.HeadDim
	qDim := hp.Heads * hd
	kcache, vcache := s.k[il], s.v[il]
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
	quant.Float32sToFP16(kcache[pos*s.kvDim:(pos+1)*s.kvDim], s.kc[t*s.kvDim:(t+1)*s.kvDim])
	for i, v := range s.vc[t*s.kvDim : (t+1)*s.kvDim] {
		vcache[i*s.nCtx+pos] = quant.Float32ToFP16(v)
	}
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
	q16 := s.qf[w][:hd]
	q := s.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
	quant.RoundFP16(q16, q)
	// K·Q over the positions, whose K rows are kvDim apart, then P·V over
	// the channels, whose V rows are nCtx apart; each output is the F16
	// Dot of its row with Q or P rounded to fp16, as llama.cpp's F16
	// mul_mat computes it.
	quant.DotF16Rows(hd, a.kb[2*kvh*hd:], 2*s.kvDim, npos, q16, sc)
	for j := range sc {
		sc[j] *= a.scale
	}
	cpu.Softmax(sc)
	quant.RoundFP16(sc, sc)
	out := s.att[t*qDim+h*hd : t*qDim+(h+1)*hd]
	quant.DotF16Rows(npos, a.vb[2*kvh*hd*s.nCtx:], 2*s.nCtx, hd, sc, out)
}

// moeBuf holds the MoE layer's per-batch buffers.
type moeBuf struct {
	logits  []float32 // [nt][experts]
	sel     []int32   // [nt][used] chosen experts, best first
	wts     []float32 // [nt][used]
	srcA    []int32   // [nt][used] the slot's active expert (index into order)
	srcJ    []int32   // [nt][used] the slot's row among that expert's rows
	order   []int     // expert ids, in processing order
	groups  [][]int   // per expert: slot indices t*used+k
	gacts   []cpu.Acts
	gate    [][]float32 // per active expert: [m][ff]
	up      [][]float32
	down    [][]float32 // per active expert: [m][embd]
	hacts   []cpu.Acts
	weights []model.ExpertWeights
	mats    expertMats
	idx     [][]int // per thread: top-k scratch

	upTask   moeUpTask
	downTask moeDownTask
	expTask  expertTask
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
	xn := s.xn[:nt*e]
	b := &s.moe
	s.rowTask = rowTask{s: s, step: stepFFNNorm, l: l}
	m.pool.Run(nt, &s.rowTask)
	// Router: softmax over experts, top-k, renormalised weights.
	b.logits = grow(b.logits, nt*ne)
	s.linear(&l.router, xn, nt, b.logits)
	if cap(b.sel) < nt*nu {
		b.sel = make([]int32, nt*nu)
		b.wts = make([]float32, nt*nu)
		b.srcA = make([]int32, nt*nu)
		b.srcJ = make([]int32, nt*nu)
	}
	b.sel, b.wts = b.sel[:nt*nu], b.wts[:nt*nu]
	b.srcA, b.srcJ = b.srcA[:nt*nu], b.srcJ[:nt*nu]
	for len(b.idx) < m.pool.Threads() {
		b.idx = append(b.idx, make([]int, 0, ne))
	}
	s.rowTask = rowTask{s: s, step: stepRoute, l: l}
	m.pool.Run(nt, &s.rowTask)
	// Group the slots by expert, in token order.
	if len(b.groups) < ne {
		b.groups = make([][]int, ne)
	}
	for i := range b.groups[:ne] {
		b.groups[i] = b.groups[i][:0]
	}
	for slot, ex := range b.sel {
		b.groups[ex] = append(b.groups[ex], slot)
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
	vdt := ws.gate[0].VecDotType()
	for a := range b.order {
		if ws.gate[a].VecDotType() != vdt || ws.up[a].VecDotType() != vdt {
			return fmt.Errorf("layer %d: experts of mixed weight types (%s, %s) are not supported", il, ws.gate[a].Type, ws.up[a].Type)
		}
	}

	// Size each active expert's buffers; gather its rows of the normed
	// input, quantized once, in parallel over experts.
	for len(b.gacts) < na {
		b.gacts = append(b.gacts, cpu.Acts{})
		b.hacts = append(b.hacts, cpu.Acts{})
		b.gate = append(b.gate, nil)
		b.up = append(b.up, nil)
		b.down = append(b.down, nil)
	}
	s.acts2.Quantize(m.pool, vdt, xn, nt, e)
	for a, ex := range b.order {
		rows := b.groups[ex]
		n := len(rows)
		sizeActs(&b.gacts[a], vdt, n, e)
		sizeActs(&b.hacts[a], ws.down[a].VecDotType(), n, ff)
		b.gate[a] = grow(b.gate[a], n*ff)
		b.up[a] = grow(b.up[a], n*ff)
		b.down[a] = grow(b.down[a], n*e)
		for j, slot := range rows {
			b.srcA[slot], b.srcJ[slot] = int32(a), int32(j)
		}
	}
	b.expTask = expertTask{s: s, gather: true}
	m.pool.Run(na, &b.expTask)
	// Gate and up projections: items are (expert, which, row chunk).
	per, chunk := expertChunks(ff, 2*na, m.pool.Threads())
	b.upTask = moeUpTask{b: b, ff: ff, per: per, chunk: chunk}
	m.pool.Run(na*2*per, &b.upTask)
	// SwiGLU, then quantize for the down projection, per expert.
	b.expTask = expertTask{s: s}
	m.pool.Run(na, &b.expTask)
	// Down projection, per expert.
	perD, chunkD := expertChunks(e, na, m.pool.Threads())
	b.downTask = moeDownTask{b: b, e: e, per: perD, chunk: chunkD}
	m.pool.Run(na*perD, &b.downTask)
	// Weighted sum of each token's experts, then the residual.
	s.rowTask = rowTask{s: s, step: stepCombine, l: l}
	m.pool.Run(nt, &s.rowTask)
	return nil
}

// sizeActs sets a's shape for n rows of cols values of type t and grows
// its buffer.
func sizeActs(a *cpu.Acts, t ggml.Type, n, cols int) {
	a.Type, a.N, a.Cols, a.Size = t, n, cols, quant.ActivationSize(t, cols)
	if need := n * a.Size; cap(a.Buf) < need {
		a.Buf = make([]byte, need)
	} else {
		a.Buf = a.Buf[:need]
	}
}

// expertTask runs a per-expert step, one item per active expert: gather
// the expert's rows of the quantized input, or SwiGLU and quantize its
// hidden rows for the down projection.
type expertTask struct {
	s      *Session
	gather bool
}

func (x *expertTask) Run(_, a int) {
	s := x.s
	b := &s.moe
	rows := b.groups[b.order[a]]
	if x.gather {
		g := &b.gacts[a]
		for r, slot := range rows {
			copy(g.Buf[r*g.Size:(r+1)*g.Size], s.acts2.Row(slot/s.m.hp.ExpertsUsed))
		}
		return
	}
	ff := s.m.hp.FFExpert
	h := &b.hacts[a]
	for r := range rows {
		g := b.gate[a][r*ff : (r+1)*ff]
		cpu.SwiGLU(g, g, b.up[a][r*ff:(r+1)*ff])
		quant.QuantizeActivations(h.Type, g, h.Buf[r*h.Size:(r+1)*h.Size])
	}
}

// routeRow picks token t's experts: softmax over the router logits, the
// top k, their probabilities renormalised (and scaled).
func (s *Session) routeRow(w, t int) {
	hp := s.m.hp
	b := &s.moe
	ne, nu := hp.Experts, hp.ExpertsUsed
	p := b.logits[t*ne : (t+1)*ne]
	cpu.Softmax(p)
	idx := topK(p, nu, b.idx[w][:0]) // scratch of thread w
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
	}
}

// combineRow adds token t's expert outputs, weighted, in slot order (as
// ggml adds the expert views), then the residual.
func (s *Session) combineRow(t int) {
	hp := s.m.hp
	b := &s.moe
	e, nu := hp.Embd, hp.ExpertsUsed
	out := s.proj[t*e : (t+1)*e]
	for k := 0; k < nu; k++ {
		slot := t*nu + k
		a, j := b.srcA[slot], int(b.srcJ[slot])
		y := b.down[a][j*e : (j+1)*e]
		wk := b.wts[slot]
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
	cpu.Add(s.x[t*e:(t+1)*e], out)
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
