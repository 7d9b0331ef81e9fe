//go:build !purego

#include "textflag.h"

// DELTA_REDUCE sums the accumulators Y0..Y3 into X0's low lane in
// dotF32AVX2Asm's order: (Y0+Y2) + (Y1+Y3), the two halves, then two
// horizontal adds.
#define DELTA_REDUCE \
	VADDPS       Y2, Y0, Y0; \
	VADDPS       Y3, Y1, Y1; \
	VADDPS       Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VHADDPS      X0, X0, X0; \
	VHADDPS      X0, X0, X0

// func deltaRowAVX2(dst, src, k, q *float32, chunks int, eg, v, beta float32) float32
//
// One row of the gated delta rule's state (32·chunks values), as
// deltaTask.Run's scalar steps do it: dst = src·eg (ggml_vec_scale_f32),
// d = dst·k (ggml_vec_dot_f32), dj = (v-d)·beta, dst += k·dj fused
// (ggml_vec_mad_f32), and the result dst·q — the same operations in the
// same order as scaleAVX2, dotF32AVX2Asm and madAVX2, so the bits are
// theirs; two passes over the row instead of five, and no copy of src.
// src may be dst.
TEXT ·deltaRowAVX2(SB), NOSPLIT, $0-60
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         k+16(FP), R8
	MOVQ         q+24(FP), R9
	MOVQ         chunks+32(FP), CX
	VBROADCASTSS eg+40(FP), Y8
	MOVQ         CX, R10
	MOVQ         DI, R11
	MOVQ         R8, R12
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

scaledot:
	VMULPS      0(SI), Y8, Y4
	VMULPS      32(SI), Y8, Y5
	VMULPS      64(SI), Y8, Y6
	VMULPS      96(SI), Y8, Y7
	VMOVUPS     Y4, 0(DI)
	VMOVUPS     Y5, 32(DI)
	VMOVUPS     Y6, 64(DI)
	VMOVUPS     Y7, 96(DI)
	VFMADD231PS 0(R8), Y4, Y0
	VFMADD231PS 32(R8), Y5, Y1
	VFMADD231PS 64(R8), Y6, Y2
	VFMADD231PS 96(R8), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	ADDQ        $128, R8
	DECQ        CX
	JNZ         scaledot

	DELTA_REDUCE
	VMOVSS       v+44(FP), X9
	VSUBSS       X0, X9, X9
	VMULSS       beta+48(FP), X9, X9
	VBROADCASTSS X9, Y8
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

maddot:
	VMOVUPS     0(R11), Y4
	VMOVUPS     32(R11), Y5
	VMOVUPS     64(R11), Y6
	VMOVUPS     96(R11), Y7
	VFMADD231PS 0(R12), Y8, Y4
	VFMADD231PS 32(R12), Y8, Y5
	VFMADD231PS 64(R12), Y8, Y6
	VFMADD231PS 96(R12), Y8, Y7
	VMOVUPS     Y4, 0(R11)
	VMOVUPS     Y5, 32(R11)
	VMOVUPS     Y6, 64(R11)
	VMOVUPS     Y7, 96(R11)
	VFMADD231PS 0(R9), Y4, Y0
	VFMADD231PS 32(R9), Y5, Y1
	VFMADD231PS 64(R9), Y6, Y2
	VFMADD231PS 96(R9), Y7, Y3
	ADDQ        $128, R11
	ADDQ        $128, R12
	ADDQ        $128, R9
	DECQ        R10
	JNZ         maddot

	DELTA_REDUCE
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET
