package qwen4exp

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
)

// TestPLERowsMatchLlama: the row ids are llama.cpp's set_input loop's
// (compiled with g++), and the same when the tokens arrive in chunks with
// the earlier ones as history.
func TestPLERowsMatchLlama(t *testing.T) {
	for i, c := range readGolden(t).PLE {
		p := &PLEParams{Ngram: c.NGram, HeadsPerGram: c.PerNGram, Heads: (c.NGram - 1) * c.PerNGram, EOS: c.EOS}
		for h := range c.Offsets {
			p.Offsets = append(p.Offsets, uint64(c.Offsets[h]))
			p.VocabSizes = append(p.VocabSizes, uint64(c.Vocab[h]))
		}
		for _, m := range c.Mult {
			v, err := strconv.ParseUint(m, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			p.Multipliers = append(p.Multipliers, v)
		}
		got := p.RowIDs(nil, nil, c.Tokens)
		if !slices.Equal(got, c.Rows) {
			t.Fatalf("case %d: rows %v, llama.cpp %v", i, got, c.Rows)
		}
		for _, cut := range []int{1, 2, len(c.Tokens) / 2, len(c.Tokens) - 1} {
			if cut <= 0 || cut >= len(c.Tokens) {
				continue
			}
			var chunked []int32
			chunked = p.RowIDs(chunked, nil, c.Tokens[:cut])
			chunked = p.RowIDs(chunked, c.Tokens[:cut], c.Tokens[cut:])
			if !slices.Equal(chunked, c.Rows) {
				t.Fatalf("case %d split at %d: rows %v, whole %v", i, cut, chunked, c.Rows)
			}
		}
	}
}

// TestPLERowsEOSCut: a predecessor that is EOS, and all before it, read as
// EOS; the token's own EOS does not cut.
func TestPLERowsEOSCut(t *testing.T) {
	p := &PLEParams{Ngram: 3, HeadsPerGram: 1, Heads: 2, EOS: 2, Multipliers: []uint64{1, 1 << 8, 1 << 16},
		Offsets: []uint64{0, 1000}, VocabSizes: []uint64{1 << 31, 1 << 31}}
	rows := p.RowIDs(nil, []int32{7}, []int32{2, 5, 9})
	want := []int32{
		2 ^ 7<<8, 1000 + (2 ^ 7<<8 ^ 2<<16), // token 2 (EOS itself) after 7, before the start
		5 ^ 2<<8, 1000 + (5 ^ 2<<8 ^ 2<<16), // after EOS: the EOS and what precedes it read as EOS
		9 ^ 5<<8, 1000 + (9 ^ 5<<8 ^ 2<<16),
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
}

// plePlain is build_ple computed directly from its definition: the conv
// as llama.cpp's sum of shifted copies over the whole sequence at once.
func plePlain(l *pleLayer, kernel, dil int, convW, x, emb []float32, rows int, keyW, valW []float32) []float32 {
	hc, e := l.HC, l.Embd
	d := hc * e
	lin := func(w []float32, in []float32, outDim int) []float32 {
		out := make([]float32, rows*outDim)
		for r := 0; r < rows; r++ {
			for o := 0; o < outDim; o++ {
				var s float64
				for i := 0; i < e; i++ {
					s += float64(w[o*e+i]) * float64(in[r*e+i])
				}
				out[r*outDim+o] = float32(s)
			}
		}
		return out
	}
	norm := func(v, w []float32) []float32 {
		out := make([]float32, len(v))
		for g := 0; g < len(v)/e; g++ {
			var s float64
			for _, a := range v[g*e : (g+1)*e] {
				s += float64(a * a)
			}
			sc := 1 / float32(math.Sqrt(float64(float32(s/float64(e))+l.Eps)))
			for i := 0; i < e; i++ {
				out[g*e+i] = v[g*e+i] * sc * w[(g%hc)*e+i]
			}
		}
		return out
	}
	key := norm(lin(keyW, emb, d), l.NormKey)
	val := lin(valW, emb, e)
	qry := norm(x, l.NormQry)
	gated := make([]float32, rows*d)
	for g := 0; g < rows*hc; g++ {
		var s float64
		for i := 0; i < e; i++ {
			s += float64(key[g*e+i] * qry[g*e+i])
		}
		sv := float64(float32(s) / float32(math.Sqrt(float64(e))))
		gt := math.Copysign(math.Sqrt(math.Max(math.Abs(sv), 1e-6)), sv)
		sig := 1 / (1 + math.Exp(-gt))
		for i := 0; i < e; i++ {
			gated[g*e+i] = float32(float64(val[(g/hc)*e+i]) * sig)
		}
	}
	nrm := norm(gated, l.NormConv)
	out := make([]float32, rows*d)
	for t := 0; t < rows; t++ {
		for c := 0; c < d; c++ {
			var s float64
			for k := 0; k < kernel; k++ {
				if src := t - (kernel-1-k)*dil; src >= 0 {
					s += float64(convW[c*kernel+k]) * float64(nrm[src*d+c])
				}
			}
			silu := s / (1 + math.Exp(-s))
			out[t*d+c] = x[t*d+c] + float32(float64(gated[t*d+c])+silu)
		}
	}
	return out
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		u := math.Float32bits(x)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}

// TestPLELayer: the layer on the CPU backend agrees with build_ple's
// definition, and a prefill split into chunks (1, 3, the rest), the
// history carried in the state, gives bit-identical streams to the whole.
func TestPLELayer(t *testing.T) {
	const hc, e, kernel, dil, rows = 2, 16, 3, 3, 23
	be := cpu.NewBackend(2)
	defer be.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	rnd := func(n int, s float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * s)
		}
		return v
	}
	d := hc * e
	keyW, valW := rnd(d*e, 0.3), rnd(e*e, 0.3)
	convW := rnd(d*kernel, 0.5)
	l := &pleLayer{HC: hc, Embd: e, Eps: 1e-6, NormKey: rnd(d, 1), NormQry: rnd(d, 1), NormConv: rnd(d, 1)}
	var err error
	if l.Key, err = be.NewMatrix(ggml.F32, f32Bytes(keyW), d, e); err != nil {
		t.Fatal(err)
	}
	if l.Value, err = be.NewMatrix(ggml.F32, f32Bytes(valW), e, e); err != nil {
		t.Fatal(err)
	}
	l.Conv, l.Taps = dilateConv(convW, d, kernel, dil)
	x0, emb0 := rnd(rows*d, 1), rnd(rows*e, 1)

	run := func(chunks []int) []float32 {
		x, emb := be.Alloc(rows*d), be.Alloc(rows*e)
		copy(x, x0)
		copy(emb, emb0)
		state := be.Alloc(l.StateLen())
		var buf pleBuf
		at := 0
		for _, n := range chunks {
			if err := l.Forward(be, x[at*d:], emb[at*e:], n, nil, state, nil, &buf); err != nil {
				t.Fatal(err)
			}
			at += n
		}
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		return x
	}
	whole := run([]int{rows})
	want := plePlain(l, kernel, dil, convW, x0, emb0, rows, keyW, valW)
	for i := range want {
		if diff := math.Abs(float64(whole[i] - want[i])); diff > 1e-4*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("value %d: %v, definition %v", i, whole[i], want[i])
		}
	}
	if got := run([]int{1, 3, rows - 4}); !slices.Equal(got, whole) {
		t.Fatal("chunked prefill differs from the whole")
	}
}
