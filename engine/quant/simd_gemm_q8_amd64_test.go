//go:build !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// gemmQ8Bound is the tolerance of a tiled product against GoDot: both sum
// the same exact integer block sums times the same scales, in another
// order, so they differ by rounding only: ≤ gemmQ8Bound·Σ|w·a| per output.
const gemmQ8Bound = 2e-6

// gemmQ8Impls are the Gemm kernels of the simd_gemm_q8 group.
var gemmQ8Impls = []struct {
	typ  ggml.Type
	name string
	vnni bool // needs gemmQ8HasVNNI (else gemmQ8HasAVX2)
	gemm func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
}{
	{ggml.Q8_0, "avx512vnni", true, gemmQ8_0VNNI},
	{ggml.Q4_0, "avx512vnni", true, gemmQ4_0VNNI},
	{ggml.Q8_0, "avx2", false, gemmQ8_0AVX2},
	{ggml.Q4_0, "avx2", false, gemmQ4_0AVX2},
}

func gemmQ8Runs(vnni bool) bool {
	if vnni {
		return gemmQ8HasVNNI
	}
	return gemmQ8HasAVX2
}

func TestGemmQ8Installed(t *testing.T) {
	if !gemmQ8HasAVX2 {
		t.Skip("CPU lacks AVX2/FMA/F16C")
	}
	for _, g := range gemmQ8Impls {
		if g.vnni != gemmQ8HasVNNI {
			continue
		}
		k := mustKernel(t, g.typ)
		if reflect.ValueOf(k.Tiled).Pointer() != reflect.ValueOf(g.gemm).Pointer() {
			t.Errorf("%s: Kernel.Gemm is not the %s tile kernel", g.typ, g.name)
		}
	}
}

// gemmQ8AbsSum returns Σ|w_i·a_i| over n elements (dequantized, float64).
func gemmQ8AbsSum(typ ggml.Type, n int, w, a []byte) float64 {
	wf := make([]float32, n)
	af := make([]float32, n)
	mustKernelNoT(typ).Dequantize(w, wf)
	mustKernelNoT(ggml.Q8_0).Dequantize(a, af)
	var s float64
	for i := range wf {
		s += math.Abs(float64(wf[i]) * float64(af[i]))
	}
	return s
}

func mustKernelNoT(typ ggml.Type) *Kernel {
	k, err := For(typ)
	if err != nil {
		panic(err)
	}
	return k
}

// gemmQ8Fill fills a weight matrix w (rows of stride ws, nb blocks each)
// and activations a (cols rows of stride as) for one test case.
type gemmQ8Fill struct {
	name      string
	nonFinite bool // scales may be Inf/NaN: only the non-finiteness is compared
	fill      func(typ ggml.Type, w []byte, ws, rows int, a []byte, as, cols, nb int, rng *rand.Rand)
}

// gemmQ8Blocks calls f on the bytes of every block of a matrix.
func gemmQ8Blocks(b []byte, stride, n, nb, bs int, f func(blk []byte)) {
	for r := 0; r < n; r++ {
		for i := 0; i < nb; i++ {
			f(b[r*stride+i*bs : r*stride+(i+1)*bs])
		}
	}
}

func gemmQ8Fills() []gemmQ8Fill {
	finite := func(rng *rand.Rand) uint16 {
		for {
			if h := uint16(rng.Uint32()); h&0x7c00 != 0x7c00 {
				return h
			}
		}
	}
	return []gemmQ8Fill{
		{"random", false, func(typ ggml.Type, w []byte, ws, rows int, a []byte, as, cols, nb int, rng *rand.Rand) {
			k := mustKernelNoT(typ)
			for r := 0; r < rows; r++ {
				k.Random(w[r*ws:r*ws+nb*typ.TypeSize()], rng, 1)
			}
			for c := 0; c < cols; c++ {
				QuantizeQ8_0(randomFloats(rng, nb*32, 1), a[c*as:c*as+nb*q8_0BlockSize])
			}
		}},
		{"random bytes, finite scales", false, func(typ ggml.Type, w []byte, ws, rows int, a []byte, as, cols, nb int, rng *rand.Rand) {
			for _, m := range [][]byte{w, a} {
				for i := range m {
					m[i] = byte(rng.Uint32())
				}
			}
			gemmQ8Blocks(w, ws, rows, nb, typ.TypeSize(), func(b []byte) { binary.LittleEndian.PutUint16(b, finite(rng)) })
			gemmQ8Blocks(a, as, cols, nb, q8_0BlockSize, func(b []byte) { binary.LittleEndian.PutUint16(b, finite(rng)) })
		}},
		{"random bytes", true, func(typ ggml.Type, w []byte, ws, rows int, a []byte, as, cols, nb int, rng *rand.Rand) {
			for _, m := range [][]byte{w, a} {
				for i := range m {
					m[i] = byte(rng.Uint32())
				}
			}
		}},
		{"zero", false, func(typ ggml.Type, w []byte, ws, rows int, a []byte, as, cols, nb int, rng *rand.Rand) {
			clear(w)
			clear(a)
		}},
		{"extreme quants, largest scales", false, func(typ ggml.Type, w []byte, ws, rows int, a []byte, as, cols, nb int, rng *rand.Rand) {
			// -128/127 weights (0x00/0xff nibbles) against -128/127
			// activations in every combination, scales 65504.
			gemmQ8Blocks(w, ws, rows, nb, typ.TypeSize(), func(b []byte) {
				binary.LittleEndian.PutUint16(b, 0x7bff)
				for j := 2; j < len(b); j++ {
					b[j] = []byte{0x80, 0x7f, 0xff, 0x00, 0x80, 0x0f}[(j+rng.IntN(2))%6]
				}
			})
			gemmQ8Blocks(a, as, cols, nb, q8_0BlockSize, func(b []byte) {
				binary.LittleEndian.PutUint16(b, 0x7bff|uint16(rng.IntN(2))<<15)
				for j := 2; j < len(b); j++ {
					b[j] = []byte{0x80, 0x80, 0x7f, 0x81}[(j+rng.IntN(2))%4]
				}
			})
		}},
		{"subnormal scales", false, func(typ ggml.Type, w []byte, ws, rows int, a []byte, as, cols, nb int, rng *rand.Rand) {
			k := mustKernelNoT(typ)
			for r := 0; r < rows; r++ {
				k.Random(w[r*ws:r*ws+nb*typ.TypeSize()], rng, 1)
			}
			for c := 0; c < cols; c++ {
				QuantizeQ8_0(randomFloats(rng, nb*32, 1), a[c*as:c*as+nb*q8_0BlockSize])
			}
			sub := func(b []byte) { binary.LittleEndian.PutUint16(b, uint16(1+rng.IntN(0x3ff))|uint16(rng.IntN(2))<<15) }
			gemmQ8Blocks(w, ws, rows, nb, typ.TypeSize(), sub)
			gemmQ8Blocks(a, as, cols, nb, q8_0BlockSize, func(b []byte) {
				if rng.IntN(2) == 0 {
					sub(b)
				}
			})
		}},
	}
}

// TestGemmQ8 compares every tile kernel with GoDot on tiles of 1..20 weight
// rows × 1..70 activation rows, with padded strides, and checks that
// nothing outside the tile is written.
func TestGemmQ8(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := []struct{ rows, cols, nb int }{
		{1, 1, 1}, {1, 1, 64}, {2, 1, 3}, {3, 2, 5}, {4, 1, 64}, {4, 3, 2}, {5, 4, 7},
		{7, 5, 1}, {8, 6, 24}, {9, 7, 9}, {16, 1, 64}, {16, 64, 64}, {17, 70, 3}, {20, 70, 24},
		{13, 11, 131}, {20, 2, 128},
	}
	for _, g := range gemmQ8Impls {
		if !gemmQ8Runs(g.vnni) {
			continue
		}
		k := mustKernel(t, g.typ)
		bs := g.typ.TypeSize()
		for _, f := range gemmQ8Fills() {
			for _, s := range shapes {
				name := fmt.Sprintf("%s/%s/%s/%dx%dx%d", g.typ, g.name, f.name, s.rows, s.cols, s.nb)
				n := s.nb * 32
				ws := s.nb*bs + rng.IntN(3)*7
				as := s.nb*q8_0BlockSize + rng.IntN(3)*5
				os := s.rows + rng.IntN(4)
				w := make([]byte, (s.rows-1)*ws+s.nb*bs)
				a := make([]byte, (s.cols-1)*as+s.nb*q8_0BlockSize)
				f.fill(g.typ, w, ws, s.rows, a, as, s.cols, s.nb, rng)
				out := make([]float32, (s.cols-1)*os+s.rows+2)
				sentinel := float32(math.Float32frombits(0x7fc0dead))
				for i := range out {
					out[i] = sentinel
				}
				g.gemm(n, w, ws, s.rows, a, as, s.cols, out, os)
				for c := 0; c < s.cols; c++ {
					ar := a[c*as : c*as+s.nb*q8_0BlockSize]
					for r := 0; r < s.rows; r++ {
						wr := w[r*ws : r*ws+s.nb*bs]
						want := k.GoDot(n, wr, ar)
						got := out[c*os+r]
						if f.nonFinite {
							if isFinite32(want) != isFinite32(got) || (isFinite32(want) &&
								math.Abs(float64(got)-float64(want)) > gemmQ8Bound*gemmQ8AbsSum(g.typ, n, wr, ar)) {
								t.Fatalf("%s: out[%d][%d] = %v, GoDot %v", name, c, r, got, want)
							}
							continue
						}
						if bound := gemmQ8Bound * gemmQ8AbsSum(g.typ, n, wr, ar); !(math.Abs(float64(got)-float64(want)) <= bound) {
							t.Fatalf("%s: out[%d][%d] = %v, GoDot %v (bound %g)", name, c, r, got, want, bound)
						}
					}
				}
				for i, v := range out {
					if c, r := i/os, i%os; (r >= s.rows || c >= s.cols) && math.Float32bits(v) != math.Float32bits(sentinel) {
						t.Fatalf("%s: out[%d] outside the tile was written", name, i)
					}
				}
			}
		}
	}
}

func isFinite32(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// TestGemmQ8Bounds checks that a tile whose last row or activation row or
// output is short panics in Go instead of reading or writing past a slice,
// and that n = 0 gives zeros.
func TestGemmQ8Bounds(t *testing.T) {
	for _, g := range gemmQ8Impls {
		if !gemmQ8Runs(g.vnni) {
			continue
		}
		const nb, rows, cols = 8, 5, 4
		n := nb * 32
		rb := nb * g.typ.TypeSize()
		ab := nb * q8_0BlockSize
		w := make([]byte, rows*rb)
		a := make([]byte, cols*ab)
		out := make([]float32, rows*cols)
		for _, c := range []struct {
			name string
			run  func()
		}{
			{"short weights", func() { g.gemm(n, w[:len(w)-1], rb, rows, a, ab, cols, out, rows) }},
			{"short activations", func() { g.gemm(n, w, rb, rows, a[:len(a)-1], ab, cols, out, rows) }},
			{"short output", func() { g.gemm(n, w, rb, rows, a, ab, cols, out[:len(out)-1], rows) }},
			{"partial block", func() { g.gemm(n-1, w, rb, rows, a, ab, cols, out, rows) }},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s %s: did not panic", g.typ, c.name)
					}
				}()
				c.run()
			}()
		}
		for i := range out {
			out[i] = 1
		}
		g.gemm(0, nil, 0, rows, nil, 0, cols, out, rows)
		for i, v := range out {
			if v != 0 {
				t.Fatalf("%s: n=0 gives out[%d] = %v", g.typ, i, v)
			}
		}
	}
}

// BenchmarkGemmQ8 compares, in one run, Kernel.Gemm's default loop over
// Dot (GoDot, and the installed SIMD Dot) with the tile kernels, as
// engine/cpu.MatMul calls them (tiles of 16 weight rows): cols=1 on a
// 64 MiB weight matrix streamed from DRAM (decode), and cols=64 on a
// 768×2048 one (prefill). SetBytes is the weight matrix size.
func BenchmarkGemmQ8(b *testing.B) {
	const n = 2048
	for _, typ := range []ggml.Type{ggml.Q8_0, ggml.Q4_0} {
		k := mustKernel(b, typ)
		rb := rowBytes(b, typ, n)
		rng := rand.New(rand.NewPCG(1, 2))
		for _, cols := range []int{1, 64} {
			rows := 768
			if cols == 1 {
				rows = (64 << 20) / rb &^ 15
			}
			w := make([]byte, rows*rb)
			k.Random(w, rng, 1)
			ab := ActivationSize(ggml.Q8_0, n)
			a := make([]byte, cols*ab)
			for c := 0; c < cols; c++ {
				QuantizeQ8_0(randomFloats(rng, n, 1), a[c*ab:(c+1)*ab])
			}
			out := make([]float32, cols*rows)
			impls := []struct {
				name string
				gemm func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
			}{
				{"loop-GoDot", (&Kernel{Dot: k.GoDot}).loopGemm},
				{"loop-" + k.SIMD, (&Kernel{Dot: k.Dot}).loopGemm},
			}
			for _, g := range gemmQ8Impls {
				if g.typ == typ && gemmQ8Runs(g.vnni) {
					impls = append(impls, struct {
						name string
						gemm func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
					}{"gemm-" + g.name, g.gemm})
				}
			}
			for _, im := range impls {
				b.Run(fmt.Sprintf("%s/cols=%d/%s", typ, cols, im.name), func(b *testing.B) {
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						for r0 := 0; r0 < rows; r0 += 16 {
							r1 := min(r0+16, rows)
							im.gemm(n, w[r0*rb:r1*rb], rb, r1-r0, a, ab, cols, out[r0:], rows)
						}
					}
				})
			}
		}
	}
}
