//go:build !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// simdQ8Dots are the kernels of the simd_q8 group. exact means bit-identical
// to GoDot (NaN results only need to be NaN on both sides).
var simdQ8Dots = []struct {
	typ    ggml.Type
	name   string // instruction set
	dot    func(n int, w, a []byte) float32
	exact  bool
	avx512 bool // needs simdQ8HasAVX512
}{
	{ggml.Q8_0, "avx2", dotQ8_0AVX2, true, false},
	{ggml.Q8_0, "avx512", dotQ8_0AVX512, true, true},
	{ggml.Q4_0, "avx2", dotQ4_0AVX2, true, false},
	{ggml.Q5_0, "avx2", dotQ5_0AVX2, true, false},
	{ggml.IQ4_NL, "avx2", dotIQ4NLAVX2, true, false},
	{ggml.MXFP4, "avx2", dotMXFP4AVX2, true, false},
	{ggml.Q4_1, "avx2", dotQ4_1AVX2, true, false},
	{ggml.Q5_1, "avx2", dotQ5_1AVX2, true, false},
	{ggml.F16, "avx2", dotF16AVX2, true, false},
	{ggml.BF16, "avx2", dotBF16AVX2, true, false},
	// dotF32 emulates FMA in float64, which double-rounds on rare ties.
	{ggml.F32, "avx2", dotF32AVX2, false, false},
}

func simdQ8Skip(t testing.TB) {
	t.Helper()
	if !simdQ8HasAVX2 {
		t.Skip("CPU lacks AVX2/FMA/F16C")
	}
}

func TestSIMDQ8Installed(t *testing.T) {
	simdQ8Skip(t)
	for _, d := range simdQ8Dots {
		want := "avx2"
		if d.typ == ggml.Q8_0 && simdQ8HasAVX512 {
			want = "avx512"
		}
		if k := mustKernel(t, d.typ); k.SIMD != want {
			t.Errorf("%s: Kernel.SIMD = %q, want %s", d.typ, k.SIMD, want)
		}
	}
	if quantizeQ8_0Arch == nil || quantizeQ8KArch == nil {
		t.Error("activation quantizers not hooked")
	}
}

// simdQ8Elems returns the element counts to test for typ: one block, a few
// blocks around the 8-block groups of the assembly, and a long row.
func simdQ8Elems(typ ggml.Type) []int {
	if typ.BlockSize() == 1 {
		return []int{1, 7, 31, 32, 33, 63, 64, 65, 100, 4096, 4099}
	}
	var ns []int
	for _, nb := range []int{1, 2, 7, 8, 9, 15, 16, 17, 24, 128, 131} {
		ns = append(ns, nb*typ.BlockSize())
	}
	return ns
}

// simdQ8Fill names a way to fill a weight row w and an activation row a of
// n elements.
type simdQ8Fill struct {
	name string
	fill func(typ, vt ggml.Type, n int, w, a []byte, rng *rand.Rand)
}

// simdQ8Scales sets every block's fp16 scale (at offset 0 of each block of
// size bs) to h.
func simdQ8Scales(b []byte, bs int, h uint16) {
	for i := 0; i+bs <= len(b); i += bs {
		binary.LittleEndian.PutUint16(b[i:], h)
	}
}

func simdQ8Fills(t *testing.T) []simdQ8Fill {
	blockOf := func(typ ggml.Type) int {
		if typ.BlockSize() == 1 {
			return 0
		}
		return typ.TypeSize()
	}
	quants := func(b []byte, bs int, q func(j int) byte) {
		for i := 0; i+bs <= len(b); i += bs {
			for j := 2; j < bs; j++ {
				b[i+j] = q(j)
			}
		}
	}
	return []simdQ8Fill{
		{"random", func(typ, vt ggml.Type, n int, w, a []byte, rng *rand.Rand) {
			mustKernel(t, typ).Random(w, rng, 1)
			QuantizeActivations(vt, randomFloats(rng, n, 1), a)
		}},
		{"random bytes", func(typ, vt ggml.Type, n int, w, a []byte, rng *rand.Rand) {
			for i := range w {
				w[i] = byte(rng.Uint32())
			}
			for i := range a {
				a[i] = byte(rng.Uint32())
			}
		}},
		{"zero", func(typ, vt ggml.Type, n int, w, a []byte, rng *rand.Rand) {
			clear(w)
			clear(a)
		}},
		{"extreme quants", func(typ, vt ggml.Type, n int, w, a []byte, rng *rand.Rand) {
			wb, ab := blockOf(typ), blockOf(vt)
			if wb == 0 {
				// Largest finite values of opposite signs, and their negations.
				var h uint16 = 0x7bff // fp16 65504
				if typ == ggml.BF16 {
					h = 0x7f7f // bf16 3.39e38: products overflow
				}
				for i := 0; i+1 < len(w); i += 2 {
					binary.LittleEndian.PutUint16(w[i:], h|uint16(i&2)<<14)
				}
				for i := 0; i+1 < len(a); i += 2 {
					binary.LittleEndian.PutUint16(a[i:], h|uint16(i&4)<<13)
				}
				if typ == ggml.F32 {
					for i := 0; i+3 < len(w); i += 4 {
						binary.LittleEndian.PutUint32(w[i:], 0x7f7fffff|uint32(i&8)<<28)
						binary.LittleEndian.PutUint32(a[i:], 0x1f7fffff|uint32(i&16)<<27)
					}
				}
				return
			}
			// -128 and 127 in every combination, and 0x00/0xff nibbles.
			quants(w, wb, func(j int) byte { return []byte{0x80, 0x7f, 0xff, 0x00}[j%4] })
			quants(a, ab, func(j int) byte { return []byte{0x80, 0x80, 0x7f, 0x81, 0x80}[j%5] })
			simdQ8Scales(w, wb, 0x7bff) // largest fp16
			simdQ8Scales(a, ab, 0x7bff)
		}},
		{"subnormal scales", func(typ, vt ggml.Type, n int, w, a []byte, rng *rand.Rand) {
			mustKernel(t, typ).Random(w, rng, 1)
			QuantizeActivations(vt, randomFloats(rng, n, 1), a)
			wb, ab := blockOf(typ), blockOf(vt)
			if wb == 0 {
				// Tiny values: subnormal fp16 inputs, underflowing bf16/f32 products.
				for i := 0; i+1 < len(w); i += 2 {
					binary.LittleEndian.PutUint16(w[i:], uint16(rng.IntN(0x400))|uint16(rng.IntN(2))<<15)
				}
				return
			}
			for i := 0; i+wb <= len(w); i += wb {
				binary.LittleEndian.PutUint16(w[i:], uint16(1+rng.IntN(0x3ff)))
			}
			for i := 0; i+ab <= len(a); i += ab {
				binary.LittleEndian.PutUint16(a[i:], []uint16{1, 0x3ff, 0x8001, 0x0400}[rng.IntN(4)])
			}
		}},
	}
}

// simdQ8Bound is 1e-6·Σ|w·a| computed from the dequantized rows.
func simdQ8Bound(t *testing.T, typ, vt ggml.Type, n int, w, a []byte) float64 {
	x := make([]float32, n)
	y := make([]float32, n)
	mustKernel(t, typ).Dequantize(w, x)
	DequantizeActivations(vt, a, y)
	var s float64
	for i := range x {
		s += math.Abs(float64(x[i]) * float64(y[i]))
	}
	return 1e-6 * s
}

func TestSIMDQ8Dot(t *testing.T) {
	simdQ8Skip(t)
	rng := rand.New(rand.NewPCG(81, 82))
	for _, d := range simdQ8Dots {
		if d.avx512 && !simdQ8HasAVX512 {
			continue
		}
		k := mustKernel(t, d.typ)
		for _, f := range simdQ8Fills(t) {
			for _, n := range simdQ8Elems(d.typ) {
				for trial := 0; trial < 4; trial++ {
					w := make([]byte, rowBytes(t, d.typ, n))
					a := make([]byte, ActivationSize(k.VecDotType, n))
					f.fill(d.typ, k.VecDotType, n, w, a, rng)
					want := k.GoDot(n, w, a)
					got := d.dot(n, w, a)
					if math.Float32bits(got) == math.Float32bits(want) || (got != got && want != want) {
						continue
					}
					if d.exact {
						t.Fatalf("%s %s %s n=%d: %v (%#x), Go %v (%#x)", d.typ, d.name, f.name, n, got, math.Float32bits(got), want, math.Float32bits(want))
					}
					if bound := simdQ8Bound(t, d.typ, k.VecDotType, n, w, a); !(math.Abs(float64(got)-float64(want)) <= bound) {
						t.Fatalf("%s %s %s n=%d: %v, Go %v, bound %g", d.typ, d.name, f.name, n, got, want, bound)
					}
				}
			}
		}
	}
}

// TestSIMDQ8F32Exactness counts how often the F32 kernel differs from the
// float64-emulated FMA of dotF32 on random rows: the two may only differ by
// a double rounding, so nearly every row must match bit for bit.
func TestSIMDQ8F32Exactness(t *testing.T) {
	simdQ8Skip(t)
	rng := rand.New(rand.NewPCG(83, 84))
	k := mustKernel(t, ggml.F32)
	const rows, n = 500, 1024
	diff := 0
	for r := 0; r < rows; r++ {
		w := randomRow(t, ggml.F32, n, rng, 1)
		a := make([]byte, 4*n)
		QuantizeActivations(ggml.F32, randomFloats(rng, n, 1), a)
		if dotF32AVX2(n, w, a) != k.GoDot(n, w, a) {
			diff++
		}
	}
	t.Logf("F32: %d of %d rows of %d differ from the Go reference", diff, rows, n)
	if diff > rows/50 {
		t.Errorf("F32: %d of %d rows differ from the Go reference", diff, rows)
	}
}

func TestSIMDQ8DotBounds(t *testing.T) {
	simdQ8Skip(t)
	// Rows exactly as long as n: the kernels must not read past them, and
	// short rows must panic in the Go wrapper, not fault in assembly.
	for _, d := range simdQ8Dots {
		if d.avx512 && !simdQ8HasAVX512 {
			continue
		}
		k := mustKernel(t, d.typ)
		n := 8 * 32
		w := make([]byte, rowBytes(t, d.typ, n))
		a := make([]byte, ActivationSize(k.VecDotType, n))
		if got := d.dot(n, w, a); got != 0 {
			t.Errorf("%s: zero rows give %v", d.typ, got)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: short weight row did not panic", d.typ)
				}
			}()
			d.dot(n, w[:len(w)-1], a)
		}()
		if got := d.dot(0, nil, nil); got != 0 {
			t.Errorf("%s: n=0 gives %v", d.typ, got)
		}
	}
}

// simdQ8Inputs are activation rows (n a multiple of 256) that exercise the
// quantizers' special cases.
func simdQ8Inputs(rng *rand.Rand) map[string][]float32 {
	const n = 1024
	in := map[string][]float32{}
	for _, e := range []int{-140, -126, -60, -20, -3, 0, 3, 20, 60, 120, 127} {
		in[fmt.Sprintf("normal 2^%d", e)] = randomFloats(rng, n, float32(math.Ldexp(1, e)))
	}
	bits := make([]float32, n)
	for i := range bits {
		bits[i] = math.Float32frombits(rng.Uint32())
	}
	in["random bits"] = bits
	finite := make([]float32, n)
	for i := range finite {
		finite[i] = math.Float32frombits(rng.Uint32() & 0xbf7fffff) // exponent < 255, no Inf/NaN
	}
	in["random finite bits"] = finite
	ties := make([]float32, n)
	for i := range ties {
		ties[i] = float32(rng.IntN(255)-127) + 0.5*float32(rng.IntN(2))
		if i%32 == 0 || i%256 == 0 {
			ties[i] = 127 // amax 127: id = 1 and iscale = -1, so halves are ties
		}
	}
	in["ties"] = ties
	// Equal magnitudes of both signs: Q8_K takes the first one.
	signs := make([]float32, n)
	for i := range signs {
		signs[i] = float32(rng.IntN(9) - 4)
	}
	signs[3], signs[200] = -6, 6
	signs[256+5], signs[256+9] = 6, -6
	signs[512+255] = -7
	in["equal magnitudes"] = signs
	special := randomFloats(rng, n, 1)
	clear(special[32:64])   // zero Q8_0 block
	clear(special[256:512]) // zero Q8_K block
	special[520] = float32(math.Inf(1))
	special[600] = float32(math.Inf(-1))
	special[601] = float32(math.Inf(1))
	special[700] = float32(math.NaN())
	special[701] = math.Float32frombits(0x7f800001) // signalling NaN
	special[1023] = math.Float32frombits(0xffc01234)
	special[10] = float32(math.Copysign(0, -1))
	special[40] = float32(math.Copysign(0, -1))
	special[64] = 1e-45              // smallest subnormal
	special[96] = 65504 * 127 * 1.01 // d overflows fp16
	special[128] = 3e38
	in["special"] = special
	return in
}

func TestSIMDQ8Quantize(t *testing.T) {
	simdQ8Skip(t)
	rng := rand.New(rand.NewPCG(85, 86))
	quantizers := []struct {
		typ       ggml.Type
		simd, ref func([]float32, []byte)
	}{
		{ggml.Q8_0, quantizeQ8_0AVX2, quantizeQ8_0Go},
		{ggml.Q8_K, quantizeQ8KAVX2, quantizeQ8KGo},
	}
	for name, x := range simdQ8Inputs(rng) {
		for _, q := range quantizers {
			for _, n := range []int{256, len(x)} {
				size := ActivationSize(q.typ, n)
				want := make([]byte, size+7)
				got := make([]byte, size+7)
				for i := range want {
					want[i], got[i] = 0xa5, 0xa5
				}
				q.ref(x[:n], want[:size])
				q.simd(x[:n], got[:size])
				for i := range want {
					if got[i] != want[i] {
						bs := q.typ.TypeSize()
						t.Fatalf("%s %s n=%d: byte %d (block %d, offset %d) = %#x, Go %#x",
							q.typ, name, n, i, i/bs, i%bs, got[i], want[i])
					}
				}
			}
		}
	}
	// The hook: the exported functions use the assembly.
	x := simdQ8Inputs(rng)["normal 2^0"]
	for _, q := range quantizers {
		want := make([]byte, ActivationSize(q.typ, len(x)))
		got := make([]byte, len(want))
		q.ref(x, want)
		QuantizeActivations(q.typ, x, got)
		if string(got) != string(want) {
			t.Errorf("QuantizeActivations(%s) differs from the Go reference", q.typ)
		}
	}
}

func TestSIMDQ8QuantizeRandomBits(t *testing.T) {
	simdQ8Skip(t)
	rng := rand.New(rand.NewPCG(87, 88))
	x := make([]float32, 256)
	for trial := 0; trial < 2000; trial++ {
		// Mostly finite values of one random scale, sometimes raw bits.
		e := rng.IntN(280) - 150
		for i := range x {
			if rng.IntN(64) == 0 {
				x[i] = math.Float32frombits(rng.Uint32())
			} else {
				x[i] = float32(math.Ldexp(rng.NormFloat64(), e))
			}
		}
		for _, q := range []struct {
			typ       ggml.Type
			simd, ref func([]float32, []byte)
		}{{ggml.Q8_0, quantizeQ8_0AVX2, quantizeQ8_0Go}, {ggml.Q8_K, quantizeQ8KAVX2, quantizeQ8KGo}} {
			want := make([]byte, ActivationSize(q.typ, len(x)))
			got := make([]byte, len(want))
			q.ref(x, want)
			q.simd(x, got)
			if string(got) != string(want) {
				t.Fatalf("%s trial %d (scale 2^%d): assembly and Go differ", q.typ, trial, e)
			}
		}
	}
}

// BenchmarkSIMDQ8Dot compares the Go and AVX2 dot products on one row of
// 4096 values (64 rows cycled, so weights come from L2); SetBytes is the
// weight row size.
func BenchmarkSIMDQ8Dot(b *testing.B) {
	simdQ8Skip(b)
	const n, rows = 4096, 64
	for _, d := range simdQ8Dots {
		if d.avx512 && !simdQ8HasAVX512 {
			continue
		}
		k := mustKernel(b, d.typ)
		rng := rand.New(rand.NewPCG(1, 2))
		rb := rowBytes(b, d.typ, n)
		w := randomRow(b, d.typ, n*rows, rng, 1)
		a := make([]byte, ActivationSize(k.VecDotType, n))
		QuantizeActivations(k.VecDotType, randomFloats(rng, n, 1), a)
		impls := []struct {
			name string
			dot  func(int, []byte, []byte) float32
		}{{"go", k.GoDot}, {d.name, d.dot}}
		if d.avx512 {
			impls = impls[1:] // Go already measured with the avx2 entry
		}
		for _, impl := range impls {
			b.Run(d.typ.String()+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(rb))
				var sink float32
				for i := 0; b.Loop(); i++ {
					r := i % rows
					sink += impl.dot(n, w[r*rb:(r+1)*rb], a)
				}
				_ = sink
			})
		}
	}
}

// BenchmarkSIMDQ8Quantize compares the Go and AVX2 activation quantizers on
// 4096 values; SetBytes is the float32 input size.
func BenchmarkSIMDQ8Quantize(b *testing.B) {
	simdQ8Skip(b)
	const n = 4096
	x := randomFloats(rand.New(rand.NewPCG(1, 2)), n, 1)
	for _, q := range []struct {
		name string
		typ  ggml.Type
		f    func([]float32, []byte)
	}{
		{"Q8_0/go", ggml.Q8_0, quantizeQ8_0Go}, {"Q8_0/avx2", ggml.Q8_0, quantizeQ8_0AVX2},
		{"Q8_K/go", ggml.Q8_K, quantizeQ8KGo}, {"Q8_K/avx2", ggml.Q8_K, quantizeQ8KAVX2},
	} {
		b.Run(q.name, func(b *testing.B) {
			dst := make([]byte, ActivationSize(q.typ, n))
			b.SetBytes(4 * n)
			for b.Loop() {
				q.f(x, dst)
			}
		})
	}
}

// TestSIMDMXFP4Scales runs every E8M0 scale byte through the assembly (8
// blocks per row, so no Go tail), including ggml's denormals for e < 2.
func TestSIMDMXFP4Scales(t *testing.T) {
	simdQ8Skip(t)
	rng := rand.New(rand.NewPCG(43, 44))
	k := mustKernel(t, ggml.MXFP4)
	w := make([]byte, 8*mxfp4BlockSize)
	a := make([]byte, 8*q8_0BlockSize)
	for e := 0; e < 256; e++ {
		for i := range w {
			w[i] = byte(rng.Uint32())
		}
		for b := 0; b < 8; b++ {
			w[b*mxfp4BlockSize] = byte(e)
		}
		QuantizeQ8_0(randomFloats(rng, 256, 1), a)
		got, want := dotMXFP4AVX2(256, w, a), k.GoDot(256, w, a)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Errorf("e=%d: avx2 %v, Go %v", e, got, want)
		}
	}
}
