package blocks

import (
	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/model"
)

// Head is the output norm and the projection to the vocabulary.
type Head struct {
	Norm   []float32       // nil: none (qwen4exp's final hyper-connection mix is its norm)
	Output *backend.Matrix // [vocab × embd]
	Eps    float32
}

// HeadBuf is a session's scratch for the head and the batch's outputs.
type HeadBuf struct {
	in, xn, logits []float32
	hidden         []float32
	rows           [][]float32
	hrows          [][]float32
}

// Forward fills b.Out with the logits of the rows b marks and b.HiddenOut
// with their final hidden states, from x ([len(b.Tokens)][embd]).
func (h *Head) Forward(be backend.Backend, x []float32, b *model.Batch, buf *HeadBuf) error {
	e, vocab := h.Output.Cols, h.Output.Rows
	nt := len(b.Tokens)
	nh, nl := h.counts(b)
	if len(buf.hidden) < nh*e {
		buf.hidden = be.Alloc(nh * e)
	}
	// The rows are gathered by backend copies (runs of consecutive rows
	// at once), so the host waits only for the logits.
	copyRows(be, buf.hidden, x, e, nt, b.WantsHidden)
	if len(buf.in) < nl*e {
		buf.in, buf.xn = be.Alloc(nl*e), be.Alloc(nl*e)
	}
	in := buf.in[:nl*e]
	copyRows(be, in, x, e, nt, b.WantsLogits)
	if len(buf.logits) < nl*vocab {
		buf.logits = be.Alloc(nl * vocab)
	}
	logits := buf.logits[:nl*vocab]
	if nl > 0 {
		xn := buf.xn[:nl*e]
		if h.Norm != nil {
			be.RMSNorm(xn, in, h.Norm, nl, h.Eps)
		} else {
			xn = in
		}
		be.Linear(h.Output, xn, nl, logits)
	}
	if err := be.Sync(); err != nil { // the host reads the logits and hidden rows
		return err
	}
	h.Outputs(b, buf)
	return nil
}

func (h *Head) counts(b *model.Batch) (nh, nl int) {
	for i := range b.Tokens {
		if b.WantsHidden(i) {
			nh++
		}
		if b.WantsLogits(i) {
			nl++
		}
	}
	return nh, nl
}

// Outputs points b.Out and b.HiddenOut at the rows Forward left in buf
// (for a step a backend replayed: the same buffers, new contents).
func (h *Head) Outputs(b *model.Batch, buf *HeadBuf) {
	e, vocab := h.Output.Cols, h.Output.Rows
	nh, nl := h.counts(b)
	buf.hrows = buf.hrows[:0]
	for j := 0; j < nh; j++ {
		buf.hrows = append(buf.hrows, buf.hidden[j*e:(j+1)*e])
	}
	b.HiddenOut = buf.hrows
	buf.rows = buf.rows[:0]
	for j := 0; j < nl; j++ {
		buf.rows = append(buf.rows, buf.logits[j*vocab:(j+1)*vocab])
	}
	b.Out = buf.rows
}

// copyRows copies the rows i < nt of x (rows of e values) for which want
// holds, in order, into consecutive rows of dst, one backend copy per run
// of consecutive rows.
func copyRows(be backend.Backend, dst, x []float32, e, nt int, want func(int) bool) {
	j := 0
	for i := 0; i < nt; {
		if !want(i) {
			i++
			continue
		}
		n := 1
		for i+n < nt && want(i+n) {
			n++
		}
		be.Repeat(dst[j*e:(j+n)*e], x[i*e:(i+n)*e], n, 1, e)
		i, j = i+n, j+n
	}
}

// Bytes is what the buffers hold.
func (buf *HeadBuf) Bytes() int64 {
	return 4 * int64(cap(buf.in)+cap(buf.xn)+cap(buf.logits)+cap(buf.hidden))
}

// Bytes is what the buffers hold.
func (buf *AttnBuf) Bytes() int64 {
	return 4 * int64(cap(buf.q)+cap(buf.k)+cap(buf.v)+cap(buf.att)+cap(buf.qg)+cap(buf.gate))
}

// Bytes is what the buffers hold.
func (buf *MoEBuf) Bytes() int64 {
	n := cap(buf.logits) + cap(buf.out) + cap(buf.shared) + cap(buf.sgate)
	for _, o := range buf.outs {
		n += cap(o)
	}
	return 4 * int64(n)
}
