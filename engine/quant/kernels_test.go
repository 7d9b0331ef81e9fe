package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// baseTypes are the weight types implemented in this file's package
// outside the IQ family.
var baseTypes = []ggml.Type{
	ggml.F32, ggml.F16, ggml.BF16, ggml.Q8_0, ggml.Q4_0,
	ggml.Q2_K, ggml.Q3_K, ggml.Q4_K, ggml.Q5_K, ggml.Q6_K,
}

func mustKernel(t testing.TB, typ ggml.Type) *Kernel {
	t.Helper()
	k, err := For(typ)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func rowBytes(t testing.TB, typ ggml.Type, n int) int {
	t.Helper()
	b, err := typ.RowSize(int64(n))
	if err != nil {
		t.Fatal(err)
	}
	return int(b)
}

func randomRow(t testing.TB, typ ggml.Type, n int, rng *rand.Rand, scale float32) []byte {
	t.Helper()
	w := make([]byte, rowBytes(t, typ, n))
	mustKernel(t, typ).Random(w, rng, scale)
	return w
}

func randomFloats(rng *rand.Rand, n int, scale float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * scale
	}
	return x
}

func TestBlockSizes(t *testing.T) {
	sizes := []struct {
		typ  ggml.Type
		got  int
		elem int
	}{
		{ggml.Q4_0, q4_0BlockSize, qk4_0},
		{ggml.Q8_0, q8_0BlockSize, qk8_0},
		{ggml.Q2_K, q2KBlockSize, qkK},
		{ggml.Q3_K, q3KBlockSize, qkK},
		{ggml.Q4_K, q4KBlockSize, qkK},
		{ggml.Q5_K, q5KBlockSize, qkK},
		{ggml.Q6_K, q6KBlockSize, qkK},
		{ggml.Q8_K, q8KBlockSize, qkK},
	}
	for _, s := range sizes {
		if s.got != s.typ.TypeSize() || s.elem != s.typ.BlockSize() {
			t.Errorf("%s: block %d bytes/%d values, ggml says %d/%d", s.typ, s.got, s.elem, s.typ.TypeSize(), s.typ.BlockSize())
		}
	}
	for _, typ := range baseTypes {
		k := mustKernel(t, typ)
		if got := ActivationSize(k.VecDotType, 256); got != rowBytes(t, k.VecDotType, 256) {
			t.Errorf("ActivationSize(%s, 256) = %d, want %d", k.VecDotType, got, rowBytes(t, k.VecDotType, 256))
		}
		// One block exactly: Random, Dequantize and Dot must stay inside it.
		bs := typ.BlockSize()
		if bs == 1 {
			bs = 32
		}
		w := randomRow(t, typ, bs, rand.New(rand.NewPCG(1, 1)), 1)
		y := make([]float32, bs)
		k.Dequantize(w, y)
		a := make([]byte, ActivationSize(k.VecDotType, bs))
		QuantizeActivations(k.VecDotType, y, a)
		_ = k.Dot(bs, w, a)
	}
}

func TestVecDotTypes(t *testing.T) {
	want := map[ggml.Type]ggml.Type{
		ggml.F32: ggml.F32, ggml.F16: ggml.F16, ggml.BF16: ggml.BF16,
		ggml.Q8_0: ggml.Q8_0, ggml.Q4_0: ggml.Q8_0,
		ggml.Q2_K: ggml.Q8_K, ggml.Q3_K: ggml.Q8_K, ggml.Q4_K: ggml.Q8_K, ggml.Q5_K: ggml.Q8_K, ggml.Q6_K: ggml.Q8_K,
	}
	for typ, vt := range want {
		if got := mustKernel(t, typ).VecDotType; got != vt {
			t.Errorf("%s: VecDotType %s, want %s", typ, got, vt)
		}
	}
}

// TestDotMatchesDequantized checks Dot(w, a) against the float64 dot of
// Dequantize(w) with the activation values as the dot sees them
// (DequantizeActivations). Integer parts are exact, so only float32 rounding
// differs: |Dot - ref| <= ((n/32 + 20) * 2^-24) * Σ|w_i*a_i|, i.e. one
// rounding per block or lane addition plus four per dequantized value
// (K types with mins round d*sc*q and dmin*m separately).
func TestDotMatchesDequantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range baseTypes {
		k := mustKernel(t, typ)
		ns := []int{256, 4096}
		if typ.BlockSize() == 1 {
			ns = append(ns, 31, 4096+17)
		} else if typ.BlockSize() == 32 {
			ns = append(ns, 32, 96)
		}
		for _, n := range ns {
			for trial := 0; trial < 20; trial++ {
				scale := float32(math.Ldexp(1, rng.IntN(12)-6))
				w := randomRow(t, typ, n, rng, scale)
				x := randomFloats(rng, n, 1+rng.Float32()*10)
				a := make([]byte, ActivationSize(k.VecDotType, n))
				QuantizeActivations(k.VecDotType, x, a)
				wf := make([]float32, n)
				af := make([]float32, n)
				k.Dequantize(w, wf)
				DequantizeActivations(k.VecDotType, a, af)
				var ref, mag float64
				for i := range wf {
					p := float64(wf[i]) * float64(af[i])
					ref += p
					mag += math.Abs(p)
				}
				got := k.Dot(n, w, a)
				// Bound: n/32+16 float32 roundings of partial sums of at
				// most mag, plus one rounding per dequantized value whose
				// unrounded magnitude is at most 4x its result for K types
				// with mins (d*sc*q - dmin*m): 4*2^-24*mag.
				bound := (float64(n/32+16)*0x1p-24+4*0x1p-24)*mag + 1e-30
				if math.Abs(float64(got)-ref) > bound {
					t.Errorf("%s n=%d: Dot = %v, float64 dot of dequantized = %v (diff %g > bound %g)",
						typ, n, got, ref, float64(got)-ref, bound)
				}
			}
		}
	}
}

func TestRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range baseTypes {
		k := mustKernel(t, typ)
		for _, scale := range []float32{0.01, 1, 30} {
			n := 8192
			w := randomRow(t, typ, n, rng, scale)
			y := make([]float32, n)
			k.Dequantize(w, y)
			var sum float64
			for i, v := range y {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s scale %v: value %d is %v", typ, scale, i, v)
				}
				sum += math.Abs(float64(v))
			}
			mean := sum / float64(n)
			if mean < float64(scale)/3 || mean > float64(scale)*3 {
				t.Errorf("%s scale %v: mean |value| %v, want within a factor 3 of scale", typ, scale, mean)
			}
		}
	}
}

func TestDotNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range baseTypes {
		k := mustKernel(t, typ)
		n := 1024
		w := randomRow(t, typ, n, rng, 1)
		a := make([]byte, ActivationSize(k.VecDotType, n))
		x := randomFloats(rng, n, 1)
		if allocs := testing.AllocsPerRun(10, func() {
			QuantizeActivations(k.VecDotType, x, a)
			k.Dot(n, w, a)
		}); allocs != 0 {
			t.Errorf("%s: %v allocations per quantize+dot", typ, allocs)
		}
	}
}

func TestQuantizeQ8K(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := 0; trial < 50; trial++ {
		n := 512
		x := randomFloats(rng, n, float32(math.Ldexp(1, rng.IntN(20)-10)))
		dst := make([]byte, ActivationSize(ggml.Q8_K, n))
		QuantizeQ8K(x, dst)
		for b := 0; b < n/qkK; b++ {
			blk := (*[q8KBlockSize]byte)(dst[b*q8KBlockSize:])
			d := q8KD(blk)
			xb := x[b*qkK : (b+1)*qkK]
			imax := 0
			for i, v := range xb {
				if abs32(v) > abs32(xb[imax]) {
					imax = i
				}
			}
			if q := int8(blk[q8KQsOff+imax]); q != -127 {
				t.Fatalf("block %d: max-magnitude value quantized to %d, want -127", b, q)
			}
			for i, v := range xb {
				q := int8(blk[q8KQsOff+i])
				if err := math.Abs(float64(v) - float64(d)*float64(q)); err > 0.5001*math.Abs(float64(d)) {
					t.Fatalf("block %d value %d: %v quantized to %d*%v (error %g > d/2)", b, i, v, q, d, err)
				}
			}
			for j := 0; j < 16; j++ {
				var s int32
				for _, q := range blk[q8KQsOff+16*j : q8KQsOff+16*j+16] {
					s += int32(int8(q))
				}
				if got := q8KBsum(blk, j); got != s {
					t.Fatalf("block %d bsums[%d] = %d, want %d", b, j, got, s)
				}
			}
		}
	}

	// Hand example: max magnitude -2 → iscale 63.5, d = 1/63.5.
	x := make([]float32, qkK)
	x[0], x[1], x[2], x[3], x[17] = -2, 1, 0.5, 1.0/127, 2
	dst := make([]byte, q8KBlockSize)
	QuantizeQ8K(x, dst)
	blk := (*[q8KBlockSize]byte)(dst)
	if d := q8KD(blk); d != float32(1)/float32(63.5) {
		t.Errorf("d = %v, want 1/63.5", d)
	}
	// -2*63.5 = -127; 63.5 → 64 (ties to even); 31.75 → 32; 0.5 → 0 (tie to even); 127 → 127
	// x[0] is the first max-magnitude value: iscale = -127/-2 = 63.5.
	wantQ := map[int]int8{0: -127, 1: 64, 2: 32, 3: 0, 17: 127}
	for i, w := range wantQ {
		if q := int8(blk[q8KQsOff+i]); q != w {
			t.Errorf("qs[%d] = %d, want %d", i, q, w)
		}
	}
	if got := q8KBsum(blk, 0); got != -127+64+32 {
		t.Errorf("bsums[0] = %d, want %d", got, -127+64+32)
	}
	if got := q8KBsum(blk, 1); got != 127 {
		t.Errorf("bsums[1] = %d, want 127", got)
	}
	// All zero → zero block.
	clear(x)
	for i := range dst {
		dst[i] = 0xff
	}
	QuantizeQ8K(x, dst)
	for i, b := range dst {
		if b != 0 {
			t.Fatalf("zero block: byte %d = %#x", i, b)
		}
	}
}

func TestQuantizeQ8_0(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 50; trial++ {
		n := 256
		x := randomFloats(rng, n, float32(math.Ldexp(1, rng.IntN(20)-10)))
		for _, q := range []struct {
			name string
			f    func([]float32, []byte)
		}{{"QuantizeQ8_0", QuantizeQ8_0}, {"quantize_row_q8_0_ref", mustKernel(t, ggml.Q8_0).Quantize}} {
			dst := make([]byte, ActivationSize(ggml.Q8_0, n))
			q.f(x, dst)
			y := make([]float32, n)
			dequantizeQ8_0(dst, y)
			for b := 0; b < n/qk8_0; b++ {
				var amax float32
				for _, v := range x[b*qk8_0 : (b+1)*qk8_0] {
					amax = max(amax, abs32(v))
				}
				d := float64(amax) / 127
				d16 := float64(fp16At(dst[b*q8_0BlockSize:]))
				for i := b * qk8_0; i < (b+1)*qk8_0; i++ {
					// half a step, plus the fp16 rounding of d times |q| ≤ 127.
					if err := math.Abs(float64(x[i]) - float64(y[i])); err > (0.5*d+127*math.Abs(d-d16))*1.0001 {
						t.Fatalf("%s: value %d: %v → %v (error %g, d %g)", q.name, i, x[i], y[i], err, d)
					}
				}
			}
		}
	}
	// Ties: amax 127 gives d = 1 and id = 1, so 2.5 is a tie.
	x := make([]float32, qk8_0)
	x[0], x[1], x[2], x[3] = 127, 2.5, -3.5, 0.5
	simd := make([]byte, q8_0BlockSize)
	ref := make([]byte, q8_0BlockSize)
	QuantizeQ8_0(x, simd)
	mustKernel(t, ggml.Q8_0).Quantize(x, ref)
	for i, w := range []struct{ simd, ref int8 }{{127, 127}, {2, 3}, {-4, -4}, {0, 1}} {
		if got := int8(simd[2+i]); got != w.simd {
			t.Errorf("QuantizeQ8_0: qs[%d] = %d, want %d (ties to even)", i, got, w.simd)
		}
		if got := int8(ref[2+i]); got != w.ref {
			t.Errorf("quantize_row_q8_0_ref: qs[%d] = %d, want %d (ties away from zero)", i, got, w.ref)
		}
	}
	if d := fp16At(simd); d != 1 {
		t.Errorf("d = %v, want 1", d)
	}
}

func TestQuantizeQ4_0(t *testing.T) {
	k := mustKernel(t, ggml.Q4_0)
	// Hand example: max magnitude value 4 → d = -0.5, id = -2.
	x := make([]float32, qk4_0)
	x[0], x[1], x[16], x[17], x[2] = 4, -4, 1, -1.1, 0.26
	dst := make([]byte, q4_0BlockSize)
	k.Quantize(x, dst)
	if d := fp16At(dst); d != -0.5 {
		t.Fatalf("d = %v, want -0.5", d)
	}
	// q = min(15, trunc(x*id + 8.5)): 4→0, -4→16→15, 1→6, -1.1→10 (10.7), 0.26→7 (7.98), 0→8
	want := map[int]byte{0: 0, 1: 15, 16: 6, 17: 10, 2: 7, 3: 8}
	for i, w := range want {
		q := dst[2+i%16]
		if i >= 16 {
			q >>= 4
		}
		if q&0xf != w {
			t.Errorf("q[%d] = %d, want %d", i, q&0xf, w)
		}
	}
	// Round trip on random data.
	rng := rand.New(rand.NewPCG(13, 14))
	n := 1024
	xs := randomFloats(rng, n, 3)
	dst = make([]byte, rowBytes(t, ggml.Q4_0, n))
	k.Quantize(xs, dst)
	y := make([]float32, n)
	k.Dequantize(dst, y)
	for b := 0; b < n/qk4_0; b++ {
		var amax float64
		for _, v := range xs[b*qk4_0 : (b+1)*qk4_0] {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		d := amax / 8
		for i := b * qk4_0; i < (b+1)*qk4_0; i++ {
			// half a step, plus the clamp at +7*d for values up to 8*d on the
			// side opposite the max, plus the fp16 rounding of d.
			if err := math.Abs(float64(xs[i]) - float64(y[i])); err > d*(1+16*0x1p-11) {
				t.Fatalf("value %d: %v → %v (d %g)", i, xs[i], y[i], d)
			}
		}
	}
}

func le16(v uint16) []byte { return []byte{byte(v), byte(v >> 8)} }

// TestDequantizeHandBuilt decodes blocks built by hand from the layouts in
// ggml-common.h and compares with values computed by hand.
func TestDequantizeHandBuilt(t *testing.T) {
	type check struct {
		i    int
		want float32
	}
	half, one, two := Float32ToFP16(0.5), Float32ToFP16(1), Float32ToFP16(2)
	tests := []struct {
		typ    ggml.Type
		block  func() []byte
		checks []check
	}{
		{ggml.F32, func() []byte {
			return binary.LittleEndian.AppendUint32(nil, math.Float32bits(-1.25))
		}, []check{{0, -1.25}}},
		{ggml.F16, func() []byte { return le16(0xc100) }, []check{{0, -2.5}}},
		{ggml.BF16, func() []byte { return le16(0x3fc0) }, []check{{0, 1.5}}},
		{ggml.Q8_0, func() []byte {
			b := make([]byte, 34)
			copy(b, le16(half))
			b[2], b[3], b[33] = 10, 0x80, 0xff // 10, -128, -1
			return b
		}, []check{{0, 5}, {1, -64}, {2, 0}, {31, -0.5}}},
		{ggml.Q4_0, func() []byte {
			b := make([]byte, 18)
			copy(b, le16(two))
			b[2] = 0x3f  // value 0: 15-8=7, value 16: 3-8=-5
			b[17] = 0x08 // value 15: 0, value 31: -8
			return b
		}, []check{{0, 14}, {16, -10}, {15, 0}, {31, -16}, {1, -16}}},
		{ggml.Q2_K, func() []byte {
			b := make([]byte, 84)
			b[0] = 0x23              // group 0 (values 0-15): scale 3, min 2
			b[1] = 0x15              // group 1 (16-31): scale 5, min 1
			b[2] = 0x07              // group 2 (32-47, shift 2 of bytes 0-15): scale 7, min 0
			b[15] = 0xf1             // group 15 (240-255, shift 6 of qs[48..63] second half): scale 1, min 15
			b[16+0] = 0x0b           // value 0: 3; value 32: (0x0b>>2)&3 = 2
			b[16+16] = 0x01          // value 16: 1
			b[16+63] = 0xc0          // value 255: (0xc0>>6)&3 = 3
			copy(b[80:], le16(half)) // d
			copy(b[82:], le16(two))  // dmin
			return b
		}, []check{{0, 0.5*3*3 - 2*2}, {1, -4}, {16, 0.5*5*1 - 2*1}, {32, 0.5 * 7 * 2}, {255, 0.5*1*3 - 2*15}}},
		{ggml.Q3_K, func() []byte {
			b := make([]byte, 110)
			// scales: j=0: low 4 bits of s[0], high 2 bits = s[8]&3 → 0x21=33 → +1.
			// j=8: low bits s[0]>>4, high bits (s[8]>>4)&3.  j=15: s[7]>>4, (s[11]>>6)&3.
			b[96+0] = 0x51     // scale0 low 1, scale8 low 5
			b[96+8] = 0x02     // scale0 high 2 → 33 → +1;  scale8 high (0>>4)&3=0 → 5 → -27
			b[96+7] = 0xf0     // scale15 low 15
			b[96+11] = 0xc0    // scale15 high 3 → 63 → +31
			b[0] = 0x01        // hmask: value 0 has bit0 set (no -4)
			b[32] = 0x02       // qs[0]: value 0 low bits 2
			b[32+15] = 0xc0    // value 15+... qs[15]>>6 is value 15+96=111 (group 6, scale 6)
			b[31] = 0x80       // hmask[31] bit 7: value 255 (group 7 → chunk 1 shift 6, l=31)
			b[32+32+31] = 0x40 // qs[63]: value 255 low bits (0x40>>6)&3 = 1
			copy(b[108:], le16(two))
			return b
		}, []check{{0, 2 * 1 * 2}, {1, 2 * 1 * -4}, {128, 2 * -27 * -4}, {255, 2 * 31 * 1}}},
		{ggml.Q4_K, func() []byte {
			b := make([]byte, 144)
			copy(b[0:], le16(two))  // d
			copy(b[2:], le16(half)) // dmin
			s := b[4:16]
			s[0] = 3     // scale0 = 3
			s[4] = 0x45  // min0 = 5, bit 6 → scale4 high bits = 1
			s[8] = 0x21  // scale4 low = 1, min4 low = 2
			s[0] |= 0xc0 // min4 high bits... no: scale4 high = s[0]>>6 = 3
			// scale4 = 1 | 3<<4 = 49; min4 = 2 | (s[4]>>6)<<4 = 2 | 1<<4 = 18
			b[16+0] = 0x9a  // value 0: 10 (scale0); value 32: 9 (scale1 = s[1]&63 = 0)
			b[16+64] = 0x07 // value 128 (chunk 2, low, scale4): 7
			return b
		}, []check{{0, 2*3*10 - 0.5*5}, {32, 0}, {128, 2*49*7 - 0.5*18}, {129, -0.5 * 18}}},
		{ggml.Q5_K, func() []byte {
			b := make([]byte, 176)
			copy(b[0:], le16(one))
			copy(b[2:], le16(two))
			s := b[4:16]
			s[0], s[4] = 2, 1 // scale0 2, min0 1
			s[1], s[5] = 3, 0 // scale1 3, min1 0
			s[3], s[7] = 4, 0 // scale3 4 (chunk 1 high nibbles)
			qh := b[16:48]
			qh[0] = 0x01 | 0x02 | 0x08 // value 0 +16, value 32 +16, value 96 (chunk 1 high) +16
			qs := b[48:176]
			qs[0] = 0xf3  // value 0: 3+16=19; value 32: 15+16=31
			qs[32] = 0x50 // value 64: 0 (scale2 = 0); value 96: 5+16 = 21
			return b
		}, []check{{0, 2*19 - 2*1}, {32, 3 * 31}, {96, 4 * 21}, {1, -2}}},
		{ggml.Q6_K, func() []byte {
			b := make([]byte, 210)
			ql, qh, sc := b[0:128], b[128:192], b[192:208]
			copy(b[208:], le16(half))
			sc[0], sc[2], sc[4], sc[6], sc[1], sc[15] = 2, 0xfe, 4, 1, 3, 10 // sc[2] = -2
			ql[0] = 0x5a                                                     // value 0 low 10; value 64 low 5
			qh[0] = 0x1d                                                     // value 0 high 1 (→ 26-32=-6); value 32 high 3; value 64 high 1; value 96 high 0
			ql[32] = 0x0f                                                    // value 32 low 15 → 15|48 = 63 → 31; value 96 low 0 → -32
			ql[64+63] = 0xf0                                                 // value 255 = n=1, l=31, q4: ql[32+31]>>4 | (qh>>6)&3<<4 = 15 → -17, scale sc[8+1+6]=sc[15]
			return b
		}, []check{{0, 0.5 * 2 * -6}, {32, 0.5 * -2 * 31}, {64, 0.5 * 4 * (5 | 16 - 32)}, {96, 0.5 * 1 * -32}, {16, 0.5 * 3 * -32}, {255, 0.5 * 10 * -17}}},
	}
	for _, tt := range tests {
		k := mustKernel(t, tt.typ)
		blk := tt.block()
		n := tt.typ.BlockSize()
		if len(blk) != tt.typ.TypeSize() {
			t.Fatalf("%s: test block is %d bytes, want %d", tt.typ, len(blk), tt.typ.TypeSize())
		}
		y := make([]float32, n)
		k.Dequantize(blk, y)
		for _, c := range tt.checks {
			if y[c.i] != c.want {
				t.Errorf("%s: value %d = %v, want %v", tt.typ, c.i, y[c.i], c.want)
			}
		}
	}
}

// TestQuantizeRoundTrip quantizes Gaussian data with every kernel that has a
// reference quantizer and bounds the relative RMS error of the round trip.
func TestQuantizeRoundTrip(t *testing.T) {
	limits := map[ggml.Type]float64{
		ggml.F32: 0, ggml.F16: 0x1p-11, ggml.BF16: 0x1p-8,
		ggml.Q8_0: 0.01, ggml.Q4_0: 0.15, ggml.Q4_K: 0.12, ggml.Q5_K: 0.06, ggml.Q6_K: 0.03,
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for typ, limit := range limits {
		k := mustKernel(t, typ)
		if k.Quantize == nil {
			t.Errorf("%s: no Quantize", typ)
			continue
		}
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
		if rel := math.Sqrt(se / sx); rel > limit {
			t.Errorf("%s: relative RMS round-trip error %.4g > %g", typ, rel, limit)
		}
	}
	// Zero input gives zero blocks that dequantize to zero.
	for typ := range limits {
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
}
