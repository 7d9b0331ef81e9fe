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

// gemmKQuantTypes are the weight types with an assembly Gemm from the
// simd_gemm_kquant files.
var gemmKQuantTypes = []ggml.Type{ggml.Q4_K, ggml.Q6_K, ggml.Q5_K}

// gemmKQuantBound is the tolerance of the assembly Gemm against GoDot, per
// output, relative to the magnitude gemmKQuantMagnitude: the two sum the
// same exact integer block sums, in a different float order.
const gemmKQuantBound = 2e-6

// kquantGemmFunc is the signature of Kernel.Gemm.
type kquantGemmFunc = func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)

// kquantGemmVariant is one instruction set's Gemm for a type.
type kquantGemmVariant struct {
	name string
	gemm kquantGemmFunc
}

// gemmKQuantVariants returns the assembly Gemms for typ this CPU can run,
// the one For installs first; it skips the test when there are none.
func gemmKQuantVariants(t testing.TB, typ ggml.Type) []kquantGemmVariant {
	t.Helper()
	bs := rowBytes(t, typ, qkK)
	kernels := map[ggml.Type][2]kquantGemmKernels{
		ggml.Q4_K: {kquantGemmQ4K, kquantGemmQ4KVNNI},
		ggml.Q5_K: {kquantGemmQ5K, kquantGemmQ5KVNNI},
		ggml.Q6_K: {kquantGemmQ6K, kquantGemmQ6KVNNI},
	}[typ]
	var vs []kquantGemmVariant
	if kquantGemmHasVNNI {
		vs = append(vs, kquantGemmVariant{"avx512vnni", gemmKQuant(bs, kernels[1])})
	}
	if kquantGemmHasAVX2 {
		vs = append(vs, kquantGemmVariant{"avx2", gemmKQuant(bs, kernels[0])})
	}
	if len(vs) == 0 {
		t.Skip("no AVX2/FMA/F16C")
	}
	return vs
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

// kquantTile is one Gemm call's operands: rows weight rows and cols
// activation rows of n values, with strides of at least a row.
type kquantTile struct {
	n, rows, cols               int
	w, a                        []byte
	wStride, aStride, outStride int
}

// checkGemmKQuant runs gemm on tile and compares every output with GoDot
// within gemmKQuantBound·magnitude (plus 1e-37 for results in float32's
// subnormal range), and checks that no other element of out was written.
func checkGemmKQuant(t *testing.T, typ ggml.Type, gemm func(int, []byte, int, int, []byte, int, int, []float32, int), name string, tc kquantTile) {
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

// newKQuantTile builds a tile of random operands: weights from fill(nb) per
// row, activations from act(nb) per row, strides padded by up to 3 blocks
// (output stride by up to 5) of garbage.
func newKQuantTile(t testing.TB, typ ggml.Type, rng *rand.Rand, nb, rows, cols int, fill, act func(nb int) []byte) kquantTile {
	t.Helper()
	n := nb * qkK
	rb := rowBytes(t, typ, n)
	tc := kquantTile{n: n, rows: rows, cols: cols}
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
	shapes := [][2]int{{1, 1}, {16, 1}, {1, 4}, {3, 5}, {16, 64}, {20, 70}, {7, 3}, {2, 9}, {13, 33}, {5, 2}, {1, 70}, {4, 7}, {3, 15}, {17, 8}}
	for _, typ := range gemmKQuantTypes {
		t.Run(typ.String(), func(t *testing.T) {
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
			for _, v := range gemmKQuantVariants(t, typ) {
				for i, s := range shapes {
					nb := 1 + i%9
					checkGemmKQuant(t, typ, v.gemm, v.name+" Random+QuantizeQ8K", newKQuantTile(t, typ, rng, nb, s[0], s[1], valid, quantized))
					checkGemmKQuant(t, typ, v.gemm, v.name+" random bytes", newKQuantTile(t, typ, rng, nb, s[0], s[1], bytes, fullRange))
				}
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
			for _, v := range gemmKQuantVariants(t, typ) {
				checkGemmKQuantEdges(t, typ, v)
			}
		})
	}
}

func checkGemmKQuantEdges(t *testing.T, typ ggml.Type, v kquantGemmVariant) {
	gemm := v.gemm
	rng := rand.New(rand.NewPCG(uint64(typ), 43))
	for _, fill := range []byte{0x00, 0xff, 0x55, 0xaa, 0x0f, 0xf0, 0x80, 0x7f} {
		for _, h := range []uint16{0x7bff, 0x0001, 0x03ff, 0xfbff, 0x3c00, 0x8000} {
			for _, q := range []int8{-128, 127, 0} {
				for _, d := range []float32{1, -1e-3, 1e-30} {
					w := func(nb int) []byte { return fillKQuant(t, typ, nb, fill, h) }
					a := func(nb int) []byte { return constQ8K(nb, q, d) }
					name := fmt.Sprintf("%s fill %#02x fp16 %#04x q %d d %g", v.name, fill, h, q, d)
					checkGemmKQuant(t, typ, gemm, name, newKQuantTile(t, typ, rng, 2, 5, 6, w, a))
				}
			}
		}
	}
	// Fewer values than one block: every output is 0.
	tc := newKQuantTile(t, typ, rng, 1, 3, 5, func(nb int) []byte { return randomKQuantBytes(t, typ, rng, nb) },
		func(nb int) []byte { return randomQ8K(rng, nb) })
	out := make([]float32, 4*tc.outStride+3)
	for i := range out {
		out[i] = 1
	}
	gemm(qkK-1, tc.w, tc.wStride, 3, tc.a, tc.aStride, 5, out, tc.outStride)
	for c := 0; c < 5; c++ {
		for r := 0; r < 3; r++ {
			if x := out[c*tc.outStride+r]; x != 0 {
				t.Errorf("%s n < 256: out[c=%d r=%d] = %g, want 0", v.name, c, r, x)
			}
		}
	}
}

// TestGemmKQuantShort checks that the assembly Gemm panics, as the loop
// over Dot does, instead of touching memory past short slices.
func TestGemmKQuantShort(t *testing.T) {
	for _, typ := range gemmKQuantTypes {
		t.Run(typ.String(), func(t *testing.T) {
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
				for _, v := range gemmKQuantVariants(t, typ) {
					func() {
						defer func() {
							if recover() == nil {
								t.Errorf("%s %s: Gemm did not panic", v.name, c.name)
							}
						}()
						v.gemm(n, c.w, rb, rows, c.a, ab, cols, c.out, rows)
					}()
				}
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
			gemm := gemmKQuantVariants(t, typ)[0].gemm
			k := mustKernel(t, typ)
			rng := rand.New(rand.NewPCG(uint64(typ), 44))
			tc := newKQuantTile(t, typ, rng, 8, 16, 8, func(nb int) []byte { return randomRow(t, typ, nb*qkK, rng, 1) },
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
// weight rows as engine/cpu.MatMul makes them, n = 2048 values per row
// unless named. cols=1 (decode) streams a 64 MiB weight matrix from memory,
// cols=1-cached cycles through 256 rows (in L2: the kernel's compute rate;
// n=768 is an expert's down projection), cols=64 (prefill) reuses a
// 512-row matrix from cache. SetBytes is the weight bytes of one pass, so MB/s is
// weight bandwidth (times cols for activation rows processed).
func BenchmarkGemmKQuant(b *testing.B) {
	for _, typ := range gemmKQuantTypes {
		k := mustKernel(b, typ)
		goLoop := *k
		goLoop.Dot = k.GoDot
		dotLoop := *k
		for _, shape := range []struct {
			name          string
			n, rows, cols int
		}{
			{"cols=1", 2048, 0, 1},
			{"cols=1-cached", 2048, 256, 1},
			{"cols=1-n768-cached", 768, 256, 1},
			{"cols=64", 2048, 512, 64},
		} {
			n, rows, cols := shape.n, shape.rows, shape.cols
			rb := rowBytes(b, typ, n)
			if rows == 0 {
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
				{"gemm-avx2", gemmKQuantVariants(b, typ)[len(gemmKQuantVariants(b, typ))-1].gemm},
				{"gemm", k.Gemm},
			} {
				b.Run(fmt.Sprintf("%s/%s/%s", typ, shape.name, v.name), func(b *testing.B) {
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
