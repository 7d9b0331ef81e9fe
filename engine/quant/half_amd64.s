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

// func dotF16RowsAVX2(w *byte, wStride, rows int, a *float32, n int, out *float32)
// As gemmF16AVX2Asm (simd_q8_amd64.s) with the activation already widened:
// out[r] = chunks of 32 in 4 FMA accumulators, reduced as GGML_F32x8_REDUCE,
// then the n%32 last products added in float64 in order.
TEXT ·dotF16RowsAVX2(SB), NOSPLIT, $0-48
	MOVQ  w+0(FP), R8
	MOVQ  wStride+8(FP), R9
	MOVQ  rows+16(FP), R10
	MOVQ  a+24(FP), R11
	MOVQ  n+32(FP), R12
	MOVQ  out+40(FP), R13
	MOVQ  R12, R14
	SHRQ  $5, R14
	ANDQ  $31, R12
	TESTQ R10, R10
	JZ    h16done

h16row:
	MOVQ   R8, SI
	MOVQ   R11, DI
	MOVQ   R14, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     h16chunksdone

h16chunk:
	VCVTPH2PS   0(SI), Y4
	VCVTPH2PS   16(SI), Y5
	VCVTPH2PS   32(SI), Y6
	VCVTPH2PS   48(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	DECQ        CX
	JNZ         h16chunk

h16chunksdone:
	VADDPS       Y2, Y0, Y0
	VADDPS       Y3, Y1, Y1
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VCVTSS2SD    X0, X0, X0
	MOVQ         R12, CX
	TESTQ        CX, CX
	JZ           h16taildone

h16tail:
	VPBROADCASTW (SI), X1
	VCVTPH2PS    X1, X1
	VMULSS       (DI), X1, X1
	VCVTSS2SD    X1, X1, X1
	VADDSD       X1, X0, X0
	ADDQ         $2, SI
	ADDQ         $4, DI
	DECQ         CX
	JNZ          h16tail

h16taildone:
	VCVTSD2SS X0, X0, X0
	VMOVSS    X0, (R13)
	ADDQ      $4, R13
	ADDQ      R9, R8
	DECQ      R10
	JNZ       h16row

h16done:
	VZEROUPPER
	RET

// func roundFP16F16C(dst, src *float32, groups int)
// Eight float32 rounded to fp16 (nearest even) and widened back per step.
TEXT ·roundFP16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ groups+16(FP), CX

rh16loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       rh16loop
	VZEROUPPER
	RET
