//go:build !purego

#include "textflag.h"

// func float32sToFP16F16C(dst *uint16, src *float32, groups int)
// Eight float32 to fp16 per step, rounding to nearest even (imm 0).
TEXT ·float32sToFP16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ groups+16(FP), CX

f2hloop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVUPS   X1, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       f2hloop
	VZEROUPPER
	RET
