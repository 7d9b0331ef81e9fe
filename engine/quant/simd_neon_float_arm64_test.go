//go:build !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/strata-llm/strata/engine/ggml"
)

// The NEON F32, F16 and BF16 dot products against GoDot: F16 and BF16 do
// GoDot's float operations in its order, so they must be bit-identical;
// F32 fuses where dotF32 emulates a fused multiply-add in float64, so it is
// held to neonRelBound·Σ|w·a| (and must agree on Inf and NaN).

var neonFloatTypes = []ggml.Type{ggml.F32, ggml.F16, ggml.BF16}

// neonFloatLengths cover no whole chunk, one chunk and its edges, leftovers
// of every size and long rows.
var neonFloatLengths = []int{0, 1, 5, 31, 32, 33, 47, 63, 64, 65, 95, 96, 127, 128, 129, 1000, 4096, 4096 + 31}

func requireASIMD(t testing.TB) {
	t.Helper()
	if !cpu.ARM64.HasASIMD {
		t.Skip("CPU without NEON")
	}
}

// checkNEONFloat compares the NEON dot of w and a with GoDot.
func checkNEONFloat(t *testing.T, typ ggml.Type, n int, w, a []byte, what string) {
	t.Helper()
	k := mustKernel(t, typ)
	want := k.GoDot(n, w, a)
	got := neonFloatDots[typ](n, w, a)
	if sameFloat32(got, want) {
		return
	}
	if typ != ggml.F32 || !isFinite32(want) || !isFinite32(got) {
		t.Errorf("%s %s n=%d: NEON %v (%#08x), GoDot %v (%#08x)", typ, what, n, got, math.Float32bits(got), want, math.Float32bits(want))
		return
	}
	bound := neonRelBound * absDot(t, typ, n, w, a)
	if diff := math.Abs(float64(got) - float64(want)); diff > bound {
		t.Errorf("%s %s n=%d: NEON %v, GoDot %v: |diff| %g > %g", typ, what, n, got, want, diff, bound)
	}
}

func TestNEONFloatInstalled(t *testing.T) {
	requireASIMD(t)
	for _, typ := range neonFloatTypes {
		if k := mustKernel(t, typ); k.SIMD != "neon" {
			t.Errorf("%s: Kernel.SIMD = %q, want neon", typ, k.SIMD)
		}
	}
}

// TestNEONFloatRandom uses Kernel.Random weights and activations converted
// by QuantizeActivations, and counts the F32 results that are not
// bit-identical (there should be next to none: only double-rounding ties
// of dotF32's emulated FMA differ).
func TestNEONFloatRandom(t *testing.T) {
	requireASIMD(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, typ := range neonFloatTypes {
		k := mustKernel(t, typ)
		inexact, total := 0, 0
		for _, n := range neonFloatLengths {
			for rep := 0; rep < 4; rep++ {
				w := randomRow(t, typ, n, rng, 1)
				a := make([]byte, ActivationSize(k.VecDotType, n))
				QuantizeActivations(k.VecDotType, randomFloats(rng, n, float32(math.Ldexp(1, rng.IntN(20)-10))), a)
				checkNEONFloat(t, typ, n, w, a, "random")
				total++
				if !sameFloat32(k.GoDot(n, w, a), neonFloatDots[typ](n, w, a)) {
					inexact++
				}
			}
		}
		if inexact > total/10 {
			t.Errorf("%s: %d of %d results differ from GoDot; expected (almost) none", typ, inexact, total)
		}
	}
}

// neonFloatPut stores f as value i of a row of typ (rounded to F16 or
// BF16 as QuantizeActivations does).
func neonFloatPut(typ ggml.Type, b []byte, i int, f float32) {
	switch typ {
	case ggml.F32:
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	case ggml.F16:
		binary.LittleEndian.PutUint16(b[2*i:], Float32ToFP16(f))
	case ggml.BF16:
		binary.LittleEndian.PutUint16(b[2*i:], Float32ToBF16(f))
	}
}

// TestNEONFloatRandomBits fills both rows with random bit patterns (every
// NaN, Inf, subnormal and extreme value of the type included) and with
// random values of extreme exponents (overflowing and underflowing
// products and sums).
func TestNEONFloatRandomBits(t *testing.T) {
	requireASIMD(t)
	rng := rand.New(rand.NewPCG(23, 24))
	for _, typ := range neonFloatTypes {
		size := typ.TypeSize()
		for _, n := range neonFloatLengths {
			for rep := 0; rep < 3; rep++ {
				w := make([]byte, n*size)
				a := make([]byte, n*size)
				for i := range w {
					w[i], a[i] = byte(rng.Uint32()), byte(rng.Uint32())
				}
				checkNEONFloat(t, typ, n, w, a, "random bits")
				// Finite values of one extreme exponent per row.
				ew, ea := rng.IntN(300)-150, rng.IntN(300)-150
				for i := 0; i < n; i++ {
					neonFloatPut(typ, w, i, float32(math.Ldexp(rng.NormFloat64(), ew)))
					neonFloatPut(typ, a, i, float32(math.Ldexp(rng.NormFloat64(), ea)))
				}
				checkNEONFloat(t, typ, n, w, a, fmt.Sprintf("exponents %d, %d", ew, ea))
				// Products near float32's underflow, where they round (to
				// subnormals) and a fused multiply-add would not.
				ew = -60 - rng.IntN(15)
				ea = -135 - ew + rng.IntN(15)
				for i := 0; i < n; i++ {
					neonFloatPut(typ, w, i, float32(math.Ldexp(rng.NormFloat64(), ew)))
					neonFloatPut(typ, a, i, float32(math.Ldexp(rng.NormFloat64(), ea)))
				}
				checkNEONFloat(t, typ, n, w, a, fmt.Sprintf("tiny products 2^%d·2^%d", ew, ea))
			}
		}
	}
}

// TestNEONFloatEdges uses rows of one repeated special value against rows
// of another: zeros of both signs, the largest and smallest (subnormal)
// values, infinities and NaN.
func TestNEONFloatEdges(t *testing.T) {
	requireASIMD(t)
	specials := map[ggml.Type][]float32{
		ggml.F32: {0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, -math.MaxFloat32,
			math.SmallestNonzeroFloat32, 1.1754944e-38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())},
		ggml.F16: {0, float32(math.Copysign(0, -1)), 1, -1, 65504, -65504, 0x1p-24, 0x1p-14,
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())},
		ggml.BF16: {0, float32(math.Copysign(0, -1)), 1, -1, math.Float32frombits(0x7f7f0000), math.Float32frombits(0xff7f0000),
			math.Float32frombits(0x00010000), 0x1p-126, 0x1p-70, math.Float32frombits(0x1c810000), // (1+2^-7)·2^-70
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())},
	}
	for _, typ := range neonFloatTypes {
		size := typ.TypeSize()
		for _, n := range []int{32, 33, 96, 256} {
			for _, x := range specials[typ] {
				for _, y := range specials[typ] {
					w := make([]byte, n*size)
					a := make([]byte, n*size)
					for i := 0; i < n; i++ {
						neonFloatPut(typ, w, i, x)
						// Alternate signs in the activations: sums cancel.
						if i%2 == 1 {
							neonFloatPut(typ, a, i, -y)
						} else {
							neonFloatPut(typ, a, i, y)
						}
					}
					checkNEONFloat(t, typ, n, w, a, fmt.Sprintf("%g·±%g", x, y))
				}
			}
		}
	}
}

// TestNEONFloatShortRows checks that a row shorter than n panics instead of
// reading past the slice, as GoDot does. (Like GoDot's reslicing, the NEON
// dots may read into a slice's capacity; the short rows here have none
// beyond their length.)
func TestNEONFloatShortRows(t *testing.T) {
	requireASIMD(t)
	for _, typ := range neonFloatTypes {
		n := 64
		w := make([]byte, n*typ.TypeSize())
		a := make([]byte, n*typ.TypeSize())
		for _, c := range []struct {
			name string
			w, a []byte
		}{{"short weights", w[: len(w)-1 : len(w)-1], a}, {"short activations", w, a[: len(a)-1 : len(a)-1]}} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s %s: no panic", typ, c.name)
					}
				}()
				neonFloatDots[typ](n, c.w, c.a)
			}()
		}
		if got := neonFloatDots[typ](0, nil, nil); got != 0 {
			t.Errorf("%s n=0: %v, want 0", typ, got)
		}
	}
}
