package cpu

import (
	"fmt"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
)

// Weight is a 2-D matrix of ggml blocks: Rows rows of Cols elements, each
// row RowBytes long, as stored in a GGUF file (ggml's ne0 = Cols).
type Weight struct {
	Type     ggml.Type
	Data     []byte
	Rows     int
	Cols     int
	RowBytes int
	k        *quant.Kernel
}

// NewWeight checks that data holds rows×cols elements of type t and that
// the CPU backend has kernels for t.
func NewWeight(t ggml.Type, data []byte, rows, cols int) (Weight, error) {
	k, err := quant.For(t)
	if err != nil {
		return Weight{}, err
	}
	rb, err := t.RowSize(int64(cols))
	if err != nil {
		return Weight{}, err
	}
	if int64(len(data)) != rb*int64(rows) {
		return Weight{}, fmt.Errorf("%s weight of %d×%d needs %d bytes, has %d", t, rows, cols, rb*int64(rows), len(data))
	}
	return Weight{Type: t, Data: data, Rows: rows, Cols: cols, RowBytes: int(rb), k: k}, nil
}

// VecDotType is the format activations must be in for Dot.
func (w *Weight) VecDotType() ggml.Type { return w.k.VecDotType }

// Row returns the bytes of row r.
func (w *Weight) Row(r int) []byte { return w.Data[r*w.RowBytes : (r+1)*w.RowBytes] }

// DequantizeRow expands row r into dst (len Cols).
func (w *Weight) DequantizeRow(r int, dst []float32) { w.k.Dequantize(w.Row(r), dst[:w.Cols]) }

// Acts is a batch of activation rows quantized for one VecDotType.
type Acts struct {
	Type ggml.Type
	N    int    // rows
	Cols int    // elements per row
	Size int    // bytes per row
	Buf  []byte // N×Size
}

// Quantize converts n rows of cols float32s in x into a's buffer (grown as
// needed), in parallel over rows.
func (a *Acts) Quantize(p *Pool, t ggml.Type, x []float32, n, cols int) {
	a.Type, a.N, a.Cols = t, n, cols
	a.Size = quant.ActivationSize(t, cols)
	if need := n * a.Size; cap(a.Buf) < need {
		a.Buf = make([]byte, need)
	} else {
		a.Buf = a.Buf[:need]
	}
	if n == 1 {
		quant.QuantizeActivations(t, x[:cols], a.Buf)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quant = quantTask{a: a, x: x, cols: cols}
	p.runLocked(n, &p.quant)
}

type quantTask struct {
	a    *Acts
	x    []float32
	cols int
}

func (q *quantTask) Run(_, i int) {
	a := q.a
	quant.QuantizeActivations(a.Type, q.x[i*q.cols:(i+1)*q.cols], a.Buf[i*a.Size:(i+1)*a.Size])
}

// Row returns quantized row i.
func (a *Acts) Row(i int) []byte { return a.Buf[i*a.Size : (i+1)*a.Size] }

// ItemsPerThread is how many pool items a parallel matrix product is cut
// into per thread: enough for the threads to even out, few enough that
// each item is a long contiguous stretch of rows. Measured with
// BenchmarkMatVec on 2 threads (4096×2048 Q8_0): items of 16 rows dealt
// alternately to the threads gave 20 GB/s, no more than one thread,
// because each core's hardware prefetcher kept restarting; 2, 4 or 8
// contiguous items per thread gave 30.6–31.0 GB/s.
const ItemsPerThread = 4

// RowsPerItem cuts rows into about items contiguous ranges and returns
// their length, a multiple of 16 rows.
func RowsPerItem(rows, items int) int {
	r := (rows + max(items, 1) - 1) / max(items, 1)
	return max(16, (r+15)/16*16)
}

// MatMul computes out[t*w.Rows+r] = row r of w · activation row t, for all
// rows of w and all a.N activation rows. Threads take disjoint contiguous
// row ranges of w, and each weight row is used for every activation row
// while it is in cache.
func MatMul(p *Pool, w *Weight, a *Acts, out []float32) {
	if a.Type != w.k.VecDotType || a.Cols != w.Cols {
		panic(fmt.Sprintf("cpu.MatMul: activations %s×%d for a %s weight of %d columns", a.Type, a.Cols, w.Type, w.Cols))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	per := RowsPerItem(w.Rows, ItemsPerThread*p.n)
	p.mat = matTask{w: w, a: a, out: out, per: per}
	p.runLocked((w.Rows+per-1)/per, &p.mat)
}

type matTask struct {
	per int // rows per item
	w   *Weight
	a   *Acts
	out []float32
}

func (m *matTask) Run(_, i int) {
	MatRows(m.w, m.a, m.out, i*m.per, min((i+1)*m.per, m.w.Rows))
}

// MatRows computes rows [r0, r1) of w times every row of a on the calling
// thread, into out with a row stride of w.Rows (for callers that schedule
// their own work, like the MoE experts).
func MatRows(w *Weight, a *Acts, out []float32, r0, r1 int) {
	matRows(w, a, out, r0, r1, false)
}

// matRows is MatRows through the column-invariant Gemm, or with tiled
// through the tiled one, which may give an activation row other bits
// than it gets alone (see quant.Kernel.Tiled).
func matRows(w *Weight, a *Acts, out []float32, r0, r1 int, tiled bool) {
	gemm := w.k.Gemm
	if tiled {
		gemm = w.k.Tiled
	}
	gemm(w.Cols, w.Data[r0*w.RowBytes:r1*w.RowBytes], w.RowBytes, r1-r0, a.Buf, a.Size, a.N, out[r0:], w.Rows)
}
