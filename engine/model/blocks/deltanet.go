package blocks

import (
	"github.com/strata-llm/strata/engine/backend"
)

// DeltaNet is one gated DeltaNet (linear attention) layer, llama.cpp's
// qwen3next build_layer_attn_linear: fused q/k/v and z projections, a
// causal depthwise convolution with SiLU over q/k/v, the gated delta rule
// over a recurrent state, a gated RMSNorm of the output with z, and the
// output projection. qwen4exp's variant has separate beta and alpha
// projections (ssm_beta, ssm_alpha; BA nil) and gates the normed output
// with sigmoid(z) instead of silu(z) (SigmoidGate).
type DeltaNet struct {
	QKV  *backend.Matrix // [2·keyDim+valueDim × embd] (attn_qkv)
	Z    *backend.Matrix // [valueDim × embd] (attn_gate)
	BA   *backend.Matrix // [2·valueHeads × embd] (ssm_ba): per key head, its value heads' b then a
	Beta *backend.Matrix // [valueHeads × embd] (ssm_beta), when BA is nil
	// Alpha is [valueHeads × embd] (ssm_alpha), when BA is nil.
	Alpha *backend.Matrix
	// SigmoidGate: the output is RMSNorm(o)·Norm·sigmoid(z) (qwen4exp's
	// build_norm_gated) rather than ·silu(z).
	SigmoidGate bool
	Conv        []float32       // [channels][taps] (ssm_conv1d)
	Norm        []float32       // [Dim] (ssm_norm)
	Out         *backend.Matrix // [embd × valueDim] (ssm_out)
	P           backend.DeltaNetParams
	Taps        int
	RMSEps      float32
}

// Channels is the width of the convolution: query, key and value heads.
func (d *DeltaNet) Channels() int { return (2*d.P.KeyHeads + d.P.ValueHeads) * d.P.Dim }

// DeltaState is one DeltaNet layer's recurrent state: the convolution's
// last taps-1 inputs ([channels][taps-1]) and the delta rule's state
// ([valueHeads][Dim][Dim]).
type DeltaState struct {
	Conv, S []float32
}

// NewState allocates a zero state for the layer.
func (d *DeltaNet) NewState(be backend.Backend) DeltaState {
	return DeltaState{Conv: be.Alloc(d.Channels() * (d.Taps - 1)), S: be.Alloc(d.P.ValueHeads * d.P.Dim * d.P.Dim)}
}

// CopyFrom sets s to o (same layer).
func (s DeltaState) CopyFrom(o DeltaState) {
	copy(s.Conv, o.Conv)
	copy(s.S, o.S)
}

// Clear zeroes s.
func (s DeltaState) Clear() {
	clear(s.Conv)
	clear(s.S)
}

// Bytes is what the state holds.
func (s DeltaState) Bytes() int64 { return 4 * int64(len(s.Conv)+len(s.S)) }

// DeltaBuf is a session's scratch for DeltaNet layers.
type DeltaBuf struct {
	rows                   int
	qkv, conv, z, ba, b, a []float32
	out                    []float32
	convSnaps, stateSnaps  [][]float32
}

// Bytes is what the buffers hold.
func (buf *DeltaBuf) Bytes() int64 {
	return 4 * int64(cap(buf.qkv)+cap(buf.conv)+cap(buf.z)+cap(buf.ba)+cap(buf.b)+cap(buf.a)+cap(buf.out))
}

func (d *DeltaNet) size(be backend.Backend, buf *DeltaBuf, rows int) {
	vd := d.P.ValueHeads * d.P.Dim
	if rows <= buf.rows && len(buf.z) >= rows*vd && len(buf.qkv) >= rows*d.Channels() {
		return
	}
	ch, hv := d.Channels(), d.P.ValueHeads
	buf.qkv, buf.conv = be.Alloc(rows*ch), be.Alloc(rows*ch)
	buf.z, buf.out = be.Alloc(rows*vd), be.Alloc(rows*vd)
	buf.ba, buf.b, buf.a = be.Alloc(2*rows*hv), be.Alloc(rows*hv), be.Alloc(rows*hv)
	buf.rows = rows
}

// Forward computes the layer's output projection of rows rows of the normed
// input xn into out ([rows][embd]), advancing st; snaps (at most rows) are
// states to fill with the state after each of the last len(snaps) rows.
func (d *DeltaNet) Forward(be backend.Backend, st DeltaState, snaps []DeltaState, xn []float32, rows int, buf *DeltaBuf, out []float32) {
	d.ForwardFrom(be, DeltaState{}, st, snaps, xn, rows, buf, out)
}

// ForwardFrom is Forward reading the state before row 0 from from (when
// its slices are not nil; it is left unchanged unless it is st) and
// writing the state after the last row into st: a session that keeps its
// checkpoints in a ring steps from one slot into the next without copying
// the state. Snapshots with nil slices are skipped.
func (d *DeltaNet) ForwardFrom(be backend.Backend, from, st DeltaState, snaps []DeltaState, xn []float32, rows int, buf *DeltaBuf, out []float32) {
	d.size(be, buf, rows)
	ch, hv, vd := d.Channels(), d.P.ValueHeads, d.P.ValueHeads*d.P.Dim
	qkv, conv, z := buf.qkv[:rows*ch], buf.conv[:rows*ch], buf.z[:rows*vd]
	ba, b, a, o := buf.ba[:2*rows*hv], buf.b[:rows*hv], buf.a[:rows*hv], buf.out[:rows*vd]
	be.Linear(d.QKV, xn, rows, qkv)
	be.Linear(d.Z, xn, rows, z)
	if d.BA != nil {
		be.Linear(d.BA, xn, rows, ba)
		rf := hv / d.P.KeyHeads
		be.SplitHeads(b, a, ba, rows, d.P.KeyHeads, rf, rf)
	} else {
		be.Linear(d.Beta, xn, rows, b)
		be.Linear(d.Alpha, xn, rows, a)
	}
	buf.convSnaps, buf.stateSnaps = buf.convSnaps[:0], buf.stateSnaps[:0]
	for _, s := range snaps {
		buf.convSnaps = append(buf.convSnaps, s.Conv)
		buf.stateSnaps = append(buf.stateSnaps, s.S)
	}
	be.CausalConv(conv, qkv, from.Conv, st.Conv, d.Conv, rows, ch, d.Taps, buf.convSnaps)
	be.GatedDeltaNet(d.P, conv, b, a, rows, from.S, st.S, buf.stateSnaps, o)
	if d.SigmoidGate {
		// ggml_rms_norm, ggml_mul by Norm, ggml_mul by ggml_sigmoid(z).
		be.RMSNorm(o, o, d.Norm, rows*hv, d.RMSEps)
		be.SigmoidMul(o, z, rows)
	} else {
		be.GatedRMSNorm(o, z, d.Norm, rows*hv, d.RMSEps)
	}
	be.Linear(d.Out, o, rows, out)
	clear(buf.convSnaps[:cap(buf.convSnaps)])
	clear(buf.stateSnaps[:cap(buf.stateSnaps)])
}
