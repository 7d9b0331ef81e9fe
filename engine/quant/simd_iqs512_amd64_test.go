//go:build !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// withBsums sets the block sums of the Q8_K blocks a to the sums of their
// quants, as QuantizeQ8K does.
func withBsums(a []byte) []byte {
	for b := 0; b < len(a)/iqQ8KSize; b++ {
		blk := a[b*iqQ8KSize:]
		for j := 0; j < iqQK/16; j++ {
			var s int16
			for _, q := range blk[4+16*j : 4+16*j+16] {
				s += int16(int8(q))
			}
			binary.LittleEndian.PutUint16(blk[q8KBsums+2*j:], uint16(s))
		}
	}
	return a
}

// TestIQSDotKernels runs every IQ3_S, IQ2_S and IQ1_S dot kernel this CPU
// can run (AVX2, AVX2 with the signs on the activations, AVX-512, the
// second IQ1 form) against GoDot bit for bit: valid blocks with
// QuantizeQ8K activations, random block bytes (any scale, qh and sign
// bits) with activations of any quant, and edge fills, for 1 to 9
// blocks; each kernel gets the activation rows the Gemm gives it (the S
// kernels none with the quant -128, the second IQ1 form only block sums
// that match the quants; see q8KNoMin, q8KSumsMatch), the others all.
func TestIQSDotKernels(t *testing.T) {
	requireIQSGemm(t)
	type kern struct {
		name string
		f    func(w, a *byte, nb int) float32
		ok   func(a []byte, nb int) bool // the activations the Gemm gives it (nil: any)
	}
	kernels := map[ggml.Type][]kern{
		ggml.IQ3_S: {{"avx2", iq3sDotAVX2, nil}, {"avx2S", iq3sDotAVX2S, q8KNoMin}},
		ggml.IQ2_S: {{"avx2", iq2sDotAVX2, nil}, {"avx2S", iq2sDotAVX2S, q8KNoMin}},
		ggml.IQ1_S: {{"avx2", iq1sDotAVX2, nil}, {"avx2V", iq1sDotAVX2V, q8KSumsMatch}},
		ggml.IQ1_M: {{"avx2", iq1mDotAVX2, nil}, {"avx2V", iq1mDotAVX2V, q8KSumsMatch}},
	}
	if iqsHasAVX512() {
		kernels[ggml.IQ3_S] = append(kernels[ggml.IQ3_S], kern{"avx512S", iq3sDotAVX512S, q8KNoMin})
		kernels[ggml.IQ2_S] = append(kernels[ggml.IQ2_S], kern{"avx512S", iq2sDotAVX512S, q8KNoMin})
	} else {
		t.Log("no AVX-512 F/BW: the AVX2 kernels only")
	}
	post := map[ggml.Type]float32{ggml.IQ3_S: 1, ggml.IQ2_S: 0.125, ggml.IQ1_S: 1, ggml.IQ1_M: 1}
	for _, typ := range []ggml.Type{ggml.IQ3_S, ggml.IQ2_S, ggml.IQ1_S, ggml.IQ1_M} {
		k := mustKernel(t, typ)
		rng := rand.New(rand.NewPCG(uint64(typ), 512))
		noMin := func(nb int) []byte {
			a := randomQ8K(rng, nb)
			for b := 0; b < nb; b++ {
				for j := 0; j < iqQK; j++ {
					if a[b*iqQ8KSize+4+j] == 0x80 {
						a[b*iqQ8KSize+4+j] = 0x81
					}
				}
			}
			return a
		}
		quantized := func(nb int) []byte {
			a := make([]byte, nb*iqQ8KSize)
			QuantizeQ8K(randomFloats(rng, nb*iqQK, 1), a)
			return a
		}
		type tcase struct {
			name string
			w, a []byte
		}
		var cases []tcase
		for nb := 1; nb <= 9; nb++ {
			cases = append(cases,
				tcase{fmt.Sprintf("valid nb=%d", nb), randomRow(t, typ, nb*iqQK, rng, 1), quantized(nb)},
				tcase{fmt.Sprintf("random bytes nb=%d", nb), randomIQBytes(typ, rng, nb), noMin(nb)},
				tcase{fmt.Sprintf("random bytes, any quant nb=%d", nb), randomIQBytes(typ, rng, nb), randomQ8K(rng, nb)},
				tcase{fmt.Sprintf("random bytes, any quant, block sums set nb=%d", nb), randomIQBytes(typ, rng, nb), withBsums(randomQ8K(rng, nb))})
		}
		for _, fill := range []byte{0x00, 0xff, 0x55, 0xaa, 0x80, 0x7f} {
			for _, q := range []int8{127, -127, 0, -1, -128} {
				cases = append(cases, tcase{fmt.Sprintf("fill %#02x q %d", fill, q), fillIQ(typ, 3, fill, 0x3c00), constQ8K(3, q, 1e-3)})
			}
		}
		for _, kn := range kernels[typ] {
			t.Run(fmt.Sprintf("%s/%s", typ, kn.name), func(t *testing.T) {
				bad, ran := 0, 0
				for _, c := range cases {
					nb := len(c.a) / iqQ8KSize
					if kn.ok != nil && !kn.ok(c.a, nb) {
						continue
					}
					ran++
					want := k.GoDot(nb*iqQK, c.w, c.a)
					got := post[typ] * kn.f(&c.w[0], &c.a[0], nb)
					if !sameFloat32(got, want) {
						if bad++; bad <= 5 {
							t.Errorf("%s: %g, GoDot %g", c.name, got, want)
						}
					}
				}
				if ran < 18 {
					t.Errorf("only %d of %d cases are in the kernel's domain", ran, len(cases))
				}
			})
		}
	}
}
