//go:build !purego

#include "textflag.h"

// func scaleAVX2(x *float32, groups int, s float32)
// x[i] *= s for 8·groups values (ggml_vec_scale_f32's GGML_F32_VEC_MUL).
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), DI
	MOVQ         groups+8(FP), CX
	VBROADCASTSS s+16(FP), Y0

scaleloop:
	VMULPS  (DI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     scaleloop
	VZEROUPPER
	RET

// func madAVX2(y, x *float32, groups int, a float32)
// y[i] += x[i]·a, fused, for 8·groups values (ggml_vec_mad_f32's
// GGML_F32_VEC_FMA).
TEXT ·madAVX2(SB), NOSPLIT, $0-28
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         groups+16(FP), CX
	VBROADCASTSS a+24(FP), Y0

madloop:
	VMOVUPS     (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         madloop
	VZEROUPPER
	RET
