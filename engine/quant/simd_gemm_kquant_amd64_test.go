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

// gemmKQuantTypes are the weight types with an assembly Gemm from the
// simd_gemm_kquant files.
var gemmKQuantTypes = []ggml.Type{ggml.Q4_K, ggml.Q6_K, ggml.Q5_K}

// gemmKQuantBound is the tolerance of the assembly Gemm against GoDot, per
// output, relative to the magnitude gemmKQuantMagnitude: the two sum the
// same exact integer block sums, in a different float order.
const gemmKQuantBound = 2e-6

// gemmKQuantAsm returns the assembly Gemm for typ, skipping the test on a
// CPU without AVX2/FMA/F16C.
func gemmKQuantAsm(t testing.TB, typ ggml.Type) func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
	t.Helper()
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpu.X86.HasF16C {
		t.Skip("no AVX2/FMA/F16C")
	}
	switch typ {
	case ggml.Q4_K:
		return gemmKQuant(q4KBlockSize, kquantGemmQ4K)
	case ggml.Q5_K:
		return gemmKQuant(q5KBlockSize, kquantGemmQ5K)
	case ggml.Q6_K:
		return gemmKQuant(q6KBlockSize, kquantGemmQ6K)
	}
	t.Fatalf("no assembly Gemm for %s", typ)
	return nil
}

// gemmKQuantMagnitude returns Σ|w·a| over n values of weight row w and
// Q8_K row a, counting each term of the integer formulation the kernels
// sum: for Q4_K/Q5_K Σ|d·y_d·sc·q·q8| + Σ|dmin·y_d·m·q8| (the scale and
// the min part of each weight), for Q6_K Σ|d·y_d·sc·(q-32)·q8| +
// 32·Σ|d·y_d·sc·q8| (the quants and the -32 offset). The terms are read
// off Dequantize of the block with its fp16 scales replaced by 1 and 0.
func gemmKQuantMagnitude(t testing.TB, typ ggml.Type, n int, w, a []byte) float64 {
	t.Helper()
	k := mustKernel(t, typ)
	bs := rowBytes(t, typ, qkK)
	var s float64
	blk := make([]byte, bs)
	v := make([]float32, qkK)
	for i := 0; i < n/qkK; i++ {
		x := w[i*bs : (i+1)*bs]
		y := a[i*q8KBlockSize : (i+1)*q8KBlockSize]
		yd := float64(math.Float32frombits(binary.LittleEndian.Uint32(y)))
		q8 := func(j int) float64 { return float64(int8(y[q8KQsOff+j])) }
		// term returns Σ|v·q8| of the block with its fp16 fields set to hs.
		term := func(hs ...uint16) float64 {
			copy(blk, x)
			for f, off := range kquantFP16Offsets[typ] {
				binary.LittleEndian.PutUint16(blk[off:], hs[f])
			}
			k.Dequantize(blk, v)
			var t float64
			for j := range v {
				t += math.Abs(float64(v[j]) * q8(j))
			}
			return t
		}
		if typ == ggml.Q6_K {
			d := float64(fp16At(x[208:]))
			var off float64
			for j := 0; j < qkK; j++ {
				off += 32 * math.Abs(float64(int8(x[192+j/16]))*q8(j))
			}
			s += math.Abs(d*yd) * (term(0x3c00) + off)
			continue
		}
		d, dmin := float64(fp16At(x[0:])), float64(fp16At(x[2:]))
		s += math.Abs(d*yd)*term(0x3c00, 0) + math.Abs(dmin*yd)*term(0, 0x3c00)
	}
	return s
}

// gemmTile is one Gemm call's operands: rows weight rows and cols
// activation rows of n values, with strides of at least a row.
type gemmTile struct {
	n, rows, cols               int
	w, a                        []byte
	wStride, aStride, outStride int
}

// checkGemmKQuant runs gemm on tile and compares every output with GoDot
// within gemmKQuantBound·magnitude (plus 1e-37 for results in float32's
// subnormal range), and checks that no other element of out was written.
func checkGemmKQuant(t *testing.T, typ ggml.Type, gemm func(int, []byte, int, int, []byte, int, int, []float32, int), name string, tc gemmTile) {
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
			tol := gemmKQuantBound*gemmKQuantMagnitude(t, typ, tc.n, row, act) + 1e-37
			if d := math.Abs(float64(got) - float64(want)); !(d <= tol) && !(math.IsInf(float64(want), 0) && got == want) {
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

// newGemmTile builds a tile of random operands: weights from fill(nb) per
// row, activations from act(nb) per row, strides padded by up to 3 blocks
// (output stride by up to 5) of garbage.
func newGemmTile(t testing.TB, typ ggml.Type, rng *rand.Rand, nb, rows, cols int, fill, act func(nb int) []byte) gemmTile {
	t.Helper()
	n := nb * qkK
	rb := rowBytes(t, typ, n)
	tc := gemmTile{n: n, rows: rows, cols: cols}
	tc.wStride = rb + rng.IntN(3)*rb/nb
	tc.aStride = nb*q8KBlockSize + rng.IntN(3)*q8KBlockSize
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

// TestGemmKQuantRandom checks the assembly Gemm against GoDot on random
// tiles (rows 1..20, cols 1..70, 1..9 blocks, padded strides): valid blocks
// from Kernel.Random with QuantizeQ8K activations, and random bytes with
// full-range quants and scales of any magnitude.
func TestGemmKQuantRandom(t *testing.T) {
	shapes := [][2]int{{1, 1}, {16, 1}, {1, 4}, {3, 5}, {16, 64}, {20, 70}, {7, 3}, {2, 9}, {13, 33}, {5, 2}, {1, 70}}
	for _, typ := range gemmKQuantTypes {
		t.Run(typ.String(), func(t *testing.T) {
			gemm := gemmKQuantAsm(t, typ)
			k := mustKernel(t, typ)
			rng := rand.New(rand.NewPCG(uint64(typ), 42))
			valid := func(nb int) []byte { return randomRow(t, typ, nb*qkK, rng, 1) }
			quantized := func(nb int) []byte {
				a := make([]byte, ActivationSize(k.VecDotType, nb*qkK))
				QuantizeActivations(k.VecDotType, randomFloats(rng, nb*qkK, 1), a)
				return a
			}
			bytes := func(nb int) []byte { return randomKQuantBytes(t, typ, rng, nb) }
			fullRange := func(nb int) []byte { return randomQ8K(rng, nb) }
			for i, s := range shapes {
				nb := 1 + i%9
				checkGemmKQuant(t, typ, gemm, "Random+QuantizeQ8K", newGemmTile(t, typ, rng, nb, s[0], s[1], valid, quantized))
				checkGemmKQuant(t, typ, gemm, "random bytes", newGemmTile(t, typ, rng, nb, s[0], s[1], bytes, fullRange))
			}
		})
	}
}

// TestGemmKQuantEdges checks edge values: zero blocks, every quant byte
// 0x00/0xff/..., largest, subnormal and negative fp16 scales, activation
// quants -128 and 127, and n below one block (all outputs 0).
func TestGemmKQuantEdges(t *testing.T) {
	for _, typ := range gemmKQuantTypes {
		t.Run(typ.String(), func(t *testing.T) {
			gemm := gemmKQuantAsm(t, typ)
			rng := rand.New(rand.NewPCG(uint64(typ), 43))
			for _, fill := range []byte{0x00, 0xff, 0x55, 0xaa, 0x0f, 0xf0, 0x80, 0x7f} {
				for _, h := range []uint16{0x7bff, 0x0001, 0x03ff, 0xfbff, 0x3c00, 0x8000} {
					for _, q := range []int8{-128, 127, 0} {
						for _, d := range []float32{1, -1e-3, 1e-30} {
							w := func(nb int) []byte { return fillKQuant(t, typ, nb, fill, h) }
							a := func(nb int) []byte { return constQ8K(nb, q, d) }
							name := fmt.Sprintf("fill %#02x fp16 %#04x q %d d %g", fill, h, q, d)
							checkGemmKQuant(t, typ, gemm, name, newGemmTile(t, typ, rng, 2, 5, 6, w, a))
						}
					}
				}
			}
			// Fewer values than one block: every output is 0.
			tc := newGemmTile(t, typ, rng, 1, 3, 5, func(nb int) []byte { return randomKQuantBytes(t, typ, rng, nb) },
				func(nb int) []byte { return randomQ8K(rng, nb) })
			out := make([]float32, 4*tc.outStride+3)
			for i := range out {
				out[i] = 1
			}
			gemm(qkK-1, tc.w, tc.wStride, 3, tc.a, tc.aStride, 5, out, tc.outStride)
			for c := 0; c < 5; c++ {
				for r := 0; r < 3; r++ {
					if v := out[c*tc.outStride+r]; v != 0 {
						t.Errorf("n < 256: out[c=%d r=%d] = %g, want 0", c, r, v)
					}
				}
			}
		})
	}
}

// TestGemmKQuantShort checks that the assembly Gemm panics, as the loop
// over Dot does, instead of touching memory past short slices.
func TestGemmKQuantShort(t *testing.T) {
	for _, typ := range gemmKQuantTypes {
		t.Run(typ.String(), func(t *testing.T) {
			gemm := gemmKQuantAsm(t, typ)
			const nb, rows, cols = 2, 3, 5
			n := nb * qkK
			rb := rowBytes(t, typ, n)
			ab := nb * q8KBlockSize
			w := fillKQuant(t, typ, nb*rows, 1, 0x3c00)
			a := constQ8K(nb*cols, 1, 1)
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
							t.Errorf("%s: Gemm did not panic", c.name)
						}
					}()
					gemm(n, c.w, rb, rows, c.a, ab, cols, c.out, rows)
				}()
			}
		})
	}
}

// TestGemmKQuantInstalled checks that For installs the assembly Gemm: its
// results match the assembly kernel's bit for bit (and on this CPU differ
// from the loop over Dot for some random tile, or it would not be in use).
func TestGemmKQuantInstalled(t *testing.T) {
	for _, typ := range gemmKQuantTypes {
		t.Run(typ.String(), func(t *testing.T) {
			gemm := gemmKQuantAsm(t, typ)
			k := mustKernel(t, typ)
			rng := rand.New(rand.NewPCG(uint64(typ), 44))
			tc := newGemmTile(t, typ, rng, 8, 16, 8, func(nb int) []byte { return randomRow(t, typ, nb*qkK, rng, 1) },
				func(nb int) []byte { return randomQ8K(rng, nb) })
			got := make([]float32, 8*tc.outStride)
			want := make([]float32, 8*tc.outStride)
			loop := make([]float32, 8*tc.outStride)
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

// BenchmarkGemmKQuant compares, in one run, the loop over GoDot, the loop
// over the installed (SIMD) Dot and the assembly Gemm on tiles of 16
// weight rows as engine/cpu.MatMul makes them. cols=1 (decode) streams a
// 64 MiB weight matrix from memory; cols=64 (prefill) reuses a 576 KiB-ish
// matrix from cache. SetBytes is the weight bytes of one pass, so MB/s is
// weight bandwidth (times cols for activation rows processed).
func BenchmarkGemmKQuant(b *testing.B) {
	const n = 2048
	for _, typ := range gemmKQuantTypes {
		k := mustKernel(b, typ)
		rb := rowBytes(b, typ, n)
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
			a := make([]byte, cols*ActivationSize(ggml.Q8_K, n))
			as := ActivationSize(ggml.Q8_K, n)
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
