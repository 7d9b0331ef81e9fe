//go:build !purego

#include "textflag.h"

// Constants of ggml_v_expf (ggml-cpu/vec.h, AVX2), each 8 times.
DATA ·expR+0(SB)/4, $0x4b400000
DATA ·expR+4(SB)/4, $0x4b400000
DATA ·expR+8(SB)/4, $0x4b400000
DATA ·expR+12(SB)/4, $0x4b400000
DATA ·expR+16(SB)/4, $0x4b400000
DATA ·expR+20(SB)/4, $0x4b400000
DATA ·expR+24(SB)/4, $0x4b400000
DATA ·expR+28(SB)/4, $0x4b400000
GLOBL ·expR(SB), RODATA|NOPTR, $32
DATA ·expLog2e+0(SB)/4, $0x3fb8aa3b
DATA ·expLog2e+4(SB)/4, $0x3fb8aa3b
DATA ·expLog2e+8(SB)/4, $0x3fb8aa3b
DATA ·expLog2e+12(SB)/4, $0x3fb8aa3b
DATA ·expLog2e+16(SB)/4, $0x3fb8aa3b
DATA ·expLog2e+20(SB)/4, $0x3fb8aa3b
DATA ·expLog2e+24(SB)/4, $0x3fb8aa3b
DATA ·expLog2e+28(SB)/4, $0x3fb8aa3b
GLOBL ·expLog2e(SB), RODATA|NOPTR, $32
DATA ·expLn2Hi+0(SB)/4, $0x3f317200
DATA ·expLn2Hi+4(SB)/4, $0x3f317200
DATA ·expLn2Hi+8(SB)/4, $0x3f317200
DATA ·expLn2Hi+12(SB)/4, $0x3f317200
DATA ·expLn2Hi+16(SB)/4, $0x3f317200
DATA ·expLn2Hi+20(SB)/4, $0x3f317200
DATA ·expLn2Hi+24(SB)/4, $0x3f317200
DATA ·expLn2Hi+28(SB)/4, $0x3f317200
GLOBL ·expLn2Hi(SB), RODATA|NOPTR, $32
DATA ·expLn2Lo+0(SB)/4, $0x35bfbe8e
DATA ·expLn2Lo+4(SB)/4, $0x35bfbe8e
DATA ·expLn2Lo+8(SB)/4, $0x35bfbe8e
DATA ·expLn2Lo+12(SB)/4, $0x35bfbe8e
DATA ·expLn2Lo+16(SB)/4, $0x35bfbe8e
DATA ·expLn2Lo+20(SB)/4, $0x35bfbe8e
DATA ·expLn2Lo+24(SB)/4, $0x35bfbe8e
DATA ·expLn2Lo+28(SB)/4, $0x35bfbe8e
GLOBL ·expLn2Lo(SB), RODATA|NOPTR, $32
DATA ·expOne+0(SB)/4, $0x3f800000
DATA ·expOne+4(SB)/4, $0x3f800000
DATA ·expOne+8(SB)/4, $0x3f800000
DATA ·expOne+12(SB)/4, $0x3f800000
DATA ·expOne+16(SB)/4, $0x3f800000
DATA ·expOne+20(SB)/4, $0x3f800000
DATA ·expOne+24(SB)/4, $0x3f800000
DATA ·expOne+28(SB)/4, $0x3f800000
GLOBL ·expOne(SB), RODATA|NOPTR, $32
DATA ·exp126+0(SB)/4, $0x42fc0000
DATA ·exp126+4(SB)/4, $0x42fc0000
DATA ·exp126+8(SB)/4, $0x42fc0000
DATA ·exp126+12(SB)/4, $0x42fc0000
DATA ·exp126+16(SB)/4, $0x42fc0000
DATA ·exp126+20(SB)/4, $0x42fc0000
DATA ·exp126+24(SB)/4, $0x42fc0000
DATA ·exp126+28(SB)/4, $0x42fc0000
GLOBL ·exp126(SB), RODATA|NOPTR, $32
DATA ·exp192+0(SB)/4, $0x43400000
DATA ·exp192+4(SB)/4, $0x43400000
DATA ·exp192+8(SB)/4, $0x43400000
DATA ·exp192+12(SB)/4, $0x43400000
DATA ·exp192+16(SB)/4, $0x43400000
DATA ·exp192+20(SB)/4, $0x43400000
DATA ·exp192+24(SB)/4, $0x43400000
DATA ·exp192+28(SB)/4, $0x43400000
GLOBL ·exp192(SB), RODATA|NOPTR, $32
DATA ·expP4+0(SB)/4, $0x3c072010
DATA ·expP4+4(SB)/4, $0x3c072010
DATA ·expP4+8(SB)/4, $0x3c072010
DATA ·expP4+12(SB)/4, $0x3c072010
DATA ·expP4+16(SB)/4, $0x3c072010
DATA ·expP4+20(SB)/4, $0x3c072010
DATA ·expP4+24(SB)/4, $0x3c072010
DATA ·expP4+28(SB)/4, $0x3c072010
GLOBL ·expP4(SB), RODATA|NOPTR, $32
DATA ·expP3+0(SB)/4, $0x3d2b9f17
DATA ·expP3+4(SB)/4, $0x3d2b9f17
DATA ·expP3+8(SB)/4, $0x3d2b9f17
DATA ·expP3+12(SB)/4, $0x3d2b9f17
DATA ·expP3+16(SB)/4, $0x3d2b9f17
DATA ·expP3+20(SB)/4, $0x3d2b9f17
DATA ·expP3+24(SB)/4, $0x3d2b9f17
DATA ·expP3+28(SB)/4, $0x3d2b9f17
GLOBL ·expP3(SB), RODATA|NOPTR, $32
DATA ·expP2+0(SB)/4, $0x3e2aaf33
DATA ·expP2+4(SB)/4, $0x3e2aaf33
DATA ·expP2+8(SB)/4, $0x3e2aaf33
DATA ·expP2+12(SB)/4, $0x3e2aaf33
DATA ·expP2+16(SB)/4, $0x3e2aaf33
DATA ·expP2+20(SB)/4, $0x3e2aaf33
DATA ·expP2+24(SB)/4, $0x3e2aaf33
DATA ·expP2+28(SB)/4, $0x3e2aaf33
GLOBL ·expP2(SB), RODATA|NOPTR, $32
DATA ·expP1+0(SB)/4, $0x3efffedb
DATA ·expP1+4(SB)/4, $0x3efffedb
DATA ·expP1+8(SB)/4, $0x3efffedb
DATA ·expP1+12(SB)/4, $0x3efffedb
DATA ·expP1+16(SB)/4, $0x3efffedb
DATA ·expP1+20(SB)/4, $0x3efffedb
DATA ·expP1+24(SB)/4, $0x3efffedb
DATA ·expP1+28(SB)/4, $0x3efffedb
GLOBL ·expP1(SB), RODATA|NOPTR, $32
DATA ·expP0+0(SB)/4, $0x3f7ffff6
DATA ·expP0+4(SB)/4, $0x3f7ffff6
DATA ·expP0+8(SB)/4, $0x3f7ffff6
DATA ·expP0+12(SB)/4, $0x3f7ffff6
DATA ·expP0+16(SB)/4, $0x3f7ffff6
DATA ·expP0+20(SB)/4, $0x3f7ffff6
DATA ·expP0+24(SB)/4, $0x3f7ffff6
DATA ·expP0+28(SB)/4, $0x3f7ffff6
GLOBL ·expP0(SB), RODATA|NOPTR, $32
DATA ·expAbs+0(SB)/4, $0x7fffffff
DATA ·expAbs+4(SB)/4, $0x7fffffff
DATA ·expAbs+8(SB)/4, $0x7fffffff
DATA ·expAbs+12(SB)/4, $0x7fffffff
DATA ·expAbs+16(SB)/4, $0x7fffffff
DATA ·expAbs+20(SB)/4, $0x7fffffff
DATA ·expAbs+24(SB)/4, $0x7fffffff
DATA ·expAbs+28(SB)/4, $0x7fffffff
GLOBL ·expAbs(SB), RODATA|NOPTR, $32
DATA ·expG+0(SB)/4, $0x82000000
DATA ·expG+4(SB)/4, $0x82000000
DATA ·expG+8(SB)/4, $0x82000000
DATA ·expG+12(SB)/4, $0x82000000
DATA ·expG+16(SB)/4, $0x82000000
DATA ·expG+20(SB)/4, $0x82000000
DATA ·expG+24(SB)/4, $0x82000000
DATA ·expG+28(SB)/4, $0x82000000
GLOBL ·expG(SB), RODATA|NOPTR, $32
DATA ·expS1+0(SB)/4, $0x7f000000
DATA ·expS1+4(SB)/4, $0x7f000000
DATA ·expS1+8(SB)/4, $0x7f000000
DATA ·expS1+12(SB)/4, $0x7f000000
DATA ·expS1+16(SB)/4, $0x7f000000
DATA ·expS1+20(SB)/4, $0x7f000000
DATA ·expS1+24(SB)/4, $0x7f000000
DATA ·expS1+28(SB)/4, $0x7f000000
GLOBL ·expS1(SB), RODATA|NOPTR, $32

// EXPF sets Y11 to ggml_v_expf(Y0) (AVX2+FMA version, instruction for
// instruction) for lanes with |n| <= 126 and AX to the mask of the others;
// when AX != 0, EXPFSLOW then blends in ggml's result for them.
// Clobbers Y0-Y10.
#define EXPF \
	VMOVUPS      ·expR(SB), Y1; \
	VFMADD231PS  ·expLog2e(SB), Y0, Y1; \
	VSUBPS       ·expR(SB), Y1, Y2; \
	VMOVAPS      Y0, Y3; \
	VFNMADD231PS ·expLn2Hi(SB), Y2, Y3; \
	VFNMADD231PS ·expLn2Lo(SB), Y2, Y3; \
	VPSLLD       $23, Y1, Y4; \
	VPADDD       ·expOne(SB), Y4, Y5; \
	VANDPS       ·expAbs(SB), Y2, Y6; \
	VCMPPS       $0x1e, ·exp126(SB), Y6, Y6; \
	VMULPS       Y3, Y3, Y7; \
	VMOVUPS      ·expP3(SB), Y8; \
	VFMADD231PS  ·expP4(SB), Y3, Y8; \
	VMOVUPS      ·expP1(SB), Y9; \
	VFMADD231PS  ·expP2(SB), Y3, Y9; \
	VFMADD231PS  Y7, Y8, Y9; \
	VMULPS       ·expP0(SB), Y3, Y10; \
	VFMADD231PS  Y7, Y9, Y10; \
	VMOVAPS      Y5, Y11; \
	VFMADD231PS  Y5, Y10, Y11; \
	VMOVMSKPS    Y6, AX

#define EXPFSLOW \
	VXORPS       Y0, Y0, Y0; \
	VCMPPS       $0x12, Y0, Y2, Y1; \
	VANDPS       ·expG(SB), Y1, Y1; \
	VPADDD       ·expS1(SB), Y1, Y3; \
	VPSUBD       Y1, Y4, Y7; \
	VANDPS       ·expAbs(SB), Y2, Y8; \
	VCMPPS       $0x1e, ·exp192(SB), Y8, Y8; \
	VMOVAPS      Y7, Y9; \
	VFMADD231PS  Y10, Y7, Y9; \
	VMULPS       Y3, Y9, Y9; \
	VMULPS       Y3, Y3, Y1; \
	VANDPS       Y6, Y9, Y9; \
	VANDNPS      Y11, Y6, Y0; \
	VORPS        Y0, Y9, Y9; \
	VANDPS       Y8, Y1, Y1; \
	VANDNPS      Y9, Y8, Y0; \
	VORPS        Y0, Y1, Y11

// func expSumAVX2(dst, src *float32, groups int, max float32) float64
// dst[i] = expf(src[i] - max) for 8*groups values; returns their sum as
// ggml_vec_soft_max_f32 forms it: each group of 8 reduced in float32
// ((hi+lo), then movehl, then movehdup), added to a float64 total.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-40
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   groups+16(FP), CX
	VXORPD X15, X15, X15

expsumloop:
	VMOVUPS      (SI), Y12
	VBROADCASTSS max+24(FP), Y13
	VSUBPS       Y13, Y12, Y0
	EXPF
	TESTL        AX, AX
	JZ           expsumstore
	EXPFSLOW

expsumstore:
	VMOVUPS      Y11, (DI)
	VEXTRACTF128 $1, Y11, X12
	VADDPS       X11, X12, X12
	VMOVHLPS     X12, X12, X13
	VADDPS       X13, X12, X12
	VMOVSHDUP    X12, X13
	VADDSS       X13, X12, X12
	VCVTSS2SD    X12, X12, X12
	VADDSD       X12, X15, X15
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          expsumloop
	VMOVSD       X15, ret+32(FP)
	VZEROUPPER
	RET

// func siluMulAVX2(dst, gate, up *float32, groups int)
// dst[i] = gate[i]/(1+expf(-gate[i])) * up[i], as ggml_vec_swiglu_f32 with
// ggml_v_silu, 8 at a time.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ groups+24(FP), CX

silumulloop:
	VMOVUPS (SI), Y13
	VXORPS  Y12, Y12, Y12
	VSUBPS  Y13, Y12, Y0
	EXPF
	TESTL   AX, AX
	JZ      silumulfast
	EXPFSLOW

silumulfast:
	VADDPS  ·expOne(SB), Y11, Y11
	VDIVPS  Y11, Y13, Y13
	VMULPS  (DX), Y13, Y13
	VMOVUPS Y13, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     silumulloop
	VZEROUPPER
	RET

