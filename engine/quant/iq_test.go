package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
)

var iqTypes = []ggml.Type{ggml.IQ2_XXS, ggml.IQ2_XS, ggml.IQ3_XXS, ggml.IQ4_XS}

func iqKernel(t testing.TB, typ ggml.Type) *Kernel {
	t.Helper()
	k, err := For(typ)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// randomIQRow returns n elements of random typ blocks and their dequantized values.
func randomIQRow(t testing.TB, typ ggml.Type, n int, rng *rand.Rand, scale float32) ([]byte, []float32) {
	t.Helper()
	k := iqKernel(t, typ)
	w := make([]byte, n/typ.BlockSize()*typ.TypeSize())
	k.Random(w, rng, scale)
	x := make([]float32, n)
	k.Dequantize(w, x)
	return w, x
}

func TestIQRegistration(t *testing.T) {
	sizes := map[ggml.Type]int{
		ggml.IQ2_XXS: iq2XXSSize, ggml.IQ2_XS: iq2XSSize,
		ggml.IQ3_XXS: iq3XXSSize, ggml.IQ4_XS: iq4XSSize,
	}
	for _, typ := range iqTypes {
		k := iqKernel(t, typ)
		if k.VecDotType != ggml.Q8_K {
			t.Errorf("%s: VecDotType = %s, want Q8_K", typ, k.VecDotType)
		}
		if k.Dequantize == nil || k.Dot == nil || k.Random == nil {
			t.Errorf("%s: missing routines", typ)
		}
		if sizes[typ] != typ.TypeSize() || typ.BlockSize() != iqQK {
			t.Errorf("%s: block %d bytes/%d values, ggml says %d/%d", typ, sizes[typ], iqQK, typ.TypeSize(), typ.BlockSize())
		}
	}
	if iqQ8KSize != ggml.Q8_K.TypeSize() {
		t.Errorf("Q8_K block size %d, ggml says %d", iqQ8KSize, ggml.Q8_K.TypeSize())
	}
}

// TestIQDotMatchesDequantized checks Dot against a float64 dot product of
// the dequantized weights and the dequantized Q8_K activations.
func TestIQDotMatchesDequantized(t *testing.T) {
	for _, typ := range iqTypes {
		for _, n := range []int{256, 1024, 4096} {
			t.Run(fmt.Sprintf("%s/%d", typ, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(typ), uint64(n)))
				k := iqKernel(t, typ)
				for trial := range 20 {
					scale := float32(math.Ldexp(1, -rng.IntN(12)))
					w, wf := randomIQRow(t, typ, n, rng, scale)
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(rng.NormFloat64()) * 3
					}
					a := make([]byte, n/iqQK*iqQ8KSize)
					QuantizeQ8K(x, a)
					af := make([]float32, n)
					dequantizeQ8K(a, af)
					var want, mag float64
					for i := range wf {
						p := float64(wf[i]) * float64(af[i])
						want += p
						mag += math.Abs(p)
					}
					got := k.Dot(n, w, a)
					if d := math.Abs(float64(got) - want); d > 1e-5*mag || math.IsNaN(float64(got)) {
						t.Fatalf("trial %d: Dot = %g, float64 reference %g (|diff| %g, sum|w*a| %g)", trial, got, want, d, mag)
					}
				}
			})
		}
	}
}

// TestIQDotExact uses power-of-two scales (one per row) and activations in
// [-4, 4], for which every float operation of Dot is exact (all sums stay
// below 2^24 units of the smallest term): it must equal the dot product of
// the dequantized values to the last bit.
func TestIQDotExact(t *testing.T) {
	for _, typ := range iqTypes {
		t.Run(typ.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(typ)))
			k := iqKernel(t, typ)
			const n = 4 * iqQK
			for trial := range 100 {
				w, _ := randomIQRow(t, typ, n, rng, 1)
				wd := Float32ToFP16(float32(math.Ldexp(1, rng.IntN(9)-4)))
				for b := 0; b < len(w); b += typ.TypeSize() {
					binary.LittleEndian.PutUint16(w[b:], wd)
				}
				wf := make([]float32, n)
				k.Dequantize(w, wf)
				a := make([]byte, n/iqQK*iqQ8KSize)
				yd := math.Ldexp(1, rng.IntN(9)-4)
				var want float64
				for b := range n / iqQK {
					blk := a[b*iqQ8KSize:]
					binary.LittleEndian.PutUint32(blk, math.Float32bits(float32(yd)))
					for j := range iqQK {
						q := int8(rng.IntN(9) - 4)
						blk[4+j] = byte(q)
						want += float64(wf[b*iqQK+j]) * yd * float64(q)
					}
				}
				if got := k.Dot(n, w, a); float64(got) != want {
					t.Fatalf("trial %d: Dot = %g, want exactly %g", trial, got, want)
				}
			}
		})
	}
}

func TestIQDequantizeHandBuilt(t *testing.T) {
	const one = 0x3c00 // fp16 1.0
	tests := []struct {
		typ   ggml.Type
		build func(b []byte)
		want  map[int]float32 // index -> value
	}{
		{
			typ: ggml.IQ2_XXS,
			build: func(b []byte) {
				binary.LittleEndian.PutUint16(b, one)
				// group 0: grid 0 (all 8), grid 1 (43,8,...), grid 255, grid 0;
				// signs 1 (ksigns 129: values 0 and 7 negative), 0, 3 (ksigns 3), 0; scale 3.
				copy(b[2:], []byte{0, 1, 255, 0})
				binary.LittleEndian.PutUint32(b[6:], 3<<28|3<<14|1)
				// group 7: grid 0, scale 15, signs 127 (ksigns 255: all negative) in slot 3.
				binary.LittleEndian.PutUint32(b[2+56+4:], 15<<28|127<<21)
			},
			want: map[int]float32{
				0: -7, 1: 7, 6: 7, 7: -7, // 8 * 3.5/4
				8: 37.625, 9: 7, 15: 7, // 43 * 0.875
				16: -7, 17: -21.875, 18: 7, 19: 7, 20: 21.875, 21: 37.625, 22: 37.625, 23: 37.625,
				24: 7, 31: 7,
				32: 1, 255: -31, 248: -31, 247: 31, // zero-filled groups: 8 * 0.5/4; group 7: 8 * 15.5/4
			},
		},
		{
			typ: ggml.IQ2_XS,
			build: func(b []byte) {
				binary.LittleEndian.PutUint16(b, 0x3800) // 0.5
				// value group 0: grid 2 (25,25,8,...), signs 3 (values 0, 1 negative).
				binary.LittleEndian.PutUint16(b[2:], 2|3<<9)
				// value group 2 (second half of the 32): grid 511 (all 43), signs 127 (all negative).
				binary.LittleEndian.PutUint16(b[6:], 511|127<<9)
				b[2+64] = 0x52 // scales 2 (first 16) and 5 (second 16)
			},
			want: map[int]float32{
				0: -7.8125, 1: -7.8125, 2: 2.5, 7: 2.5, // 0.5*2.5/4 = 0.3125
				8: 2.5, 15: 2.5,
				16: -29.5625, 23: -29.5625, // 0.5*5.5/4 * 43
				24: 5.5, 32: 0.5, 255: 0.5,
			},
		},
		{
			typ: ggml.IQ3_XXS,
			build: func(b []byte) {
				binary.LittleEndian.PutUint16(b, one)
				b[2], b[3] = 0, 1     // grid 0 (4,4,4,4), grid 1 (20,4,4,4)
				b[4], b[5] = 255, 255 // grid 255 (4,28,52,62) twice
				binary.LittleEndian.PutUint32(b[2+64:], 1<<28|5<<7|1)
			},
			want: map[int]float32{
				0: -3, 1: 3, 3: 3, 4: 15, 5: 3, 6: 3, 7: -3, // 1.5/2 = 0.75
				8: -3, 9: 21, 10: -39, 11: 46.5, 12: 3, 13: 21, 14: 39, 15: 46.5, // ksigns 5 = 0b101
				16: 3, 32: 1, 255: 1, // zero-filled groups: 4 * 0.5/2
			},
		},
		{
			typ: ggml.IQ4_XS,
			build: func(b []byte) {
				binary.LittleEndian.PutUint16(b, 0x3800)      // 0.5
				binary.LittleEndian.PutUint16(b[2:], 2|3<<14) // group 0 high bits 2, group 7 high bits 3
				b[4] = 0xf3                                   // group 0 low 3 -> ls 35; group 1 low 15 -> ls 15
				b[7] = 0xf0                                   // group 7 low 15 -> ls 63
				b[8] = 0xf0                                   // value 0 index 0, value 16 index 15
				b[8+16] = 0x98                                // group 1: value 32 index 8, value 48 index 9
				b[8+7*16+15] = 0x7f                           // group 7: value 239 index 15, value 255 index 7
			},
			want: map[int]float32{
				0: -190.5, 16: 169.5, 1: -190.5, // 0.5*3 * (-127, 113)
				32: -8.5, 48: -110.5, 33: 1079.5, // 0.5*-17 * (1, 13, -127)
				64:  2032,                            // group 2: ls 0 -> -32*0.5 * -127
				239: 1751.5, 255: -155, 224: -1968.5, // 0.5*31 * (113, -10, -127)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			b := make([]byte, 2*tt.typ.TypeSize())
			tt.build(b[tt.typ.TypeSize():]) // second block, to check block offsets
			y := make([]float32, 2*iqQK)
			iqKernel(t, tt.typ).Dequantize(b, y)
			for i := range iqQK {
				if y[i] != 0 {
					t.Fatalf("zero block: y[%d] = %g, want 0", i, y[i])
				}
			}
			for i, want := range tt.want {
				if got := y[iqQK+i]; got != want {
					t.Errorf("y[%d] = %g, want %g", i, got, want)
				}
			}
		})
	}
}

func TestIQRandom(t *testing.T) {
	for _, typ := range iqTypes {
		for _, scale := range []float32{1e-3, 0.05, 2} {
			t.Run(fmt.Sprintf("%s/%g", typ, scale), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, uint64(typ)))
				const n = 64 * iqQK
				w, x := randomIQRow(t, typ, n, rng, scale)
				if len(w) != n/256*typ.TypeSize() {
					t.Fatalf("row of %d bytes", len(w))
				}
				var sum float64
				for i, v := range x {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("x[%d] = %g", i, v)
					}
					sum += math.Abs(float64(v))
				}
				if mean := sum / n; mean < 0.6*float64(scale) || mean > 1.6*float64(scale) {
					t.Errorf("mean |value| %g, want about %g", mean, scale)
				}
				if typ == ggml.IQ4_XS {
					return
				}
				// Sign tables give every group of 8 an even number of
				// negative values, and grid values are never zero.
				for g := 0; g < n; g += 8 {
					neg := 0
					for _, v := range x[g : g+8] {
						if v < 0 {
							neg++
						}
					}
					if neg%2 != 0 {
						t.Fatalf("values %d..%d: %d negative", g, g+7, neg)
					}
				}
			})
		}
	}
}

func TestIQDotNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range iqTypes {
		const n = 1024
		w, _ := randomIQRow(t, typ, n, rng, 1)
		a := make([]byte, n/iqQK*iqQ8KSize)
		k := iqKernel(t, typ)
		if allocs := testing.AllocsPerRun(10, func() { k.Dot(n, w, a) }); allocs != 0 {
			t.Errorf("%s: Dot allocates %v times", typ, allocs)
		}
	}
}

func BenchmarkIQDot(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range iqTypes {
		b.Run(typ.String(), func(b *testing.B) {
			w, _ := randomIQRow(b, typ, n, rng, 1)
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			a := make([]byte, n/iqQK*iqQ8KSize)
			QuantizeQ8K(x, a)
			k := iqKernel(b, typ)
			b.SetBytes(int64(len(w)))
			var sink float32
			for b.Loop() {
				sink += k.Dot(n, w, a)
			}
			_ = sink
		})
	}
}

func BenchmarkIQDequantize(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range iqTypes {
		b.Run(typ.String(), func(b *testing.B) {
			w, y := randomIQRow(b, typ, n, rng, 1)
			k := iqKernel(b, typ)
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				k.Dequantize(w, y)
			}
		})
	}
}

// iq4GoldenInput returns the input of TestIQ4XSQuantizeGolden: 16 blocks of
// Gaussian values at varied scales, some with outliers, some with all-zero
// groups, and one all-zero block.
func iq4GoldenInput() []float32 {
	rng := rand.New(rand.NewPCG(2024, 4))
	x := make([]float32, 16*iqQK)
	for b := range 16 {
		sc := math.Ldexp(1, b-10)
		for i := range iqQK {
			v := rng.NormFloat64() * sc
			switch {
			case b == 5:
				v = 0
			case b%4 == 1 && rng.IntN(50) == 0:
				v *= 20
			case b%4 == 2 && (i/32)%3 == 1:
				v = 0
			}
			x[b*iqQK+i] = float32(v)
		}
	}
	return x
}

// TestIQ4XSQuantizeGolden pins Quantize to llama.cpp: the SHA-256 of the
// output of quantize_row_iq4_xs_ref (ggml-quants.c built with gcc -O2
// -ffp-contract=off) for iq4GoldenInput.
func TestIQ4XSQuantizeGolden(t *testing.T) {
	x := iq4GoldenInput()
	dst := make([]byte, len(x)/iqQK*iq4XSSize)
	iqKernel(t, ggml.IQ4_XS).Quantize(x, dst)
	sum := sha256.Sum256(dst)
	const want = "4a27ede4788103ee0b5f388170d25b0eb8648db32adf0243c0cf199d4e554d9c"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Errorf("sha256 of quantized blocks %s, llama.cpp gives %s", got, want)
	}
}

func TestIQ4XSQuantize(t *testing.T) {
	k := iqKernel(t, ggml.IQ4_XS)
	// An all-zero block: d = -0 (ggml computes -max_scale/32), every scale 0
	// (stored as 32), every index 8 (value 1).
	zero := make([]byte, iq4XSSize)
	k.Quantize(make([]float32, iqQK), zero)
	want := make([]byte, iq4XSSize)
	binary.LittleEndian.PutUint16(want, 0x8000)
	binary.LittleEndian.PutUint16(want[2:], 0xaaaa)
	for i := 8; i < iq4XSSize; i++ {
		want[i] = 0x88
	}
	if string(zero) != string(want) {
		t.Errorf("zero block quantized to % x", zero)
	}
	// Round trip of Gaussian data: 4.25 bits per weight keep the error small.
	rng := rand.New(rand.NewPCG(9, 9))
	const n = 32 * iqQK
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 0.02)
	}
	q := make([]byte, n/iqQK*iq4XSSize)
	k.Quantize(x, q)
	y := make([]float32, n)
	k.Dequantize(q, y)
	var e2, x2 float64
	for i := range x {
		e2 += float64(x[i]-y[i]) * float64(x[i]-y[i])
		x2 += float64(x[i]) * float64(x[i])
	}
	if rel := math.Sqrt(e2 / x2); rel > 0.1 {
		t.Errorf("relative RMS error %g", rel)
	}
	t.Logf("relative RMS error %.4f", math.Sqrt(e2/x2))
}
