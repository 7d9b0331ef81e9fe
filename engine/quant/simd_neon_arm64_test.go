//go:build !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

// neonExact lists the NEON kernels that are bit-identical to GoDot (exact
// integer sums, same float order); the others accumulate in float32 lanes
// and are held to neonRelBound·Σ|w·a|.
var neonExact = map[ggml.Type]bool{
	ggml.Q4_K: true, ggml.Q5_K: true, ggml.Q6_K: true, ggml.Q2_K: true, ggml.Q3_K: true,
	ggml.IQ2_XXS: true, ggml.IQ2_XS: true, ggml.IQ3_XXS: true, ggml.IQ4_XS: true, ggml.IQ4_NL: true, ggml.MXFP4: true, ggml.Q5_0: true, ggml.Q4_1: true, ggml.Q5_1: true, ggml.IQ3_S: true,
	ggml.IQ2_S: true, ggml.IQ1_S: true, ggml.IQ1_M: true, ggml.TQ1_0: true, ggml.TQ2_0: true,
}

const neonRelBound = 1e-6

// neonFP16Offsets are the byte offsets of the fp16 scales in one weight
// block of each type.
var neonFP16Offsets = map[ggml.Type][]int{
	ggml.Q8_0: {0}, ggml.Q4_0: {0},
	ggml.Q4_K: {0, 2}, ggml.Q5_K: {0, 2}, ggml.Q6_K: {208},
	ggml.Q2_K: {80, 82}, ggml.Q3_K: {108},
	ggml.IQ2_XXS: {0}, ggml.IQ2_XS: {0}, ggml.IQ3_XXS: {0}, ggml.IQ4_XS: {0}, ggml.IQ4_NL: {0}, ggml.Q5_0: {0}, ggml.Q4_1: {0, 2}, ggml.Q5_1: {0, 2}, ggml.IQ3_S: {0},
	ggml.IQ2_S: {0}, ggml.IQ1_S: {0}, ggml.TQ1_0: {52}, ggml.TQ2_0: {64}, // IQ1_M's d is spread over its scale words' top nibbles
}

func requireDotprod(t testing.TB) {
	t.Helper()
	if !cpu.ARM64.HasASIMD || !cpu.ARM64.HasASIMDDP {
		t.Skip("CPU without the NEON dot-product extension")
	}
}

func neonTypes() []ggml.Type {
	var ts []ggml.Type
	for t := range neonDots {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// checkNEON compares the NEON dot of w and a with GoDot.
func checkNEON(t *testing.T, typ ggml.Type, n int, w, a []byte, what string) {
	t.Helper()
	k := mustKernel(t, typ)
	want := k.GoDot(n, w, a)
	got := neonDots[typ](n, w, a)
	if neonExact[typ] {
		if math.Float32bits(got) != math.Float32bits(want) && !(isNaN32(got) && isNaN32(want)) {
			t.Errorf("%s %s n=%d: NEON %v (%#08x), GoDot %v (%#08x)", typ, what, n, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		return
	}
	if isFinite32(want) != isFinite32(got) {
		t.Errorf("%s %s n=%d: NEON %v, GoDot %v", typ, what, n, got, want)
		return
	}
	if !isFinite32(want) {
		return
	}
	bound := neonRelBound * absDot(t, typ, n, w, a)
	if diff := math.Abs(float64(got) - float64(want)); diff > bound {
		t.Errorf("%s %s n=%d: NEON %v, GoDot %v: |diff| %g > %g", typ, what, n, got, want, diff, bound)
	}
}

func isNaN32(f float32) bool    { return f != f }
func isFinite32(f float32) bool { return !math.IsInf(float64(f), 0) && !isNaN32(f) }

// absDot is Σ|w_i·a_i| in float64 over the dequantized rows.
func absDot(t *testing.T, typ ggml.Type, n int, w, a []byte) float64 {
	k := mustKernel(t, typ)
	wf := make([]float32, n)
	af := make([]float32, n)
	k.Dequantize(w, wf)
	DequantizeActivations(k.VecDotType, a, af)
	var s float64
	for i := range wf {
		s += math.Abs(float64(wf[i]) * float64(af[i]))
	}
	return s
}

// neonSizes are row lengths in blocks: one, the 4-block unroll's edges,
// and many.
var neonBlocks = []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 33, 128}

func TestNEONInstalled(t *testing.T) {
	requireDotprod(t)
	for _, typ := range neonTypes() {
		if k := mustKernel(t, typ); k.SIMD != "neon" {
			t.Errorf("%s: Kernel.SIMD = %q, want neon", typ, k.SIMD)
		}
	}
}

func TestNEONRandomBlocks(t *testing.T) {
	requireDotprod(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range neonTypes() {
		k := mustKernel(t, typ)
		for _, nb := range neonBlocks {
			n := nb * typ.BlockSize()
			for rep := 0; rep < 3; rep++ {
				w := randomRow(t, typ, n, rng, 1)
				a := make([]byte, ActivationSize(k.VecDotType, n))
				QuantizeActivations(k.VecDotType, randomFloats(rng, n, 1), a)
				checkNEON(t, typ, n, w, a, "Kernel.Random")
			}
		}
	}
}

// randomFP16 returns a finite fp16 of random sign and exponent, subnormals
// included.
func randomFP16(rng *rand.Rand) uint16 {
	for {
		h := uint16(rng.Uint32())
		if h&0x7c00 != 0x7c00 {
			return h
		}
	}
}

// randomActivations fills a with random bytes and then finite scales: every
// quant and bsum value is possible (bsums need not match the quants: both
// kernels read them as stored).
func randomActivations(rng *rand.Rand, vt ggml.Type, a []byte) {
	for i := range a {
		a[i] = byte(rng.Uint32())
	}
	switch vt {
	case ggml.Q8_0:
		for off := 0; off < len(a); off += q8_0BlockSize {
			binary.LittleEndian.PutUint16(a[off:], randomFP16(rng))
		}
	case ggml.Q8_1:
		for off := 0; off < len(a); off += q8_1BlockSize {
			binary.LittleEndian.PutUint16(a[off:], randomFP16(rng))
			binary.LittleEndian.PutUint16(a[off+2:], randomFP16(rng))
		}
	case ggml.Q8_K:
		for off := 0; off < len(a); off += q8KBlockSize {
			d := float32(math.Ldexp(rng.Float64()+0.5, rng.IntN(40)-30))
			binary.LittleEndian.PutUint32(a[off:], math.Float32bits(d))
		}
	}
}

func TestNEONRandomBytes(t *testing.T) {
	requireDotprod(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, typ := range neonTypes() {
		k := mustKernel(t, typ)
		for _, nb := range neonBlocks {
			n := nb * typ.BlockSize()
			for rep := 0; rep < 3; rep++ {
				w := make([]byte, rowBytes(t, typ, n))
				for i := range w {
					w[i] = byte(rng.Uint32())
				}
				for b := 0; b < nb; b++ {
					for _, off := range neonFP16Offsets[typ] {
						binary.LittleEndian.PutUint16(w[b*typ.TypeSize()+off:], randomFP16(rng))
					}
				}
				a := make([]byte, ActivationSize(k.VecDotType, n))
				randomActivations(rng, k.VecDotType, a)
				checkNEON(t, typ, n, w, a, "random bytes")
			}
		}
	}
}

// TestNEONEdges uses rows whose bytes are all one pattern (zero, 0x7f, 0x80,
// 0xff: the extreme quants of every format) with the fp16 scales set to
// zero, one, the largest and the smallest subnormal fp16, against
// activations of all -128, all 127 or alternating extremes.
func TestNEONEdges(t *testing.T) {
	requireDotprod(t)
	scales := []uint16{0x0000, 0x3c00, 0x7bff, 0xfbff, 0x0001, 0x03ff}
	patterns := []byte{0x00, 0x7f, 0x80, 0xff, 0x55}
	for _, typ := range neonTypes() {
		k := mustKernel(t, typ)
		for _, nb := range []int{1, 5, 64} {
			n := nb * typ.BlockSize()
			for _, p := range patterns {
				for _, sc := range scales {
					w := make([]byte, rowBytes(t, typ, n))
					for i := range w {
						w[i] = p
					}
					for b := 0; b < nb; b++ {
						for _, off := range neonFP16Offsets[typ] {
							binary.LittleEndian.PutUint16(w[b*typ.TypeSize()+off:], sc)
						}
					}
					for _, q := range []int{-128, 127, 0, 1} {
						a := neonExtremeActivations(k.VecDotType, n, q, sc)
						checkNEON(t, typ, n, w, a, fmt.Sprintf("pattern %#02x scale %#04x q8 %d", p, sc, q))
					}
				}
			}
		}
	}
}

// neonExtremeActivations returns n activation values of type vt with every
// quant q (q = 1: alternating -128 and 127), consistent bsums, and scale
// fp16 h (Q8_0) or its float32 value (Q8_K).
func neonExtremeActivations(vt ggml.Type, n, q int, h uint16) []byte {
	a := make([]byte, ActivationSize(vt, n))
	quant := func(i int) int8 {
		if q == 1 {
			if i%2 == 0 {
				return -128
			}
			return 127
		}
		return int8(q)
	}
	switch vt {
	case ggml.Q8_0:
		for off := 0; off < len(a); off += q8_0BlockSize {
			binary.LittleEndian.PutUint16(a[off:], h)
			for i := 0; i < qk8_0; i++ {
				a[off+2+i] = byte(quant(i))
			}
		}
	case ggml.Q8_1:
		for off := 0; off < len(a); off += q8_1BlockSize {
			binary.LittleEndian.PutUint16(a[off:], h)
			binary.LittleEndian.PutUint16(a[off+2:], h^0x8000)
			for i := 0; i < qk8_1; i++ {
				a[off+4+i] = byte(quant(i))
			}
		}
	case ggml.Q8_K:
		for off := 0; off < len(a); off += q8KBlockSize {
			binary.LittleEndian.PutUint32(a[off:], math.Float32bits(FP16ToFloat32(h)))
			for g := 0; g < 16; g++ {
				var s int16
				for i := 16 * g; i < 16*g+16; i++ {
					a[off+q8KQsOff+i] = byte(quant(i))
					s += int16(quant(i))
				}
				binary.LittleEndian.PutUint16(a[off+q8KBsumsOff+2*g:], uint16(s))
			}
		}
	}
	return a
}

// TestNEONShortRows checks that a row shorter than n panics instead of
// reading past the slice, as GoDot does.
func TestNEONShortRows(t *testing.T) {
	requireDotprod(t)
	for _, typ := range neonTypes() {
		k := mustKernel(t, typ)
		n := 2 * typ.BlockSize()
		w := make([]byte, rowBytes(t, typ, n))
		a := make([]byte, ActivationSize(k.VecDotType, n))
		for _, c := range []struct {
			name string
			w, a []byte
		}{{"short weights", w[:len(w)-1], a}, {"short activations", w, a[:len(a)-1]}} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s %s: no panic", typ, c.name)
					}
				}()
				neonDots[typ](n, c.w, c.a)
			}()
		}
		if got := neonDots[typ](0, nil, nil); got != 0 {
			t.Errorf("%s n=0: %v, want 0", typ, got)
		}
	}
}

// BenchmarkNEONDot runs GoDot and the NEON dot side by side on a row of
// 4096 values (SetBytes: weight bytes).
func BenchmarkNEONDot(b *testing.B) {
	const n, rows = 4096, 64
	for _, typ := range neonTypes() {
		k := mustKernel(b, typ)
		rng := rand.New(rand.NewPCG(1, 2))
		rb := rowBytes(b, typ, n)
		w := randomRow(b, typ, n*rows, rng, 1)
		a := make([]byte, ActivationSize(k.VecDotType, n))
		QuantizeActivations(k.VecDotType, randomFloats(rng, n, 1), a)
		for _, impl := range []struct {
			name string
			dot  func(int, []byte, []byte) float32
		}{{"go", k.GoDot}, {"neon", neonDots[typ]}} {
			b.Run(typ.String()+"/"+impl.name, func(b *testing.B) {
				if impl.name == "neon" {
					requireDotprod(b)
				}
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

// TestNEONMXFP4Scales checks every E8M0 scale byte on its own (one block),
// including the denormal patterns ggml uses for e < 2.
func TestNEONMXFP4Scales(t *testing.T) {
	requireDotprod(t)
	rng := rand.New(rand.NewPCG(41, 42))
	w := make([]byte, mxfp4BlockSize)
	a := make([]byte, q8_0BlockSize)
	for e := 0; e < 256; e++ {
		for i := range w {
			w[i] = byte(rng.Uint32())
		}
		w[0] = byte(e)
		QuantizeQ8_0(randomFloats(rng, 32, 1), a)
		checkNEON(t, ggml.MXFP4, 32, w, a, fmt.Sprintf("e=%d", e))
	}
}
