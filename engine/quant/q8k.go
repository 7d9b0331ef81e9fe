package quant

import (
	"encoding/binary"
	"math"
)

// Q8_K is the activation format of the K and IQ weight types. One block of
// 256 values is laid out as in ggml's block_q8_K:
//
//	d     float32, little endian   bytes [0, 4)
//	qs    [256]int8                bytes [4, 260)
//	bsums [16]int16, little endian bytes [260, 292): sums of qs in groups of 16
//
// A value is d*qs[i].
const (
	qkK          = 256 // values per K-quant super-block (QK_K)
	q8KBlockSize = 292
	q8KQsOff     = 4
	q8KBsumsOff  = 260
)

// q8KD returns the scale d of a Q8_K block.
func q8KD(b *[q8KBlockSize]byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[:4]))
}

// q8KBsum returns bsums[j] of a Q8_K block.
func q8KBsum(b *[q8KBlockSize]byte, j int) int32 {
	return int32(int16(binary.LittleEndian.Uint16(b[q8KBsumsOff+2*j:])))
}

// nearestInt rounds to the nearest integer, ties to even, exactly as ggml's
// nearest_int (valid for |f| <= 4194303). Pass products through mul so the
// compiler cannot fuse them with the addition inside (arm64 FMA).
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// QuantizeQ8K converts x (a multiple of 256 values) to Q8_K blocks in dst
// (292 bytes per block) exactly as ggml's quantize_row_q8_K_ref, which is
// also what the CPU backend uses on every architecture: the value of largest
// magnitude (first one on ties) maps to -127, so iscale = -127/max, and
// quants are nearest_int(iscale*x) clamped to at most 127. An all-zero block
// gets d = 0, zero quants and zero bsums (ggml leaves bsums untouched there;
// they are never read with d = 0 in a way that matters).
func QuantizeQ8K(x []float32, dst []byte) {
	if quantizeQ8KArch != nil {
		quantizeQ8KArch(x, dst)
		return
	}
	quantizeQ8KGo(x, dst)
}

// quantizeQ8KArch, if not nil, is an assembly QuantizeQ8K producing the
// same bytes as quantizeQ8KGo. It is set at most once, by the init function
// of an architecture file, and never changed afterwards.
var quantizeQ8KArch func(x []float32, dst []byte)

// quantizeQ8KGo is the portable QuantizeQ8K: the reference the assembly
// versions are tested against.
func quantizeQ8KGo(x []float32, dst []byte) {
	nb := len(x) / qkK
	_ = dst[nb*q8KBlockSize-1]
	for i := 0; i < nb; i++ {
		xb := (*[qkK]float32)(x[i*qkK:])
		yb := (*[q8KBlockSize]byte)(dst[i*q8KBlockSize:])
		var max, amax float32
		for _, v := range xb {
			if ax := abs32(v); ax > amax {
				amax, max = ax, v
			}
		}
		if amax == 0 {
			clear(yb[:])
			continue
		}
		iscale := -127 / max
		qs := (*[qkK]byte)(yb[q8KQsOff:])
		for j, v := range xb {
			q := nearestInt(mul(iscale, v))
			if q > 127 {
				q = 127
			}
			qs[j] = byte(int8(q))
		}
		for j := 0; j < qkK/16; j++ {
			var sum int32
			for _, q := range qs[j*16 : j*16+16] {
				sum += int32(int8(q))
			}
			binary.LittleEndian.PutUint16(yb[q8KBsumsOff+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(yb[:4], math.Float32bits(1/iscale))
	}
}

// dequantizeQ8K expands Q8_K blocks (used by tests and by QuantizeActivations
// callers that want the values actually seen by a dot product).
func dequantizeQ8K(src []byte, dst []float32) {
	nb := len(dst) / qkK
	for i := 0; i < nb; i++ {
		b := (*[q8KBlockSize]byte)(src[i*q8KBlockSize:])
		d := q8KD(b)
		y := (*[qkK]float32)(dst[i*qkK:])
		for j := range y {
			y[j] = d * float32(int8(b[q8KQsOff+j]))
		}
	}
}

func abs32(f float32) float32 {
	return math.Float32frombits(math.Float32bits(f) &^ (1 << 31))
}
