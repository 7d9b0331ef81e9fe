package cpu

import (
	"fmt"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
)

// expertsOp holds the buffers of ExpertsFFN, grown to the largest layer
// seen and then reused, so decoding allocates nothing per token.
type expertsOp struct {
	in    Acts // the layer input, converted once
	jobs  []backend.ExpertJob
	gate  []Weight
	up    []Weight
	down  []Weight
	gacts []Acts      // per job: its rows of in
	hacts []Acts      // per job: SwiGLU output, converted for Down
	g, u  [][]float32 // per job: [rows][ff]
	ff    int
	// tiled: the batch has more rows than quant.InvariantCols, so no row
	// needs its one-row bits and each expert's rows may go through the
	// tiled kernels even when it has few of them (see ExpertsFFN).
	tiled bool

	upTask   moeUpTask
	downTask moeDownTask
	expTask  expertTask
}

// ExpertsFFN implements backend.Backend. The experts' gate and up
// projections run as one pool loop over (expert, projection, row chunk),
// then SwiGLU per expert, then the down projections as one loop, so a
// decode step's experts keep every thread busy with long row ranges.
func (b *Backend) ExpertsFFN(in []float32, rows, e, ff int, jobs []backend.ExpertJob, reuseInput bool) error {
	b.invalidate()
	x := &b.experts
	if len(jobs) == 0 {
		return nil
	}
	x.gate, x.up, x.down = x.gate[:0], x.up[:0], x.down[:0]
	for _, j := range jobs {
		g, err := NewWeight(j.W.GateT, j.W.Gate, ff, e)
		if err != nil {
			return fmt.Errorf("expert gate: %w", err)
		}
		u, err := NewWeight(j.W.UpT, j.W.Up, ff, e)
		if err != nil {
			return fmt.Errorf("expert up: %w", err)
		}
		d, err := NewWeight(j.W.DownT, j.W.Down, e, ff)
		if err != nil {
			return fmt.Errorf("expert down: %w", err)
		}
		x.gate, x.up, x.down = append(x.gate, g), append(x.up, u), append(x.down, d)
	}
	vdt := x.gate[0].VecDotType()
	for a := range jobs {
		if x.gate[a].VecDotType() != vdt || x.up[a].VecDotType() != vdt {
			return fmt.Errorf("experts of mixed weight types (%s, %s) are not supported", x.gate[a].Type, x.up[a].Type)
		}
	}
	x.jobs = jobs
	if !reuseInput || x.in.Type != vdt || x.in.Cols != e || x.in.N != rows {
		x.in.Quantize(b.pool, vdt, in[:rows*e], rows, e)
	}
	na := len(jobs)
	for len(x.gacts) < na {
		x.gacts = append(x.gacts, Acts{})
		x.hacts = append(x.hacts, Acts{})
		x.g = append(x.g, nil)
		x.u = append(x.u, nil)
	}
	x.ff = ff
	// A prompt's batch gives each expert a handful of its rows (512 rows
	// top-10 over 512 experts: about 10), which the column-invariant Gemm
	// would run one by one through the one-row kernel, since a verify of
	// as many rows must get what a one-row decode gets. Only batches of up
	// to quant.InvariantCols rows need that; a larger one keeps the tiles'
	// weight reuse. (IQ2_XS qwen3next, 4 layers of the real shapes, 512-
	// token prefill, 1 thread: the one-row kernel took 49 % of it.)
	x.tiled = rows > quant.InvariantCols
	for a, j := range jobs {
		n := len(j.Rows)
		if len(j.Out) < n*e {
			return fmt.Errorf("expert job output holds %d values, needs %d", len(j.Out), n*e)
		}
		sizeActs(&x.gacts[a], vdt, n, e)
		sizeActs(&x.hacts[a], x.down[a].VecDotType(), n, ff)
		x.g[a] = grow(x.g[a], n*ff)
		x.u[a] = grow(x.u[a], n*ff)
	}
	// Gather each job's rows of the converted input, per expert.
	x.expTask = expertTask{x: x, gather: true}
	b.pool.Run(na, &x.expTask)
	// Gate and up projections: items are (expert, which, row chunk).
	per, chunk := expertChunks(ff, 2*na, b.pool.Threads())
	x.upTask = moeUpTask{x: x, ff: ff, per: per, chunk: chunk}
	b.pool.Run(na*2*per, &x.upTask)
	// SwiGLU, then conversion for the down projection, per expert.
	x.expTask = expertTask{x: x}
	b.pool.Run(na, &x.expTask)
	// Down projections straight into the jobs' outputs.
	perD, chunkD := expertChunks(e, na, b.pool.Threads())
	x.downTask = moeDownTask{x: x, e: e, per: perD, chunk: chunkD}
	b.pool.Run(na*perD, &x.downTask)
	x.jobs = nil
	return nil
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// expertChunks cuts each of m matrices of rows rows into contiguous
// pieces so that the pool gets about ItemsPerThread items per thread in
// all; it returns the pieces per matrix and their length in rows.
func expertChunks(rows, m, threads int) (per, chunk int) {
	want := (ItemsPerThread*threads + m - 1) / m
	chunk = RowsPerItem(rows, want)
	return (rows + chunk - 1) / chunk, chunk
}

// moeUpTask runs the gate and up projections; items are (expert, which,
// row chunk).
type moeUpTask struct {
	x              *expertsOp
	ff, per, chunk int
}

func (u *moeUpTask) Run(_, i int) {
	x := u.x
	a, rest := i/(2*u.per), i%(2*u.per)
	which, c := rest/u.per, rest%u.per
	r0, r1 := c*u.chunk, min((c+1)*u.chunk, u.ff)
	if which == 0 {
		matRows(&x.gate[a], &x.gacts[a], x.g[a], r0, r1, x.tiled)
	} else {
		matRows(&x.up[a], &x.gacts[a], x.u[a], r0, r1, x.tiled)
	}
}

// moeDownTask runs the down projections; items are (expert, row chunk).
type moeDownTask struct {
	x             *expertsOp
	e, per, chunk int
}

func (d *moeDownTask) Run(_, i int) {
	x := d.x
	a, c := i/d.per, i%d.per
	matRows(&x.down[a], &x.hacts[a], x.jobs[a].Out, c*d.chunk, min((c+1)*d.chunk, d.e), x.tiled)
}

// expertTask runs a per-expert step, one item per expert: gather the
// expert's rows of the converted input, or SwiGLU and convert its hidden
// rows for the down projection.
type expertTask struct {
	x      *expertsOp
	gather bool
}

func (t *expertTask) Run(_, a int) {
	x := t.x
	rows := x.jobs[a].Rows
	if t.gather {
		g := &x.gacts[a]
		for r, row := range rows {
			copy(g.Buf[r*g.Size:(r+1)*g.Size], x.in.Row(int(row)))
		}
		return
	}
	ff := x.ff
	h := &x.hacts[a]
	for r := range rows {
		g := x.g[a][r*ff : (r+1)*ff]
		SwiGLU(g, g, x.u[a][r*ff:(r+1)*ff])
		quant.QuantizeActivations(h.Type, g, h.Buf[r*h.Size:(r+1)*h.Size])
	}
}

// sizeActs sets a's shape for n rows of cols values of type t and grows
// its buffer.
func sizeActs(a *Acts, t ggml.Type, n, cols int) {
	a.Type, a.N, a.Cols, a.Size = t, n, cols, quant.ActivationSize(t, cols)
	if need := n * a.Size; cap(a.Buf) < need {
		a.Buf = make([]byte, need)
	} else {
		a.Buf = a.Buf[:need]
	}
}
