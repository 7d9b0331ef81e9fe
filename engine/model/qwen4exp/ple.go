package qwen4exp

import (
	"fmt"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
)

// PLE: qwen4exp's n-gram hash embedding, as llama.cpp's qwen4exp.cpp
// computes it (llm_graph_input_ple::set_input, build_inp_ple, build_ple).
// Every token gathers Heads rows of HeadDim values (Heads·HeadDim = embd)
// from the shared table per_layer_token_embd: for n = 2..NGram, the n-gram
// ending at the token hashes to mixed_n = (t[p]·m[0]) ^ … ^ (t[p−n+1]·m[n−1])
// in wrapping uint64 arithmetic, and head h of that n-gram reads row
// mixed_n mod VocabSizes[h] + Offsets[h]. A predecessor that is before
// the sequence start or is EOS, and every one before it, reads as EOS. The
// row ids are a pure function of the token ids, so they are known (and
// their reads can be issued) before the forward pass starts. The one PLE
// layer (a DeltaNet layer) adds to the hyper-connection streams, before
// its mixer, gated·value plus a causal depthwise convolution (dilated by
// NGram) of its RMS-normed output; the convolution's history is part of
// the layer's recurrent state.

// RowIDs appends to dst the table rows of toks (Heads per token, in token
// order), where hist are the tokens before toks in the sequence (the
// session's; only the last NGram−1 matter).
func (p *PLEParams) RowIDs(dst []int32, hist, toks []int32) []int32 {
	var ctx [maxPLENgram]int64
	for i, t := range toks {
		ctx[0] = int64(t)
		cut := false
		for s := 1; s < p.Ngram; s++ {
			prev := int64(-1)
			if !cut {
				switch j := i - s; {
				case j >= 0:
					prev = int64(toks[j])
				case len(hist)+j >= 0:
					prev = int64(hist[len(hist)+j])
				}
			}
			cut = cut || prev < 0 || prev == p.EOS
			if cut {
				ctx[s] = p.EOS
			} else {
				ctx[s] = prev
			}
		}
		for n := 2; n <= p.Ngram; n++ {
			mixed := uint64(ctx[0]) * p.Multipliers[0]
			for j := 1; j < n; j++ {
				mixed ^= uint64(ctx[j]) * p.Multipliers[j]
			}
			base := (n - 2) * p.HeadsPerGram
			for g := 0; g < p.HeadsPerGram; g++ {
				h := base + g
				dst = append(dst, int32(mixed%p.VocabSizes[h]+p.Offsets[h]))
			}
		}
	}
	return dst
}

// pleLayer is the PLE layer's weights.
type pleLayer struct {
	Key      *backend.Matrix // [hc·embd × embd] (ple_key)
	Value    *backend.Matrix // [embd × embd] (ple_value)
	NormKey  []float32       // [hc·embd] (ple_norm_key)
	NormQry  []float32       // [hc·embd] (ple_norm_query)
	NormConv []float32       // [hc·embd] (ple_norm_conv)
	// Conv is ple_conv1d's [hc·embd][ConvKernel] taps laid out as a causal
	// convolution of Taps = (ConvKernel−1)·NGram + 1 taps with zeros
	// between the dilated ones, so the backend's CausalConv computes
	// llama.cpp's sum of shifted copies exactly (tap k at k·NGram; a zero
	// tap adds an exact zero to the float32 sum).
	Conv []float32
	Taps int
	HC   int
	Embd int
	Eps  float32
}

// dilateConv lays out w ([channels][kernel]) as the taps of a causal
// convolution with the given dilation.
func dilateConv(w []float32, channels, kernel, dilation int) ([]float32, int) {
	taps := (kernel-1)*dilation + 1
	out := make([]float32, channels*taps)
	for c := 0; c < channels; c++ {
		for k := 0; k < kernel; k++ {
			out[c*taps+k*dilation] = w[c*kernel+k]
		}
	}
	return out, taps
}

// StateLen is the length of the layer's convolution history:
// [hc·embd][Taps−1] ((ConvKernel−1)·NGram inputs per channel, oldest first,
// llama.cpp's ple_conv_state).
func (l *pleLayer) StateLen() int { return l.HC * l.Embd * (l.Taps - 1) }

// pleBuf is a session's scratch for the PLE layer.
type pleBuf struct {
	rows                   int
	key, qry, gated, convd []float32 // [rows][hc·embd]
	val                    []float32 // [rows][embd]
	gate                   []float32 // [rows][hc]
}

func (b *pleBuf) Bytes() int64 {
	return 4 * int64(cap(b.key)+cap(b.qry)+cap(b.gated)+cap(b.convd)+cap(b.val)+cap(b.gate))
}

func (l *pleLayer) size(be backend.Backend, buf *pleBuf, rows int) {
	if rows <= buf.rows {
		return
	}
	d := l.HC * l.Embd
	buf.key, buf.qry, buf.gated, buf.convd = be.Alloc(rows*d), be.Alloc(rows*d), be.Alloc(rows*d), be.Alloc(rows*d)
	buf.val, buf.gate = be.Alloc(rows*l.Embd), be.Alloc(rows*l.HC)
	buf.rows = rows
}

// Forward adds the PLE to rows rows of the hyper-connection streams x
// ([rows][hc][embd]), from emb ([rows][embd]: each row's Heads gathered
// table rows side by side), updating the convolution history state
// (StateLen values) from from into state and filling snaps (as the
// backend's CausalConv: from nil updates state in place).
func (l *pleLayer) Forward(be backend.Backend, x, emb []float32, rows int, from, state []float32, snaps [][]float32, buf *pleBuf) error {
	l.size(be, buf, rows)
	hc, e := l.HC, l.Embd
	d := hc * e
	key, qry, gated, convd := buf.key[:rows*d], buf.qry[:rows*d], buf.gated[:rows*d], buf.convd[:rows*d]
	val, gate := buf.val[:rows*e], buf.gate[:rows*hc]
	be.Linear(l.Key, emb, rows, key)
	be.Linear(l.Value, emb, rows, val)
	// build_ple's grouped_norm: an RMSNorm over each stream's embd values,
	// then ggml_mul by the [hc·embd] weight.
	be.GroupRMSNorm(key, key, l.NormKey[:d], rows, e, l.Eps)
	be.GroupRMSNorm(qry, x[:rows*d], l.NormQry[:d], rows, e, l.Eps)
	// Per stream: s = Σ key·query / sqrt(embd), gate =
	// sigmoid(sgn(s)·sqrt(max(|s|, 1e-6))) (the sigmoid in SigmoidMul).
	be.PLEGate(gate, key, qry, rows*hc, e)
	be.Repeat(gated, val, rows, hc, e)
	be.SigmoidMul(gated, gate, rows*hc) // value broadcast over the streams, · sigmoid(gate)
	be.GroupRMSNorm(convd, gated, l.NormConv[:d], rows, e, l.Eps)
	// key is free again: it takes the convolution's output.
	be.CausalConv(key, convd, from, state, l.Conv, rows, d, l.Taps, snaps)
	be.Add(gated, key)        // gated + silu(conv)
	be.Add(x[:rows*d], gated) // hidden + (gated + conv)
	return nil
}

// pleSession is a session's PLE scratch; the convolution history is the
// PLE layer's third recurrent buffer (checkpointed with its DeltaNet).
type pleSession struct {
	fetch pleFetch
	stage pleStage
	ids   []int32
	pids  []int32   // Prefetch's
	emb   []float32 // [rows][embd]
	buf   pleBuf
	snaps [][]float32
}

func (p *pleSession) Bytes() int64 {
	return p.stage.Bytes() + p.buf.Bytes() + 4*int64(cap(p.emb)) + 4*int64(cap(p.ids)+cap(p.pids))
}

// initPLE builds the PLE layer and its table's reader once the expert
// provider exists: rows are streamed through it when it streams (it reads
// the file), else read from the mapping.
func (m *Model) initPLE(f *gguf.File, prov model.ExpertProvider) error {
	if m.ple == nil {
		return nil
	}
	hp := m.hp
	t, _ := f.Tensor(pleTableName)
	var rr pleRawReader
	if r, ok := prov.(pleRawReader); ok && prov.Streaming() {
		rr = r
	}
	var err error
	if m.pleTab, err = newPLETable(f, t, t.Type, hp.PLE.HeadDim, int(t.Dims[1]), rr); err != nil {
		return err
	}
	p := m.ple
	l := &pleLayer{Key: p.Key, Value: p.Value, NormKey: p.NormKey, NormQry: p.NormQuery, NormConv: p.NormConv,
		HC: hp.HC, Embd: hp.Embd, Eps: hp.Eps}
	l.Conv, l.Taps = dilateConv(p.Conv, hp.HC*hp.Embd, hp.PLE.ConvKernel, hp.PLE.Ngram)
	if l.StateLen() != hp.pleHistory() {
		return fmt.Errorf("%s: PLE history of %d values, want %d", Arch, l.StateLen(), hp.pleHistory())
	}
	m.pleL = l
	return nil
}

// pleStart hashes the batch's n-grams and starts reading their rows, at
// the start of the forward pass.
func (s *Session) pleStart(toks []int32) {
	if s.m.pleL == nil {
		return
	}
	s.ple.ids = s.m.hp.PLE.RowIDs(s.ple.ids[:0], s.tokens, toks)
	s.m.pleTab.Start(&s.ple.fetch, s.ple.ids)
}

// Prefetch implements model.Prefetcher: when the PLE table is streamed,
// it starts reading the rows of tokens (a coming batch after the session's
// tokens), which that batch's forward then finds cached or in flight.
func (s *Session) Prefetch(tokens []int32) {
	m := s.m
	if m.pleL == nil || !m.pleTab.Streamed() || s.closed || len(tokens) == 0 {
		return
	}
	for _, id := range tokens {
		if id < 0 || int(id) >= m.hp.Vocab {
			return // the forward refuses it
		}
	}
	s.ple.pids = m.hp.PLE.RowIDs(s.ple.pids[:0], s.tokens, tokens)
	m.pleTab.Prefetch(s.ple.pids)
}

// pleStep adds the PLE to the residual x of nt rows at the PLE layer.
func (s *Session) pleStep(il, nt int, x []float32) error {
	m := s.m
	if len(s.ple.emb) < nt*m.hp.Embd {
		s.ple.emb = m.be.Alloc(nt * m.hp.Embd)
	}
	emb := s.ple.emb[:nt*m.hp.Embd]
	// The rows are collected from their reads at every step, a replayed
	// one too (backend.Redo).
	if rp, ok := m.be.(backend.Replayer); ok {
		if err := rp.Redo(0, func(int) error { return s.ple.stage.Gather(m.be, m.pleTab, &s.ple.fetch, emb) }); err != nil {
			return err
		}
	} else if err := s.ple.stage.Gather(m.be, m.pleTab, &s.ple.fetch, emb); err != nil {
		return err
	}
	s.ple.snaps = s.ple.snaps[:0]
	for _, bs := range s.rec.Snaps(il) {
		var b []float32 // nil: a skipped snapshot
		if bs != nil {
			b = bs[2]
		}
		s.ple.snaps = append(s.ple.snaps, b)
	}
	return m.pleL.Forward(m.be, x, emb, nt, s.rec.From(il)[2], s.rec.State(il)[2], s.ple.snaps, &s.ple.buf)
}
