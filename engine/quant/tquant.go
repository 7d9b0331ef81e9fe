package quant

import (
	"math"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// The ternary formats, values d*t with t in {-1, 0, 1}, super-blocks of 256
// dotted with Q8_K activations:
//
//	TQ1_0: qs [48]byte, qh [4]byte, d fp16 (54 bytes). Each qs byte holds 5
//	       trits and each qh byte 4, as a fixed-point fraction of 3^5: trit
//	       n of byte b is ((b*3^n mod 256)*3) >> 8. qs[0..31] hold values
//	       0..159 (trit n of byte m is value 32n+m), qs[32..47] values
//	       160..239 (160+16n+m), qh values 240..255 (240+4n+j).
//	TQ2_0: qs [64]byte, d fp16 (66 bytes): 2 bits per value, t = q-1;
//	       bits 2l of byte 32j+k are value 128j+32l+k.
const (
	tq1Size = 48 + iqQK/64 + 2 // qs, qh, d
	tq2Size = iqQK/4 + 2       // 66
)

func init() {
	register(ggml.TQ1_0, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeTQ1,
		Dot:        dotTQ1,
		Random:     randomTQ1,
		Quantize:   quantizeTQ1Ref,
	})
	register(ggml.TQ2_0, Kernel{
		VecDotType: ggml.Q8_K,
		Dequantize: dequantizeTQ2,
		Dot:        dotTQ2,
		Random:     randomTQ2,
		Quantize:   quantizeTQ2Ref,
	})
}

var pow3 = [5]uint8{1, 3, 9, 27, 81}

// trit returns trit n (0, 1 or 2) of a TQ1_0 byte.
func trit(b uint8, n int) int32 {
	q := b * pow3[n] // mod 256
	return int32(uint16(q) * 3 >> 8)
}

// dequantizeTQ1 is dequantize_row_tq1_0.
func dequantizeTQ1(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	for i := range nb {
		blk := src[i*tq1Size : (i+1)*tq1Size]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := fp16At(blk[52:])
		qs, qh := blk[0:48], blk[48:52]
		for n := range 5 {
			for m := range 32 {
				y[32*n+m] = float32(trit(qs[m], n)-1) * d
			}
			for m := range 16 {
				y[160+16*n+m] = float32(trit(qs[32+m], n)-1) * d
			}
		}
		for n := range 4 {
			for j := range 4 {
				y[240+4*n+j] = float32(trit(qh[j], n)-1) * d
			}
		}
	}
}

// dotTQ1 is ggml_vec_dot_tq1_0_q8_K: the exact integer sum per super-block,
// then sumf += sum*(dy*d).
func dotTQ1(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, tq1Size)
	var sumf float32
	for i := range nb {
		blk := w[i*tq1Size : (i+1)*tq1Size]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		qs, qh := blk[0:48], blk[48:52]
		var sum int32
		for n := range 5 {
			for m := range 32 {
				sum += (trit(qs[m], n) - 1) * int32(int8(q8[32*n+m]))
			}
			for m := range 16 {
				sum += (trit(qs[32+m], n) - 1) * int32(int8(q8[160+16*n+m]))
			}
		}
		for n := range 4 {
			for j := range 4 {
				sum += (trit(qh[j], n) - 1) * int32(int8(q8[240+4*n+j]))
			}
		}
		sumf += float32(float32(sum) * float32(yd*fp16At(blk[52:])))
	}
	return sumf
}

// dequantizeTQ2 is dequantize_row_tq2_0.
func dequantizeTQ2(src []byte, dst []float32) {
	nb := len(dst) / iqQK
	for i := range nb {
		blk := src[i*tq2Size : (i+1)*tq2Size]
		y := dst[i*iqQK : (i+1)*iqQK]
		d := fp16At(blk[64:])
		for j := 0; j < 64; j += 32 {
			for l := range 4 {
				for k := range 32 {
					y[4*j+32*l+k] = float32(int32(blk[j+k]>>(2*l)&3)-1) * d
				}
			}
		}
	}
}

// dotTQ2 is ggml_vec_dot_tq2_0_q8_K: the exact integer sum per super-block,
// then sumf += sum*(dy*d).
func dotTQ2(n int, w, a []byte) float32 {
	nb, w, a := iqBlocks(n, w, a, tq2Size)
	var sumf float32
	for i := range nb {
		blk := w[i*tq2Size : (i+1)*tq2Size]
		yd, q8 := iqQ8K(a[i*iqQ8KSize:])
		var sum int32
		for j := 0; j < 64; j += 32 {
			for l := range 4 {
				for k := range 32 {
					sum += int32(int8(q8[4*j+32*l+k])) * (int32(blk[j+k]>>(2*l)&3) - 1)
				}
			}
		}
		sumf += float32(float32(sum) * float32(yd*fp16At(blk[64:])))
	}
	return sumf
}

// lroundf rounds half away from zero, as C's lroundf.
func lroundf(x float32) int32 { return int32(math.Round(float64(x))) }

// ternaryScale returns d = max |x| over a block and 1/d (0 for zeros).
func ternaryScale(x []float32) (d, id float32) {
	for _, v := range x {
		d = max(d, abs32(v))
	}
	if d != 0 {
		id = 1 / d
	}
	return d, id
}

// quantizeTQ1Ref is ggml's quantize_row_tq1_0_ref.
func quantizeTQ1Ref(x []float32, dst []byte) {
	nb := len(x) / iqQK
	_ = dst[nb*tq1Size-1]
	for i := range nb {
		xb := x[i*iqQK : (i+1)*iqQK]
		blk := dst[i*tq1Size : (i+1)*tq1Size]
		d, id := ternaryScale(xb)
		putFP16(blk[52:], d)
		// pack folds trits (most significant first) into a byte: the
		// ceiling of v*256/3^5.
		pack := func(idx func(n int) int, trits int) uint8 {
			var q uint16
			for n := range trits {
				q = q*3 + uint16(lroundf(xb[idx(n)]*id)+1)
			}
			for range 5 - trits {
				q *= 3
			}
			return uint8((q*256 + 242) / 243)
		}
		for m := range 32 {
			blk[m] = pack(func(n int) int { return 32*n + m }, 5)
		}
		for m := range 16 {
			blk[32+m] = pack(func(n int) int { return 160 + 16*n + m }, 5)
		}
		for j := range 4 {
			blk[48+j] = pack(func(n int) int { return 240 + 4*n + j }, 4)
		}
	}
}

// quantizeTQ2Ref is ggml's quantize_row_tq2_0_ref.
func quantizeTQ2Ref(x []float32, dst []byte) {
	nb := len(x) / iqQK
	_ = dst[nb*tq2Size-1]
	for i := range nb {
		xb := x[i*iqQK : (i+1)*iqQK]
		blk := dst[i*tq2Size : (i+1)*tq2Size]
		d, id := ternaryScale(xb)
		putFP16(blk[64:], d)
		for j := 0; j < 64; j += 32 {
			for m := range 32 {
				var q uint8
				for n := range 4 {
					q += uint8(lroundf(xb[4*j+32*n+m]*id)+1) & 3 << (2 * n)
				}
				blk[j+m] = q
			}
		}
	}
}

// randomTQ1 fills dst with TQ1_0 blocks of uniform random trits (encoded as
// quantize_row_tq1_0_ref does) and d ≈ 1.5*scale (mean |t| is 2/3).
func randomTQ1(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+tq1Size <= len(dst); i += tq1Size {
		blk := dst[i : i+tq1Size]
		for k := range 48 {
			blk[k] = uint8((uint16(rng.IntN(243))*256 + 242) / 243)
		}
		for k := range 4 {
			blk[48+k] = uint8((uint16(rng.IntN(81))*3*256 + 242) / 243)
		}
		putFP16(blk[52:], 1.5*scale*(0.75+0.5*rng.Float32()))
	}
}

// randomTQ2 fills dst with TQ2_0 blocks of uniform random trits (2-bit
// fields 0..2; 3 is never written) and d ≈ 1.5*scale.
func randomTQ2(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+tq2Size <= len(dst); i += tq2Size {
		blk := dst[i : i+tq2Size]
		for k := range 64 {
			var q uint8
			for n := range 4 {
				q |= uint8(rng.IntN(3)) << (2 * n)
			}
			blk[k] = q
		}
		putFP16(blk[64:], 1.5*scale*(0.75+0.5*rng.Float32()))
	}
}
