//go:build !purego

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

// The NEON activation quantizers against the Go ones (quantizeQ8_0Go,
// quantizeQ8KGo), byte for byte, and the assembly's own share of the work:
// it must do every block except those it is documented to leave to Go.

type neonQuantizer struct {
	typ  ggml.Type
	qk   int
	neon func([]float32, []byte)
	asm  func(x *float32, dst *byte, nb int) int
	ref  func([]float32, []byte)
}

var neonQuantizers = []neonQuantizer{
	{ggml.Q8_0, qk8_0, quantizeQ8_0NEON, quantizeQ8_0NEONAsm, quantizeQ8_0Go},
	{ggml.Q8_K, qkK, quantizeQ8KNEON, quantizeQ8KNEONAsm, quantizeQ8KGo},
}

// neonQuantInputs are activation rows (n a multiple of 256) that exercise
// the quantizers' special cases.
func neonQuantInputs(rng *rand.Rand) map[string][]float32 {
	const n = 1024
	in := map[string][]float32{}
	for _, e := range []int{-149, -140, -126, -124, -60, -3, 0, 3, 60, 120, 127} {
		in[fmt.Sprintf("normal 2^%d", e)] = randomFloats(rng, n, float32(math.Ldexp(1, e)))
	}
	bits := make([]float32, n)
	finite := make([]float32, n)
	for i := range bits {
		bits[i] = math.Float32frombits(rng.Uint32())
		finite[i] = math.Float32frombits(rng.Uint32() & 0xbf7fffff) // exponent < 255
	}
	in["random bits"] = bits
	in["random finite bits"] = finite
	// amax 127: id = 1 and iscale = -1, so halves are ties; amax 63.5:
	// id = 2, so quarters are.
	ties := make([]float32, n)
	for i := range ties {
		ties[i] = float32(rng.IntN(255)-127) + 0.5*float32(rng.IntN(2))
		if i%32 == 0 {
			ties[i] = 127
		}
	}
	in["ties 0.5"] = ties
	quarters := make([]float32, n)
	for i := range quarters {
		quarters[i] = float32(rng.IntN(254)-127) / 4
		if i%32 == 5 {
			quarters[i] = -63.5
		}
	}
	in["ties 0.25"] = quarters
	// Equal magnitudes of both signs: Q8_K takes the first one.
	signs := make([]float32, n)
	for i := range signs {
		signs[i] = float32(rng.IntN(9) - 4)
	}
	signs[3], signs[200] = -6, 6
	signs[256+5], signs[256+9] = 6, -6
	signs[512+255] = -7
	signs[768+16], signs[768+17] = -9, 9
	in["equal magnitudes"] = signs
	zeros := make([]float32, n)
	for i := range zeros {
		if i%3 == 0 {
			zeros[i] = float32(math.Copysign(0, -1))
		}
	}
	in["zeros"] = zeros
	extremes := make([]float32, n)
	for i := range extremes {
		extremes[i] = float32(rng.IntN(3)-1) * math.MaxFloat32
	}
	in["±MaxFloat32"] = extremes
	special := randomFloats(rng, n, 1)
	clear(special[32:64])   // zero Q8_0 block
	clear(special[256:512]) // zero Q8_K block
	special[520] = float32(math.Inf(1))
	special[600] = float32(math.Inf(-1))
	special[601] = float32(math.Inf(1))
	special[700] = float32(math.NaN())
	special[701] = math.Float32frombits(0x7f800001) // signalling NaN
	special[1023] = math.Float32frombits(0xffc01234)
	special[10] = float32(math.Copysign(0, -1))
	special[40] = float32(math.Copysign(0, -1))
	special[64] = 1e-45              // smallest subnormal
	special[96] = 65504 * 127 * 1.01 // d overflows fp16
	special[128] = 3e38
	special[160] = 127 / math.MaxFloat32 * 1.01 // 127/amax just finite
	in["special"] = special
	return in
}

// neonQuantCompare quantizes x with q.neon and q.ref into buffers with 7
// guard bytes and fails on the first difference.
func neonQuantCompare(t *testing.T, q neonQuantizer, x []float32, what string) {
	t.Helper()
	size := ActivationSize(q.typ, len(x))
	want := make([]byte, size+7)
	got := make([]byte, size+7)
	for i := range want {
		want[i], got[i] = 0xa5, 0xa5
	}
	q.ref(x, want[:size])
	q.neon(x, got[:size])
	for i := range want {
		if got[i] != want[i] {
			bs := q.typ.TypeSize()
			t.Fatalf("%s %s n=%d: byte %d (block %d, offset %d) = %#x, Go %#x",
				q.typ, what, len(x), i, i/bs, i%bs, got[i], want[i])
		}
	}
}

func TestNEONQuantizeInstalled(t *testing.T) {
	requireASIMD(t)
	if quantizeQ8_0Arch == nil || quantizeQ8KArch == nil {
		t.Fatal("activation quantizers not hooked")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	x := randomFloats(rng, 512, 1)
	for _, q := range neonQuantizers {
		want := make([]byte, ActivationSize(q.typ, len(x)))
		got := make([]byte, len(want))
		q.ref(x, want)
		QuantizeActivations(q.typ, x, got)
		if string(got) != string(want) {
			t.Errorf("QuantizeActivations(%s) differs from the Go reference", q.typ)
		}
	}
}

func TestNEONQuantize(t *testing.T) {
	requireASIMD(t)
	rng := rand.New(rand.NewPCG(33, 34))
	for name, x := range neonQuantInputs(rng) {
		for _, q := range neonQuantizers {
			for _, n := range []int{q.qk, 256, len(x)} {
				neonQuantCompare(t, q, x[:n], name)
			}
		}
	}
}

func TestNEONQuantizeRandomBits(t *testing.T) {
	requireASIMD(t)
	rng := rand.New(rand.NewPCG(35, 36))
	x := make([]float32, 256)
	for trial := 0; trial < 1000; trial++ {
		// Mostly finite values of one random scale, sometimes raw bits.
		e := rng.IntN(280) - 150
		for i := range x {
			if rng.IntN(64) == 0 {
				x[i] = math.Float32frombits(rng.Uint32())
			} else {
				x[i] = float32(math.Ldexp(rng.NormFloat64(), e))
			}
		}
		for _, q := range neonQuantizers {
			neonQuantCompare(t, q, x, fmt.Sprintf("trial %d (scale 2^%d)", trial, e))
		}
	}
}

// TestNEONQuantizeAsmShare checks how many blocks the assembly does before
// handing one to Go: all of them for ordinary rows (so the comparisons
// above test the assembly, not the fallback), and exactly up to the first
// block holding a NaN or an amax below 127/MaxFloat32.
func TestNEONQuantizeAsmShare(t *testing.T) {
	requireASIMD(t)
	rng := rand.New(rand.NewPCG(37, 38))
	for _, q := range neonQuantizers {
		const nb = 6
		for _, c := range []struct {
			name string
			set  func(x []float32) // changes block 3
			stop bool
		}{
			{"ordinary", func(x []float32) {}, false},
			{"zero block", func(x []float32) { clear(x) }, false},
			{"Inf", func(x []float32) { x[7] = float32(math.Inf(-1)) }, false},
			{"MaxFloat32", func(x []float32) { x[1] = math.MaxFloat32 }, false},
			{"NaN", func(x []float32) { x[q.qk-1] = float32(math.NaN()) }, true},
			{"NaN and Inf", func(x []float32) { x[0], x[1] = float32(math.Inf(1)), float32(math.NaN()) }, true},
			{"subnormal amax", func(x []float32) {
				for i := range x {
					x[i] = float32(rng.NormFloat64()) * 1e-39
				}
			}, true},
			{"amax just below 127/MaxFloat32", func(x []float32) {
				clear(x)
				x[2] = -127 / math.MaxFloat32 * 0.99
			}, true},
			{"amax just above 127/MaxFloat32", func(x []float32) {
				clear(x)
				x[2] = -127 / math.MaxFloat32 * 1.01
			}, false},
		} {
			x := randomFloats(rng, nb*q.qk, 1)
			c.set(x[3*q.qk : 4*q.qk])
			dst := make([]byte, ActivationSize(q.typ, len(x)))
			want := nb
			if c.stop {
				want = 3
			}
			if got := q.asm(&x[0], &dst[0], nb); got != want {
				t.Errorf("%s %s: assembly did %d blocks, want %d", q.typ, c.name, got, want)
			}
			neonQuantCompare(t, q, x, c.name)
		}
	}
}
