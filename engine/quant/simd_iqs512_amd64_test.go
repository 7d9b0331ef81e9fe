//go:build !purego

package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// TestIQSDotKernels runs every IQ3_S and IQ2_S dot kernel this CPU can
// run (AVX2, AVX2 with the signs on the activations, AVX-512) against
// GoDot bit for bit: valid blocks with QuantizeQ8K activations, random
// block bytes (any scale, qh and sign bits) with activations of any quant
// but -128 (the S kernels' domain; the Gemm keeps the AVX2 kernel for
// rows with it, see q8KHasMin), and edge fills, for 1 to 9 blocks.
func TestIQSDotKernels(t *testing.T) {
	requireIQSGemm(t)
	type kern struct {
		name  string
		f     func(w, a *byte, nb int) float32
		noMin bool // not for activations with the quant -128
	}
	kernels := map[ggml.Type][]kern{
		ggml.IQ3_S: {{"avx2", iq3sDotAVX2, false}, {"avx2S", iq3sDotAVX2S, true}},
		ggml.IQ2_S: {{"avx2", iq2sDotAVX2, false}, {"avx2S", iq2sDotAVX2S, true}},
	}
	if iqsHasAVX512() {
		kernels[ggml.IQ3_S] = append(kernels[ggml.IQ3_S], kern{"avx512S", iq3sDotAVX512S, true})
		kernels[ggml.IQ2_S] = append(kernels[ggml.IQ2_S], kern{"avx512S", iq2sDotAVX512S, true})
	} else {
		t.Log("no AVX-512 F/BW: the AVX2 kernels only")
	}
	post := map[ggml.Type]float32{ggml.IQ3_S: 1, ggml.IQ2_S: 0.125}
	for _, typ := range []ggml.Type{ggml.IQ3_S, ggml.IQ2_S} {
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
				tcase{fmt.Sprintf("random bytes nb=%d", nb), randomIQBytes(typ, rng, nb), noMin(nb)})
		}
		for _, fill := range []byte{0x00, 0xff, 0x55, 0xaa, 0x80, 0x7f} {
			for _, q := range []int8{127, -127, 0, -1} {
				cases = append(cases, tcase{fmt.Sprintf("fill %#02x q %d", fill, q), fillIQ(typ, 3, fill, 0x3c00), constQ8K(3, q, 1e-3)})
			}
		}
		for _, kn := range kernels[typ] {
			t.Run(fmt.Sprintf("%s/%s", typ, kn.name), func(t *testing.T) {
				bad := 0
				for _, c := range cases {
					nb := len(c.a) / iqQ8KSize
					want := k.GoDot(nb*iqQK, c.w, c.a)
					got := post[typ] * kn.f(&c.w[0], &c.a[0], nb)
					if !sameFloat32(got, want) {
						if bad++; bad <= 5 {
							t.Errorf("%s: %g, GoDot %g", c.name, got, want)
						}
					}
				}
			})
		}
	}
}
