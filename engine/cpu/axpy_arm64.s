//go:build !purego

#include "textflag.h"

// Encodings from binutils' aarch64-linux-gnu-as (objdump -d).

// func scaleNEON(x *float32, groups int, s float32)
// x[i] *= s for 4·groups values.
TEXT ·scaleNEON(SB), NOSPLIT, $0-20
	MOVD  x+0(FP), R0
	MOVD  groups+8(FP), R2
	FMOVS s+16(FP), F0
	WORD  $0x4e040400 // dup v0.4s, v0.s[0]

scaleloop:
	WORD $0x4c407801 // ld1 {v1.4s}, [x0]
	WORD $0x6e20dc21 // fmul v1.4s, v1.4s, v0.4s
	WORD $0x4c9f7801 // st1 {v1.4s}, [x0], #16
	SUBS $1, R2, R2
	BNE  scaleloop
	RET

// func madNEON(y, x *float32, groups int, a float32)
// y[i] += x[i]·a, fused, for 4·groups values.
TEXT ·madNEON(SB), NOSPLIT, $0-28
	MOVD  y+0(FP), R0
	MOVD  x+8(FP), R1
	MOVD  groups+16(FP), R2
	FMOVS a+24(FP), F0
	WORD  $0x4e040400 // dup v0.4s, v0.s[0]

madloop:
	WORD $0x4c407801 // ld1 {v1.4s}, [x0]
	WORD $0x4cdf7822 // ld1 {v2.4s}, [x1], #16
	WORD $0x4e20cc41 // fmla v1.4s, v2.4s, v0.4s
	WORD $0x4c9f7801 // st1 {v1.4s}, [x0], #16
	SUBS $1, R2, R2
	BNE  madloop
	RET
