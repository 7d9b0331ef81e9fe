package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// The SIMD i-quant dot products keep the Go versions' integer sums and float
// order, so they must be bit-identical to GoDot on every input, including
// activations of -128 (which Q8_K quantization never produces but which a
// naive sign_epi8 port gets wrong).

// simdIQTypes are the i-quants with SIMD dot products on some build: those
// of iqTypes, the explicit-sign IQ3_S and IQ2_S, IQ1_S, IQ1_M and the
// ternary TQ1_0, TQ2_0.
var simdIQTypes = append(iqTypes[:len(iqTypes):len(iqTypes)], ggml.IQ3_S, ggml.IQ2_S, ggml.IQ1_S, ggml.IQ1_M, ggml.TQ1_0, ggml.TQ2_0)

// simdIQKernel returns the kernel of typ, skipping the test when this build
// or CPU has no SIMD dot product for it.
func simdIQKernel(t testing.TB, typ ggml.Type) *Kernel {
	t.Helper()
	k := iqKernel(t, typ)
	if k.SIMD == "" {
		t.Skipf("%s: no SIMD dot product on this build/CPU", typ)
	}
	return k
}

// simdIQCheck fails t unless k.Dot and k.GoDot agree bit for bit (or are
// both NaN) on n elements of w and a.
func simdIQCheck(t *testing.T, k *Kernel, what string, n int, w, a []byte) {
	t.Helper()
	got, want := k.Dot(n, w, a), k.GoDot(n, w, a)
	if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
		t.Errorf("%s: %s dot = %v (%#08x), Go dot = %v (%#08x)", what, k.SIMD, got, math.Float32bits(got), want, math.Float32bits(want))
	}
}

// simdIQRandomQ8K fills a with Q8_K blocks of random bytes: any int8 quant
// including -128, and a finite scale of random exponent.
func simdIQRandomQ8K(a []byte, rng *rand.Rand) {
	for i := 0; i+iqQ8KSize <= len(a); i += iqQ8KSize {
		blk := a[i : i+iqQ8KSize]
		for j := range blk {
			blk[j] = uint8(rng.Uint32())
		}
		d := float32(math.Ldexp(rng.Float64()-0.5, rng.IntN(40)-30))
		binary.LittleEndian.PutUint32(blk, math.Float32bits(d))
	}
}

func TestSIMDIQDotRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range simdIQTypes {
		t.Run(typ.String(), func(t *testing.T) {
			k := simdIQKernel(t, typ)
			for _, nb := range []int{1, 2, 3, 7, 16, 64} {
				n := nb * iqQK
				w := make([]byte, nb*typ.TypeSize())
				a := make([]byte, nb*iqQ8KSize)
				for trial := range 20 {
					// Valid random blocks against quantized activations.
					k.Random(w, rng, float32(math.Ldexp(1, rng.IntN(20)-10)))
					QuantizeQ8K(randomFloats(rng, n, 1), a)
					simdIQCheck(t, k, "Random/Q8K", n, w, a)
					// Random bytes on both sides (fp16 d may be Inf or NaN).
					for j := range w {
						w[j] = uint8(rng.Uint32())
					}
					simdIQRandomQ8K(a, rng)
					simdIQCheck(t, k, "bytes/bytes", n, w, a)
					if t.Failed() {
						t.Fatalf("nb=%d trial=%d", nb, trial)
					}
				}
			}
		})
	}
}

func TestSIMDIQDotEdges(t *testing.T) {
	const nb = 4
	const n = nb * iqQK
	// Every weight block gets d = fp16 d; fill sets the rest of its bytes.
	weights := func(typ ggml.Type, d uint16, fill byte) []byte {
		w := make([]byte, nb*typ.TypeSize())
		for i := 0; i < len(w); i += typ.TypeSize() {
			blk := w[i : i+typ.TypeSize()]
			for j := range blk {
				blk[j] = fill
			}
			binary.LittleEndian.PutUint16(blk, d)
		}
		return w
	}
	// Activations with d and every quant q.
	acts := func(d float32, q int8) []byte {
		a := make([]byte, nb*iqQ8KSize)
		for i := 0; i < len(a); i += iqQ8KSize {
			binary.LittleEndian.PutUint32(a[i:], math.Float32bits(d))
			for j := range iqQK {
				a[i+4+j] = uint8(q)
			}
		}
		return a
	}
	fp16s := []struct {
		name string
		d    uint16
	}{
		{"one", 0x3c00}, {"largest", 0x7bff}, {"-largest", 0xfbff},
		{"subnormal", 0x0001}, {"-subnormal", 0x8001}, {"zero", 0}, {"inf", 0x7c00},
	}
	fills := []byte{0x00, 0xff, 0x80, 0x7f, 0x55, 0xaa}
	quants := []int8{0, 1, -1, 127, -127, -128}
	scales := []float32{1, 0, 1e-30, 3e38, -2.5}
	for _, typ := range simdIQTypes {
		t.Run(typ.String(), func(t *testing.T) {
			k := simdIQKernel(t, typ)
			for _, f := range fp16s {
				for _, fill := range fills {
					w := weights(typ, f.d, fill)
					for _, q := range quants {
						for _, s := range scales {
							simdIQCheck(t, k, f.name, n, w, acts(s, q))
						}
					}
				}
			}
			// The largest possible |sum|: every weight at its largest magnitude
			// against -128 everywhere must stay exact (no int16 saturation).
			w := make([]byte, nb*typ.TypeSize())
			a := acts(1, -128)
			rng := rand.New(rand.NewPCG(1, 1))
			for range 50 {
				k.Random(w, rng, 1)
				simdIQCheck(t, k, "random vs -128", n, w, a)
			}
			// All-zero blocks on both sides.
			simdIQCheck(t, k, "zeros", n, make([]byte, len(w)), make([]byte, len(a)))
			// n = 0 reads nothing.
			if got := k.Dot(0, nil, nil); got != 0 {
				t.Errorf("Dot(0) = %v", got)
			}
		})
	}
}

// TestSIMDIQDotBounds checks the wrapper reads only n elements: rows longer
// than n are fine, shorter ones panic as the Go version does.
func TestSIMDIQDotBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range simdIQTypes {
		t.Run(typ.String(), func(t *testing.T) {
			k := simdIQKernel(t, typ)
			w := make([]byte, 3*typ.TypeSize())
			a := make([]byte, 3*iqQ8KSize)
			k.Random(w, rng, 1)
			QuantizeQ8K(randomFloats(rng, 3*iqQK, 1), a)
			// Poison the third block: a 2-block dot must not see it.
			want := k.GoDot(2*iqQK, w, a)
			for i := 2 * typ.TypeSize(); i < len(w); i++ {
				w[i] = 0xff
			}
			for i := 2 * iqQ8KSize; i < len(a); i++ {
				a[i] = 0x7f
			}
			if got := k.Dot(2*iqQK, w, a); math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("2 of 3 blocks: got %v, want %v", got, want)
			}
			for _, c := range []struct {
				name string
				w, a []byte
			}{
				{"short weights", w[:2*typ.TypeSize()-1], a[:2*iqQ8KSize]},
				{"short activations", w[:2*typ.TypeSize()], a[:2*iqQ8KSize-1]},
			} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s: no panic", c.name)
						}
					}()
					k.Dot(2*iqQK, c.w, c.a)
				}()
			}
		})
	}
}

// BenchmarkSIMDIQDot runs the Go and the SIMD dot products side by side on
// one 4096-value row of each i-quant (64 rows rotating, so the weights are
// not all in L1); MB/s is weight bytes.
func BenchmarkSIMDIQDot(b *testing.B) {
	const n, rows = 4096, 64
	for _, typ := range simdIQTypes {
		k := iqKernel(b, typ)
		rng := rand.New(rand.NewPCG(1, 2))
		rb := n / iqQK * typ.TypeSize()
		w := make([]byte, rows*rb)
		k.Random(w, rng, 1)
		a := make([]byte, n/iqQK*iqQ8KSize)
		QuantizeQ8K(randomFloats(rng, n, 1), a)
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
		for _, impl := range impls {
			b.Run(typ.String()+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(rb))
				var sink float32
				for i := 0; b.Loop(); i++ {
					r := i % rows
					sink += impl.dot(n, w[r*rb:(r+1)*rb], a)
				}
				_ = sink
			})
		}
	}
}
