//go:build !purego

package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// legacyRowKinds pairs the types of gemmLegacyTypes with their AVX-512
// row kernels.
var legacyRowKinds = map[ggml.Type]legacyRows{
	ggml.Q5_0: lvQ5_0, ggml.IQ4_NL: lvIQ4NL, ggml.MXFP4: lvMXFP4, ggml.Q4_1: lvQ4_1, ggml.Q5_1: lvQ5_1,
}

// TestLegacyRowsVNNI checks the AVX-512 row kernels directly (whichever
// path Gemm picked) against GoDot bit for bit: valid blocks and random
// bytes (activation quants of -128, subnormal and negative scales, any
// E8M0 byte), edge fills, row counts below, at and above 4 (overlapping
// last groups), block counts with and without a tail of nb%8 blocks, and
// padded strides.
func TestLegacyRowsVNNI(t *testing.T) {
	if !gemmLegacyHasVNNI {
		t.Skip("no AVX-512 VNNI/VBMI")
	}
	for _, typ := range gemmLegacyTypes {
		t.Run(typ.String(), func(t *testing.T) {
			k := mustKernel(t, typ)
			kind := legacyRowKinds[typ]
			vt := k.VecDotType
			bs, ys := typ.TypeSize(), vt.TypeSize()
			rng := rand.New(rand.NewPCG(uint64(typ), 512))
			for _, nb := range []int{1, 7, 8, 9, 16, 23, 24, 64, 67} {
				for _, rows := range []int{1, 2, 3, 4, 5, 7, 8, 13} {
					for _, mode := range []string{"valid", "bytes", "fill"} {
						wStride := (nb + rng.IntN(3)) * bs
						w := make([]byte, (rows-1)*wStride+nb*bs)
						a := make([]byte, nb*ys)
						switch mode {
						case "valid":
							for r := 0; r < rows; r++ {
								copy(w[r*wStride:], randomRow(t, typ, nb*32, rng, 1))
							}
							QuantizeActivations(vt, randomFloats(rng, nb*32, 1), a)
						case "bytes":
							for r := 0; r < rows; r++ {
								copy(w[r*wStride:], legacyRandomBytes(rng, typ, nb))
							}
							copy(a, legacyRandomBytes(rng, vt, nb))
						default:
							// Every quant byte 0xff or 0x80 (weights: the
							// largest nibbles and fifth bits; activations:
							// -1 or -128), scales 1.0.
							fw := byte(0xff)
							fa := []byte{0xff, 0x80}[rng.IntN(2)]
							for i := range w {
								w[i] = fw
							}
							for i := range a {
								a[i] = fa
							}
							for r := 0; r < rows; r++ {
								for b := 0; b < nb; b++ {
									o := r*wStride + b*bs
									if typ == ggml.MXFP4 {
										w[o] = 127
									} else {
										putFP16(w[o:], 1)
									}
								}
							}
							for b := 0; b < nb; b++ {
								putFP16(a[b*ys:], 1)
								if vt == ggml.Q8_1 {
									putFP16(a[b*ys+2:], -1)
								}
							}
						}
						out := make([]float32, rows+1)
						out[rows] = 42
						kind.col(nb, w, wStride, rows, a, out)
						if out[rows] != 42 {
							t.Fatalf("%s nb=%d rows=%d: wrote past the rows", mode, nb, rows)
						}
						for r := 0; r < rows; r++ {
							want := k.GoDot(nb*32, w[r*wStride:], a)
							if !sameFloat32(out[r], want) {
								t.Fatalf("%s nb=%d rows=%d: row %d = %g, GoDot %g", mode, nb, rows, r, out[r], want)
							}
						}
					}
				}
			}
		})
	}
}

// BenchmarkGemmLegacyPaths compares, single-threaded on 16 MiB of weight
// rows of 2048 values in slices of 64 rows (as the engine's workers cut
// them), the AVX2 path (dot loop for one activation row, 4-column tiles
// for 64) with the AVX-512 row kernels; MB/s is weight bytes of one pass.
func BenchmarkGemmLegacyPaths(b *testing.B) {
	const n, maxCols = 2048, 64
	for _, typ := range gemmLegacyTypes {
		k := mustKernel(b, typ)
		spec := legacyGemmSpecs[typ]
		rb := n / 32 * typ.TypeSize()
		rows := 16 << 20 / rb
		rng := rand.New(rand.NewPCG(1, 2))
		w := randomRow(b, typ, n*rows, rng, 1)
		as := ActivationSize(k.VecDotType, n)
		a := make([]byte, maxCols*as)
		for c := 0; c < maxCols; c++ {
			QuantizeActivations(k.VecDotType, randomFloats(rng, n, 1), a[c*as:(c+1)*as])
		}
		out := make([]float32, rows*maxCols)
		paths := []struct {
			name string
			rk   legacyRows
		}{{"avx2", lvNone}}
		if gemmLegacyHasVNNI {
			paths = append(paths, struct {
				name string
				rk   legacyRows
			}{"vnni", spec.rk})
		}
		for _, cols := range []int{1, maxCols} {
			for _, p := range paths {
				gemm := gemmLegacy(spec, p.rk)
				b.Run(fmt.Sprintf("%s/cols=%d/%s", typ, cols, p.name), func(b *testing.B) {
					b.SetBytes(int64(rows * rb))
					for b.Loop() {
						for r := 0; r < rows; r += 64 {
							gemm(n, w[r*rb:], rb, min(64, rows-r), a, as, cols, out[r:], rows)
						}
					}
				})
			}
		}
	}
}
