//go:build !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// The NEON Gemm tiles against GoDot. Their contract (Kernel.Gemm) is
// GoDot's error bound, but they keep GoDot's float order per column, so
// every output is checked bit for bit (or both NaN).

func neonGemmTypes() []ggml.Type {
	var ts []ggml.Type
	for t := range neonGemms {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// neonTile is one Gemm call's operands: rows weight rows and cols
// activation rows of n values, with strides of at least a row.
type neonTile struct {
	n, rows, cols               int
	w, a                        []byte
	wStride, aStride, outStride int
}

// newNEONTile builds a tile with weights from fill(nb) per row and
// activations from act(nb) per column, strides padded with up to 3 blocks
// of garbage (the output stride with up to 5 elements).
func newNEONTile(t testing.TB, typ ggml.Type, rng *rand.Rand, nb, rows, cols int, fill, act func(nb int) []byte) neonTile {
	t.Helper()
	k := mustKernel(t, typ)
	n := nb * typ.BlockSize()
	rb := rowBytes(t, typ, n)
	ab := ActivationSize(k.VecDotType, n)
	tc := neonTile{n: n, rows: rows, cols: cols}
	tc.wStride = rb + rng.IntN(4)*typ.TypeSize()
	tc.aStride = ab + rng.IntN(4)*(ab/nb)
	tc.outStride = rows + rng.IntN(6)
	tc.w = make([]byte, rows*tc.wStride)
	tc.a = make([]byte, cols*tc.aStride)
	for i := range tc.w {
		tc.w[i] = byte(rng.Uint32())
	}
	for i := range tc.a {
		tc.a[i] = byte(rng.Uint32())
	}
	for r := 0; r < rows; r++ {
		copy(tc.w[r*tc.wStride:], fill(nb))
	}
	for c := 0; c < cols; c++ {
		copy(tc.a[c*tc.aStride:], act(nb))
	}
	return tc
}

// checkNEONGemm runs the NEON Gemm of typ on tc and compares every output
// with GoDot bit for bit, and checks that nothing outside the tile was
// written.
func checkNEONGemm(t *testing.T, typ ggml.Type, tc neonTile, what string) {
	t.Helper()
	k := mustKernel(t, typ)
	out := make([]float32, (tc.cols-1)*tc.outStride+tc.rows+3)
	const sentinel = -12345.5
	for i := range out {
		out[i] = sentinel
	}
	neonGemms[typ](tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, out, tc.outStride)
	written := make([]bool, len(out))
	bad := 0
	for c := 0; c < tc.cols; c++ {
		for r := 0; r < tc.rows; r++ {
			i := c*tc.outStride + r
			written[i] = true
			want := k.GoDot(tc.n, tc.w[r*tc.wStride:], tc.a[c*tc.aStride:])
			if !sameFloat32(out[i], want) {
				if bad++; bad <= 5 {
					t.Errorf("%s %s: n=%d rows=%d cols=%d: out[c=%d r=%d] = %g, GoDot %g",
						typ, what, tc.n, tc.rows, tc.cols, c, r, out[i], want)
				}
			}
		}
	}
	for i, v := range out {
		if !written[i] && v != sentinel {
			t.Errorf("%s %s: out[%d] written (%g) outside the tile", typ, what, i, v)
			return
		}
	}
}

// neonRandomWeights returns nb blocks of typ of random bytes with random
// finite fp16 scales.
func neonRandomWeights(t testing.TB, typ ggml.Type, rng *rand.Rand, nb int) []byte {
	w := make([]byte, rowBytes(t, typ, nb*typ.BlockSize()))
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	for b := 0; b < nb; b++ {
		for _, off := range neonFP16Offsets[typ] {
			binary.LittleEndian.PutUint16(w[b*typ.TypeSize()+off:], randomFP16(rng))
		}
	}
	return w
}

// TestNEONGemmShapes runs every tile shape of 1..17 rows and 1..9 columns
// (every column group and tail of the kernels) with valid weights
// (Kernel.Random) and quantized activations.
func TestNEONGemmShapes(t *testing.T) {
	requireDotprod(t)
	for _, typ := range neonGemmTypes() {
		k := mustKernel(t, typ)
		rng := rand.New(rand.NewPCG(uint64(typ), 51))
		fill := func(nb int) []byte { return randomRow(t, typ, nb*typ.BlockSize(), rng, 1) }
		act := func(nb int) []byte {
			a := make([]byte, ActivationSize(k.VecDotType, nb*typ.BlockSize()))
			QuantizeActivations(k.VecDotType, randomFloats(rng, nb*typ.BlockSize(), 1), a)
			return a
		}
		for rows := 1; rows <= 17; rows++ {
			for cols := 1; cols <= 9; cols++ {
				nb := 1 + (rows+cols)%3
				checkNEONGemm(t, typ, newNEONTile(t, typ, rng, nb, rows, cols, fill, act), "Random+QuantizeActivations")
			}
		}
	}
}

// TestNEONGemmRandomBytes uses random weight bytes (finite fp16 scales of
// any magnitude) and random activation bytes (every quant including -128,
// bsums that need not match the quants), one block to many.
func TestNEONGemmRandomBytes(t *testing.T) {
	requireDotprod(t)
	shapes := [][3]int{{1, 1, 1}, {4, 4, 2}, {17, 9, 3}, {5, 6, 1}, {3, 13, 8}, {16, 8, 16}, {2, 3, 33}, {7, 5, 5}}
	for _, typ := range neonGemmTypes() {
		k := mustKernel(t, typ)
		rng := rand.New(rand.NewPCG(uint64(typ), 52))
		fill := func(nb int) []byte { return neonRandomWeights(t, typ, rng, nb) }
		act := func(nb int) []byte {
			a := make([]byte, ActivationSize(k.VecDotType, nb*typ.BlockSize()))
			randomActivations(rng, k.VecDotType, a)
			return a
		}
		for _, s := range shapes {
			checkNEONGemm(t, typ, newNEONTile(t, typ, rng, s[2], s[0], s[1], fill, act), "random bytes")
		}
	}
}

// TestNEONGemmEdges uses weights whose bytes are all one pattern (the
// extreme quants of every format) with fp16 scales of zero, one, the
// largest and the smallest subnormal fp16, against activations of all
// -128, all 127 or alternating extremes.
func TestNEONGemmEdges(t *testing.T) {
	requireDotprod(t)
	scales := []uint16{0x0000, 0x3c00, 0x7bff, 0xfbff, 0x0001, 0x03ff}
	patterns := []byte{0x00, 0x7f, 0x80, 0xff, 0x55}
	for _, typ := range neonGemmTypes() {
		k := mustKernel(t, typ)
		rng := rand.New(rand.NewPCG(uint64(typ), 53))
		for _, p := range patterns {
			for _, sc := range scales {
				fill := func(nb int) []byte {
					w := make([]byte, rowBytes(t, typ, nb*typ.BlockSize()))
					for i := range w {
						w[i] = p
					}
					for b := 0; b < nb; b++ {
						for _, off := range neonFP16Offsets[typ] {
							binary.LittleEndian.PutUint16(w[b*typ.TypeSize()+off:], sc)
						}
					}
					return w
				}
				for _, q := range []int{-128, 127, 0, 1} {
					act := func(nb int) []byte { return neonExtremeActivations(k.VecDotType, nb*typ.BlockSize(), q, sc) }
					checkNEONGemm(t, typ, newNEONTile(t, typ, rng, 3, 5, 6, fill, act), fmt.Sprintf("pattern %#02x scale %#04x q8 %d", p, sc, q))
				}
			}
		}
	}
}

// TestNEONGemmPartialBlocks checks row lengths that are not whole blocks:
// below one block every output is 0; otherwise the last partial block is
// ignored like the loop over Dot does, except for the i-quants and the
// ternary types (simdIQTypes), whose Dot panics.
func TestNEONGemmPartialBlocks(t *testing.T) {
	requireDotprod(t)
	for _, typ := range neonGemmTypes() {
		k := mustKernel(t, typ)
		rng := rand.New(rand.NewPCG(uint64(typ), 54))
		bs := typ.BlockSize()
		tc := newNEONTile(t, typ, rng, 3, 3, 5, func(nb int) []byte { return neonRandomWeights(t, typ, rng, nb) },
			func(nb int) []byte {
				a := make([]byte, ActivationSize(k.VecDotType, nb*bs))
				randomActivations(rng, k.VecDotType, a)
				return a
			})
		for _, n := range []int{bs - 1, 2*bs + bs/2} {
			if slices.Contains(simdIQTypes, typ) {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s n=%d: Gemm did not panic", typ, n)
						}
					}()
					out := make([]float32, 5*tc.outStride)
					neonGemms[typ](n, tc.w, tc.wStride, 3, tc.a, tc.aStride, 5, out, tc.outStride)
				}()
				continue
			}
			tc.n = n
			checkNEONGemm(t, typ, tc, "partial block")
		}
		// Below one block the outputs are cleared.
		out := make([]float32, 4*tc.outStride+3)
		for i := range out {
			out[i] = 1
		}
		n := 0
		if !slices.Contains(simdIQTypes, typ) {
			n = bs - 1
		}
		neonGemms[typ](n, tc.w, tc.wStride, 3, tc.a, tc.aStride, 5, out, tc.outStride)
		for c := 0; c < 5; c++ {
			for r := 0; r < 3; r++ {
				if x := out[c*tc.outStride+r]; x != 0 {
					t.Errorf("%s n=%d: out[c=%d r=%d] = %g, want 0", typ, n, c, r, x)
				}
			}
		}
	}
}

// TestNEONGemmShort checks that the Gemm panics, as the loop over Dot
// does, instead of touching memory past short slices.
func TestNEONGemmShort(t *testing.T) {
	requireDotprod(t)
	for _, typ := range neonGemmTypes() {
		k := mustKernel(t, typ)
		const nb, rows, cols = 2, 3, 5
		n := nb * typ.BlockSize()
		rb := rowBytes(t, typ, n)
		ab := ActivationSize(k.VecDotType, n)
		w := make([]byte, rows*rb)
		a := make([]byte, cols*ab)
		out := make([]float32, rows*cols)
		for _, c := range []struct {
			name string
			w, a []byte
			out  []float32
		}{
			{"short weights", w[:len(w)-1], a, out},
			{"short activations", w, a[:len(a)-1], out},
			{"short out", w, a, out[:len(out)-1]},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s %s: Gemm did not panic", typ, c.name)
					}
				}()
				neonGemms[typ](n, c.w, rb, rows, c.a, ab, cols, c.out, rows)
			}()
		}
	}
}

// TestNEONGemmInstalled checks that For installs the NEON Gemm (the
// closure neonGemm makes, not the loop over Dot) for every type, and for
// Q8_0 and Q4_0, whose NEON Dot sums in another float order than GoDot,
// that Kernel.Gemm gives GoDot's results where the loop over Dot does not.
func TestNEONGemmInstalled(t *testing.T) {
	requireDotprod(t)
	for _, typ := range neonGemmTypes() {
		k := mustKernel(t, typ)
		if s := simdGemms[typ]; s.name != "neon" {
			t.Errorf("%s: simdGemms name %q, want neon", typ, s.name)
		}
		got := reflect.ValueOf(k.Gemm).Pointer()
		if got != reflect.ValueOf(neonGemms[typ]).Pointer() || got == reflect.ValueOf(k.loopGemm).Pointer() {
			t.Errorf("%s: Kernel.Gemm is not the NEON Gemm", typ)
		}
		if typ != ggml.Q8_0 && typ != ggml.Q4_0 {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(typ), 55))
		tc := newNEONTile(t, typ, rng, 64, 16, 8, func(nb int) []byte { return randomRow(t, typ, nb*typ.BlockSize(), rng, 1) },
			func(nb int) []byte {
				a := make([]byte, ActivationSize(k.VecDotType, nb*typ.BlockSize()))
				QuantizeActivations(k.VecDotType, randomFloats(rng, nb*typ.BlockSize(), 1), a)
				return a
			})
		gemm := make([]float32, 8*tc.outStride)
		loop := make([]float32, 8*tc.outStride)
		k.Gemm(tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, gemm, tc.outStride)
		k.loopGemm(tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, loop, tc.outStride)
		differs := false
		for c := 0; c < tc.cols; c++ {
			for r := 0; r < tc.rows; r++ {
				i := c*tc.outStride + r
				want := k.GoDot(tc.n, tc.w[r*tc.wStride:], tc.a[c*tc.aStride:])
				if !sameFloat32(gemm[i], want) {
					t.Fatalf("%s: Kernel.Gemm out[c=%d r=%d] = %g, GoDot %g", typ, c, r, gemm[i], want)
				}
				differs = differs || !sameFloat32(loop[i], want)
			}
		}
		if !differs {
			t.Errorf("%s: the loop over the NEON Dot equals GoDot everywhere: test tile too easy", typ)
		}
	}
}

// TestNEONGemmLargeSums uses Q8_0 and Q4_0 blocks whose integer sums have
// 15 to 19 significant bits and scales with full fp16 mantissas, so that
// the float products round and only GoDot's exact order of multiplications
// gives its results.
func TestNEONGemmLargeSums(t *testing.T) {
	requireDotprod(t)
	for _, typ := range []ggml.Type{ggml.Q8_0, ggml.Q4_0} {
		rng := rand.New(rand.NewPCG(uint64(typ), 56))
		// A normal fp16 of random mantissa and exponent in [-8, 8).
		scale := func() uint16 { return uint16(rng.IntN(16)+7)<<10 | uint16(rng.IntN(1024)) }
		fill := func(nb int) []byte {
			w := make([]byte, nb*typ.TypeSize())
			fillByte := byte(0x7f) // Q8_0 quants 127
			if typ == ggml.Q4_0 {
				fillByte = 0xff // Q4_0 quants 15-8 = 7
			}
			for i := range w {
				w[i] = fillByte
			}
			for b := 0; b < nb; b++ {
				binary.LittleEndian.PutUint16(w[b*typ.TypeSize():], scale())
			}
			return w
		}
		act := func(nb int) []byte {
			a := make([]byte, nb*q8_0BlockSize)
			for b := 0; b < nb; b++ {
				blk := a[b*q8_0BlockSize : (b+1)*q8_0BlockSize]
				binary.LittleEndian.PutUint16(blk, scale())
				for i := 2; i < len(blk); i++ {
					blk[i] = byte(64 + rng.IntN(64))
				}
			}
			return a
		}
		for rep := 0; rep < 20; rep++ {
			checkNEONGemm(t, typ, newNEONTile(t, typ, rng, 8, 5, 7, fill, act), "large sums")
		}
	}
}
