//go:build !purego

// Tile kernels of the simd_gemm_q8 group: Q8_0·Q8_0 and Q4_0·Q8_0 for 4
// weight rows × 1 or 3 activation rows, and (VNNI) row kernels for one
// activation row (see simd_gemm_q8_amd64.go). Every
// block's integer sums are exact, for every byte value; each block adds
// float32(lane partial sum) * (dw*da) to 8-lane float accumulators with
// FMA, reduced once per output at the end (llama.cpp's order, not GoDot's).
//
// Tile kernel arguments: four weight row pointers (repeated for short
// tiles), one or three activation row pointers, nb = blocks per row (>= 1),
// res = the 4×C results, row-major.

#include "textflag.h"

DATA gq8x80<>+0(SB)/4, $0x80808080
GLOBL gq8x80<>(SB), RODATA|NOPTR, $4
DATA gq8x08<>+0(SB)/4, $0x08080808
GLOBL gq8x08<>(SB), RODATA|NOPTR, $4
DATA gq8x0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL gq8x0f<>(SB), RODATA|NOPTR, $4
DATA gq8OnesW<>+0(SB)/4, $0x00010001
GLOBL gq8OnesW<>(SB), RODATA|NOPTR, $4

// gq8Shift4 shifts the words of the high 128 bits by 4 (VPSRLVW): a Q4_0
// block's 16 bytes broadcast to both halves become low nibbles | high
// nibbles once masked.
DATA gq8Shift4<>+0(SB)/8, $0
DATA gq8Shift4<>+8(SB)/8, $0
DATA gq8Shift4<>+16(SB)/8, $0x0004000400040004
DATA gq8Shift4<>+24(SB)/8, $0x0004000400040004
GLOBL gq8Shift4<>(SB), RODATA|NOPTR, $32

// NEXTGROUP sets R13 to w3 + (w3-w2): the next 4 rows when the rows are
// evenly spaced (a weight matrix). The 4×1 kernels (the AVX2 path at
// decode; prefill leftovers with VNNI) prefetch it into L1 while they work
// on this group, 3 lines per block step: one sequential stream, which the
// hardware serves far better than 4 interleaved row streams (measured).
// Prefetching past a slice is harmless: prefetches never fault.
#define NEXTGROUP \
	MOVQ R11, R13; \
	SUBQ R10, R13; \
	ADDQ R11, R13

// HSUM stores the sum of the 8 lanes of ACC at off(AX), using X13.
#define HSUM(ACC, XACC, off) \
	VEXTRACTF128 $1, ACC, X13; \
	VADDPS       X13, XACC, XACC; \
	VHADDPS      XACC, XACC, XACC; \
	VHADDPS      XACC, XACC, XACC; \
	VMOVSS       XACC, off(AX)

// ---- AVX-512 VNNI (EVEX VPDPBUSD on 256-bit registers) ----
//
// Q8_0: Σ w*a = Σ (w^0x80)*a - 128*Σ a, with w^0x80 = w+128 as unsigned
// bytes: VPDPBUSD's u8×s8 products never saturate.
// Registers: Y31 = bytes 0x80 (Q8_0) or 0x0f (Q4_0), Y30 = 0x08 bytes
// (Q4_0), Y29/Y28 temporaries; per activation row c: A_c quants, N_c the
// correction lanes, D_c = da; per weight row r: W_r unsigned quants,
// E_r = dw; accumulators Y0..Y11.

// VQ8COL loads activation block P+BX: quants to A, -128*Σ(4 quants) to N,
// da to D.
#define VQ8COL(P, A, N, D) \
	VMOVDQU32    2(P)(BX*1), A; \
	VPXORD       Y28, Y28, Y28; \
	VPDPBUSD     A, Y31, Y28; \
	VPXORD       N, N, N; \
	VPSUBD       Y28, N, N; \
	VPBROADCASTW (P)(BX*1), Y29; \
	VCVTPH2PS    X29, D

// VQ8ROW loads weight block P+BX: quants^0x80 to W, dw to E.
#define VQ8ROW(P, W, E) \
	VPXORD       2(P)(BX*1), Y31, W; \
	VPBROADCASTW (P)(BX*1), Y29; \
	VCVTPH2PS    X29, E

// VMAC adds one block's products of weight row (W, E) and activation row
// (A, N, D) to ACC.
#define VMAC(A, N, D, W, E, ACC) \
	VMOVDQA32   N, Y28; \
	VPDPBUSD    A, W, Y28; \
	VCVTDQ2PS   Y28, Y28; \
	VMULPS      D, E, Y29; \
	VFMADD231PS Y29, Y28, ACC

// func gemmQ8_0VNNI4x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32)
TEXT ·gemmQ8_0VNNI4x1(SB), NOSPLIT, $0-56
	MOVQ         w0+0(FP), R8
	MOVQ         w1+8(FP), R9
	MOVQ         w2+16(FP), R10
	MOVQ         w3+24(FP), R11
	MOVQ         a0+32(FP), SI
	MOVQ         nb+40(FP), CX
	MOVQ         res+48(FP), AX
	NEXTGROUP
	VPBROADCASTD gq8x80<>(SB), Y31
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	XORQ         BX, BX

vq8x1loop:
	PREFETCHT0 0(R13)(BX*4)
	PREFETCHT0 64(R13)(BX*4)
	PREFETCHT0 128(R13)(BX*4)
	VQ8COL(SI, Y20, Y23, Y26)
	VQ8ROW(R8, Y16, Y12)
	VQ8ROW(R9, Y17, Y13)
	VQ8ROW(R10, Y18, Y14)
	VQ8ROW(R11, Y19, Y15)
	VMAC(Y20, Y23, Y26, Y16, Y12, Y0)
	VMAC(Y20, Y23, Y26, Y17, Y13, Y1)
	VMAC(Y20, Y23, Y26, Y18, Y14, Y2)
	VMAC(Y20, Y23, Y26, Y19, Y15, Y3)
	ADDQ       $34, BX
	DECQ       CX
	JNZ        vq8x1loop

	HSUM(Y0, X0, 0)
	HSUM(Y1, X1, 4)
	HSUM(Y2, X2, 8)
	HSUM(Y3, X3, 12)
	VZEROUPPER
	RET

// func gemmQ8_0VNNI4x3(w0, w1, w2, w3, a0, a1, a2 *byte, nb int, res *float32)
TEXT ·gemmQ8_0VNNI4x3(SB), NOSPLIT, $0-72
	MOVQ         w0+0(FP), R8
	MOVQ         w1+8(FP), R9
	MOVQ         w2+16(FP), R10
	MOVQ         w3+24(FP), R11
	MOVQ         a0+32(FP), SI
	MOVQ         a1+40(FP), DI
	MOVQ         a2+48(FP), DX
	MOVQ         nb+56(FP), CX
	MOVQ         res+64(FP), AX
	VPBROADCASTD gq8x80<>(SB), Y31
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	VXORPS       Y4, Y4, Y4
	VXORPS       Y5, Y5, Y5
	VXORPS       Y6, Y6, Y6
	VXORPS       Y7, Y7, Y7
	VXORPS       Y8, Y8, Y8
	VXORPS       Y9, Y9, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	XORQ         BX, BX

vq8x3loop:
	VQ8COL(SI, Y20, Y23, Y26)
	VQ8COL(DI, Y21, Y24, Y27)
	VQ8COL(DX, Y22, Y25, Y30)
	VQ8ROW(R8, Y16, Y12)
	VQ8ROW(R9, Y17, Y13)
	VQ8ROW(R10, Y18, Y14)
	VQ8ROW(R11, Y19, Y15)
	VMAC(Y20, Y23, Y26, Y16, Y12, Y0)
	VMAC(Y21, Y24, Y27, Y16, Y12, Y1)
	VMAC(Y22, Y25, Y30, Y16, Y12, Y2)
	VMAC(Y20, Y23, Y26, Y17, Y13, Y3)
	VMAC(Y21, Y24, Y27, Y17, Y13, Y4)
	VMAC(Y22, Y25, Y30, Y17, Y13, Y5)
	VMAC(Y20, Y23, Y26, Y18, Y14, Y6)
	VMAC(Y21, Y24, Y27, Y18, Y14, Y7)
	VMAC(Y22, Y25, Y30, Y18, Y14, Y8)
	VMAC(Y20, Y23, Y26, Y19, Y15, Y9)
	VMAC(Y21, Y24, Y27, Y19, Y15, Y10)
	VMAC(Y22, Y25, Y30, Y19, Y15, Y11)
	ADDQ $34, BX
	DECQ CX
	JNZ  vq8x3loop

	HSUM(Y0, X0, 0)
	HSUM(Y1, X1, 4)
	HSUM(Y2, X2, 8)
	HSUM(Y3, X3, 12)
	HSUM(Y4, X4, 16)
	HSUM(Y5, X5, 20)
	HSUM(Y6, X6, 24)
	HSUM(Y7, X7, 28)
	HSUM(Y8, X8, 32)
	HSUM(Y9, X9, 36)
	HSUM(Y10, X10, 40)
	HSUM(Y11, X11, 44)
	VZEROUPPER
	RET

// Q4_0: Σ (q-8)*a = Σ q*a - 8*Σ a with the nibbles q as unsigned bytes.
// Weight blocks are 18 bytes (offset BX), activation blocks 34 (R12).

// VQ4COL loads activation block P+R12: quants to A, -8*Σ(4 quants) to N,
// da to D.
#define VQ4COL(P, A, N, D) \
	VMOVDQU32    2(P)(R12*1), A; \
	VPBROADCASTD gq8x08<>(SB), Y29; \
	VPXORD       Y28, Y28, Y28; \
	VPDPBUSD     A, Y29, Y28; \
	VPXORD       N, N, N; \
	VPSUBD       Y28, N, N; \
	VPBROADCASTW (P)(R12*1), Y29; \
	VCVTPH2PS    X29, D

// VQ4ROW loads weight block P+BX: its 32 nibbles in value order to W (the
// 16 bytes in both halves, the high half shifted by 4, masked with
// Y31 = bytes 0x0f), dw to E.
#define VQ4ROW(P, W, E) \
	VBROADCASTI32X4 2(P)(BX*1), W; \
	VPSRLVW         gq8Shift4<>(SB), W, W; \
	VPANDD          Y31, W, W; \
	VPBROADCASTW    (P)(BX*1), Y29; \
	VCVTPH2PS       X29, E

// func gemmQ4_0VNNI4x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32)
TEXT ·gemmQ4_0VNNI4x1(SB), NOSPLIT, $0-56
	MOVQ         w0+0(FP), R8
	MOVQ         w1+8(FP), R9
	MOVQ         w2+16(FP), R10
	MOVQ         w3+24(FP), R11
	MOVQ         a0+32(FP), SI
	MOVQ         nb+40(FP), CX
	MOVQ         res+48(FP), AX
	NEXTGROUP
	VPBROADCASTD gq8x0f<>(SB), Y31
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	XORQ         BX, BX
	XORQ         R12, R12

vq4x1loop:
	PREFETCHT0 0(R13)(BX*4)
	PREFETCHT0 64(R13)(BX*4)
	PREFETCHT0 128(R13)(BX*4)
	VQ4COL(SI, Y20, Y23, Y26)
	VQ4ROW(R8, Y16, Y12)
	VQ4ROW(R9, Y17, Y13)
	VQ4ROW(R10, Y18, Y14)
	VQ4ROW(R11, Y19, Y15)
	VMAC(Y20, Y23, Y26, Y16, Y12, Y0)
	VMAC(Y20, Y23, Y26, Y17, Y13, Y1)
	VMAC(Y20, Y23, Y26, Y18, Y14, Y2)
	VMAC(Y20, Y23, Y26, Y19, Y15, Y3)
	ADDQ       $18, BX
	ADDQ       $34, R12
	DECQ       CX
	JNZ        vq4x1loop

	HSUM(Y0, X0, 0)
	HSUM(Y1, X1, 4)
	HSUM(Y2, X2, 8)
	HSUM(Y3, X3, 12)
	VZEROUPPER
	RET

// func gemmQ4_0VNNI4x3(w0, w1, w2, w3, a0, a1, a2 *byte, nb int, res *float32)
TEXT ·gemmQ4_0VNNI4x3(SB), NOSPLIT, $0-72
	MOVQ         w0+0(FP), R8
	MOVQ         w1+8(FP), R9
	MOVQ         w2+16(FP), R10
	MOVQ         w3+24(FP), R11
	MOVQ         a0+32(FP), SI
	MOVQ         a1+40(FP), DI
	MOVQ         a2+48(FP), DX
	MOVQ         nb+56(FP), CX
	MOVQ         res+64(FP), AX
	VPBROADCASTD gq8x0f<>(SB), Y31
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	VXORPS       Y4, Y4, Y4
	VXORPS       Y5, Y5, Y5
	VXORPS       Y6, Y6, Y6
	VXORPS       Y7, Y7, Y7
	VXORPS       Y8, Y8, Y8
	VXORPS       Y9, Y9, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	XORQ         BX, BX
	XORQ         R12, R12

vq4x3loop:
	VQ4COL(SI, Y20, Y23, Y26)
	VQ4COL(DI, Y21, Y24, Y27)
	VQ4COL(DX, Y22, Y25, Y30)
	VQ4ROW(R8, Y16, Y12)
	VQ4ROW(R9, Y17, Y13)
	VQ4ROW(R10, Y18, Y14)
	VQ4ROW(R11, Y19, Y15)
	VMAC(Y20, Y23, Y26, Y16, Y12, Y0)
	VMAC(Y21, Y24, Y27, Y16, Y12, Y1)
	VMAC(Y22, Y25, Y30, Y16, Y12, Y2)
	VMAC(Y20, Y23, Y26, Y17, Y13, Y3)
	VMAC(Y21, Y24, Y27, Y17, Y13, Y4)
	VMAC(Y22, Y25, Y30, Y17, Y13, Y5)
	VMAC(Y20, Y23, Y26, Y18, Y14, Y6)
	VMAC(Y21, Y24, Y27, Y18, Y14, Y7)
	VMAC(Y22, Y25, Y30, Y18, Y14, Y8)
	VMAC(Y20, Y23, Y26, Y19, Y15, Y9)
	VMAC(Y21, Y24, Y27, Y19, Y15, Y10)
	VMAC(Y22, Y25, Y30, Y19, Y15, Y11)
	ADDQ $18, BX
	ADDQ $34, R12
	DECQ CX
	JNZ  vq4x3loop

	HSUM(Y0, X0, 0)
	HSUM(Y1, X1, 4)
	HSUM(Y2, X2, 8)
	HSUM(Y3, X3, 12)
	HSUM(Y4, X4, 16)
	HSUM(Y5, X5, 20)
	HSUM(Y6, X6, 24)
	HSUM(Y7, X7, 28)
	HSUM(Y8, X8, 32)
	HSUM(Y9, X9, 36)
	HSUM(Y10, X10, 40)
	HSUM(Y11, X11, 44)
	VZEROUPPER
	RET

// ---- AVX2 (4 weight rows × 1 activation row) ----
//
// Y4, Y5 = the activation quants sign-extended to int16, Y6 = da,
// accumulators Y0..Y3, temporaries Y7..Y9.

// AQ8ROW adds weight block P+BX's products with the activation block to
// ACC: quants sign-extended to int16 and multiplied in pairs (exact).
#define AQ8ROW(P, ACC) \
	VPMOVSXBW    2(P)(BX*1), Y7; \
	VPMOVSXBW    18(P)(BX*1), Y8; \
	VPMADDWD     Y4, Y7, Y7; \
	VPMADDWD     Y5, Y8, Y8; \
	VPADDD       Y8, Y7, Y7; \
	VCVTDQ2PS    Y7, Y7; \
	VPBROADCASTW (P)(BX*1), Y9; \
	VCVTPH2PS    X9, Y9; \
	VMULPS       Y6, Y9, Y9; \
	VFMADD231PS  Y9, Y7, ACC

// func gemmQ8_0AVX24x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32)
TEXT ·gemmQ8_0AVX24x1(SB), NOSPLIT, $0-56
	MOVQ   w0+0(FP), R8
	MOVQ   w1+8(FP), R9
	MOVQ   w2+16(FP), R10
	MOVQ   w3+24(FP), R11
	MOVQ   a0+32(FP), SI
	MOVQ   nb+40(FP), CX
	MOVQ   res+48(FP), AX
	NEXTGROUP
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   BX, BX

aq8x1loop:
	PREFETCHT0 0(R13)(BX*4)
	PREFETCHT0 64(R13)(BX*4)
	PREFETCHT0 128(R13)(BX*4)
	VPMOVSXBW    2(SI)(BX*1), Y4
	VPMOVSXBW    18(SI)(BX*1), Y5
	VPBROADCASTW (SI)(BX*1), Y6
	VCVTPH2PS    X6, Y6
	AQ8ROW(R8, Y0)
	AQ8ROW(R9, Y1)
	AQ8ROW(R10, Y2)
	AQ8ROW(R11, Y3)
	ADDQ         $34, BX
	DECQ         CX
	JNZ          aq8x1loop

	HSUM(Y0, X0, 0)
	HSUM(Y1, X1, 4)
	HSUM(Y2, X2, 8)
	HSUM(Y3, X3, 12)
	VZEROUPPER
	RET

// AQ4ROW adds weight block P+BX's products with the activation block to
// ACC: nibbles (u8) × quants (s8) in pairs minus 8*Σ pairs (exact in
// int16), then in int32. Y4 = activation quants, Y5 = 8*Σ their pairs
// (int16), Y10 = int16 ones, Y11 = bytes 0x0f.
#define AQ4ROW(P, ACC) \
	VMOVDQU      2(P)(BX*1), X7; \
	VPSRLW       $4, X7, X8; \
	VINSERTI128  $1, X8, Y7, Y7; \
	VPAND        Y11, Y7, Y7; \
	VPMADDUBSW   Y4, Y7, Y7; \
	VPSUBW       Y5, Y7, Y7; \
	VPMADDWD     Y10, Y7, Y7; \
	VCVTDQ2PS    Y7, Y7; \
	VPBROADCASTW (P)(BX*1), Y9; \
	VCVTPH2PS    X9, Y9; \
	VMULPS       Y6, Y9, Y9; \
	VFMADD231PS  Y9, Y7, ACC

// func gemmQ4_0AVX24x1(w0, w1, w2, w3, a0 *byte, nb int, res *float32)
TEXT ·gemmQ4_0AVX24x1(SB), NOSPLIT, $0-56
	MOVQ         w0+0(FP), R8
	MOVQ         w1+8(FP), R9
	MOVQ         w2+16(FP), R10
	MOVQ         w3+24(FP), R11
	MOVQ         a0+32(FP), SI
	MOVQ         nb+40(FP), CX
	MOVQ         res+48(FP), AX
	NEXTGROUP
	VPBROADCASTD gq8OnesW<>(SB), Y10
	VPBROADCASTD gq8x0f<>(SB), Y11
	VPBROADCASTD gq8x08<>(SB), Y12
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	XORQ         BX, BX
	XORQ         R12, R12

aq4x1loop:
	PREFETCHT0 0(R13)(BX*4)
	PREFETCHT0 64(R13)(BX*4)
	PREFETCHT0 128(R13)(BX*4)
	VMOVDQU      2(SI)(R12*1), Y4
	VPMADDUBSW   Y4, Y12, Y5
	VPBROADCASTW (SI)(R12*1), Y6
	VCVTPH2PS    X6, Y6
	AQ4ROW(R8, Y0)
	AQ4ROW(R9, Y1)
	AQ4ROW(R10, Y2)
	AQ4ROW(R11, Y3)
	ADDQ         $18, BX
	ADDQ         $34, R12
	DECQ         CX
	JNZ          aq4x1loop

	HSUM(Y0, X0, 0)
	HSUM(Y1, X1, 4)
	HSUM(Y2, X2, 8)
	HSUM(Y3, X3, 12)
	VZEROUPPER
	RET

// V1BLK adds the products of the Q8_0 weight block at so(R8)(BX) and the
// activation block at so(SI)(BX) (quants at qo) to ACC, with temporaries
// T0..T4: Σ w*a = Σ (w^0x80)*a - 128*Σ a. Y31 = bytes 0x80.
#define V1BLK(so, qo, ACC, T0, T1, T2, T3, T4, X2, X4) \
	VMOVDQU32    qo(SI)(BX*1), T0; \
	VPXORD       qo(R8)(BX*1), Y31, T1; \
	VPXORD       T2, T2, T2; \
	VPDPBUSD     T0, Y31, T2; \
	VPXORD       T3, T3, T3; \
	VPDPBUSD     T0, T1, T3; \
	VPSUBD       T2, T3, T3; \
	VCVTDQ2PS    T3, T3; \
	VPBROADCASTW so(R8)(BX*1), T4; \
	VCVTPH2PS    X4, T4; \
	VPBROADCASTW so(SI)(BX*1), T2; \
	VCVTPH2PS    X2, T2; \
	VMULPS       T2, T4, T4; \
	VFMADD231PS  T4, T3, ACC

// SEQPF is how far ahead in the weights the Rx1 kernels prefetch.
// Measured on Zen 5, one thread, Q8_0 decode from memory
// (BenchmarkGemmQ8 cols=1, gemm-avx512vnni): 31.7 GB/s at 2048, 37.9 at
// 8192 (as far as the K-quant kernels prefetch, gemmkgen's prefetchAhead).
#define SEQPF 8192

// func gemmQ8_0VNNIRx1(w *byte, wStride, rows int, a *byte, nb int, out *float32)
// out[r] = row r (at w + r*wStride) · a, for r < rows; one row at a time,
// so the weights are read as one sequential stream: from DRAM (decode)
// this beats the 4×1 kernel, whose 4 interleaved row streams the hardware
// prefetchers serve worse (measured), though it does fewer operations.
// One accumulator, blocks in order, as the tiles: a row's result does not
// depend on the batch it is in (two accumulators, as before, made
// qwen4exp's QSA block selection flip between chunkings of one prompt on
// AVX-512 hosts; one FMA chain of 4 cycles per 34-byte block is still
// faster than memory).
TEXT ·gemmQ8_0VNNIRx1(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), R8
	MOVQ         wStride+8(FP), R9
	MOVQ         rows+16(FP), DX
	MOVQ         a+24(FP), SI
	MOVQ         nb+32(FP), R10
	MOVQ         out+40(FP), AX
	VPBROADCASTD gq8x80<>(SB), Y31

v1row:
	VXORPS Y0, Y0, Y0
	XORQ   BX, BX
	MOVQ   R10, CX
	SHRQ   $1, CX
	JZ     v1tail

v1loop:
	PREFETCHT0 SEQPF(R8)(BX*1)
	V1BLK(0, 2, Y0, Y16, Y17, Y18, Y19, Y20, X18, X20)
	V1BLK(34, 36, Y0, Y21, Y22, Y23, Y24, Y25, X23, X25)
	ADDQ $68, BX
	DECQ CX
	JNZ  v1loop

v1tail:
	TESTQ $1, R10
	JZ    v1sum
	V1BLK(0, 2, Y0, Y16, Y17, Y18, Y19, Y20, X18, X20)

v1sum:
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (AX)
	ADDQ         $4, AX
	ADDQ         R9, R8
	DECQ         DX
	JNZ          v1row
	VZEROUPPER
	RET

// V4BLK is V1BLK for a Q4_0 weight block at wso(R8)(BX) and a Q8_0
// activation block at aso(SI)(DX): Σ (q-8)*a = Σ q*a - 8*Σ a.
// Y31 = bytes 0x0f, Y30 = bytes 0x08.
#define V4BLK(wso, wqo, aso, aqo, ACC, T0, T1, T2, T3, T4, X2, X4) \
	VMOVDQU32       aqo(SI)(DX*1), T0; \
	VBROADCASTI32X4 wqo(R8)(BX*1), T1; \
	VPSRLVW         gq8Shift4<>(SB), T1, T1; \
	VPANDD          Y31, T1, T1; \
	VPXORD          T2, T2, T2; \
	VPDPBUSD        T0, Y30, T2; \
	VPXORD          T3, T3, T3; \
	VPDPBUSD        T0, T1, T3; \
	VPSUBD          T2, T3, T3; \
	VCVTDQ2PS       T3, T3; \
	VPBROADCASTW    wso(R8)(BX*1), T4; \
	VCVTPH2PS       X4, T4; \
	VPBROADCASTW    aso(SI)(DX*1), T2; \
	VCVTPH2PS       X2, T2; \
	VMULPS          T2, T4, T4; \
	VFMADD231PS     T4, T3, ACC

// func gemmQ4_0VNNIRx1(w *byte, wStride, rows int, a *byte, nb int, out *float32)
// gemmQ8_0VNNIRx1 for Q4_0 weights.
TEXT ·gemmQ4_0VNNIRx1(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), R8
	MOVQ         wStride+8(FP), R9
	MOVQ         rows+16(FP), R11
	MOVQ         a+24(FP), SI
	MOVQ         nb+32(FP), R10
	MOVQ         out+40(FP), AX
	VPBROADCASTD gq8x0f<>(SB), Y31
	VPBROADCASTD gq8x08<>(SB), Y30

v4row:
	VXORPS Y0, Y0, Y0
	XORQ   BX, BX
	XORQ   DX, DX
	MOVQ   R10, CX
	SHRQ   $1, CX
	JZ     v4tail

v4loop:
	PREFETCHT0 SEQPF(R8)(BX*1)
	V4BLK(0, 2, 0, 2, Y0, Y16, Y17, Y18, Y19, Y20, X18, X20)
	V4BLK(18, 20, 34, 36, Y0, Y21, Y22, Y23, Y24, Y25, X23, X25)
	ADDQ $36, BX
	ADDQ $68, DX
	DECQ CX
	JNZ  v4loop

v4tail:
	TESTQ $1, R10
	JZ    v4sum
	V4BLK(0, 2, 0, 2, Y0, Y16, Y17, Y18, Y19, Y20, X18, X20)

v4sum:
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (AX)
	ADDQ         $4, AX
	ADDQ         R9, R8
	DECQ         R11
	JNZ          v4row
	VZEROUPPER
	RET
