package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

//go:generate go run ./internal/gentables -out iq_tables.go

// Layout of the i-quant super-blocks (iqQK = 256 elements, like the K
// quants) and of the Q8_K activation blocks they are dotted with.
const (
	iqQK = 256

	iqQ8KSize  = 4 + iqQK + iqQK/16*2     // d float32, qs [256]int8, bsums [16]int16
	iq2XXSSize = 2 + iqQK/8*2             // d fp16, qs [32]uint16
	iq2XSSize  = 2 + iqQK/8*2 + iqQK/32   // d fp16, qs [32]uint16, scales [8]uint8
	iq3XXSSize = 2 + 3*iqQK/8             // d fp16, qs [64]uint8, scales and signs [8]uint32
	iq4XSSize  = 2 + 2 + iqQK/64 + iqQK/2 // d fp16, scales_h uint16, scales_l [4]uint8, qs [128]uint8
)

// iqDotGrid8 returns sum_j grid[j] * sign_j * q8[j] over the 8 unsigned
// bytes of a grid entry (byte j = bits 8j..8j+7, the little-endian memory
// order ggml reads them in) and 8 int8 quants, where sign_j is -1 if byte j
// of the mask neg (a ksigns64 entry) is 0xff and +1 if it is 0.
//
// The signs are applied to the grid bytes all at once: for a selected byte
// g, (g ^ 0xff) + 1 = 256 - g is -g as an int8, and since grid bytes are
// never 0 the addition carries into no other byte.
func iqDotGrid8(grid, neg uint64, q8 []byte) int32 {
	g := (grid ^ neg) + (neg & 0x0101010101010101)
	q8 = q8[:8]
	return int32(int8(g))*int32(int8(q8[0])) +
		int32(int8(g>>8))*int32(int8(q8[1])) +
		int32(int8(g>>16))*int32(int8(q8[2])) +
		int32(int8(g>>24))*int32(int8(q8[3])) +
		int32(int8(g>>32))*int32(int8(q8[4])) +
		int32(int8(g>>40))*int32(int8(q8[5])) +
		int32(int8(g>>48))*int32(int8(q8[6])) +
		int32(int8(g>>56))*int32(int8(q8[7]))
}

// iqDequantGrid8 writes db * grid[j] * sign_j for the 8 bytes of grid, each
// product rounded to float32 as in ggml's dequantize_row_iq* loops.
func iqDequantGrid8(grid uint64, signs uint32, db float32, y []float32) {
	y = y[:8]
	for j := range 8 {
		v := db * float32(uint8(grid>>(8*j)))
		if signs>>j&1 != 0 {
			v = -v
		}
		y[j] = v
	}
}

// iqQ8K splits one Q8_K block into its scale and its 256 int8 quants.
func iqQ8K(a []byte) (float32, []byte) {
	a = a[:iqQ8KSize]
	return math.Float32frombits(binary.LittleEndian.Uint32(a)), a[4 : 4+iqQK]
}

// iqBlocks returns the number of super-blocks in n elements, and w and a
// cut to exactly that many blocks of wsize and Q8_K bytes. It panics, as an
// index out of range would, if n is not a multiple of 256 or a row is short.
func iqBlocks(n int, w, a []byte, wsize int) (int, []byte, []byte) {
	if n%iqQK != 0 {
		panic("quant: row length is not a multiple of 256")
	}
	nb := n / iqQK
	return nb, w[:nb*wsize], a[:nb*iqQ8KSize]
}

// iqRandomFP16 returns a positive fp16 scale of about base (within ±25%).
func iqRandomFP16(rng *rand.Rand, base float32) uint16 {
	return Float32ToFP16(base * (0.75 + 0.5*rng.Float32()))
}
