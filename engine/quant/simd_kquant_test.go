package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// kquantSIMDTypes are the weight types with SIMD dot products from the
// simd_kquant files; kquantFP16Offsets are the offsets of the fp16 scale
// fields in one of their blocks.
var (
	kquantSIMDTypes   = []ggml.Type{ggml.Q4_K, ggml.Q6_K, ggml.Q5_K, ggml.Q2_K, ggml.Q3_K}
	kquantFP16Offsets = map[ggml.Type][]int{
		ggml.Q4_K: {0, 2},
		ggml.Q5_K: {0, 2},
		ggml.Q6_K: {208},
		ggml.Q2_K: {80, 82},
		ggml.Q3_K: {108},
	}
)

// kquantSIMD returns typ's kernel, skipping the test when this build or CPU
// has no SIMD dot product for it (purego builds, other architectures).
func kquantSIMD(t testing.TB, typ ggml.Type) *Kernel {
	t.Helper()
	k := mustKernel(t, typ)
	if k.SIMD == "" {
		t.Skipf("no SIMD dot product for %s in this build", typ)
	}
	return k
}

// sameFloat32 reports whether a and b are the same value bit for bit, or
// both NaN (NaN payloads may differ between implementations).
func sameFloat32(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// q8KFromInts builds Q8_K blocks from quants and per-block scales, with
// bsums consistent with the quants (as QuantizeQ8K writes them).
func q8KFromInts(qs []int8, d []float32) []byte {
	nb := len(d)
	a := make([]byte, nb*q8KBlockSize)
	for i := 0; i < nb; i++ {
		b := a[i*q8KBlockSize : (i+1)*q8KBlockSize]
		binary.LittleEndian.PutUint32(b, math.Float32bits(d[i]))
		for j := 0; j < qkK; j++ {
			b[q8KQsOff+j] = byte(qs[i*qkK+j])
		}
		for g := 0; g < qkK/16; g++ {
			var s int16
			for _, q := range qs[i*qkK+16*g : i*qkK+16*g+16] {
				s += int16(q)
			}
			binary.LittleEndian.PutUint16(b[q8KBsumsOff+2*g:], uint16(s))
		}
	}
	return a
}

// randomQ8K returns nb Q8_K blocks with quants uniform over the whole int8
// range (including -128, which QuantizeQ8K never writes) and scales of
// random magnitude.
func randomQ8K(rng *rand.Rand, nb int) []byte {
	qs := make([]int8, nb*qkK)
	for i := range qs {
		qs[i] = int8(rng.Uint32())
	}
	d := make([]float32, nb)
	for i := range d {
		d[i] = float32(rng.NormFloat64()) * float32(math.Pow(2, float64(rng.IntN(40)-20)))
	}
	return q8KFromInts(qs, d)
}

// randomKQuantBytes returns nb blocks of typ with random bytes everywhere
// and random finite fp16 scales (either sign, normal or subnormal).
func randomKQuantBytes(t testing.TB, typ ggml.Type, rng *rand.Rand, nb int) []byte {
	t.Helper()
	w := make([]byte, rowBytes(t, typ, nb*qkK))
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	bs := len(w) / nb
	for i := 0; i < nb; i++ {
		for _, off := range kquantFP16Offsets[typ] {
			h := uint16(rng.Uint32())
			if h&0x7c00 == 0x7c00 { // Inf or NaN: make it finite
				h &^= 0x4000
			}
			binary.LittleEndian.PutUint16(w[i*bs+off:], h)
		}
	}
	return w
}

// fillKQuant returns nb blocks of typ with every byte set to fill and every
// fp16 scale set to h.
func fillKQuant(t testing.TB, typ ggml.Type, nb int, fill byte, h uint16) []byte {
	t.Helper()
	w := make([]byte, rowBytes(t, typ, nb*qkK))
	for i := range w {
		w[i] = fill
	}
	bs := len(w) / nb
	for i := 0; i < nb; i++ {
		for _, off := range kquantFP16Offsets[typ] {
			binary.LittleEndian.PutUint16(w[i*bs+off:], h)
		}
	}
	return w
}

// constQ8K returns nb Q8_K blocks with every quant q and scale d.
func constQ8K(nb int, q int8, d float32) []byte {
	qs := make([]int8, nb*qkK)
	for i := range qs {
		qs[i] = q
	}
	ds := make([]float32, nb)
	for i := range ds {
		ds[i] = d
	}
	return q8KFromInts(qs, ds)
}

// checkSIMDDot compares Dot with GoDot bit for bit.
func checkSIMDDot(t *testing.T, k *Kernel, name string, n int, w, a []byte) {
	t.Helper()
	got, want := k.Dot(n, w, a), k.GoDot(n, w, a)
	if !sameFloat32(got, want) {
		t.Errorf("%s: n=%d: %s dot = %g (%#08x), Go dot = %g (%#08x)",
			name, n, k.SIMD, got, math.Float32bits(got), want, math.Float32bits(want))
	}
}

// TestKQuantSIMDDotRandom checks the SIMD K-quant dot products bit for bit
// against the Go kernels on random rows: valid blocks from Kernel.Random
// with QuantizeQ8K activations, and random bytes with full-range quants.
func TestKQuantSIMDDotRandom(t *testing.T) {
	for _, typ := range kquantSIMDTypes {
		t.Run(typ.String(), func(t *testing.T) {
			k := kquantSIMD(t, typ)
			rng := rand.New(rand.NewPCG(uint64(typ), 8))
			for _, nb := range []int{1, 2, 3, 7, 16, 64} {
				n := nb * qkK
				for rep := 0; rep < 20; rep++ {
					w := randomRow(t, typ, n, rng, 1)
					a := make([]byte, ActivationSize(ggml.Q8_K, n))
					QuantizeQ8K(randomFloats(rng, n, 1), a)
					checkSIMDDot(t, k, "Random+QuantizeQ8K", n, w, a)

					w = randomKQuantBytes(t, typ, rng, nb)
					checkSIMDDot(t, k, "random bytes+QuantizeQ8K", n, w, a)
					checkSIMDDot(t, k, "random bytes", n, w, randomQ8K(rng, nb))
				}
			}
		})
	}
}

// TestKQuantSIMDDotEdges checks edge cases bit for bit against the Go
// kernels: zero blocks, extreme quants and scales (largest, subnormal and
// negative fp16, activation scales that overflow to Inf), n = 0 and n not a
// multiple of 256.
func TestKQuantSIMDDotEdges(t *testing.T) {
	const (
		fp16Max      = 0x7bff // 65504
		fp16MinSub   = 0x0001 // 2^-24
		fp16MaxSub   = 0x03ff
		fp16NegMax   = 0xfbff
		fp16One      = 0x3c00
		fp16NegZero  = 0x8000
		fp16NegSmall = 0x8001
	)
	for _, typ := range kquantSIMDTypes {
		t.Run(typ.String(), func(t *testing.T) {
			k := kquantSIMD(t, typ)
			rng := rand.New(rand.NewPCG(uint64(typ), 9))
			for _, nb := range []int{1, 5} {
				n := nb * qkK
				type tc struct {
					name string
					w, a []byte
				}
				cases := []tc{
					{"zeros", fillKQuant(t, typ, nb, 0, 0), constQ8K(nb, 0, 0)},
					{"zero weights", fillKQuant(t, typ, nb, 0, 0), randomQ8K(rng, nb)},
					{"zero activations", randomKQuantBytes(t, typ, rng, nb), constQ8K(nb, 0, 0)},
				}
				for _, fill := range []byte{0xff, 0x00, 0x55, 0xaa, 0x0f, 0xf0, 0x80, 0x7f} {
					for _, h := range []uint16{fp16Max, fp16MinSub, fp16MaxSub, fp16NegMax, fp16One, fp16NegZero, fp16NegSmall} {
						for _, q := range []int8{-128, 127, -1, 1} {
							for _, d := range []float32{1, -1, 1e-30, 1e30, math.SmallestNonzeroFloat32} {
								cases = append(cases, tc{
									fmt.Sprintf("fill %#02x fp16 %#04x q %d d %g", fill, h, q, d),
									fillKQuant(t, typ, nb, fill, h), constQ8K(nb, q, d),
								})
							}
						}
					}
				}
				for _, c := range cases {
					checkSIMDDot(t, k, c.name, n, c.w, c.a)
				}
				// Partial blocks are ignored by both; n = 0 gives +0.
				w, a := randomKQuantBytes(t, typ, rng, nb), randomQ8K(rng, nb)
				checkSIMDDot(t, k, "partial block", n-1, w, a)
				checkSIMDDot(t, k, "n=0", 0, w, a)
				checkSIMDDot(t, k, "n=0 nil rows", 0, nil, nil)
			}
		})
	}
}

// TestKQuantSIMDDotShortRows checks that the SIMD dot products panic, as the
// Go ones do, instead of reading past rows shorter than n values.
func TestKQuantSIMDDotShortRows(t *testing.T) {
	for _, typ := range kquantSIMDTypes {
		t.Run(typ.String(), func(t *testing.T) {
			k := kquantSIMD(t, typ)
			const nb = 3
			w := fillKQuant(t, typ, nb, 1, 0x3c00)
			a := constQ8K(nb, 1, 1)
			for _, c := range []struct {
				name string
				w, a []byte
			}{
				{"short weights", w[:len(w)-1], a},
				{"short activations", w, a[:len(a)-1]},
			} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s: Dot did not panic", c.name)
						}
					}()
					k.Dot(nb*qkK, c.w, c.a)
				}()
			}
		})
	}
}

// BenchmarkKQuantDot measures the Go and SIMD dot products side by side on
// rows of 4096 values: "l2" cycles through 64 rows (cache resident), "mem"
// through 64 MiB of weights (streamed from memory). SetBytes is the weight
// row size, so MB/s is weight bandwidth.
func BenchmarkKQuantDot(b *testing.B) {
	const n = 4096
	for _, typ := range kquantSIMDTypes {
		k := mustKernel(b, typ)
		rb := rowBytes(b, typ, n)
		rng := rand.New(rand.NewPCG(1, 2))
		a := make([]byte, ActivationSize(ggml.Q8_K, n))
		QuantizeQ8K(randomFloats(rng, n, 1), a)
		memRows := 64 << 20 / rb
		w := randomRow(b, typ, n*memRows, rng, 1)
		impls := []struct {
			name string
			dot  func(int, []byte, []byte) float32
		}{{"go", k.GoDot}}
		if k.SIMD != "" {
			impls = append(impls, struct {
				name string
				dot  func(int, []byte, []byte) float32
			}{k.SIMD, k.Dot})
		}
		for _, size := range []struct {
			name string
			rows int
		}{{"l2", 64}, {"mem", memRows}} {
			for _, impl := range impls {
				b.Run(typ.String()+"/"+size.name+"/"+impl.name, func(b *testing.B) {
					b.SetBytes(int64(rb))
					var sink float32
					for i := 0; b.Loop(); i++ {
						r := i % size.rows
						sink += impl.dot(n, w[r*rb:(r+1)*rb], a)
					}
					_ = sink
				})
			}
		}
	}
}
