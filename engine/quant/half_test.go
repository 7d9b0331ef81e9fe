package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

func TestFP16RoundTripExhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := FP16ToFloat32(h)
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		if isNaN {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("FP16ToFloat32(%#04x) = %v, want NaN", h, f)
			}
			if got, want := Float32ToFP16(f), h|0x200; got != want {
				t.Fatalf("Float32ToFP16(NaN from %#04x) = %#04x, want quiet %#04x", h, got, want)
			}
			continue
		}
		if got := Float32ToFP16(f); got != h {
			t.Fatalf("Float32ToFP16(FP16ToFloat32(%#04x) = %v) = %#04x", h, f, got)
		}
	}
}

func TestFP16ToFloat32Values(t *testing.T) {
	tests := []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xc000, -2}, {0x3555, 0.333251953125},
		{0x7bff, 65504}, {0x0001, 0x1p-24}, {0x03ff, 1023 * 0x1p-24}, {0x0400, 0x1p-14},
		{0x7c00, float32(math.Inf(1))}, {0xfc00, float32(math.Inf(-1))},
	}
	for _, tt := range tests {
		if got := FP16ToFloat32(tt.h); got != tt.want {
			t.Errorf("FP16ToFloat32(%#04x) = %v, want %v", tt.h, got, tt.want)
		}
	}
	if got := math.Float32bits(FP16ToFloat32(0x8000)); got != 0x80000000 {
		t.Errorf("FP16ToFloat32(0x8000) bits = %#x, want -0", got)
	}
}

func TestFloat32ToFP16Rounding(t *testing.T) {
	tests := []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65519.996, 0x7bff},
		{65520, 0x7c00}, // tie between 65504 and 65536 (Inf): even is Inf
		{1e10, 0x7c00},
		{-1e10, 0xfc00},
		{1 + 0x1p-11, 0x3c00},   // tie, even stays
		{1 + 3*0x1p-11, 0x3c02}, // tie, rounds up to even
		{1 + 0x1p-11 + 0x1p-20, 0x3c01},
		{0x1p-24, 0x0001},     // smallest subnormal
		{0x1p-25, 0x0000},     // tie to even: 0
		{0x1.8p-25, 0x0001},   // above the tie
		{3 * 0x1p-25, 0x0002}, // 1.5 ulp: tie to even 2
		{0x1p-26, 0x0000},
		{0x1.ffcp-15, 0x0400}, // rounds up from the largest subnormal to the smallest normal
		{-0x1p-30, 0x8000},
		{float32(math.Inf(1)), 0x7c00},
		{float32(math.NaN()), 0x7e00},
	}
	for _, tt := range tests {
		if got := Float32ToFP16(tt.f); got != tt.want {
			t.Errorf("Float32ToFP16(%v) = %#04x, want %#04x", tt.f, got, tt.want)
		}
	}
}

// TestFloat32ToFP16Nearest checks random float32 values against the
// definition: the result is a nearest fp16 value, even on ties.
func TestFloat32ToFP16Nearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		// exponents from deep subnormal to just past the fp16 range
		f := float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(46)-28))
		h := Float32ToFP16(f)
		got := float64(FP16ToFloat32(h))
		if math.IsInf(got, 0) {
			if math.Abs(float64(f)) < 65520 {
				t.Fatalf("Float32ToFP16(%v) = Inf", f)
			}
			continue
		}
		err := math.Abs(got - float64(f))
		for _, nb := range []uint16{h - 1, h + 1, h ^ 0x8000} {
			if nb&0x7c00 == 0x7c00 {
				continue
			}
			e := math.Abs(float64(FP16ToFloat32(nb)) - float64(f))
			if e < err || (e == err && h&1 == 1 && nb&0x7fff != h&0x7fff) {
				t.Fatalf("Float32ToFP16(%v) = %#04x (%v), but %#04x (%v) is nearer or even",
					f, h, got, nb, FP16ToFloat32(nb))
			}
		}
	}
}

func TestBF16(t *testing.T) {
	tests := []struct {
		bits uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, up to even
		{0x3f808001, 0x3f81},
		{0xbf80ffff, 0xbf81},
		{0x7f7fffff, 0x7f80}, // overflows to Inf
		{0x7f800000, 0x7f80},
		{0x7f800001, 0x7fc0}, // signalling NaN is quieted
		{0xffc12345, 0xffc1},
		{0x00000001, 0x0000},
	}
	for _, tt := range tests {
		if got := Float32ToBF16(math.Float32frombits(tt.bits)); got != tt.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", tt.bits, got, tt.want)
		}
	}
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToFloat32(h)
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToFloat32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		if math.IsNaN(float64(f)) {
			continue
		}
		if got := Float32ToBF16(f); got != h {
			t.Fatalf("Float32ToBF16(BF16ToFloat32(%#04x)) = %#04x", h, got)
		}
	}
}

// TestFloat32sToFP16 checks the bulk conversion bit for bit against
// Float32ToFP16 on a strided sweep of all float32 bit patterns (every
// exponent, subnormals, ties, infinities and NaNs) and on lengths around
// the 8-value steps.
func TestFloat32sToFP16(t *testing.T) {
	src := make([]float32, 0, 1<<20+16)
	for b := uint64(0); b < 1<<32; b += 4093 {
		src = append(src, math.Float32frombits(uint32(b)))
	}
	for _, f := range []float32{0.5, 1, 65504, 65520, 65519.99, 6.1035156e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08} {
		src = append(src, f, -f)
	}
	dst := make([]uint16, len(src))
	for _, n := range []int{len(src), 0, 1, 7, 8, 9, 17} {
		for i := range dst {
			dst[i] = 0xdead
		}
		Float32sToFP16(dst, src[:n])
		for i := 0; i < n; i++ {
			if want := Float32ToFP16(src[i]); dst[i] != want {
				t.Fatalf("n=%d: %v (%#08x) → %#04x, want %#04x", n, src[i], math.Float32bits(src[i]), dst[i], want)
			}
		}
		if n < len(dst) && dst[n] != 0xdead {
			t.Fatalf("n=%d: wrote past the end", n)
		}
	}
}

// TestRoundFP16 checks RoundFP16 bit for bit against the scalar
// conversions on the same sweep as TestFloat32sToFP16.
func TestRoundFP16(t *testing.T) {
	var src []float32
	for b := uint64(0); b < 1<<32; b += 4093 {
		src = append(src, math.Float32frombits(uint32(b)))
	}
	dst := make([]float32, len(src))
	for _, n := range []int{len(src), 1, 7, 8, 9, 17} {
		RoundFP16(dst, src[:n])
		for i := 0; i < n; i++ {
			want := FP16ToFloat32(Float32ToFP16(src[i]))
			if math.Float32bits(dst[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d: %#08x → %#08x, want %#08x", n, math.Float32bits(src[i]), math.Float32bits(dst[i]), math.Float32bits(want))
			}
		}
	}
}

// TestDotF16Rows checks DotF16Rows bit for bit against the F16 Kernel's
// Dot and GoDot, for lengths with and without a tail, on strided rows.
func TestDotF16Rows(t *testing.T) {
	k, err := For(ggml.F16)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 31, 32, 33, 64, 128, 129, 300, 513} {
		for _, rows := range []int{1, 2, 17} {
			ws := 2*n + 2*rng.IntN(4)
			w := make([]byte, max(0, (rows-1)*ws+2*n))
			for i := 0; i+1 < len(w); i += 2 {
				putFP16(w[i:], float32(rng.NormFloat64()*math.Pow(2, float64(rng.IntN(20)-10))))
			}
			a16 := make([]byte, 2*n)
			a := make([]float32, n)
			for i := range a {
				putFP16(a16[2*i:], float32(rng.NormFloat64()))
				a[i] = fp16At(a16[2*i:])
			}
			out := make([]float32, rows+1)
			out[rows] = 42
			DotF16Rows(n, w, ws, rows, a, out[:rows])
			for r := 0; r < rows; r++ {
				wr := w[r*ws : r*ws+2*n]
				if got, dot, ref := out[r], k.Dot(n, wr, a16), k.GoDot(n, wr, a16); math.Float32bits(got) != math.Float32bits(dot) || math.Float32bits(got) != math.Float32bits(ref) {
					t.Fatalf("n=%d rows=%d: out[%d] = %v, Dot %v, GoDot %v", n, rows, r, got, dot, ref)
				}
			}
			if out[rows] != 42 {
				t.Fatalf("n=%d rows=%d: wrote past the rows", n, rows)
			}
		}
	}
}

// TestDotF16RowsMulti checks DotF16RowsMulti bit for bit against
// DotF16Rows for each vector, for lengths with and without a tail, one to
// nine vectors (four-vector groups and the rest), strided vectors and
// outputs, and that nothing between the outputs is written.
func TestDotF16RowsMulti(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 31, 32, 33, 256, 300, 513} {
		for _, rows := range []int{1, 3, 17} {
			for m := 1; m <= 9; m++ {
				ws := 2*n + 2*rng.IntN(4)
				w := make([]byte, max(0, (rows-1)*ws+2*n))
				for i := 0; i+1 < len(w); i += 2 {
					putFP16(w[i:], float32(rng.NormFloat64()*math.Pow(2, float64(rng.IntN(20)-10))))
				}
				as := n + rng.IntN(5)
				a := make([]float32, (m-1)*as+n)
				for i := range a {
					a[i] = FP16ToFloat32(Float32ToFP16(float32(rng.NormFloat64())))
				}
				os := rows + 1 + rng.IntN(3)
				out := make([]float32, m*os)
				for i := range out {
					out[i] = 42
				}
				DotF16RowsMulti(n, w, ws, rows, a, as, m, out, os)
				want := make([]float32, rows)
				for q := 0; q < m; q++ {
					DotF16Rows(n, w, ws, rows, a[q*as:q*as+n], want)
					for r := 0; r < rows; r++ {
						if got := out[q*os+r]; math.Float32bits(got) != math.Float32bits(want[r]) {
							t.Fatalf("n=%d rows=%d m=%d: vector %d row %d = %v, DotF16Rows %v", n, rows, m, q, r, got, want[r])
						}
					}
					for r := rows; r < os; r++ {
						if out[q*os+r] != 42 {
							t.Fatalf("n=%d rows=%d m=%d: wrote out[%d]", n, rows, m, q*os+r)
						}
					}
				}
			}
		}
	}
}

// BenchmarkDotF16RowsMulti is attention's K·Q at decode for 8 query heads
// sharing a KV head of 256 over 512 positions: DotF16Rows per head
// against DotF16RowsMulti for the 8.
func BenchmarkDotF16RowsMulti(b *testing.B) {
	const n, rows, m = 256, 512, 8
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]byte, 2*n*rows)
	randomF16(w, rng, 1)
	a := randomFloats(rng, m*n, 1)
	RoundFP16(a, a)
	out := make([]float32, m*rows)
	b.Run("per-head", func(b *testing.B) {
		b.SetBytes(int64(len(w)))
		for b.Loop() {
			for q := 0; q < m; q++ {
				DotF16Rows(n, w, 2*n, rows, a[q*n:(q+1)*n], out[q*rows:(q+1)*rows])
			}
		}
	})
	b.Run("multi", func(b *testing.B) {
		b.SetBytes(int64(len(w)))
		for b.Loop() {
			DotF16RowsMulti(n, w, 2*n, rows, a, n, m, out, rows)
		}
	})
}
