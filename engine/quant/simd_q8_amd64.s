//go:build !purego

// AVX2+FMA+F16C kernels of the simd_q8 group: Q8_0·Q8_0, Q4_0·Q8_0,
// F32·F32, F16·F16 and BF16·BF16 dot products, and the activation
// quantizers QuantizeQ8_0 and QuantizeQ8K; and an AVX-512BW Q8_0·Q8_0.
// Each one follows the operation order of its pure-Go reference (see
// simd_q8_amd64.go).

#include "textflag.h"

DATA q8AbsMask<>+0(SB)/4, $0x7fffffff
GLOBL q8AbsMask<>(SB), RODATA|NOPTR, $4
DATA q8Magic<>+0(SB)/4, $0x4b400000 // 12582912.0 = 1.5*2^23
GLOBL q8Magic<>(SB), RODATA|NOPTR, $4
DATA q8MantMask<>+0(SB)/4, $0x007fffff
GLOBL q8MantMask<>(SB), RODATA|NOPTR, $4
DATA q8MantBias<>+0(SB)/4, $0x00400000
GLOBL q8MantBias<>(SB), RODATA|NOPTR, $4
DATA q8I127<>+0(SB)/4, $127
GLOBL q8I127<>(SB), RODATA|NOPTR, $4
DATA q8F127<>+0(SB)/4, $0x42fe0000 // 127.0
GLOBL q8F127<>(SB), RODATA|NOPTR, $4
DATA q8FM127<>+0(SB)/4, $0xc2fe0000 // -127.0
GLOBL q8FM127<>(SB), RODATA|NOPTR, $4
DATA q8F1<>+0(SB)/4, $0x3f800000 // 1.0
GLOBL q8F1<>(SB), RODATA|NOPTR, $4
DATA q8Nib<>+0(SB)/4, $0x0f0f0f0f
GLOBL q8Nib<>(SB), RODATA|NOPTR, $4
DATA q8Eights<>+0(SB)/4, $0x08080808
GLOBL q8Eights<>(SB), RODATA|NOPTR, $4
DATA q8OnesB<>+0(SB)/4, $0x01010101
GLOBL q8OnesB<>(SB), RODATA|NOPTR, $4
DATA q8OnesW<>+0(SB)/4, $0x00010001
GLOBL q8OnesW<>(SB), RODATA|NOPTR, $4
DATA q8ByteMask<>+0(SB)/4, $0xff
GLOBL q8ByteMask<>(SB), RODATA|NOPTR, $4

// q8Perm puts the dwords of VPACKSSDW+VPACKSSWB output back in order.
DATA q8Perm<>+0(SB)/4, $0
DATA q8Perm<>+4(SB)/4, $4
DATA q8Perm<>+8(SB)/4, $1
DATA q8Perm<>+12(SB)/4, $5
DATA q8Perm<>+16(SB)/4, $2
DATA q8Perm<>+20(SB)/4, $6
DATA q8Perm<>+24(SB)/4, $3
DATA q8Perm<>+28(SB)/4, $7
GLOBL q8Perm<>(SB), RODATA|NOPTR, $32

// Q8BLOCK sets the 8 int32 lanes of R to partial sums of Σ qx*qy over the
// Q8_0 blocks whose quants start at o1(SI) and o1(DI) (o2 = o1+16). Quants
// are sign-extended to int16, so every int8 value, -128 included, is exact.
#define Q8BLOCK(o1, o2, R) \
	VPMOVSXBW o1(SI), R; \
	VPMOVSXBW o2(SI), Y13; \
	VPMOVSXBW o1(DI), Y12; \
	VPMOVSXBW o2(DI), Y14; \
	VPMADDWD  Y12, R, R; \
	VPMADDWD  Y14, Y13, Y13; \
	VPADDD    Y13, R, R

// SUM8 reduces Y0..Y7 (8 int32 lanes per block) to Y1 = the 8 block sums
// as float32 (exact: |sum| <= 2^20).
#define SUM8 \
	VPHADDD      Y1, Y0, Y0; \
	VPHADDD      Y3, Y2, Y2; \
	VPHADDD      Y5, Y4, Y4; \
	VPHADDD      Y7, Y6, Y6; \
	VPHADDD      Y2, Y0, Y0; \
	VPHADDD      Y6, Y4, Y4; \
	VPERM2I128   $0x20, Y4, Y0, Y1; \
	VPERM2I128   $0x31, Y4, Y0, Y2; \
	VPADDD       Y2, Y1, Y1; \
	VCVTDQ2PS    Y1, Y1

// ADD8 adds the 8 lanes of Y1 to X15 one after the other, in lane order.
#define ADD8 \
	VMOVSHDUP    X1, X2; \
	VMOVHLPS     X1, X1, X3; \
	VPERMILPS    $3, X1, X4; \
	VADDSS       X1, X15, X15; \
	VADDSS       X2, X15, X15; \
	VADDSS       X3, X15, X15; \
	VADDSS       X4, X15, X15; \
	VEXTRACTF128 $1, Y1, X1; \
	VMOVSHDUP    X1, X2; \
	VMOVHLPS     X1, X1, X3; \
	VPERMILPS    $3, X1, X4; \
	VADDSS       X1, X15, X15; \
	VADDSS       X2, X15, X15; \
	VADDSS       X3, X15, X15; \
	VADDSS       X4, X15, X15

// FP16x8 loads the 8 fp16 scales at 0, s, 2s, ... 7s from R into Y (as
// float32), using AX.
#define FP16x8(R, s0, s1, s2, s3, s4, s5, s6, s7, X, Y) \
	MOVWLZX   s0(R), AX; \
	VMOVD     AX, X; \
	VPINSRW   $1, s1(R), X, X; \
	VPINSRW   $2, s2(R), X, X; \
	VPINSRW   $3, s3(R), X, X; \
	VPINSRW   $4, s4(R), X, X; \
	VPINSRW   $5, s5(R), X, X; \
	VPINSRW   $6, s6(R), X, X; \
	VPINSRW   $7, s7(R), X, X; \
	VCVTPH2PS X, Y

// func dotQ8_0AVX2Asm(w, a *byte, groups int) float32
// groups of 8 Q8_0 blocks: sumf += float32(sumi) * (dx*dy), block by block.
TEXT ·dotQ8_0AVX2Asm(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   groups+16(FP), CX
	VXORPS X15, X15, X15
	TESTQ  CX, CX
	JZ     q8done

q8loop:
	Q8BLOCK(2, 18, Y0)
	Q8BLOCK(36, 52, Y1)
	Q8BLOCK(70, 86, Y2)
	Q8BLOCK(104, 120, Y3)
	Q8BLOCK(138, 154, Y4)
	Q8BLOCK(172, 188, Y5)
	Q8BLOCK(206, 222, Y6)
	Q8BLOCK(240, 256, Y7)
	SUM8
	FP16x8(SI, 0, 34, 68, 102, 136, 170, 204, 238, X8, Y8)
	FP16x8(DI, 0, 34, 68, 102, 136, 170, 204, 238, X9, Y9)
	VMULPS Y9, Y8, Y8 // dx*dy
	VMULPS Y8, Y1, Y1 // sumi*(dx*dy)
	ADD8
	ADDQ   $272, SI
	ADDQ   $272, DI
	DECQ   CX
	JNZ    q8loop

q8done:
	VMOVSS X15, ret+24(FP)
	VZEROUPPER
	RET

// Q4BLOCK sets the 8 int32 lanes of R to partial sums of Σ (q-8)*y over the
// Q4_0 block whose quants start at wo(SI) and the Q8_0 block whose quants
// start at ao(DI), as Σ q*y - 8*Σ y in int16 pairs (exact for every byte).
// Y9 = int16 ones, Y10 = bytes 8, Y11 = bytes 0x0f.
#define Q4BLOCK(wo, ao, R) \
	VMOVDQU     wo(SI), X12; \
	VPSRLW      $4, X12, X13; \
	VINSERTI128 $1, X13, Y12, Y12; \
	VPAND       Y11, Y12, Y12; \
	VMOVDQU     ao(DI), Y13; \
	VPMADDUBSW  Y13, Y12, R; \
	VPMADDUBSW  Y13, Y10, Y14; \
	VPSUBW      Y14, R, R; \
	VPMADDWD    Y9, R, R

// func dotQ4_0AVX2Asm(w, a *byte, groups int) float32
// groups of 8 blocks: sumf += float32(float32(sumi)*dx) * dy, block by block.
TEXT ·dotQ4_0AVX2Asm(SB), NOSPLIT, $0-28
	MOVQ         w+0(FP), SI
	MOVQ         a+8(FP), DI
	MOVQ         groups+16(FP), CX
	VXORPS       X15, X15, X15
	VPBROADCASTD q8OnesW<>(SB), Y9
	VPBROADCASTD q8Eights<>(SB), Y10
	VPBROADCASTD q8Nib<>(SB), Y11
	TESTQ        CX, CX
	JZ           q4done

q4loop:
	Q4BLOCK(2, 2, Y0)
	Q4BLOCK(20, 36, Y1)
	Q4BLOCK(38, 70, Y2)
	Q4BLOCK(56, 104, Y3)
	Q4BLOCK(74, 138, Y4)
	Q4BLOCK(92, 172, Y5)
	Q4BLOCK(110, 206, Y6)
	Q4BLOCK(128, 240, Y7)
	SUM8
	FP16x8(SI, 0, 18, 36, 54, 72, 90, 108, 126, X8, Y8)
	FP16x8(DI, 0, 34, 68, 102, 136, 170, 204, 238, X12, Y12)
	VMULPS Y8, Y1, Y1  // sumi*dx
	VMULPS Y12, Y1, Y1 // *dy
	ADD8
	ADDQ   $144, SI
	ADDQ   $272, DI
	DECQ   CX
	JNZ    q4loop

q4done:
	VMOVSS X15, ret+24(FP)
	VZEROUPPER
	RET

// REDUCE4 computes Y0 = (Y0+Y2) + (Y1+Y3), then X0 = low half + high half
// (GGML_F32x8_REDUCE up to its last four lanes g0..g3).
#define REDUCE4 \
	VADDPS       Y2, Y0, Y0; \
	VADDPS       Y3, Y1, Y1; \
	VADDPS       Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0

// func dotF32AVX2Asm(w, a *byte, chunks int) float32
// chunks of 32 values in 4 accumulators with FMA; result (g0+g1)+(g2+g3).
// The weights are prefetched 8 KiB ahead (the rows of a matrix follow
// each other: a router's F32 rows are read from memory at decode, where
// the hardware prefetcher alone does not run far enough ahead; see
// gemmkgen's prefetchAhead).
TEXT ·dotF32AVX2Asm(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   chunks+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     f32done

f32loop:
	PREFETCHT0  8192(SI)
	PREFETCHT0  8256(SI)
	VMOVUPS     0(SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	DECQ        CX
	JNZ         f32loop

f32done:
	REDUCE4
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS  X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotF16AVX2Asm(w, a *byte, chunks int) float32
// As dotF32AVX2Asm on fp16 values widened with F16C (products are exact in
// float32, so FMA rounds as a multiply then an add).
TEXT ·dotF16AVX2Asm(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   chunks+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     f16done

f16loop:
	VCVTPH2PS   0(SI), Y4
	VCVTPH2PS   16(SI), Y5
	VCVTPH2PS   32(SI), Y6
	VCVTPH2PS   48(SI), Y7
	VCVTPH2PS   0(DI), Y8
	VCVTPH2PS   16(DI), Y9
	VCVTPH2PS   32(DI), Y10
	VCVTPH2PS   48(DI), Y11
	VFMADD231PS Y8, Y4, Y0
	VFMADD231PS Y9, Y5, Y1
	VFMADD231PS Y10, Y6, Y2
	VFMADD231PS Y11, Y7, Y3
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        CX
	JNZ         f16loop

f16done:
	REDUCE4
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS  X0, ret+24(FP)
	VZEROUPPER
	RET

// BF16MUL sets R to the float32 products of the 8 bf16 values at o(SI) and
// o(DI) (bf16 widened by a 16-bit shift).
#define BF16MUL(o, R, T) \
	VPMOVZXWD o(SI), R; \
	VPMOVZXWD o(DI), T; \
	VPSLLD    $16, R, R; \
	VPSLLD    $16, T, T; \
	VMULPS    T, R, R

// func dotBF16AVX2Asm(w, a *byte, chunks int) float32
// Products then additions (no FMA: a bf16 product can be inexact in
// float32 when it underflows or overflows); result (g0+g2)+(g1+g3).
TEXT ·dotBF16AVX2Asm(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   chunks+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     bf16done

bf16loop:
	BF16MUL(0, Y4, Y8)
	BF16MUL(16, Y5, Y9)
	BF16MUL(32, Y6, Y10)
	BF16MUL(48, Y7, Y11)
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	ADDQ   $64, SI
	ADDQ   $64, DI
	DECQ   CX
	JNZ    bf16loop

bf16done:
	REDUCE4
	VMOVHLPS  X0, X0, X1
	VADDPS    X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS    X1, X0, X0
	VMOVSS    X0, ret+24(FP)
	VZEROUPPER
	RET

// ROUNDQ turns the float32 lanes of R into nearest_int(R) as ggml's
// nearest_int does (add 1.5*2^23, keep the low 22 mantissa bits minus
// 2^22). Y14 = magic, Y13 = mantissa mask, Y12 = 0x400000.
#define ROUNDQ(R) \
	VADDPS Y14, R, R; \
	VPAND  Y13, R, R; \
	VPSUBD Y12, R, R

// PACK32 packs the low bytes of the int32 lanes of Y0..Y3 (already masked
// to 0..255, so the unsigned saturations never act: this truncates like
// Go's byte(int8(q))) to the 32 bytes of Y0, in order. Y11 = q8Perm.
#define PACK32 \
	VPACKUSDW Y1, Y0, Y0; \
	VPACKUSDW Y3, Y2, Y2; \
	VPACKUSWB Y2, Y0, Y0; \
	VPERMD    Y0, Y11, Y0

// HMAXU sets every lane of X to the unsigned maximum of the 8 lanes of Y,
// using T.
#define HMAXU(Y, X, T) \
	VEXTRACTI128 $1, Y, T; \
	VPMAXUD      T, X, X; \
	VPSHUFD      $0x4e, X, T; \
	VPMAXUD      T, X, X; \
	VPSHUFD      $0xb1, X, T; \
	VPMAXUD      T, X, X

// func quantizeQ8_0AVX2Asm(x *float32, dst *byte, nb int) int
// Quantizes up to nb blocks of 32 values and returns how many it did: it
// stops before a block holding a NaN, which the caller does in Go.
TEXT ·quantizeQ8_0AVX2Asm(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         dst+8(FP), DI
	MOVQ         nb+16(FP), CX
	XORQ         DX, DX
	VPBROADCASTD q8AbsMask<>(SB), Y15
	VPBROADCASTD q8Magic<>(SB), Y14
	VPBROADCASTD q8ByteMask<>(SB), Y13
	VMOVDQU      q8Perm<>(SB), Y11

q80loop:
	CMPQ    DX, CX
	JGE     q80done
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3

	// amax: abs values compare as unsigned integers; a NaN is above +Inf.
	VPAND   Y15, Y0, Y4
	VPAND   Y15, Y1, Y5
	VPAND   Y15, Y2, Y6
	VPAND   Y15, Y3, Y7
	VPMAXUD Y5, Y4, Y4
	VPMAXUD Y7, Y6, Y6
	VPMAXUD Y6, Y4, Y4
	HMAXU(Y4, X4, X5)
	VMOVD   X4, BX
	CMPL    BX, $0x7f800000
	JA      q80done

	// d = amax/127 as fp16 (round to nearest even).
	VDIVSS    q8F127<>(SB), X4, X5
	VCVTPS2PH $0, X5, X5
	VMOVD     X5, AX
	MOVW      AX, 0(DI)

	// id = amax != 0 ? 127/amax : 0
	VXORPS X6, X6, X6
	TESTL  BX, BX
	JZ     q80id
	VMOVSS q8F127<>(SB), X6
	VDIVSS X4, X6, X6

q80id:
	VBROADCASTSS X6, Y6
	VMULPS       Y6, Y0, Y0
	VMULPS       Y6, Y1, Y1
	VMULPS       Y6, Y2, Y2
	VMULPS       Y6, Y3, Y3
	// The low byte of nearest_int(f) is the low byte of the bits of
	// f + 1.5*2^23 (2^22 has a zero low byte).
	VADDPS       Y14, Y0, Y0
	VADDPS       Y14, Y1, Y1
	VADDPS       Y14, Y2, Y2
	VADDPS       Y14, Y3, Y3
	VPAND        Y13, Y0, Y0
	VPAND        Y13, Y1, Y1
	VPAND        Y13, Y2, Y2
	VPAND        Y13, Y3, Y3
	PACK32
	VMOVDQU      Y0, 2(DI)

	ADDQ $128, SI
	ADDQ $34, DI
	INCQ DX
	JMP  q80loop

q80done:
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET

// Q8KCHUNK quantizes the 32 values at o0..o3(SI) with iscale Y7 to the
// bytes at q(DI) and sets M to their sums by groups of 4 (int32 lanes 0-3:
// first 16 values, 4-7: last 16). Y10 = int32 127, Y9 = byte ones,
// Y8 = int16 ones, Y15 = int32 0xff.
#define Q8KCHUNK(o0, o1, o2, o3, q, M) \
	VMULPS     o0(SI), Y7, Y0; \
	VMULPS     o1(SI), Y7, Y1; \
	VMULPS     o2(SI), Y7, Y2; \
	VMULPS     o3(SI), Y7, Y3; \
	ROUNDQ(Y0); \
	ROUNDQ(Y1); \
	ROUNDQ(Y2); \
	ROUNDQ(Y3); \
	VPMINSD    Y10, Y0, Y0; \
	VPMINSD    Y10, Y1, Y1; \
	VPMINSD    Y10, Y2, Y2; \
	VPMINSD    Y10, Y3, Y3; \
	VPAND      Y15, Y0, Y0; \
	VPAND      Y15, Y1, Y1; \
	VPAND      Y15, Y2, Y2; \
	VPAND      Y15, Y3, Y3; \
	PACK32; \
	VMOVDQU    Y0, q(DI); \
	VPMADDUBSW Y0, Y9, M; \
	VPMADDWD   Y8, M, M

// BSUMS8 stores the 8 int16 bsums of 4 chunks at o(DI), given
// Y4 = VPHADDD(chunk 0, chunk 1) and Y5 = VPHADDD(chunk 2, chunk 3) of
// their group-of-4 sums.
#define BSUMS8(o) \
	VPHADDD      Y5, Y4, Y4; \
	VPERMD       Y4, Y11, Y4; \
	VEXTRACTI128 $1, Y4, X5; \
	VPACKSSDW    X5, X4, X4; \
	VMOVDQU      X4, o(DI)

// func quantizeQ8KAVX2Asm(x *float32, dst *byte, nb int) int
// Quantizes up to nb blocks of 256 values to Q8_K and returns how many it
// did: it stops before a block holding a NaN, which the caller does in Go.
TEXT ·quantizeQ8KAVX2Asm(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         dst+8(FP), DI
	MOVQ         nb+16(FP), CX
	XORQ         DX, DX
	VPBROADCASTD q8Magic<>(SB), Y14
	VPBROADCASTD q8MantMask<>(SB), Y13
	VPBROADCASTD q8MantBias<>(SB), Y12
	VMOVDQU      q8Perm<>(SB), Y11
	VPBROADCASTD q8I127<>(SB), Y10
	VPBROADCASTD q8OnesB<>(SB), Y9
	VPBROADCASTD q8OnesW<>(SB), Y8

q8kloop:
	CMPQ         DX, CX
	JGE          q8kdone
	VPBROADCASTD q8AbsMask<>(SB), Y15

	// amax bits over the block (a NaN is above +Inf).
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	XORQ  R8, R8

q8kmax:
	VPAND   0(SI)(R8*1), Y15, Y2
	VPAND   32(SI)(R8*1), Y15, Y3
	VPMAXUD Y2, Y0, Y0
	VPMAXUD Y3, Y1, Y1
	ADDQ    $64, R8
	CMPQ    R8, $1024
	JB      q8kmax
	VPMAXUD Y1, Y0, Y0
	HMAXU(Y0, X0, X1)
	VMOVD   X0, BX
	CMPL    BX, $0x7f800000
	JA      q8kdone
	TESTL   BX, BX
	JZ      q8kzero

	// max = the first value whose magnitude is amax.
	VPBROADCASTD X0, Y0
	XORQ         R8, R8

q8kfind:
	VPAND     0(SI)(R8*1), Y15, Y2
	VPCMPEQD  Y0, Y2, Y2
	VMOVMSKPS Y2, R9
	TESTL     R9, R9
	JNZ       q8kfound
	ADDQ      $32, R8
	JMP       q8kfind

q8kfound:
	BSFL   R9, R9
	ADDQ   SI, R8
	VMOVSS (R8)(R9*4), X1

	// iscale = -127/max, d = 1/iscale.
	VMOVSS       q8FM127<>(SB), X7
	VDIVSS       X1, X7, X7
	VMOVSS       q8F1<>(SB), X2
	VDIVSS       X7, X2, X2
	VMOVSS       X2, 0(DI)
	VBROADCASTSS X7, Y7
	VPBROADCASTD q8ByteMask<>(SB), Y15

	Q8KCHUNK(0, 32, 64, 96, 4, Y4)
	Q8KCHUNK(128, 160, 192, 224, 36, Y5)
	VPHADDD Y5, Y4, Y4
	Q8KCHUNK(256, 288, 320, 352, 68, Y5)
	Q8KCHUNK(384, 416, 448, 480, 100, Y6)
	VPHADDD Y6, Y5, Y5
	BSUMS8(260)
	Q8KCHUNK(512, 544, 576, 608, 132, Y4)
	Q8KCHUNK(640, 672, 704, 736, 164, Y5)
	VPHADDD Y5, Y4, Y4
	Q8KCHUNK(768, 800, 832, 864, 196, Y5)
	Q8KCHUNK(896, 928, 960, 992, 228, Y6)
	VPHADDD Y6, Y5, Y5
	BSUMS8(276)
	JMP     q8knext

q8kzero:
	VPXOR   Y0, Y0, Y0
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	VMOVDQU Y0, 256(DI)
	MOVL    $0, 288(DI)

q8knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	INCQ DX
	JMP  q8kloop

q8kdone:
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET

// q8ScaleIdx picks the words 0, 17, 34, 51 (the fp16 scales of 4 Q8_0
// blocks) out of 128 bytes with VPERMT2W.
DATA q8ScaleIdx<>+0(SB)/8, $0x0033002200110000
DATA q8ScaleIdx<>+8(SB)/8, $0
DATA q8ScaleIdx<>+16(SB)/8, $0
DATA q8ScaleIdx<>+24(SB)/8, $0
DATA q8ScaleIdx<>+32(SB)/8, $0
DATA q8ScaleIdx<>+40(SB)/8, $0
DATA q8ScaleIdx<>+48(SB)/8, $0
DATA q8ScaleIdx<>+56(SB)/8, $0
GLOBL q8ScaleIdx<>(SB), RODATA|NOPTR, $64

// Q8ZBLOCK is Q8BLOCK with 512-bit sign extension: R (a Y register) gets
// the 8 int32 partial sums of the Q8_0 blocks with quants at o(SI), o(DI).
#define Q8ZBLOCK(o, Z, R) \
	VPMOVSXBW     o(SI), Z; \
	VPMOVSXBW     o(DI), Z12; \
	VPMADDWD      Z12, Z, Z; \
	VEXTRACTI64X4 $1, Z, Y12; \
	VPADDD        Y12, R, R

// SCALES8 loads the 8 fp16 scales of a group of 8 Q8_0 blocks at R into Y
// (float32), with ZA, ZB as temporaries. Z20 = q8ScaleIdx.
#define SCALES8(R, ZA, XA, YA, ZB, XB) \
	VMOVDQU64   0(R), ZA; \
	VPERMT2W    64(R), Z20, ZA; \
	VMOVDQU64   136(R), ZB; \
	VPERMT2W    200(R), Z20, ZB; \
	VPUNPCKLQDQ XB, XA, XA; \
	VCVTPH2PS   XA, YA

// func dotQ8_0AVX512Asm(w, a *byte, groups int) float32
// dotQ8_0AVX2Asm with AVX-512BW sign extension and scale gathering: the same
// integer sums and float operations in the same order.
TEXT ·dotQ8_0AVX512Asm(SB), NOSPLIT, $0-28
	MOVQ      w+0(FP), SI
	MOVQ      a+8(FP), DI
	MOVQ      groups+16(FP), CX
	VXORPS    X15, X15, X15
	VMOVDQU64 q8ScaleIdx<>(SB), Z20
	TESTQ     CX, CX
	JZ        q8zdone

q8zloop:
	Q8ZBLOCK(2, Z0, Y0)
	Q8ZBLOCK(36, Z1, Y1)
	Q8ZBLOCK(70, Z2, Y2)
	Q8ZBLOCK(104, Z3, Y3)
	Q8ZBLOCK(138, Z4, Y4)
	Q8ZBLOCK(172, Z5, Y5)
	Q8ZBLOCK(206, Z6, Y6)
	Q8ZBLOCK(240, Z7, Y7)
	SUM8
	SCALES8(SI, Z8, X8, Y8, Z10, X10)
	SCALES8(DI, Z9, X9, Y9, Z11, X11)
	VMULPS Y9, Y8, Y8 // dx*dy
	VMULPS Y8, Y1, Y1 // sumi*(dx*dy)
	ADD8
	ADDQ   $272, SI
	ADDQ   $272, DI
	DECQ   CX
	JNZ    q8zloop

q8zdone:
	VMOVSS X15, ret+24(FP)
	VZEROUPPER
	RET

// The other 32-value formats: Q5_0 and IQ4_NL with Q8_0 activations, Q4_1
// and Q5_1 with Q8_1 (see q4_1_q5.go and iq4nl_mxfp4.go for the Go
// references whose float steps these repeat, 8 blocks at a time).

DATA q5Shuf<>+0(SB)/8, $0x0000000000000000
DATA q5Shuf<>+8(SB)/8, $0x0101010101010101
DATA q5Shuf<>+16(SB)/8, $0x0202020202020202
DATA q5Shuf<>+24(SB)/8, $0x0303030303030303
GLOBL q5Shuf<>(SB), RODATA|NOPTR, $32
DATA q5Bits<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5Bits<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5Bits<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5Bits<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL q5Bits<>(SB), RODATA|NOPTR, $32
DATA q5Sixteens<>+0(SB)/4, $0x10101010
GLOBL q5Sixteens<>(SB), RODATA|NOPTR, $4
DATA iq4nlValues<>+0(SB)/8, $0xf6eaddcfbfad9881 // -127 -104 -83 -65 -49 -35 -22 -10
DATA iq4nlValues<>+8(SB)/8, $0x7159453526190d01 // 1 13 25 38 53 69 89 113
GLOBL iq4nlValues<>(SB), RODATA|NOPTR, $16

// NIB32 sets Y12 to the 32 4-bit quants at qo(SI): low nibbles (values
// 0..15) in the low lane, high nibbles (16..31) in the high lane.
// Y11 = bytes 0x0f.
#define NIB32(qo) \
	VMOVDQU     qo(SI), X12; \
	VPSRLW      $4, X12, X13; \
	VINSERTI128 $1, X13, Y12, Y12; \
	VPAND       Y11, Y12, Y12

// HIB32 ORs 0x10 into the bytes of Y12 whose bit is set in the uint32 at
// ho(SI) (bit j for value j), as bytes_from_bits_32. Y8 = all ones.
#define HIB32(ho) \
	VPBROADCASTD ho(SI), Y13; \
	VPSHUFB      q5Shuf<>(SB), Y13, Y13; \
	VPOR         q5Bits<>(SB), Y13, Y13; \
	VPCMPEQB     Y8, Y13, Y13; \
	VPAND        Y10, Y13, Y13; \
	VPOR         Y13, Y12, Y12

// Q5BLOCK sets R to 8 int32 partial sums of Σ (q-16)*y for the Q5_0 block
// with qh at ho(SI), qs at qo(SI) and the Q8_0 quants at ao(DI), as
// Σ q*y - 16*Σ y in int16 pairs (|31*128*2| fits). Y9 = int16 ones, Y10 =
// bytes 0x10.
#define Q5BLOCK(ho, qo, ao, R) \
	NIB32(qo); \
	HIB32(ho); \
	VMOVDQU    ao(DI), Y13; \
	VPMADDUBSW Y13, Y12, R; \
	VPMADDUBSW Y13, Y10, Y14; \
	VPSUBW     Y14, R, R; \
	VPMADDWD   Y9, R, R

// Q5UBLOCK is Σ q*y for a Q5_1 block (q = 0..31, no offset).
#define Q5UBLOCK(ho, qo, ao, R) \
	NIB32(qo); \
	HIB32(ho); \
	VPMADDUBSW ao(DI), Y12, R; \
	VPMADDWD   Y9, R, R

// Q4UBLOCK is Σ q*y for a Q4_1 block (q = 0..15).
#define Q4UBLOCK(qo, ao, R) \
	NIB32(qo); \
	VPMADDUBSW ao(DI), Y12, R; \
	VPMADDWD   Y9, R, R

// NLBLOCK is Σ kvalues_iq4nl[q]*y for an IQ4_NL block, in int16 after sign
// extension of both sides (exact for every byte). Y10 = the codebook in
// both lanes.
#define NLBLOCK(qo, ao, ao2, R) \
	NIB32(qo); \
	VPSHUFB      Y12, Y10, Y12; \
	VEXTRACTI128 $1, Y12, X13; \
	VPMOVSXBW    X12, Y12; \
	VPMOVSXBW    X13, Y13; \
	VPMOVSXBW    ao(DI), Y14; \
	VPMADDWD     Y14, Y12, R; \
	VPMOVSXBW    ao2(DI), Y14; \
	VPMADDWD     Y14, Y13, Y13; \
	VPADDD       Y13, R, R

// ADD8X14 is ADD8 into X14.
#define ADD8X14 \
	VMOVSHDUP    X1, X2; \
	VMOVHLPS     X1, X1, X3; \
	VPERMILPS    $3, X1, X4; \
	VADDSS       X1, X14, X14; \
	VADDSS       X2, X14, X14; \
	VADDSS       X3, X14, X14; \
	VADDSS       X4, X14, X14; \
	VEXTRACTF128 $1, Y1, X1; \
	VMOVSHDUP    X1, X2; \
	VMOVHLPS     X1, X1, X3; \
	VPERMILPS    $3, X1, X4; \
	VADDSS       X1, X14, X14; \
	VADDSS       X2, X14, X14; \
	VADDSS       X3, X14, X14; \
	VADDSS       X4, X14, X14

// func dotQ5_0AVX2Asm(w, a *byte, groups int) float32
// groups of 8 blocks: sumf += float32(sumi) * (dx*dy), block by block.
TEXT ·dotQ5_0AVX2Asm(SB), NOSPLIT, $0-28
	MOVQ         w+0(FP), SI
	MOVQ         a+8(FP), DI
	MOVQ         groups+16(FP), CX
	VXORPS       X15, X15, X15
	VPBROADCASTD q8OnesW<>(SB), Y9
	VPBROADCASTD q5Sixteens<>(SB), Y10
	VPBROADCASTD q8Nib<>(SB), Y11
	TESTQ        CX, CX
	JZ           q50done

q50loop:
	VPCMPEQB Y8, Y8, Y8
	Q5BLOCK(2, 6, 2, Y0)
	Q5BLOCK(24, 28, 36, Y1)
	Q5BLOCK(46, 50, 70, Y2)
	Q5BLOCK(68, 72, 104, Y3)
	Q5BLOCK(90, 94, 138, Y4)
	Q5BLOCK(112, 116, 172, Y5)
	Q5BLOCK(134, 138, 206, Y6)
	Q5BLOCK(156, 160, 240, Y7)
	SUM8
	FP16x8(SI, 0, 22, 44, 66, 88, 110, 132, 154, X8, Y8)
	FP16x8(DI, 0, 34, 68, 102, 136, 170, 204, 238, X12, Y12)
	VMULPS Y12, Y8, Y8 // dx*dy
	VMULPS Y8, Y1, Y1
	ADD8
	ADDQ   $176, SI
	ADDQ   $272, DI
	DECQ   CX
	JNZ    q50loop

q50done:
	VMOVSS X15, ret+24(FP)
	VZEROUPPER
	RET

// func dotIQ4NLAVX2Asm(w, a *byte, groups int) float32
// groups of 8 blocks: sumf += (dy*dx) * float32(sumi), block by block.
TEXT ·dotIQ4NLAVX2Asm(SB), NOSPLIT, $0-28
	MOVQ           w+0(FP), SI
	MOVQ           a+8(FP), DI
	MOVQ           groups+16(FP), CX
	VXORPS         X15, X15, X15
	VBROADCASTI128 iq4nlValues<>(SB), Y10
	VPBROADCASTD   q8Nib<>(SB), Y11
	TESTQ          CX, CX
	JZ             nldone

nlloop:
	NLBLOCK(2, 2, 18, Y0)
	NLBLOCK(20, 36, 52, Y1)
	NLBLOCK(38, 70, 86, Y2)
	NLBLOCK(56, 104, 120, Y3)
	NLBLOCK(74, 138, 154, Y4)
	NLBLOCK(92, 172, 188, Y5)
	NLBLOCK(110, 206, 222, Y6)
	NLBLOCK(128, 240, 256, Y7)
	SUM8
	FP16x8(SI, 0, 18, 36, 54, 72, 90, 108, 126, X8, Y8)
	FP16x8(DI, 0, 34, 68, 102, 136, 170, 204, 238, X12, Y12)
	VMULPS Y8, Y12, Y8 // dy*dx
	VMULPS Y8, Y1, Y1
	ADD8
	ADDQ   $144, SI
	ADDQ   $272, DI
	DECQ   CX
	JNZ    nlloop

nldone:
	VMOVSS X15, ret+24(FP)
	VZEROUPPER
	RET

// MINS adds m*s of the 8 blocks (fp16 m at mo+k*ws(SI), fp16 s at 2+k*36(DI))
// to X14, block by block.
#define MINS(m0, m1, m2, m3, m4, m5, m6, m7) \
	FP16x8(SI, m0, m1, m2, m3, m4, m5, m6, m7, X8, Y8); \
	FP16x8(DI, 2, 38, 74, 110, 146, 182, 218, 254, X12, Y12); \
	VMULPS Y12, Y8, Y1; \
	ADD8X14

// func dotQ4_1AVX2Asm(w, a *byte, groups int) (sumf, summs float32)
// groups of 8 blocks: sumf += float32(sumi) * (dx*dy) and summs += m*s,
// block by block.
TEXT ·dotQ4_1AVX2Asm(SB), NOSPLIT, $0-32
	MOVQ         w+0(FP), SI
	MOVQ         a+8(FP), DI
	MOVQ         groups+16(FP), CX
	VXORPS       X15, X15, X15
	VXORPS       X14, X14, X14
	VPBROADCASTD q8OnesW<>(SB), Y9
	VPBROADCASTD q8Nib<>(SB), Y11
	TESTQ        CX, CX
	JZ           q41done

q41loop:
	Q4UBLOCK(4, 4, Y0)
	Q4UBLOCK(24, 40, Y1)
	Q4UBLOCK(44, 76, Y2)
	Q4UBLOCK(64, 112, Y3)
	Q4UBLOCK(84, 148, Y4)
	Q4UBLOCK(104, 184, Y5)
	Q4UBLOCK(124, 220, Y6)
	Q4UBLOCK(144, 256, Y7)
	SUM8
	FP16x8(SI, 0, 20, 40, 60, 80, 100, 120, 140, X8, Y8)
	FP16x8(DI, 0, 36, 72, 108, 144, 180, 216, 252, X12, Y12)
	VMULPS Y12, Y8, Y8 // dx*dy
	VMULPS Y8, Y1, Y1
	ADD8
	MINS(2, 22, 42, 62, 82, 102, 122, 142)
	ADDQ $160, SI
	ADDQ $288, DI
	DECQ CX
	JNZ  q41loop

q41done:
	VMOVSS X15, sumf+24(FP)
	VMOVSS X14, summs+28(FP)
	VZEROUPPER
	RET

// func dotQ5_1AVX2Asm(w, a *byte, groups int) (sumf, summs float32)
// as dotQ4_1AVX2Asm for Q5_1 blocks.
TEXT ·dotQ5_1AVX2Asm(SB), NOSPLIT, $0-32
	MOVQ         w+0(FP), SI
	MOVQ         a+8(FP), DI
	MOVQ         groups+16(FP), CX
	VXORPS       X15, X15, X15
	VXORPS       X14, X14, X14
	VPBROADCASTD q8OnesW<>(SB), Y9
	VPBROADCASTD q5Sixteens<>(SB), Y10
	VPBROADCASTD q8Nib<>(SB), Y11
	TESTQ        CX, CX
	JZ           q51done

q51loop:
	VPCMPEQB Y8, Y8, Y8
	Q5UBLOCK(4, 8, 4, Y0)
	Q5UBLOCK(28, 32, 40, Y1)
	Q5UBLOCK(52, 56, 76, Y2)
	Q5UBLOCK(76, 80, 112, Y3)
	Q5UBLOCK(100, 104, 148, Y4)
	Q5UBLOCK(124, 128, 184, Y5)
	Q5UBLOCK(148, 152, 220, Y6)
	Q5UBLOCK(172, 176, 256, Y7)
	SUM8
	FP16x8(SI, 0, 24, 48, 72, 96, 120, 144, 168, X8, Y8)
	FP16x8(DI, 0, 36, 72, 108, 144, 180, 216, 252, X12, Y12)
	VMULPS Y12, Y8, Y8 // dx*dy
	VMULPS Y8, Y1, Y1
	ADD8
	MINS(2, 26, 50, 74, 98, 122, 146, 170)
	ADDQ $192, SI
	ADDQ $288, DI
	DECQ CX
	JNZ  q51loop

q51done:
	VMOVSS X15, sumf+24(FP)
	VMOVSS X14, summs+28(FP)
	VZEROUPPER
	RET

// E8M0 sets DX to the bits of ggml_e8m0_to_fp32_half of the byte at
// off(SI): (e-1)<<23, or (e+1)<<21 (ggml's denormals) for e < 2.
#define E8M0(off) \
	MOVBLZX off(SI), AX; \
	LEAL    1(AX), R8; \
	SHLL    $21, R8; \
	LEAL    -1(AX), DX; \
	SHLL    $23, DX; \
	CMPL    AX, $2; \
	CMOVLCS R8, DX

// func dotMXFP4AVX2Asm(w, a *byte, groups int) float32
// groups of 8 blocks: sumf += (dy*2^(e-128)) * float32(sumi), block by block.
TEXT ·dotMXFP4AVX2Asm(SB), NOSPLIT, $0-28
	MOVQ           w+0(FP), SI
	MOVQ           a+8(FP), DI
	MOVQ           groups+16(FP), CX
	VXORPS         X15, X15, X15
	VBROADCASTI128 ·kvaluesFP4(SB), Y10
	VPBROADCASTD   q8Nib<>(SB), Y11
	TESTQ          CX, CX
	JZ             mxdone

mxloop:
	NLBLOCK(1, 2, 18, Y0)
	NLBLOCK(18, 36, 52, Y1)
	NLBLOCK(35, 70, 86, Y2)
	NLBLOCK(52, 104, 120, Y3)
	NLBLOCK(69, 138, 154, Y4)
	NLBLOCK(86, 172, 188, Y5)
	NLBLOCK(103, 206, 222, Y6)
	NLBLOCK(120, 240, 256, Y7)
	SUM8
	E8M0(0)
	VMOVD   DX, X2
	E8M0(17)
	VPINSRD $1, DX, X2, X2
	E8M0(34)
	VPINSRD $2, DX, X2, X2
	E8M0(51)
	VPINSRD $3, DX, X2, X2
	E8M0(68)
	VMOVD   DX, X3
	E8M0(85)
	VPINSRD $1, DX, X3, X3
	E8M0(102)
	VPINSRD $2, DX, X3, X3
	E8M0(119)
	VPINSRD $3, DX, X3, X3
	VINSERTI128 $1, X3, Y2, Y2
	FP16x8(DI, 0, 34, 68, 102, 136, 170, 204, 238, X12, Y12)
	VMULPS Y2, Y12, Y2 // dy*scale
	VMULPS Y2, Y1, Y1
	ADD8
	ADDQ   $136, SI
	ADDQ   $272, DI
	DECQ   CX
	JNZ    mxloop

mxdone:
	VMOVSS X15, ret+24(FP)
	VZEROUPPER
	RET
