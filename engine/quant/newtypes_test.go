package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// moreTypes are the weight types added for files made by llama-quantize's
// other mixtures, with the activation format ggml's x86 CPU backend pairs
// each with (type_traits_cpu[t].vec_dot_type) and the block size in bytes.
var moreTypes = []struct {
	typ   ggml.Type
	vec   ggml.Type
	bytes int
}{
	{ggml.Q4_1, ggml.Q8_1, q4_1BlockSize},
	{ggml.Q5_0, ggml.Q8_0, q5_0BlockSize},
	{ggml.Q5_1, ggml.Q8_1, q5_1BlockSize},
	{ggml.IQ4_NL, ggml.Q8_0, iq4NLBlockSize},
	{ggml.MXFP4, ggml.Q8_0, mxfp4BlockSize},
	{ggml.IQ3_S, ggml.Q8_K, iq3SSize},
	{ggml.IQ2_S, ggml.Q8_K, iq2SSize},
	{ggml.IQ1_S, ggml.Q8_K, iq1SSize},
	{ggml.IQ1_M, ggml.Q8_K, iq1MSize},
	{ggml.TQ1_0, ggml.Q8_K, tq1Size},
	{ggml.TQ2_0, ggml.Q8_K, tq2Size},
}

func TestMoreTypesRegistered(t *testing.T) {
	for _, m := range moreTypes {
		k := mustKernel(t, m.typ)
		if k.VecDotType != m.vec {
			t.Errorf("%s: VecDotType %s, want %s", m.typ, k.VecDotType, m.vec)
		}
		if m.bytes != m.typ.TypeSize() {
			t.Errorf("%s: block of %d bytes, ggml says %d", m.typ, m.bytes, m.typ.TypeSize())
		}
		if k.Dequantize == nil || k.Dot == nil || k.GoDot == nil || k.Random == nil || k.Gemm == nil {
			t.Errorf("%s: missing routines", m.typ)
		}
		if got := ActivationSize(m.vec, 256); got != rowBytes(t, m.vec, 256) {
			t.Errorf("ActivationSize(%s, 256) = %d, want %d", m.vec, got, rowBytes(t, m.vec, 256))
		}
	}
	if q8_1BlockSize != ggml.Q8_1.TypeSize() || qk8_1 != ggml.Q8_1.BlockSize() {
		t.Errorf("Q8_1: %d bytes / %d values, ggml says %d / %d", q8_1BlockSize, qk8_1, ggml.Q8_1.TypeSize(), ggml.Q8_1.BlockSize())
	}
}

// minOffset is the byte offset of the fp16 minimum m of Q4_1/Q5_1 blocks.
const minOffset = 2

// dotReference returns the float64 dot product of a row w of typ with the
// activations a as the dot product sees them (dequantized), and the sum of
// the magnitudes of its terms. For Q4_1/Q5_1 the minimum's share is m*s
// with the activation block's stored s (fp16 of d*Σq, as ggml uses it),
// not m times the sum of the dequantized activations.
func dotReference(t *testing.T, k *Kernel, typ ggml.Type, n int, w, a []byte) (ref, mag float64) {
	t.Helper()
	af := make([]float32, n)
	DequantizeActivations(k.VecDotType, a, af)
	wf := make([]float32, n)
	if k.VecDotType != ggml.Q8_1 {
		k.Dequantize(w, wf)
		for i := range wf {
			p := float64(wf[i]) * float64(af[i])
			ref += p
			mag += math.Abs(p)
		}
		return ref, mag
	}
	bs := typ.TypeSize()
	w0 := append([]byte(nil), w...)
	for b := 0; b < n/32; b++ {
		m := float64(fp16At(w[b*bs+minOffset:]))
		s := float64(fp16At(a[b*q8_1BlockSize+2:]))
		ref += m * s
		mag += math.Abs(m * s)
		w0[b*bs+minOffset], w0[b*bs+minOffset+1] = 0, 0
	}
	k.Dequantize(w0, wf)
	for i := range wf {
		p := float64(wf[i]) * float64(af[i])
		ref += p
		mag += math.Abs(p)
	}
	return ref, mag
}

// TestMoreTypesDotMatchesDequantized checks Dot against the float64 dot
// product of the dequantized weights and activations: the integer parts are
// exact, so only float32 roundings (a few per block) separate them.
func TestMoreTypesDotMatchesDequantized(t *testing.T) {
	for _, m := range moreTypes {
		typ := m.typ
		for _, nb := range []int{1, 3, 16} {
			n := nb * 256
			t.Run(fmt.Sprintf("%s/%d", typ, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(typ), uint64(n)))
				k := mustKernel(t, typ)
				for trial := range 20 {
					scale := float32(math.Ldexp(1, rng.IntN(12)-8))
					w := randomRow(t, typ, n, rng, scale)
					x := randomFloats(rng, n, 1+rng.Float32()*10)
					a := make([]byte, ActivationSize(k.VecDotType, n))
					QuantizeActivations(k.VecDotType, x, a)
					ref, mag := dotReference(t, k, typ, n, w, a)
					got := k.Dot(n, w, a)
					if d := math.Abs(float64(got) - ref); d > (float64(n/32+8)*0x1p-24)*mag || math.IsNaN(float64(got)) {
						t.Fatalf("trial %d: Dot = %g, float64 reference %g (|diff| %g, Σ|w·a| %g)", trial, got, ref, d, mag)
					}
					// The Gemm (here the loop over Dot) gives each column's Dot.
					out := make([]float32, 2)
					k.Gemm(n, w, len(w), 1, append(append([]byte(nil), a...), a...), len(a), 2, out, 1)
					if out[0] != got || out[1] != got {
						t.Fatalf("Gemm %v, Dot %v", out, got)
					}
				}
			})
		}
	}
}

func TestMoreTypesRandom(t *testing.T) {
	for _, m := range moreTypes {
		for _, scale := range []float32{1e-3, 0.05, 2} {
			t.Run(fmt.Sprintf("%s/%g", m.typ, scale), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, uint64(m.typ)))
				k := mustKernel(t, m.typ)
				const n = 64 * 256
				w := randomRow(t, m.typ, n, rng, scale)
				y := make([]float32, n)
				k.Dequantize(w, y)
				var sum float64
				for i, v := range y {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("value %d is %g", i, v)
					}
					sum += math.Abs(float64(v))
				}
				if mean := sum / n; mean < 0.6*float64(scale) || mean > 1.6*float64(scale) {
					t.Errorf("mean |value| %g, want about %g", mean, scale)
				}
			})
		}
	}
}

func TestMoreTypesNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, m := range moreTypes {
		k := mustKernel(t, m.typ)
		const n = 1024
		w := randomRow(t, m.typ, n, rng, 1)
		a := make([]byte, ActivationSize(k.VecDotType, n))
		x := randomFloats(rng, n, 1)
		if allocs := testing.AllocsPerRun(10, func() {
			QuantizeActivations(k.VecDotType, x, a)
			k.Dot(n, w, a)
		}); allocs != 0 {
			t.Errorf("%s: %v allocations per quantize+dot", m.typ, allocs)
		}
	}
}

// TestQuantizeQ8_1 checks the Q8_1 activations against Q8_0's (the same d
// and quants on x86) and s against fp16(d*Σq).
func TestQuantizeQ8_1(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 50 {
		n := 256
		x := randomFloats(rng, n, float32(math.Ldexp(1, rng.IntN(20)-10)))
		if trial == 0 {
			clear(x[:32]) // an all-zero block
		}
		q0 := make([]byte, ActivationSize(ggml.Q8_0, n))
		q1 := make([]byte, ActivationSize(ggml.Q8_1, n))
		quantizeQ8_0Go(x, q0) // the portable one: the comparison does not depend on the build
		QuantizeActivations(ggml.Q8_1, x, q1)
		for b := range n / 32 {
			b0, b1 := q0[b*q8_0BlockSize:(b+1)*q8_0BlockSize], q1[b*q8_1BlockSize:(b+1)*q8_1BlockSize]
			if string(b0[:2]) != string(b1[:2]) || string(b0[2:]) != string(b1[4:]) {
				t.Fatalf("block %d: Q8_1 d/quants differ from Q8_0's", b)
			}
			var amax float32
			var sum int32
			for j, v := range x[32*b : 32*b+32] {
				amax = max(amax, abs32(v))
				sum += int32(int8(b1[4+j]))
			}
			if got, want := binary.LittleEndian.Uint16(b1[2:]), Float32ToFP16(float32(amax/127*float32(sum))); got != want {
				t.Fatalf("block %d: s = %#04x, want %#04x", b, got, want)
			}
		}
		y := make([]float32, n)
		DequantizeActivations(ggml.Q8_1, q1, y)
		y0 := make([]float32, n)
		DequantizeActivations(ggml.Q8_0, q0, y0)
		for i := range y {
			if y[i] != y0[i] {
				t.Fatalf("value %d: Q8_1 %v, Q8_0 %v", i, y[i], y0[i])
			}
		}
	}
}

// TestMoreTypesDequantizeHandBuilt decodes blocks built by hand from the
// layouts in ggml-common.h, with the edge values of each field (highest
// index bits, top nibbles, sign bits, the last value of a block), and
// compares with values worked out by hand from dequantize_row_*.
func TestMoreTypesDequantizeHandBuilt(t *testing.T) {
	const (
		one  = 0x3c00 // fp16 1.0
		half = 0x3800 // fp16 0.5
		two  = 0x4000 // fp16 2.0
		mtwo = 0xc000 // fp16 -2.0
	)
	put16 := func(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, v) }
	tests := []struct {
		typ   ggml.Type
		build func(b []byte)
		want  map[int]float32
	}{
		{ggml.Q4_1, func(b []byte) {
			put16(b, half)
			put16(b[2:], mtwo)
			b[4] = 0xf0  // value 0: 0, value 16: 15
			b[19] = 0x3a // value 15: 10, value 31: 3
		}, map[int]float32{0: -2, 16: 5.5, 15: 3, 31: -0.5, 1: -2}},
		{ggml.Q5_0, func(b []byte) {
			put16(b, two)
			binary.LittleEndian.PutUint32(b[2:], 1|1<<16|1<<31) // fifth bits of values 0, 16, 31
			b[6] = 0x0f                                         // value 0: 15|16 = 31; value 16: 0|16 = 16
			b[21] = 0xf0                                        // value 15: 0; value 31: 15|16 = 31
		}, map[int]float32{0: 30, 16: 0, 15: -32, 31: 30, 1: -32}},
		{ggml.Q5_1, func(b []byte) {
			put16(b, half)
			put16(b[2:], one)
			binary.LittleEndian.PutUint32(b[4:], 1<<15|1<<16) // values 15 and 16
			b[8+15] = 0x1f                                    // value 15: 15|16 = 31; value 31: 1
			b[8] = 0x20                                       // value 0: 0; value 16: 2|16 = 18
		}, map[int]float32{15: 16.5, 31: 1.5, 0: 1, 16: 10}},
		{ggml.IQ4_NL, func(b []byte) {
			put16(b, half)
			b[2] = 0xf0  // value 0: -127, value 16: 113
			b[17] = 0x78 // value 15: 1, value 31: -10
		}, map[int]float32{0: -63.5, 16: 56.5, 15: 0.5, 31: -5, 1: -63.5}},
		{ggml.MXFP4, func(b []byte) {
			b[0] = 129   // 2^(129-128) = 2
			b[1] = 0xf7  // value 0: 12, value 16: -12
			b[16] = 0x98 // value 15: -0 (index 8), value 31: -1
		}, map[int]float32{0: 24, 16: -24, 15: 0, 31: -2, 1: 0}},
		{ggml.IQ3_S, func(b []byte) {
			put16(b, one)
			qs, qh, signs, scales := b[2:66], b[66:74], b[74:106], b[106:110]
			// Group of 32 values 0: index 0 | 256 (qh bit 0) for values 0..3
			// and index 511 (low 255, qh bit 1) for values 4..7.
			qs[0], qs[1] = 0, 255
			qh[0] = 0x03
			signs[0] = 0x81  // values 0 and 7 negative
			scales[0] = 0x52 // group 0: 1+2*2 = 5; group 1: 1+2*5 = 11
			// Group 7 (values 224..255): its last 8 values use qs[62], qs[63]
			// and qh[7] bits 6, 7.
			qs[62], qs[63] = 1, 0
			qh[7] = 0x80 // values 252..255 use index 256+0
			signs[31] = 0x80
			scales[3] = 0xf0 // group 7: 31
		}, map[int]float32{
			0: -5 * float32(uint8(iq3sGrid[256])), 3: 5 * float32(uint8(iq3sGrid[256]>>24)),
			4: 5 * float32(uint8(iq3sGrid[511])), 7: -5 * float32(uint8(iq3sGrid[511]>>24)),
			8: 5 * float32(uint8(iq3sGrid[0])), 32: 11 * float32(uint8(iq3sGrid[0])),
			248: float32(iq3sGrid[1]&0xff) * 31, 252: float32(iq3sGrid[256]&0xff) * 31,
			255: -31 * float32(uint8(iq3sGrid[256]>>24)),
		}},
		{ggml.IQ2_S, func(b []byte) {
			put16(b, one)
			qs, signs, qh, scales := b[2:34], b[34:66], b[66:74], b[74:82]
			qs[0] = 0xff
			qh[0] = 0x03     // values 0..7: index 0x3ff
			signs[0] = 0x01  // value 0 negative
			scales[0] = 0x31 // values 0..15: (0.5+1)/4; values 16..31: (0.5+3)/4
			qs[31] = 2
			qh[7] = 0xc0 // values 248..255: index 2 | 0x300
			signs[31] = 0x80
			scales[7] = 0xf0 // values 240..255: (0.5+15)/4
		}, map[int]float32{
			0: -0.375 * float32(uint8(iq2sGrid[0x3ff])), 7: 0.375 * float32(uint8(iq2sGrid[0x3ff]>>56)),
			16: 0.875 * float32(uint8(iq2sGrid[0])), 255: -3.875 * float32(uint8(iq2sGrid[0x302]>>56)),
			248: 3.875 * float32(uint8(iq2sGrid[0x302])),
		}},
		{ggml.IQ1_S, func(b []byte) {
			put16(b, half)
			qs, qh := b[2:34], b[34:50]
			qs[0] = 0xff
			put16(qh, 7|3<<12) // group 0 of values 0..7: index 0x7ff; scale 2*3+1 = 7; delta +1/8
			qs[31] = 0
			put16(qh[14:], 7<<9|0x8000|7<<12) // values 248..255: index 0x700; scale 15; delta -1/8
		}, map[int]float32{
			0: 3.5 * (float32(int8(iq1sGrid[0x7ff])) + 0.125), 7: 3.5 * (float32(int8(iq1sGrid[0x7ff]>>56)) + 0.125),
			8:   3.5 * (float32(int8(iq1sGrid[0])) + 0.125),
			248: 7.5 * (float32(int8(iq1sGrid[0x700])) - 0.125), 255: 7.5 * (float32(int8(iq1sGrid[0x700]>>56)) - 0.125),
		}},
		{ggml.IQ1_M, func(b []byte) {
			qs, qh, sc := b[0:32], b[32:48], b[48:56]
			// d = fp16 0x3800 (0.5) from the scale words' top nibbles
			// (word k gives bits 4k..4k+3): 0, 0, 8, 3.
			put16(sc[0:], 2|5<<3) // group 0: values 0..15 scale 5, 16..31 scale 11
			put16(sc[2:], 0)
			put16(sc[4:], 0x8000|7<<9) // group 5 (second of word 2): values 176..191 scale 15
			put16(sc[6:], 0x3000|7<<9) // group 7: values 240..255 scale 15
			qs[0] = 0xff
			qh[0] = 0x07 | 0x08 // values 0..7: index 0x7ff, delta -1/8
			qs[31] = 3
			qh[15] = 0x70 // values 248..255: index 3 | 0x700, delta +1/8
		}, map[int]float32{
			0: 2.5 * (float32(int8(iq1sGrid[0x7ff])) - 0.125), 7: 2.5 * (float32(int8(iq1sGrid[0x7ff]>>56)) - 0.125),
			16: 5.5 * (float32(int8(iq1sGrid[0])) + 0.125), 176: 7.5 * (float32(int8(iq1sGrid[0])) + 0.125),
			255: 7.5 * (float32(int8(iq1sGrid[0x703]>>56)) + 0.125),
		}},
		{ggml.TQ1_0, func(b []byte) {
			// qs[0] = 243 trit string 2,0,0,0,0 → ceil(162*256/243) = 171:
			// value 0 = +1, values 32, 64, 96, 128 = -1.
			b[0] = 171
			// qs[47] for trits 1,1,1,1,2 (122): values 175..239 step 16 = 0, the last +1.
			b[47] = uint8((122*256 + 242) / 243)
			// qh[3] for trits 0,0,0,2 then *3 (2*3 = 6): values 243, 247, 251 = -1, 255 = +1.
			b[51] = uint8((6*256 + 242) / 243)
			put16(b[52:], two)
		}, map[int]float32{0: 2, 32: -2, 128: -2, 175: 0, 191: 0, 239: 2, 243: -2, 251: -2, 255: 2, 1: -2}},
		{ggml.TQ2_0, func(b []byte) {
			b[0] = 0x02 | 0x01<<2 | 0x00<<4 | 0x02<<6 // values 0, 32, 64, 96: +1, 0, -1, +1
			b[63] = 0x80                              // value 128+96+31 = 255: +1; 159, 191, 223: -1
			put16(b[64:], half)
		}, map[int]float32{0: 0.5, 32: 0, 64: -0.5, 96: 0.5, 255: 0.5, 223: -0.5, 159: -0.5, 1: -0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			bs, n := tt.typ.TypeSize(), tt.typ.BlockSize()
			b := make([]byte, 2*bs)
			tt.build(b[bs:]) // the second block, to check block offsets
			y := make([]float32, 2*n)
			mustKernel(t, tt.typ).Dequantize(b, y)
			for i, want := range tt.want {
				if got := y[n+i]; got != want {
					t.Errorf("value %d = %g, want %g", i, got, want)
				}
			}
		})
	}
}

// TestMoreTypesQuantize checks the quantizers llama-quantize uses without
// an importance matrix: hand examples, zero input, and round-trip error.
func TestMoreTypesQuantize(t *testing.T) {
	limits := map[ggml.Type]float64{
		ggml.Q4_1: 0.12, ggml.Q5_0: 0.07, ggml.Q5_1: 0.06, ggml.IQ4_NL: 0.1, ggml.MXFP4: 0.2,
	}
	rng := rand.New(rand.NewPCG(15, 17))
	for typ, limit := range limits {
		k := mustKernel(t, typ)
		n := 4096
		x := randomFloats(rng, n, 0.02)
		q := make([]byte, rowBytes(t, typ, n))
		k.Quantize(x, q)
		y := make([]float32, n)
		k.Dequantize(q, y)
		var se, sx float64
		for i := range x {
			d := float64(x[i]) - float64(y[i])
			se += d * d
			sx += float64(x[i]) * float64(x[i])
		}
		rel := math.Sqrt(se / sx)
		t.Logf("%s: relative RMS round-trip error %.4f", typ, rel)
		if rel > limit {
			t.Errorf("%s: relative RMS round-trip error %.4g > %g", typ, rel, limit)
		}
	}
	// Ternary types: values in {-a, 0, a} survive exactly (up to fp16 a).
	for _, typ := range []ggml.Type{ggml.TQ1_0, ggml.TQ2_0} {
		k := mustKernel(t, typ)
		n := 1024
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.IntN(3)-1) * 0.75
		}
		x[5] = 0.75 // at least one nonzero per block
		x[256+5], x[512+5], x[768+5] = -0.75, 0.75, 0.75
		q := make([]byte, rowBytes(t, typ, n))
		k.Quantize(x, q)
		y := make([]float32, n)
		k.Dequantize(q, y)
		for i := range x {
			if x[i] != y[i] {
				t.Fatalf("%s: value %d: %v → %v", typ, i, x[i], y[i])
			}
		}
	}
	// Zero input gives blocks that dequantize to zero.
	for _, typ := range []ggml.Type{ggml.Q4_1, ggml.Q5_0, ggml.Q5_1, ggml.IQ4_NL, ggml.MXFP4, ggml.TQ1_0, ggml.TQ2_0} {
		k := mustKernel(t, typ)
		q := make([]byte, rowBytes(t, typ, 256))
		for i := range q {
			q[i] = 0x55
		}
		k.Quantize(make([]float32, 256), q)
		y := make([]float32, 256)
		k.Dequantize(q, y)
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%s: zero input dequantizes to %v at %d", typ, v, i)
			}
		}
	}
	// Hand examples.
	x := make([]float32, 32)
	x[0], x[1], x[2], x[16] = -1, 2, 0.5, 0.49 // Q4_1: min -1, d = 3/15 = 0.2
	q := make([]byte, q4_1BlockSize)
	mustKernel(t, ggml.Q4_1).Quantize(x, q)
	// (x+1)/0.2 + 0.5, truncated: -1 → 0, 2 → 15, 0.5 → 8 (7.5+0.5), 0.49 → 7 (7.45+.5=7.95), 0 → 5
	if got := []uint8{q[4] & 0xf, q[5] & 0xf, q[6] & 0xf, q[4] >> 4, q[7] & 0xf}; fmt.Sprint(got) != "[0 15 8 7 5]" {
		t.Errorf("Q4_1 quants %v, want [0 15 8 7 5]", got)
	}
	// MXFP4: amax 6 → e = floor(log2 6) - 2 + 127 = 127, scale 2^-1: codebook ±0..±6.
	clear(x)
	x[0], x[1], x[2], x[3] = 6, -6, 0.3, 0.25
	q = make([]byte, mxfp4BlockSize)
	mustKernel(t, ggml.MXFP4).Quantize(x, q)
	// 6 → 12*0.5 (index 7), -6 → index 15, 0.3 → 0.5 (index 1), 0.25: tie between 0 and 0.5 → first (0).
	if got := []uint8{q[0], q[1] & 0xf, q[2] & 0xf, q[3] & 0xf, q[4] & 0xf}; fmt.Sprint(got) != "[127 7 15 1 0]" {
		t.Errorf("MXFP4 e and indices %v, want [127 7 15 1 0]", got)
	}
}

// BenchmarkDotMoreTypes measures the Go and (where installed) SIMD dot
// products of the types above side by side, one weight row of 4096 values
// against a quantized activation row, and decode as the engine runs it
// ("gemm": Kernel.Gemm of all the rows against one activation row, which
// picks the kernels for rows QuantizeActivations writes); MB/s is weight
// bandwidth.
//
//	go test -run '^$' -bench BenchmarkDotMoreTypes -cpu 1 ./engine/quant/
func BenchmarkDotMoreTypes(b *testing.B) {
	const n, rows = 4096, 64 // 64 rows so the weights are not all in L1
	for _, m := range moreTypes {
		k := mustKernel(b, m.typ)
		rng := rand.New(rand.NewPCG(1, 2))
		rb := rowBytes(b, m.typ, n)
		w := randomRow(b, m.typ, n*rows, rng, 1)
		a := make([]byte, ActivationSize(k.VecDotType, n))
		QuantizeActivations(k.VecDotType, randomFloats(rng, n, 1), a)
		dots := []struct {
			name string
			dot  func(n int, w, a []byte) float32
		}{{"go", k.GoDot}}
		if k.SIMD != "" {
			dots = append(dots, struct {
				name string
				dot  func(n int, w, a []byte) float32
			}{k.SIMD, k.Dot})
		}
		for _, d := range dots {
			b.Run(m.typ.String()+"/"+d.name, func(b *testing.B) {
				b.SetBytes(int64(rb))
				var sink float32
				for i := 0; b.Loop(); i++ {
					r := i % rows
					sink += d.dot(n, w[r*rb:(r+1)*rb], a)
				}
				_ = sink
			})
		}
		b.Run(m.typ.String()+"/gemm", func(b *testing.B) {
			b.SetBytes(int64(rows * rb))
			out := make([]float32, rows)
			for b.Loop() {
				k.Gemm(n, w, rb, rows, a, len(a), 1, out, rows)
			}
		})
	}
}
