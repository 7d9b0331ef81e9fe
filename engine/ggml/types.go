// Package ggml describes ggml's tensor element types: their ids as stored in
// GGUF files, names, block sizes and byte sizes. It holds no kernels.
package ggml

import (
	"fmt"
	"math/bits"
)

// Type is a ggml tensor element type, with the numeric id ggml and GGUF use.
type Type uint32

// The ggml types. Ids not listed here were removed from ggml and are unknown.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

type traits struct {
	name      string
	blockSize int // elements per block
	typeSize  int // bytes per block
}

var table = map[Type]traits{
	F32:     {"F32", 1, 4},
	F16:     {"F16", 1, 2},
	Q4_0:    {"Q4_0", 32, 18},
	Q4_1:    {"Q4_1", 32, 20},
	Q5_0:    {"Q5_0", 32, 22},
	Q5_1:    {"Q5_1", 32, 24},
	Q8_0:    {"Q8_0", 32, 34},
	Q8_1:    {"Q8_1", 32, 36},
	Q2_K:    {"Q2_K", 256, 84},
	Q3_K:    {"Q3_K", 256, 110},
	Q4_K:    {"Q4_K", 256, 144},
	Q5_K:    {"Q5_K", 256, 176},
	Q6_K:    {"Q6_K", 256, 210},
	Q8_K:    {"Q8_K", 256, 292},
	IQ2_XXS: {"IQ2_XXS", 256, 66},
	IQ2_XS:  {"IQ2_XS", 256, 74},
	IQ3_XXS: {"IQ3_XXS", 256, 98},
	IQ1_S:   {"IQ1_S", 256, 50},
	IQ4_NL:  {"IQ4_NL", 32, 18},
	IQ3_S:   {"IQ3_S", 256, 110},
	IQ2_S:   {"IQ2_S", 256, 82},
	IQ4_XS:  {"IQ4_XS", 256, 136},
	I8:      {"I8", 1, 1},
	I16:     {"I16", 1, 2},
	I32:     {"I32", 1, 4},
	I64:     {"I64", 1, 8},
	F64:     {"F64", 1, 8},
	IQ1_M:   {"IQ1_M", 256, 56},
	BF16:    {"BF16", 1, 2},
	TQ1_0:   {"TQ1_0", 256, 54},
	TQ2_0:   {"TQ2_0", 256, 66},
	MXFP4:   {"MXFP4", 32, 17},
}

// Known reports whether t is a type ggml defines.
func (t Type) Known() bool { _, ok := table[t]; return ok }

// String returns ggml's name for t ("Q4_K"), or "type(N)" if unknown.
func (t Type) String() string {
	if tr, ok := table[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block of t (1 for plain types).
// It is 0 for unknown types.
func (t Type) BlockSize() int { return table[t].blockSize }

// TypeSize is the number of bytes of one block of t. It is 0 for unknown types.
func (t Type) TypeSize() int { return table[t].typeSize }

// Quantized reports whether t stores elements in multi-element blocks.
func (t Type) Quantized() bool { return table[t].blockSize > 1 }

// RowSize returns the bytes of n elements of t. It fails if t is unknown or
// n is not a whole number of blocks.
func (t Type) RowSize(n int64) (int64, error) {
	tr, ok := table[t]
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	if n < 0 || n%int64(tr.blockSize) != 0 {
		return 0, fmt.Errorf("%s: %d elements is not a multiple of the block size %d", tr.name, n, tr.blockSize)
	}
	return n / int64(tr.blockSize) * int64(tr.typeSize), nil
}

// Bytes returns the byte size of a tensor of t with the given element count,
// checking block divisibility and overflow.
func (t Type) Bytes(elements uint64) (uint64, error) {
	tr, ok := table[t]
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	if elements%uint64(tr.blockSize) != 0 {
		return 0, fmt.Errorf("%s: %d elements is not a multiple of the block size %d", tr.name, elements, tr.blockSize)
	}
	hi, lo := bits.Mul64(elements/uint64(tr.blockSize), uint64(tr.typeSize))
	if hi != 0 {
		return 0, fmt.Errorf("%s: byte size of %d elements overflows", tr.name, elements)
	}
	return lo, nil
}

// ParseType returns the type named s ("q4_k" or "Q4_K").
func ParseType(s string) (Type, error) {
	for t, tr := range table {
		if equalFold(tr.name, s) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown ggml type %q", s)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
