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

// func dotF16Rows4AVX512(w *byte, wStride, rows int, a *float32, aStride, n int, out *float32, outStride int)
// dotF16RowsAVX2 for four vectors at once (aStride, outStride in bytes):
// each row's chunk of 32 halves is widened once, in two zmm, and each
// vector's four 8-lane accumulators are two zmm (lanes 0-7 and 8-15 of
// Z0 are dotF16RowsAVX2's Y0 and Y1, of Z1 its Y2 and Y3), reduced in the
// same order, so every sum is dotF16RowsAVX2's bit for bit.
TEXT ·dotF16Rows4AVX512(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), R8
	MOVQ wStride+8(FP), R9
	MOVQ rows+16(FP), R10
	MOVQ a+24(FP), R11
	MOVQ aStride+32(FP), BX
	LEAQ (BX)(BX*2), DX
	MOVQ n+40(FP), R12
	MOVQ out+48(FP), R13
	MOVQ outStride+56(FP), AX
	MOVQ R12, R14
	SHRQ $5, R14
	ANDQ $31, R12
	TESTQ R10, R10
	JZ    h4done

h4row:
	MOVQ   R8, SI
	MOVQ   R11, DI
	MOVQ   R14, CX
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	TESTQ  CX, CX
	JZ     h4chunksdone

h4chunk:
	VCVTPH2PS   0(SI), Z8
	VCVTPH2PS   32(SI), Z9
	VFMADD231PS 0(DI), Z8, Z0
	VFMADD231PS 64(DI), Z9, Z1
	VFMADD231PS 0(DI)(BX*1), Z8, Z2
	VFMADD231PS 64(DI)(BX*1), Z9, Z3
	VFMADD231PS 0(DI)(BX*2), Z8, Z4
	VFMADD231PS 64(DI)(BX*2), Z9, Z5
	VFMADD231PS 0(DI)(DX*1), Z8, Z6
	VFMADD231PS 64(DI)(DX*1), Z9, Z7
	ADDQ        $64, SI
	ADDQ        $128, DI
	DECQ        CX
	JNZ         h4chunk

h4chunksdone:
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	VCVTSS2SD     X0, X0, X0
	VADDPS        Z3, Z2, Z2
	VEXTRACTF64X4 $1, Z2, Y3
	VADDPS        Y3, Y2, Y2
	VEXTRACTF128  $1, Y2, X3
	VADDPS        X3, X2, X2
	VHADDPS       X2, X2, X2
	VHADDPS       X2, X2, X2
	VCVTSS2SD     X2, X2, X2
	VADDPS        Z5, Z4, Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VADDPS        Y5, Y4, Y4
	VEXTRACTF128  $1, Y4, X5
	VADDPS        X5, X4, X4
	VHADDPS       X4, X4, X4
	VHADDPS       X4, X4, X4
	VCVTSS2SD     X4, X4, X4
	VADDPS        Z7, Z6, Z6
	VEXTRACTF64X4 $1, Z6, Y7
	VADDPS        Y7, Y6, Y6
	VEXTRACTF128  $1, Y6, X7
	VADDPS        X7, X6, X6
	VHADDPS       X6, X6, X6
	VHADDPS       X6, X6, X6
	VCVTSS2SD     X6, X6, X6
	MOVQ  R12, CX
	TESTQ CX, CX
	JZ    h4taildone

h4tail:
	VPBROADCASTW (SI), X8
	VCVTPH2PS    X8, X8
	VMULSS       (DI), X8, X9
	VCVTSS2SD    X9, X9, X9
	VADDSD       X9, X0, X0
	VMULSS       (DI)(BX*1), X8, X9
	VCVTSS2SD    X9, X9, X9
	VADDSD       X9, X2, X2
	VMULSS       (DI)(BX*2), X8, X9
	VCVTSS2SD    X9, X9, X9
	VADDSD       X9, X4, X4
	VMULSS       (DI)(DX*1), X8, X9
	VCVTSS2SD    X9, X9, X9
	VADDSD       X9, X6, X6
	ADDQ         $2, SI
	ADDQ         $4, DI
	DECQ         CX
	JNZ          h4tail

h4taildone:
	VCVTSD2SS X0, X0, X0
	VMOVSS    X0, (R13)
	VCVTSD2SS X2, X2, X2
	VMOVSS    X2, (R13)(AX*1)
	VCVTSD2SS X4, X4, X4
	VMOVSS    X4, (R13)(AX*2)
	LEAQ      (R13)(AX*2), SI
	VCVTSD2SS X6, X6, X6
	VMOVSS    X6, (SI)(AX*1)
	ADDQ      $4, R13
	ADDQ      R9, R8
	DECQ      R10
	JNZ       h4row

h4done:
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
