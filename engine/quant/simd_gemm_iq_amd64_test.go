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

// gemmIQTypes are the weight types with an assembly Gemm from the
// simd_gemm_iq files.
var gemmIQTypes = []ggml.Type{ggml.IQ2_XS, ggml.IQ2_XXS, ggml.IQ3_XXS, ggml.IQ4_XS}

// gemmIQBound is the tolerance of the assembly Gemm against GoDot, per
// output, relative to Σ|w·a| (gemmIQMagnitude): both sum the same exact
// integer block sums, in a different float order (8 FMA lanes vs one
// float32 chain).
const gemmIQBound = 2e-6

// gemmIQFunc is a Kernel.Gemm.
type gemmIQFunc = func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)

// gemmIQAsm returns the assembly Gemm for typ that init installs on this
// CPU, skipping the test on a CPU without AVX2/FMA/F16C/BMI1.
func gemmIQAsm(t testing.TB, typ ggml.Type) gemmIQFunc {
	t.Helper()
	vs := gemmIQVariants(t, typ)
	return vs[len(vs)-1].gemm
}

// gemmIQVariants returns the assembly Gemms for typ this CPU runs: with
// the AVX2 pairs kernels, and with the VNNI ones if it has AVX512_VNNI.
func gemmIQVariants(t testing.TB, typ ggml.Type) []struct {
	name string
	gemm gemmIQFunc
} {
	t.Helper()
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpu.X86.HasF16C || !cpu.X86.HasBMI1 {
		t.Skip("no AVX2/FMA/F16C/BMI1")
	}
	var bs int
	var ks iqGemmKernels
	switch typ {
	case ggml.IQ2_XS:
		bs, ks = iq2XSSize, iqGemmIQ2XS
	case ggml.IQ2_XXS:
		bs, ks = iq2XXSSize, iqGemmIQ2XXS
	case ggml.IQ3_XXS:
		bs, ks = iq3XXSSize, iqGemmIQ3XXS
	case ggml.IQ4_XS:
		bs, ks = iq4XSSize, iqGemmIQ4XS
	default:
		t.Fatalf("no assembly Gemm for %s", typ)
	}
	vs := []struct {
		name string
		gemm gemmIQFunc
	}{{"avx2", gemmIQ(bs, ks, false)}}
	if iqHasVNNI() {
		vs = append(vs, struct {
			name string
			gemm gemmIQFunc
		}{"vnni", gemmIQ(bs, ks, true)})
	}
	return vs
}

// gemmIQMagnitude returns Σ|w·a| over n values of weight row w and Q8_K
// row a: per block |d·y_d| times Σ|v·q8|, where v is the block dequantized
// with its fp16 d replaced by 1 (exact: scale times grid value or
// kvalues_iq4nl entry). Computed in float64, so it is finite for every
// finite scale.
func gemmIQMagnitude(t testing.TB, typ ggml.Type, n int, w, a []byte) float64 {
	t.Helper()
	k := mustKernel(t, typ)
	bs := typ.TypeSize()
	blk := make([]byte, bs)
	v := make([]float32, iqQK)
	var s float64
	for i := 0; i < n/iqQK; i++ {
		x := w[i*bs : (i+1)*bs]
		y := a[i*iqQ8KSize : (i+1)*iqQ8KSize]
		yd := float64(math.Float32frombits(binary.LittleEndian.Uint32(y)))
		copy(blk, x)
		binary.LittleEndian.PutUint16(blk, 0x3c00)
		k.Dequantize(blk, v)
		var m float64
		for j := range v {
			m += math.Abs(float64(v[j]) * float64(int8(y[4+j])))
		}
		s += math.Abs(float64(FP16ToFloat32(binary.LittleEndian.Uint16(x)))*yd) * m
	}
	return s
}

// gemmIQTile is one Gemm call's operands: rows weight rows and cols
// activation rows of n values, with strides of at least a row.
type gemmIQTile struct {
	n, rows, cols               int
	w, a                        []byte
	wStride, aStride, outStride int
}

// newGemmIQTile builds a tile of random operands: weights from fill(nb)
// per row, activations from act(nb) per row, strides padded by up to 2
// blocks (output stride by up to 5) of random bytes.
func newGemmIQTile(typ ggml.Type, rng *rand.Rand, nb, rows, cols int, fill, act func(nb int) []byte) gemmIQTile {
	bs := typ.TypeSize()
	tc := gemmIQTile{n: nb * iqQK, rows: rows, cols: cols}
	tc.wStride = (nb + rng.IntN(3)) * bs
	tc.aStride = (nb + rng.IntN(3)) * iqQ8KSize
	tc.outStride = rows + rng.IntN(6)
	tc.w = make([]byte, rows*tc.wStride)
	for i := range tc.w {
		tc.w[i] = byte(rng.Uint32())
	}
	for r := 0; r < rows; r++ {
		copy(tc.w[r*tc.wStride:], fill(nb))
	}
	tc.a = make([]byte, cols*tc.aStride)
	for i := range tc.a {
		tc.a[i] = byte(rng.Uint32())
	}
	for c := 0; c < cols; c++ {
		copy(tc.a[c*tc.aStride:], act(nb))
	}
	return tc
}

// checkGemmIQ runs gemm on tile and compares every output with GoDot
// within gemmIQBound·magnitude (plus 1e-37 for results in float32's
// subnormal range), and checks that no other element of out was written.
func checkGemmIQ(t *testing.T, typ ggml.Type, gemm func(int, []byte, int, int, []byte, int, int, []float32, int), name string, tc gemmIQTile) {
	t.Helper()
	k := mustKernel(t, typ)
	out := make([]float32, (tc.cols-1)*tc.outStride+tc.rows+3)
	const sentinel = -12345.5
	for i := range out {
		out[i] = sentinel
	}
	gemm(tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, out, tc.outStride)
	written := make([]bool, len(out))
	bad := 0
	for c := 0; c < tc.cols; c++ {
		act := tc.a[c*tc.aStride:]
		for r := 0; r < tc.rows; r++ {
			row := tc.w[r*tc.wStride:]
			i := c*tc.outStride + r
			written[i] = true
			want := k.GoDot(tc.n, row, act)
			got := out[i]
			tol := gemmIQBound*gemmIQMagnitude(t, typ, tc.n, row, act) + 1e-37
			if d := math.Abs(float64(got) - float64(want)); !(d <= tol) {
				if bad++; bad <= 5 {
					t.Errorf("%s: n=%d rows=%d cols=%d: out[c=%d r=%d] = %g, GoDot %g (diff %g > tol %g)",
						name, tc.n, tc.rows, tc.cols, c, r, got, want, d, tol)
				}
			}
		}
	}
	for i, v := range out {
		if !written[i] && v != sentinel {
			t.Errorf("%s: out[%d] written (%g) outside the tile", name, i, v)
			return
		}
	}
}

// randomIQBytes returns nb blocks of typ with random bytes everywhere and
// a random finite fp16 d (either sign, normal or subnormal).
func randomIQBytes(typ ggml.Type, rng *rand.Rand, nb int) []byte {
	bs := typ.TypeSize()
	w := make([]byte, nb*bs)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	for i := 0; i < nb; i++ {
		h := uint16(rng.Uint32())
		if h&0x7c00 == 0x7c00 { // Inf or NaN: make it finite
			h &^= 0x4000
		}
		binary.LittleEndian.PutUint16(w[i*bs:], h)
	}
	return w
}

// fillIQ returns nb blocks of typ with every byte set to fill and d set
// to the fp16 h.
func fillIQ(typ ggml.Type, nb int, fill byte, h uint16) []byte {
	bs := typ.TypeSize()
	w := make([]byte, nb*bs)
	for i := range w {
		w[i] = fill
	}
	for i := 0; i < nb; i++ {
		binary.LittleEndian.PutUint16(w[i*bs:], h)
	}
	return w
}

// TestGemmIQRandom checks the assembly Gemm against GoDot on random tiles
// (rows 1..20, cols 1..70, 1..9 blocks, padded strides): valid blocks
// from Kernel.Random with QuantizeQ8K activations, and random bytes with
// full-range quants (including -128) and scales of any magnitude.
func TestGemmIQRandom(t *testing.T) {
	shapes := [][2]int{{1, 1}, {16, 1}, {1, 4}, {3, 5}, {16, 64}, {20, 70}, {7, 3}, {2, 9}, {13, 33}, {5, 2}, {1, 70}, {4, 7}, {6, 8}, {7, 6}}
	for _, typ := range gemmIQTypes {
		t.Run(typ.String(), func(t *testing.T) {
			for _, v := range gemmIQVariants(t, typ) {
				t.Run(v.name, func(t *testing.T) { testGemmIQRandom(t, typ, v.gemm, shapes) })
			}
		})
	}
}

func testGemmIQRandom(t *testing.T, typ ggml.Type, gemm gemmIQFunc, shapes [][2]int) {
	k := mustKernel(t, typ)
	rng := rand.New(rand.NewPCG(uint64(typ), 42))
	valid := func(nb int) []byte { return randomRow(t, typ, nb*iqQK, rng, 1) }
	quantized := func(nb int) []byte {
		a := make([]byte, ActivationSize(k.VecDotType, nb*iqQK))
		QuantizeActivations(k.VecDotType, randomFloats(rng, nb*iqQK, 1), a)
		return a
	}
	bytes := func(nb int) []byte { return randomIQBytes(typ, rng, nb) }
	fullRange := func(nb int) []byte { return randomQ8K(rng, nb) }
	for i, s := range shapes {
		nb := 1 + i%9
		checkGemmIQ(t, typ, gemm, "Random+QuantizeQ8K", newGemmIQTile(typ, rng, nb, s[0], s[1], valid, quantized))
		checkGemmIQ(t, typ, gemm, "random bytes", newGemmIQTile(typ, rng, nb, s[0], s[1], bytes, fullRange))
	}
	// Rows as long as the pairs kernels take, and longer.
	checkGemmIQ(t, typ, gemm, "rows of iqPairBlocks", newGemmIQTile(typ, rng, iqPairBlocks, 4, 3, bytes, fullRange))
	checkGemmIQ(t, typ, gemm, "rows of iqPairBlocks", newGemmIQTile(typ, rng, iqPairBlocks, 4, iqVNNICols+1, bytes, fullRange))
	nb := iqPairBlocks + 1
	checkGemmIQ(t, typ, gemm, "long rows", newGemmIQTile(typ, rng, nb, 3, 6, valid, quantized))
	checkGemmIQ(t, typ, gemm, "long rows, random bytes", newGemmIQTile(typ, rng, nb, 2, 5, bytes, fullRange))
}

// TestGemmIQEdges checks edge values: zero blocks, every weight byte
// 0x00/0xff/..., largest, subnormal and negative fp16 scales, activation
// quants -128 and 127, and n below one block (all outputs 0).
func TestGemmIQEdges(t *testing.T) {
	for _, typ := range gemmIQTypes {
		t.Run(typ.String(), func(t *testing.T) {
			for _, v := range gemmIQVariants(t, typ) {
				t.Run(v.name, func(t *testing.T) { testGemmIQEdges(t, typ, v.gemm) })
			}
		})
	}
}

func testGemmIQEdges(t *testing.T, typ ggml.Type, gemm gemmIQFunc) {
	rng := rand.New(rand.NewPCG(uint64(typ), 43))
	for _, fill := range []byte{0x00, 0xff, 0x55, 0xaa, 0x0f, 0xf0, 0x80, 0x7f} {
		for _, h := range []uint16{0x7bff, 0x0001, 0x03ff, 0xfbff, 0x3c00, 0x8000} {
			for _, q := range []int8{-128, 127, 0, -1} {
				for _, d := range []float32{1, -1e-3, 1e-30} {
					w := func(nb int) []byte { return fillIQ(typ, nb, fill, h) }
					a := func(nb int) []byte { return constQ8K(nb, q, d) }
					name := fmt.Sprintf("fill %#02x fp16 %#04x q %d d %g", fill, h, q, d)
					checkGemmIQ(t, typ, gemm, name, newGemmIQTile(typ, rng, 2, 5, 6, w, a))
				}
			}
		}
	}
	// Largest weights against -128 everywhere: no int16 saturation.
	for range 5 {
		w := func(nb int) []byte { return randomRow(t, typ, nb*iqQK, rng, 1) }
		a := func(nb int) []byte { return constQ8K(nb, -128, 1) }
		checkGemmIQ(t, typ, gemm, "random vs -128", newGemmIQTile(typ, rng, 3, 4, 5, w, a))
	}
	// Fewer values than one block: every output is 0.
	tc := newGemmIQTile(typ, rng, 1, 3, 5, func(nb int) []byte { return randomIQBytes(typ, rng, nb) },
		func(nb int) []byte { return randomQ8K(rng, nb) })
	out := make([]float32, 4*tc.outStride+3)
	for i := range out {
		out[i] = 1
	}
	gemm(0, tc.w, tc.wStride, 3, tc.a, tc.aStride, 5, out, tc.outStride)
	for c := 0; c < 5; c++ {
		for r := 0; r < 3; r++ {
			if v := out[c*tc.outStride+r]; v != 0 {
				t.Errorf("n = 0: out[c=%d r=%d] = %g, want 0", c, r, v)
			}
		}
	}
}

// TestGemmIQShort checks that the assembly Gemm panics, as the loop over
// Dot does, instead of touching memory past short slices, and rejects n
// that is not a multiple of 256.
func TestGemmIQShort(t *testing.T) {
	for _, typ := range gemmIQTypes {
		t.Run(typ.String(), func(t *testing.T) {
			gemm := gemmIQAsm(t, typ)
			const nb, rows, cols = 2, 3, 5
			n := nb * iqQK
			rb := nb * typ.TypeSize()
			ab := nb * iqQ8KSize
			w := fillIQ(typ, nb*rows, 1, 0x3c00)
			a := constQ8K(nb*cols, 1, 1)
			out := make([]float32, rows*cols)
			for _, c := range []struct {
				name string
				n    int
				w, a []byte
				out  []float32
			}{
				{"short weights", n, w[:len(w)-1], a, out},
				{"short activations", n, w, a[:len(a)-1], out},
				{"short out", n, w, a, out[:len(out)-1]},
				{"n not a multiple of 256", n - 1, w, a, out},
			} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s: Gemm did not panic", c.name)
						}
					}()
					gemm(c.n, c.w, rb, rows, c.a, ab, cols, c.out, rows)
				}()
			}
		})
	}
}

// TestGemmIQInstalled checks that For installs the assembly Gemm: its
// results match the assembly kernel's bit for bit (and on this CPU differ
// from the loop over Dot for some random tile, or it would not be in use).
func TestGemmIQInstalled(t *testing.T) {
	for _, typ := range gemmIQTypes {
		t.Run(typ.String(), func(t *testing.T) {
			gemm := gemmIQAsm(t, typ)
			k := mustKernel(t, typ)
			rng := rand.New(rand.NewPCG(uint64(typ), 44))
			// More activation rows than InvariantCols: the tiles' own path.
			const cols = InvariantCols + 4
			tc := newGemmIQTile(typ, rng, 8, 16, cols, func(nb int) []byte { return randomRow(t, typ, nb*iqQK, rng, 1) },
				func(nb int) []byte { return randomQ8K(rng, nb) })
			got := make([]float32, cols*tc.outStride)
			want := make([]float32, cols*tc.outStride)
			loop := make([]float32, cols*tc.outStride)
			k.Gemm(tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, got, tc.outStride)
			gemm(tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, want, tc.outStride)
			k.loopGemm(tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, loop, tc.outStride)
			differs := false
			for i := range got {
				if !sameFloat32(got[i], want[i]) {
					t.Fatalf("Kernel.Gemm out[%d] = %g, assembly Gemm %g", i, got[i], want[i])
				}
				differs = differs || !sameFloat32(got[i], loop[i])
			}
			if !differs {
				t.Errorf("Kernel.Gemm equals the loop over Dot bit for bit: assembly Gemm not installed?")
			}
		})
	}
}

// BenchmarkGemmIQ compares, in one run, the loop over GoDot, the loop over
// the installed (SIMD) Dot and the assembly Gemm on tiles of 16 weight
// rows as engine/cpu.MatMul makes them. cols=1 (decode) streams a 64 MiB
// weight matrix from memory; cols=64 (prefill) reuses a 2048x512 matrix
// from cache. SetBytes is the weight bytes of one pass, so MB/s is weight
// bandwidth (times cols for activation rows processed).
func BenchmarkGemmIQ(b *testing.B) {
	const n = 2048
	for _, typ := range gemmIQTypes {
		k := mustKernel(b, typ)
		rb := n / iqQK * typ.TypeSize()
		goLoop := *k
		goLoop.Dot = k.GoDot
		dotLoop := *k
		for _, cols := range []int{1, 64} {
			rows := 512
			if cols == 1 {
				rows = (64 << 20) / rb / 16 * 16
			}
			rng := rand.New(rand.NewPCG(1, 2))
			w := randomRow(b, typ, n*rows, rng, 1)
			as := ActivationSize(ggml.Q8_K, n)
			a := make([]byte, cols*as)
			for c := 0; c < cols; c++ {
				QuantizeQ8K(randomFloats(rng, n, 1), a[c*as:(c+1)*as])
			}
			out := make([]float32, rows*cols)
			for _, v := range []struct {
				name string
				gemm func(int, []byte, int, int, []byte, int, int, []float32, int)
			}{
				{"godot", goLoop.loopGemm},
				{"dot", dotLoop.loopGemm},
				{"gemm", k.Gemm},
			} {
				b.Run(fmt.Sprintf("%s/cols=%d/%s", typ, cols, v.name), func(b *testing.B) {
					b.SetBytes(int64(rows * rb))
					for b.Loop() {
						for r := 0; r < rows; r += 16 {
							v.gemm(n, w[r*rb:(r+16)*rb], rb, 16, a, as, cols, out[r:], rows)
						}
					}
				})
			}
		}
	}
}

// TestGemmIQSignedActivations checks the C1S kernels (signs moved to the
// activations) bit for bit against the C1 kernels on random weight bytes
// and activations of every quant but -128, and that decode picks the C1
// kernel when an activation block holds -128.
func TestGemmIQSignedActivations(t *testing.T) {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpu.X86.HasF16C || !cpu.X86.HasBMI1 {
		t.Skip("CPU lacks AVX2")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		typ ggml.Type
		ks  iqGemmKernels
	}{{ggml.IQ2_XS, iqGemmIQ2XS}, {ggml.IQ2_XXS, iqGemmIQ2XXS}, {ggml.IQ3_XXS, iqGemmIQ3XXS}} {
		for _, nb := range []int{1, 3, 8} {
			for trial := 0; trial < 20; trial++ {
				w := randomIQBytes(c.typ, rng, nb)
				a := make([]byte, nb*iqQ8KSize)
				for i := range a {
					a[i] = byte(rng.IntN(256))
				}
				for b := 0; b < nb; b++ {
					binary.LittleEndian.PutUint32(a[b*iqQ8KSize:], math.Float32bits(float32(rng.NormFloat64())))
					for i := b*iqQ8KSize + 4; i < b*iqQ8KSize+4+iqQK; i++ {
						if a[i] == 0x80 {
							a[i] = 0x81
						}
					}
				}
				if q8KHasMin(a, nb) {
					t.Fatal("q8KHasMin: -128 found where there is none")
				}
				var got, want float32
				c.ks.dotS(&w[0], &a[0], 0, nb, &got, 0)
				c.ks.dot(&w[0], &a[0], 0, nb, &want, 0)
				if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
					t.Fatalf("%s nb=%d: C1S %v, C1 %v", c.typ, nb, got, want)
				}
				// With a -128, Gemm must not use C1S.
				a[(nb-1)*iqQ8KSize+4+rng.IntN(iqQK)] = 0x80
				if !q8KHasMin(a, nb) {
					t.Fatal("q8KHasMin missed a -128")
				}
				k := mustKernel(t, c.typ)
				var out [1]float32
				k.Gemm(nb*iqQK, w, len(w), 1, a, len(a), 1, out[:], 1)
				c.ks.dot(&w[0], &a[0], 0, nb, &want, 0)
				if math.Float32bits(out[0]) != math.Float32bits(want) && !(out[0] != out[0] && want != want) {
					t.Fatalf("%s nb=%d with -128: Gemm %v, C1 %v", c.typ, nb, out[0], want)
				}
			}
		}
	}
}

// TestGemmIQAVX512C1S checks that the AVX-512 decode kernels of IQ2_XS and
// IQ2_XXS give the AVX2 C1S kernels' bits (the same integer lanes, the same
// float steps), on the activations the Gemm gives them (no quant -128):
// valid blocks with QuantizeQ8K rows, random bytes, edge fills, 1 to 17
// blocks.
func TestGemmIQAVX512C1S(t *testing.T) {
	if !iqHasAVX512C1S() || !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpu.X86.HasF16C || !cpu.X86.HasBMI1 {
		t.Skip("no AVX-512 F/BW/VL")
	}
	kernels := []struct {
		typ        ggml.Type
		avx2, z512 iqGemmFn
	}{
		{ggml.IQ2_XS, gemmIQ2XSAVX2C1S, gemmIQ2XSAVX512C1S},
		{ggml.IQ2_XXS, gemmIQ2XXSAVX2C1S, gemmIQ2XXSAVX512C1S},
	}
	for _, k := range kernels {
		t.Run(k.typ.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(k.typ), 512))
			noMin := func(a []byte) []byte {
				for i := range a {
					if a[i] == 0x80 {
						a[i] = 0x81
					}
				}
				return a
			}
			type tcase struct {
				name string
				w, a []byte
			}
			var cases []tcase
			for nb := 1; nb <= 17; nb++ {
				a := make([]byte, nb*iqQ8KSize)
				QuantizeQ8K(randomFloats(rng, nb*iqQK, 1), a)
				cases = append(cases,
					tcase{fmt.Sprintf("valid nb=%d", nb), randomRow(t, k.typ, nb*iqQK, rng, 1), a},
					tcase{fmt.Sprintf("random bytes nb=%d", nb), randomIQBytes(k.typ, rng, nb), noMin(randomQ8K(rng, nb))})
			}
			for _, fill := range []byte{0x00, 0xff, 0x55, 0xaa, 0x80, 0x7f} {
				for _, q := range []int8{127, -127, 0, -1} {
					cases = append(cases, tcase{fmt.Sprintf("fill %#02x q %d", fill, q), fillIQ(k.typ, 2, fill, 0x3c00), constQ8K(2, q, 1e-3)})
				}
			}
			bad := 0
			for _, c := range cases {
				nb := len(c.a) / iqQ8KSize
				var want, got float32
				k.avx2(&c.w[0], &c.a[0], 0, nb, &want, 1)
				k.z512(&c.w[0], &c.a[0], 0, nb, &got, 1)
				if !sameFloat32(got, want) {
					if bad++; bad <= 5 {
						t.Errorf("%s: AVX-512 %g, AVX2 %g", c.name, got, want)
					}
				}
			}
		})
	}
}
