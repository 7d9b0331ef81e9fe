//go:build !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// gemmLegacyTypes are the 32-value types with an AVX2 Gemm from
// gemmLegacy: bit-identical to GoDot per output.
var gemmLegacyTypes = []ggml.Type{ggml.Q5_0, ggml.IQ4_NL, ggml.MXFP4, ggml.Q4_1, ggml.Q5_1}

// legacyRandomBytes returns nb random blocks of typ (or of activation type
// vt) with every fp16 scale made finite (either sign, subnormals
// included); MXFP4's E8M0 byte may be anything.
func legacyRandomBytes(rng *rand.Rand, typ ggml.Type, nb int) []byte {
	bs := typ.TypeSize()
	b := make([]byte, nb*bs)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	var halves []int
	switch typ {
	case ggml.Q5_0, ggml.IQ4_NL, ggml.Q8_0:
		halves = []int{0}
	case ggml.Q4_1, ggml.Q5_1, ggml.Q8_1:
		halves = []int{0, 2}
	}
	for i := 0; i < nb; i++ {
		for _, off := range halves {
			h := binary.LittleEndian.Uint16(b[i*bs+off:])
			if h&0x7c00 == 0x7c00 {
				h &^= 0x4000
			}
			binary.LittleEndian.PutUint16(b[i*bs+off:], h)
		}
	}
	return b
}

// TestGemmLegacyExact checks Kernel.Gemm and both of gemmLegacy's paths
// (AVX2 tiles and dots; with AVX-512 VNNI/VBMI, the row kernels) against
// GoDot bit for bit on random tiles (valid blocks with quantized
// activations; random bytes on both sides, activation quants of -128
// included), with padded strides, row lengths with a partial last block,
// and n below one block.
func TestGemmLegacyExact(t *testing.T) {
	if !simdQ8HasAVX2 {
		t.Skip("no AVX2")
	}
	for _, typ := range gemmLegacyTypes {
		t.Run(typ.String(), func(t *testing.T) {
			k := mustKernel(t, typ)
			spec := legacyGemmSpecs[typ]
			gemms := map[string]func(int, []byte, int, int, []byte, int, int, []float32, int){
				"Gemm": k.Gemm,
				"avx2": gemmLegacy(spec, lvNone),
			}
			if gemmLegacyHasVNNI {
				gemms["vnni"] = gemmLegacy(spec, spec.rk)
			}
			for name, gemm := range gemms {
				t.Run(name, func(t *testing.T) { testGemmLegacyExact(t, typ, k, gemm) })
			}
		})
	}
}

func testGemmLegacyExact(t *testing.T, typ ggml.Type, k *Kernel, gemm func(int, []byte, int, int, []byte, int, int, []float32, int)) {
	shapes := [][2]int{{1, 1}, {16, 1}, {1, 4}, {3, 5}, {16, 64}, {20, 70}, {7, 3}, {2, 9}, {13, 33}, {5, 2}, {4, 8}, {9, 1}, {6, 17}}
	vt := k.VecDotType
	rng := rand.New(rand.NewPCG(uint64(typ), 77))
	for i, s := range shapes {
		rows, cols := s[0], s[1]
		nb := []int{1, 2, 7, 8, 9, 16, 17, 24, 31, 40}[i%10]
		for _, mode := range []string{"valid", "bytes"} {
			n := nb*32 + []int{0, 0, 7}[i%3] // sometimes a partial last block
			bs, as := typ.TypeSize(), ActivationSize(vt, nb*32)
			wStride, aStride, outStride := (nb+rng.IntN(2))*bs, as+rng.IntN(2)*vt.TypeSize(), rows+rng.IntN(4)
			w := make([]byte, rows*wStride+bs)
			a := make([]byte, cols*aStride+vt.TypeSize())
			for r := 0; r < rows; r++ {
				if mode == "valid" {
					copy(w[r*wStride:], randomRow(t, typ, nb*32, rng, 1))
				} else {
					copy(w[r*wStride:], legacyRandomBytes(rng, typ, nb))
				}
			}
			for c := 0; c < cols; c++ {
				if mode == "valid" {
					QuantizeActivations(vt, randomFloats(rng, nb*32, 1), a[c*aStride:c*aStride+as])
				} else {
					copy(a[c*aStride:], legacyRandomBytes(rng, vt, nb))
				}
			}
			out := make([]float32, (cols-1)*outStride+rows+2)
			const sentinel = -12345.5
			for j := range out {
				out[j] = sentinel
			}
			gemm(n, w, wStride, rows, a, aStride, cols, out, outStride)
			written := make([]bool, len(out))
			for c := 0; c < cols; c++ {
				for r := 0; r < rows; r++ {
					j := c*outStride + r
					written[j] = true
					want := k.GoDot(n, w[r*wStride:], a[c*aStride:])
					if !sameFloat32(out[j], want) {
						t.Fatalf("%s n=%d rows=%d cols=%d: out[c=%d r=%d] = %g, GoDot %g", mode, n, rows, cols, c, r, out[j], want)
					}
				}
			}
			for j, v := range out {
				if !written[j] && v != sentinel {
					t.Fatalf("%s: out[%d] written outside the tile", mode, j)
				}
			}
		}
	}
	out := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	gemm(31, make([]byte, 64), 0, 2, make([]byte, 64), 0, 4, out, 2)
	for i, v := range out {
		if v != 0 {
			t.Errorf("n = 31: out[%d] = %g", i, v)
		}
	}
}

// BenchmarkGemmLegacy compares the loop over the AVX2 Dot with the tile on
// 16 weight rows of 2048 values against 64 activation rows; MB/s is
// weight bytes of one pass.
func BenchmarkGemmLegacy(b *testing.B) {
	const n, rows, cols = 2048, 512, 64
	for _, typ := range gemmLegacyTypes {
		k := mustKernel(b, typ)
		rb := n / 32 * typ.TypeSize()
		rng := rand.New(rand.NewPCG(1, 2))
		w := randomRow(b, typ, n*rows, rng, 1)
		as := ActivationSize(k.VecDotType, n)
		a := make([]byte, cols*as)
		for c := 0; c < cols; c++ {
			QuantizeActivations(k.VecDotType, randomFloats(rng, n, 1), a[c*as:(c+1)*as])
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
