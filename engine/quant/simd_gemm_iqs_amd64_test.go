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

// gemmIQSTypes are the types with an AVX2 Gemm from gemmIQS: bit-identical
// to GoDot per output.
var gemmIQSTypes = []ggml.Type{ggml.IQ3_S, ggml.IQ2_S, ggml.TQ1_0, ggml.TQ2_0, ggml.IQ1_S, ggml.IQ1_M}

func requireIQSGemm(t testing.TB) {
	t.Helper()
	if !cpu.X86.HasAVX2 || !cpu.X86.HasF16C {
		t.Skip("no AVX2/F16C")
	}
}

// unpackedTypes are the gemmIQS types whose prompts go through unpacked
// records, and their unpack kernels.
var unpackedTypes = map[ggml.Type]func(x *byte, nb int, buf *byte){
	ggml.IQ3_S: gemmIQ3SUnpack, ggml.IQ2_S: gemmIQ2SUnpack, ggml.Q3_K: gemmQ3KUnpack,
	ggml.IQ1_S: gemmIQ1SUnpack, ggml.IQ1_M: gemmIQ1MUnpack,
	ggml.TQ1_0: gemmTQ1Unpack, ggml.TQ2_0: gemmTQ2Unpack,
}

// checkGemmIQSExact runs Kernel.Gemm on tile and requires every output to
// be GoDot's bit for bit, and no other element of out written; for a
// prompt of IQ3_S or IQ2_S (more than InvariantCols activation rows, which
// go through unpacked records and sum in FMA lanes) every output within
// gemmIQBound of Σ|w·a| instead, as the IQ2_XS family's tiles.
func checkGemmIQSExact(t *testing.T, typ ggml.Type, name string, tc gemmIQTile) {
	t.Helper()
	k := mustKernel(t, typ)
	if unpackedTypes[typ] != nil && tc.cols > InvariantCols && tc.rows >= 2 {
		checkGemmBounded(t, typ, k.Gemm, name+" (unpacked)", tc)
		return
	}
	out := make([]float32, (tc.cols-1)*tc.outStride+tc.rows+3)
	const sentinel = -12345.5
	for i := range out {
		out[i] = sentinel
	}
	k.Gemm(tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, out, tc.outStride)
	written := make([]bool, len(out))
	bad := 0
	for c := 0; c < tc.cols; c++ {
		for r := 0; r < tc.rows; r++ {
			i := c*tc.outStride + r
			written[i] = true
			want := k.GoDot(tc.n, tc.w[r*tc.wStride:], tc.a[c*tc.aStride:])
			if !sameFloat32(out[i], want) {
				if bad++; bad <= 5 {
					t.Errorf("%s: n=%d rows=%d cols=%d: out[c=%d r=%d] = %g, GoDot %g", name, tc.n, tc.rows, tc.cols, c, r, out[i], want)
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

// TestGemmIQSUnpackedPaths runs both instruction sets of the prompt path
// of IQ3_S, IQ2_S, Q3_K, IQ1_S, IQ1_M, TQ1_0 and TQ2_0 (unpacked records: narrow AVX2 pairs, and
// widened AVX-512 VNNI quads where the CPU has VNNI) against GoDot within
// gemmIQBound of Σ|w·a|, whichever the Kernel picked: row counts that
// are and are not multiples of 4, column counts below and above the
// quads' minimum, odd and even, padded strides.
func TestGemmIQSUnpackedPaths(t *testing.T) {
	requireIQSGemm(t)
	paths := []bool{false}
	if iqHasVNNI() {
		paths = append(paths, true)
	} else {
		t.Log("no AVX-512 VNNI: the AVX2 path only")
	}
	for _, typ := range []ggml.Type{ggml.IQ3_S, ggml.IQ2_S, ggml.Q3_K, ggml.IQ1_S, ggml.IQ1_M, ggml.TQ1_0, ggml.TQ2_0} {
		for _, vnni := range paths {
			t.Run(fmt.Sprintf("%s/vnni=%v", typ, vnni), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(typ), 7))
				valid := func(nb int) []byte { return randomRow(t, typ, nb*iqQK, rng, 1) }
				fullRange := func(nb int) []byte { return randomQ8K(rng, nb) }
				gemm := func(n int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
					gemmIQSUnpacked(unpackedTypes[typ], vnni, n/iqQK, w, wStride, rows, a, aStride, cols, out, outStride)
				}
				for i, s := range [][2]int{{2, 1}, {4, 5}, {4, 6}, {8, 7}, {6, 9}, {12, 33}, {10, 64}, {2, 17}} {
					tc := newGemmIQTile(typ, rng, 1+i%5, s[0], s[1], valid, fullRange)
					name := fmt.Sprintf("rows=%d cols=%d", s[0], s[1])
					checkGemmBounded(t, typ, gemm, name, tc)
				}
			})
		}
	}
}

// TestGemmIQSExact checks the IQ3_S, IQ2_S, TQ1_0, TQ2_0, IQ1_S and IQ1_M
// tiles against GoDot bit for
// bit: random tiles (valid blocks with QuantizeQ8K activations, random
// bytes with quants of -128 and scales of any magnitude), edge fills and
// fp16 scales, and n = 0.
func TestGemmIQSExact(t *testing.T) {
	requireIQSGemm(t)
	shapes := [][2]int{{1, 1}, {16, 1}, {1, 4}, {3, 5}, {16, 64}, {20, 70}, {7, 3}, {2, 9}, {13, 33}, {5, 2}, {1, 70}, {4, 7}, {6, 8}, {7, 6}}
	for _, typ := range gemmIQSTypes {
		t.Run(typ.String(), func(t *testing.T) {
			if k := mustKernel(t, typ); k.SIMD != "avx2" {
				t.Fatalf("Kernel.SIMD = %q", k.SIMD)
			}
			rng := rand.New(rand.NewPCG(uint64(typ), 42))
			valid := func(nb int) []byte { return randomRow(t, typ, nb*iqQK, rng, 1) }
			quantized := func(nb int) []byte {
				a := make([]byte, nb*iqQ8KSize)
				QuantizeQ8K(randomFloats(rng, nb*iqQK, 1), a)
				return a
			}
			bytes := func(nb int) []byte { return randomIQBytes(typ, rng, nb) }
			fullRange := func(nb int) []byte { return randomQ8K(rng, nb) }
			for i, s := range shapes {
				nb := 1 + i%9
				checkGemmIQSExact(t, typ, "Random+QuantizeQ8K", newGemmIQTile(typ, rng, nb, s[0], s[1], valid, quantized))
				checkGemmIQSExact(t, typ, "random bytes", newGemmIQTile(typ, rng, nb, s[0], s[1], bytes, fullRange))
			}
			for _, fill := range []byte{0x00, 0xff, 0x55, 0xaa, 0x80, 0x7f} {
				for _, h := range []uint16{0x7bff, 0x0001, 0xfbff, 0x3c00, 0x8000} {
					for _, q := range []int8{-128, 127, 0, -1} {
						w := func(nb int) []byte { return fillIQ(typ, nb, fill, h) }
						a := func(nb int) []byte { return constQ8K(nb, q, 1e-3) }
						checkGemmIQSExact(t, typ, fmt.Sprintf("fill %#02x fp16 %#04x q %d", fill, h, q), newGemmIQTile(typ, rng, 2, 5, 6, w, a))
					}
				}
			}
			k := mustKernel(t, typ)
			out := []float32{1, 1, 1, 1, 1, 1, 1, 1}
			k.Gemm(0, nil, 0, 2, nil, 0, 4, out, 2)
			for i, v := range out {
				if v != 0 {
					t.Errorf("n = 0: out[%d] = %g", i, v)
				}
			}
		})
	}
}

// TestGemmIQSShort checks that the tiles panic on short operands instead
// of reading past them.
func TestGemmIQSShort(t *testing.T) {
	requireIQSGemm(t)
	for _, typ := range gemmIQSTypes {
		k := mustKernel(t, typ)
		const nb, rows, cols = 2, 3, 5
		n := nb * iqQK
		rb, ab := nb*typ.TypeSize(), nb*iqQ8KSize
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
						t.Errorf("%s %s: Gemm did not panic", typ, c.name)
					}
				}()
				k.Gemm(c.n, c.w, rb, rows, c.a, ab, cols, c.out, rows)
			}()
		}
	}
}

// BenchmarkGemmIQS compares the loop over the AVX2 Dot with the 4-column
// tile on 16 weight rows of 2048 values against 64 activation rows (as
// prefill runs them); MB/s is weight bytes of one pass.
func BenchmarkGemmIQS(b *testing.B) {
	requireIQSGemm(b)
	const n, rows, cols = 2048, 512, 64
	for _, typ := range gemmIQSTypes {
		k := mustKernel(b, typ)
		rb := n / iqQK * typ.TypeSize()
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
		}{{"dot", k.loopGemm}, {"gemm", k.Gemm}} {
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

// BenchmarkGemmIQSDecode is one activation row (decode) against 64 MiB of
// IQ3_S or IQ2_S weight rows of 2048 values: the dot with the weights'
// signs (dot) against the one the Gemm picks for a QuantizeQ8K row (the
// signs moved to the activations).
func BenchmarkGemmIQSDecode(b *testing.B) {
	requireIQSGemm(b)
	const n = 2048
	for _, typ := range []ggml.Type{ggml.IQ3_S, ggml.IQ2_S} {
		k := mustKernel(b, typ)
		rb := n / iqQK * typ.TypeSize()
		rows := (64 << 20) / rb / 16 * 16
		rng := rand.New(rand.NewPCG(1, 2))
		w := randomRow(b, typ, n*rows, rng, 1)
		as := ActivationSize(ggml.Q8_K, n)
		a := make([]byte, as)
		QuantizeQ8K(randomFloats(rng, n, 1), a)
		out := make([]float32, rows)
		for _, v := range []struct {
			name string
			gemm func(int, []byte, int, int, []byte, int, int, []float32, int)
		}{{"dot", k.loopGemm}, {"gemm", k.Gemm}} {
			b.Run(fmt.Sprintf("%s/%s", typ, v.name), func(b *testing.B) {
				b.SetBytes(int64(rows * rb))
				for b.Loop() {
					v.gemm(n, w, rb, rows, a, as, 1, out, rows)
				}
			})
		}
	}
}

// TestGemmQ3KPrompt checks Q3_K's Gemm: up to InvariantCols activation
// rows bit for bit GoDot's (the dot's loop), more (a prompt, through
// unpacked records) within gemmIQBound of Σ|w·a| of it, on random valid
// blocks with QuantizeQ8K activations and with activations of any quant,
// -128 included; rows odd and even, strides padded.
func TestGemmQ3KPrompt(t *testing.T) {
	requireIQSGemm(t)
	if !cpu.X86.HasFMA {
		t.Skip("no FMA")
	}
	typ := ggml.Q3_K
	k := mustKernel(t, typ)
	rng := rand.New(rand.NewPCG(3, 33))
	valid := func(nb int) []byte { return randomRow(t, typ, nb*iqQK, rng, 1) }
	quantized := func(nb int) []byte {
		a := make([]byte, nb*iqQ8KSize)
		QuantizeQ8K(randomFloats(rng, nb*iqQK, 1), a)
		return a
	}
	fullRange := func(nb int) []byte { return randomQ8K(rng, nb) }
	for i, s := range [][2]int{{1, 1}, {16, 16}, {5, 16}, {2, 17}, {16, 64}, {13, 33}, {1, 40}, {7, 70}, {20, 18}} {
		nb := 1 + i%5
		for _, act := range []struct {
			name string
			f    func(int) []byte
		}{{"QuantizeQ8K", quantized}, {"any quant", fullRange}} {
			tc := newGemmIQTile(typ, rng, nb, s[0], s[1], valid, act.f)
			name := fmt.Sprintf("%s rows=%d cols=%d", act.name, s[0], s[1])
			if s[1] > InvariantCols {
				checkGemmBounded(t, typ, k.Gemm, name, tc)
			} else {
				checkGemmIQSExact(t, typ, name, tc)
			}
		}
	}
}

// checkGemmBounded is checkGemmIQ for any super-block type (Q3_K's and
// IQ1_M's d are not a leading fp16): the bound is gemmIQBound of Σ|w·a|
// with w the dequantized block; an output equal to GoDot's (NaN and Inf
// included, from a d of random bytes) passes.
func checkGemmBounded(t *testing.T, typ ggml.Type, gemm func(int, []byte, int, int, []byte, int, int, []float32, int), name string, tc gemmIQTile) {
	t.Helper()
	k := mustKernel(t, typ)
	out := make([]float32, (tc.cols-1)*tc.outStride+tc.rows)
	gemm(tc.n, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, out, tc.outStride)
	v := make([]float32, tc.n)
	bad := 0
	for r := 0; r < tc.rows; r++ {
		row := tc.w[r*tc.wStride:]
		k.Dequantize(row[:tc.n/iqQK*typ.TypeSize()], v)
		for c := 0; c < tc.cols; c++ {
			act := tc.a[c*tc.aStride:]
			var mag float64
			for b := 0; b < tc.n/iqQK; b++ {
				yd := math.Abs(float64(math.Float32frombits(binary.LittleEndian.Uint32(act[b*iqQ8KSize:]))))
				for j := 0; j < iqQK; j++ {
					mag += math.Abs(float64(v[b*iqQK+j])*float64(int8(act[b*iqQ8KSize+4+j]))) * yd
				}
			}
			want := k.GoDot(tc.n, row, act)
			got := out[c*tc.outStride+r]
			if d := math.Abs(float64(got) - float64(want)); !(d <= gemmIQBound*mag+1e-37) && !sameFloat32(got, want) {
				if bad++; bad <= 5 {
					t.Errorf("%s: out[c=%d r=%d] = %g, GoDot %g (diff %g > tol %g)", name, c, r, got, want, d, gemmIQBound*mag)
				}
			}
		}
	}
}

// iqpModel is llama.cpp's float order for prompts of these types (its iqp
// panels): per output, each super-block's exact integer sum of the
// unpacked record (weight bytes times their int16 scales times the
// activations), then acc = fma(float(sum), dfac*d_a, acc), dfac being
// the record's float.
func iqpModel(unpack func(x *byte, nb int, buf *byte), nb int, w, a []byte) float32 {
	rec := make([]byte, nb*iqUnpackedSize)
	unpack(&w[0], nb, &rec[0])
	var acc float32
	for b := 0; b < nb; b++ {
		r := rec[b*iqUnpackedSize:]
		y := a[b*iqQ8KSize:]
		var sum int64
		for j := 0; j < iqQK; j++ {
			k := j / 32
			sc := int64(int16(binary.LittleEndian.Uint16(r[256+32*k+2*((j%32)/2):])))
			sum += int64(int8(r[j])) * sc * int64(int8(y[4+j]))
		}
		dfac := math.Float32frombits(binary.LittleEndian.Uint32(r[512:]))
		da := math.Float32frombits(binary.LittleEndian.Uint32(y))
		acc = fma32(float32(sum), dfac*da, acc)
	}
	return acc
}

// TestGemmIQPromptOrder checks that prompts (more than InvariantCols
// activation rows) of every type with unpacked records give each output
// iqpModel's bits: llama.cpp's order for the same batch, so a prompt
// rounds as llama.cpp's does. Both instruction sets where the CPU has
// them (AVX2 pairs; AVX-512 VNNI quads), rows that are and are not a
// multiple of 4.
func TestGemmIQPromptOrder(t *testing.T) {
	requireIQSGemm(t)
	if !cpu.X86.HasFMA || !cpu.X86.HasBMI1 {
		t.Skip("no FMA/BMI1")
	}
	type pathFn func(unpack func(x *byte, nb int, buf *byte), vnni bool, nb int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int)
	iqs := func(unpack func(x *byte, nb int, buf *byte), vnni bool, nb int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
		gemmIQSUnpacked(unpack, vnni, nb, w, wStride, rows&^1, a, aStride, cols, out, outStride)
	}
	family := func(ks iqGemmKernels) pathFn {
		return func(_ func(x *byte, nb int, buf *byte), vnni bool, nb int, w []byte, wStride, rows int, a []byte, aStride, cols int, out []float32, outStride int) {
			gemmIQUnpacked(ks, vnni, nb, w, wStride, rows&^1, a, aStride, cols, out, outStride)
		}
	}
	types := []struct {
		typ    ggml.Type
		unpack func(x *byte, nb int, buf *byte)
		path   pathFn
	}{
		{ggml.IQ2_XS, gemmIQ2XSUnpack, family(iqGemmIQ2XS)},
		{ggml.IQ2_XXS, gemmIQ2XXSUnpack, family(iqGemmIQ2XXS)},
		{ggml.IQ3_XXS, gemmIQ3XXSUnpack, family(iqGemmIQ3XXS)},
		{ggml.IQ4_XS, gemmIQ4XSUnpack, family(iqGemmIQ4XS)},
	}
	for typ, u := range unpackedTypes {
		types = append(types, struct {
			typ    ggml.Type
			unpack func(x *byte, nb int, buf *byte)
			path   pathFn
		}{typ, u, iqs})
	}
	paths := []bool{false}
	if iqHasVNNI() {
		paths = append(paths, true)
	}
	for _, tt := range types {
		for _, vnni := range paths {
			t.Run(fmt.Sprintf("%s/vnni=%v", tt.typ, vnni), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(tt.typ), 99))
				valid := func(nb int) []byte { return randomRow(t, tt.typ, nb*iqQK, rng, 1) }
				quantized := func(nb int) []byte {
					a := make([]byte, nb*iqQ8KSize)
					QuantizeQ8K(randomFloats(rng, nb*iqQK, 1), a)
					return a
				}
				fullRange := func(nb int) []byte { return randomQ8K(rng, nb) }
				bad := 0
				// The last shape's rows are longer than the frames of the
				// pairs/quads kernels (iqPairBlocks), so they take the heap
				// buffer path.
				for i, s := range [][3]int{{4, 17, 1}, {8, 64, 2}, {6, 33, 3}, {2, 18, 4}, {12, 20, 2}, {4, 19, iqPairBlocks + 1}} {
					nb := s[2]
					act := quantized
					if i%2 == 1 {
						act = fullRange
					}
					tc := newGemmIQTile(tt.typ, rng, nb, s[0], s[1], valid, act)
					out := make([]float32, (tc.cols-1)*tc.outStride+tc.rows)
					tt.path(tt.unpack, vnni, nb, tc.w, tc.wStride, tc.rows, tc.a, tc.aStride, tc.cols, out, tc.outStride)
					for c := 0; c < tc.cols; c++ {
						for r := 0; r < tc.rows; r++ {
							want := iqpModel(tt.unpack, nb, tc.w[r*tc.wStride:], tc.a[c*tc.aStride:])
							if got := out[c*tc.outStride+r]; !sameFloat32(got, want) {
								if bad++; bad <= 5 {
									t.Errorf("rows=%d cols=%d: out[c=%d r=%d] = %g, iqp order %g", tc.rows, tc.cols, c, r, got, want)
								}
							}
						}
					}
				}
			})
		}
	}
}
