//go:build !purego

#include "textflag.h"

// AVX-512 (F/BW/VL/VNNI/VBMI) row kernels of the 32-value formats Q5_0,
// IQ4_NL, MXFP4 (Q8_0 activations), Q4_1 and Q5_1 (Q8_1): 4 weight rows
// (at w, w+wstride, w+2*wstride, w+3*wstride) against one activation row,
// in groups of 8 blocks (see simd_gemm_legacy512_amd64.go).
//
// Per group the activations are loaded once for the 4 rows: 2 blocks' 64
// quants per 512-bit register, with the bias corrections -c*Σ y per dword
// lane (c = 16 for Q5_0's q-16, 128 for the codebooks stored as value+128,
// computed with VPDPBUSD) and the 8 scales as float32. Each weight row
// loads 2 blocks per masked 64-byte load (no read past the pair), gathers
// their nibbles with VPERMB into value order, and sums u8 weight × s8
// activation with VPDPBUSD: exact for every byte, -128 included. The 4
// pairs' dword lanes are reduced to the 8 exact block sums, converted and
// multiplied as in the Go reference; the 4 rows' 8 products are transposed
// so that one lane-wise VADDPS per block adds each row's product to its
// own sum in block order: every row's float steps are those of GoDot.
//
// Registers: Z0..Z3 a row's 4 pair loads, Z4..Z7 its pair sums, Z8..Z11
// temporaries, Y12..Y15 the 4 rows' products, Z16..Z19 the activation
// pairs, Z20..Z23 their corrections (Q4_1/Q5_1: Y20..Y23 the rows' m*s),
// Y24 the activation scales d (Y25 the Q8_1 s), Z26 the gather index,
// Z27 the nibble shifts, Y30 the reduction order, Z31 the bytes c;
// X25 (Q4_1/Q5_1: X28) the 4 sums, X29 the 4 summs. R8..R11 the rows,
// DI the activations, DX the kernel's table (legacyVNNITab), K1 the load
// mask.

// Offsets in legacyVNNITab.
#define LV_GATHER 0
#define LV_SHIFT 64
#define LV_LUT 128
#define LV_SCALE 192
#define LV_ASCALE 256
#define LV_RORDER 320
#define LV_CORR 384
#define LV_ONES 448
#define LV_TWOS 480
#define LV_DENORM 512
#define LV_KLOAD 544

// LV_PFD is how far ahead in each of the 4 rows the kernels prefetch.
// Without it the 4 interleaved row streams from DRAM ran IQ4_NL, MXFP4 and
// Q4_1 at 7-11 GB/s, no faster than the AVX2 dot (the hardware prefetchers
// serve them badly); with 512 bytes all five types run at about 20 GB/s
// (BenchmarkGemmLegacyPaths, one activation row); 1024 and 2048 were no
// better.
#define LV_PFD 512

// LV_SETUP loads the table's constants and the row pointers; DX = the
// table, R8 = w, BX = wstride.
#define LV_SETUP \
	LEAQ      (R8)(BX*1), R9; \
	LEAQ      (R9)(BX*1), R10; \
	LEAQ      (R10)(BX*1), R11; \
	VMOVDQU64 LV_GATHER(DX), Z26; \
	VMOVDQU64 LV_SHIFT(DX), Z27; \
	VMOVDQU64 LV_RORDER(DX), Z30; \
	VMOVDQU64 LV_CORR(DX), Z31; \
	KMOVQ     LV_KLOAD(DX), K1

// LV_APAIR loads the activation quants of blocks 2p, 2p+1 (at q0(DI),
// q1(DI)) into ZA.
#define LV_APAIR(q0, q1, YA, ZA) \
	VMOVDQU64    q0(DI), YA; \
	VINSERTI64X4 $1, q1(DI), ZA, ZA

// LV_ACORR sets N to -Σ c*y per dword lane of the activation pair ZA.
#define LV_ACORR(ZA, N) \
	VPXORD   N, N, N; \
	VPDPBUSD ZA, Z31, N; \
	VPXORD   Z8, Z8, Z8; \
	VPSUBD   N, Z8, N

// LV_Q8_0ACT loads a group's 8 Q8_0 activation blocks: pairs, corrections,
// Y24 = the 8 scales.
#define LV_Q8_0ACT \
	LV_APAIR(2, 36, Y16, Z16); \
	LV_APAIR(70, 104, Y17, Z17); \
	LV_APAIR(138, 172, Y18, Z18); \
	LV_APAIR(206, 240, Y19, Z19); \
	LV_ACORR(Z16, Z20); \
	LV_ACORR(Z17, Z21); \
	LV_ACORR(Z18, Z22); \
	LV_ACORR(Z19, Z23); \
	VMOVDQU64   LV_ASCALE(DX), Z8; \
	VMOVDQU64   0(DI), Z9; \
	VPERMT2W    64(DI), Z8, Z9; \
	VMOVDQU64   136(DI), Z10; \
	VPERMT2W    200(DI), Z8, Z10; \
	VPUNPCKLQDQ X10, X9, X9; \
	VCVTPH2PS   X9, Y24

// LV_Q8_1ACT loads a group's 8 Q8_1 activation blocks: pairs, Y24 = the 8
// scales d, Y25 = the 8 s.
#define LV_Q8_1ACT \
	LV_APAIR(4, 40, Y16, Z16); \
	LV_APAIR(76, 112, Y17, Z17); \
	LV_APAIR(148, 184, Y18, Z18); \
	LV_APAIR(220, 256, Y19, Z19); \
	VMOVDQU64   LV_ASCALE(DX), Z8; \
	VMOVDQU64   0(DI), Z9; \
	VPERMT2W    64(DI), Z8, Z9; \
	VMOVDQU64   144(DI), Z10; \
	VPERMT2W    208(DI), Z8, Z10; \
	VPUNPCKHQDQ X10, X9, X11; \
	VPUNPCKLQDQ X10, X9, X9; \
	VCVTPH2PS   X9, Y24; \
	VCVTPH2PS   X11, Y25

// LV_LOAD4 loads the row's 4 block pairs (ps bytes each) at R and
// prefetches 3 lines LV_PFD bytes ahead.
#define LV_LOAD4(R, ps) \
	PREFETCHT0 LV_PFD(R); \
	PREFETCHT0 (LV_PFD+64)(R); \
	PREFETCHT0 (LV_PFD+128)(R); \
	VMOVDQU8.Z 0(R), K1, Z0; \
	VMOVDQU8.Z ps(R), K1, Z1; \
	VMOVDQU8.Z (2*ps)(R), K1, Z2; \
	VMOVDQU8.Z (3*ps)(R), K1, Z3

// LV_NIBS sets Z9 to the 64 nibbles of the pair RAW in value order (in
// the low 4 bits; the high 4 bits are garbage unless masked).
#define LV_NIBS(RAW) \
	VPERMB  RAW, Z26, Z9; \
	VPSRLVW Z27, Z9, Z9

// LV_DOT adds the products of the unsigned weights Z9 and the activation
// pair A to ACC, which starts at N.
#define LV_DOT(A, N, ACC) \
	VMOVDQA64 N, ACC; \
	VPDPBUSD  A, Z9, ACC

// LV_DOT0 is LV_DOT from zero.
#define LV_DOT0(A, ACC) \
	VPXORD   ACC, ACC, ACC; \
	VPDPBUSD A, Z9, ACC

// LV_NLPAIR: codebook pair (IQ4_NL, MXFP4). VPERMB looks the nibbles up in
// the 64-byte table of the values+128 repeated 4 times (index bits 4, 5
// ignored that way, bits 6, 7 by VPERMB).
#define LV_NLPAIR(RAW, A, N, ACC) \
	LV_NIBS(RAW); \
	VPERMB Z28, Z9, Z9; \
	LV_DOT(A, N, ACC)

// LV_HIGH adds 16 to the bytes of Z9 whose bit is set in the qh words at
// h0(R) (block 2p) and h1(R) (block 2p+1).
#define LV_HIGH(R, h0, h1) \
	KMOVD    h0(R), K2; \
	KMOVD    h1(R), K3; \
	KUNPCKDQ K2, K3, K2; \
	VPADDB   Z31, Z9, K2, Z9

// LV_REDUCE sets Y4 to the 8 block sums (as float32) of the pair sums
// Z4..Z7 (each: 4 dwords of block 2p's first half, of its second, then
// block 2p+1's).
#define LV_REDUCE \
	VSHUFI64X2  $0x88, Z5, Z4, Z10; \
	VSHUFI64X2  $0xdd, Z5, Z4, Z11; \
	VPADDD      Z11, Z10, Z4; \
	VSHUFI64X2  $0x88, Z7, Z6, Z10; \
	VSHUFI64X2  $0xdd, Z7, Z6, Z11; \
	VPADDD      Z11, Z10, Z5; \
	VPUNPCKLQDQ Z5, Z4, Z10; \
	VPUNPCKHQDQ Z5, Z4, Z11; \
	VPADDD      Z11, Z10, Z4; \
	VPSHUFD     $0xb1, Z4, Z10; \
	VPADDD      Z10, Z4, Z4; \
	VPERMD      Z4, Z30, Z4; \
	VCVTDQ2PS   Y4, Y4

// LV_SCALES16 sets X8 to the 4 (Q4_1/Q5_1: 8, d then m) fp16 words of
// pairs 0, 1 that LV_SCALE picks, X10 those of pairs 2, 3.
#define LV_SCALES16 \
	VMOVDQU64 LV_SCALE(DX), Z8; \
	VPERMI2W  Z1, Z0, Z8; \
	VMOVDQU64 LV_SCALE(DX), Z10; \
	VPERMI2W  Z3, Z2, Z10

// LV_D8 sets Y8 to the 8 blocks' d as float32 (after LV_SCALES16).
#define LV_D8 \
	VPUNPCKLQDQ X10, X8, X8; \
	VCVTPH2PS   X8, Y8

// LV_TADD adds the 4 rows' 8 products P0..P3 (Y; X the same registers) to
// the 4 lanes of ACC, block by block, after transposing them (Y8..Y11).
#define LV_TADD(P0, P1, P2, P3, X0, X1, X2, X3, ACC) \
	VUNPCKLPS      P1, P0, Y8; \
	VUNPCKHPS      P1, P0, Y9; \
	VUNPCKLPS      P3, P2, Y10; \
	VUNPCKHPS      P3, P2, Y11; \
	VUNPCKLPD      Y10, Y8, P0; \
	VUNPCKHPD      Y10, Y8, P1; \
	VUNPCKLPD      Y11, Y9, P2; \
	VUNPCKHPD      Y11, Y9, P3; \
	VADDPS         X0, ACC, ACC; \
	VADDPS         X1, ACC, ACC; \
	VADDPS         X2, ACC, ACC; \
	VADDPS         X3, ACC, ACC; \
	VEXTRACTF32X4  $1, P0, X8; \
	VADDPS         X8, ACC, ACC; \
	VEXTRACTF32X4  $1, P1, X8; \
	VADDPS         X8, ACC, ACC; \
	VEXTRACTF32X4  $1, P2, X8; \
	VADDPS         X8, ACC, ACC; \
	VEXTRACTF32X4  $1, P3, X8; \
	VADDPS         X8, ACC, ACC

// LV_NEXT moves the 4 rows on by one group of gw bytes.
#define LV_NEXT(gw) \
	ADDQ $gw, R8; \
	ADDQ $gw, R9; \
	ADDQ $gw, R10; \
	ADDQ $gw, R11

// ---- Q5_0: sumf += sumi * (dx*dy); Z28 = bytes 0x0f, Z31 = bytes 0x10.

// LV_Q50ROW sets P to the 8 products of the row at R.
#define LV_Q50ROW(R, P) \
	LV_LOAD4(R, 44); \
	LV_SCALES16; \
	LV_D8; \
	LV_NIBS(Z0); \
	VPANDD Z28, Z9, Z9; \
	LV_HIGH(R, 2, 24); \
	LV_DOT(Z16, Z20, Z4); \
	LV_NIBS(Z1); \
	VPANDD Z28, Z9, Z9; \
	LV_HIGH(R, 46, 68); \
	LV_DOT(Z17, Z21, Z5); \
	LV_NIBS(Z2); \
	VPANDD Z28, Z9, Z9; \
	LV_HIGH(R, 90, 112); \
	LV_DOT(Z18, Z22, Z6); \
	LV_NIBS(Z3); \
	VPANDD Z28, Z9, Z9; \
	LV_HIGH(R, 134, 156); \
	LV_DOT(Z19, Z23, Z7); \
	LV_REDUCE; \
	VMULPS Y24, Y8, Y8; \
	VMULPS Y8, Y4, P

// func legacyQ5_0Rows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[4]float32)
TEXT ·legacyQ5_0Rows4VNNI(SB), NOSPLIT, $0-48
	MOVQ      tab+0(FP), DX
	MOVQ      w+8(FP), R8
	MOVQ      wstride+16(FP), BX
	MOVQ      a+24(FP), DI
	MOVQ      groups+32(FP), CX
	LV_SETUP
	VMOVDQU64 LV_LUT(DX), Z28
	VXORPS    X25, X25, X25

lvq50loop:
	LV_Q8_0ACT
	LV_Q50ROW(R8, Y12)
	LV_Q50ROW(R9, Y13)
	LV_Q50ROW(R10, Y14)
	LV_Q50ROW(R11, Y15)
	LV_TADD(Y12, Y13, Y14, Y15, X12, X13, X14, X15, X25)
	LV_NEXT(176)
	ADDQ $272, DI
	DECQ CX
	JNZ  lvq50loop

	MOVQ    res+40(FP), AX
	VMOVUPS X25, (AX)
	VZEROUPPER
	RET

// ---- IQ4_NL: sumf += (dy*dx) * sumi; Z28 = the values+128, Z31 = bytes
// 0x80.

// LV_NLROW sets P to the 8 products of the row at R.
#define LV_NLROW(R, P) \
	LV_LOAD4(R, 36); \
	LV_SCALES16; \
	LV_D8; \
	LV_NLPAIR(Z0, Z16, Z20, Z4); \
	LV_NLPAIR(Z1, Z17, Z21, Z5); \
	LV_NLPAIR(Z2, Z18, Z22, Z6); \
	LV_NLPAIR(Z3, Z19, Z23, Z7); \
	LV_REDUCE; \
	VMULPS Y8, Y24, Y8; \
	VMULPS Y8, Y4, P

// func legacyIQ4NLRows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[4]float32)
TEXT ·legacyIQ4NLRows4VNNI(SB), NOSPLIT, $0-48
	MOVQ      tab+0(FP), DX
	MOVQ      w+8(FP), R8
	MOVQ      wstride+16(FP), BX
	MOVQ      a+24(FP), DI
	MOVQ      groups+32(FP), CX
	LV_SETUP
	VMOVDQU64 LV_LUT(DX), Z28
	VXORPS    X25, X25, X25

lvnlloop:
	LV_Q8_0ACT
	LV_NLROW(R8, Y12)
	LV_NLROW(R9, Y13)
	LV_NLROW(R10, Y14)
	LV_NLROW(R11, Y15)
	LV_TADD(Y12, Y13, Y14, Y15, X12, X13, X14, X15, X25)
	LV_NEXT(144)
	ADDQ $272, DI
	DECQ CX
	JNZ  lvnlloop

	MOVQ    res+40(FP), AX
	VMOVUPS X25, (AX)
	VZEROUPPER
	RET

// ---- MXFP4: sumf += (dy*2^(e-128)) * sumi; Z28 = the values+128, Z31 =
// bytes 0x80.

// LV_MXROW sets P to the 8 products of the row at R. The E8M0 bytes
// (picked with VPERMI2B) become ggml_e8m0_to_fp32_half: (e-1)<<23, or
// 0x00200000<<e for e < 2 (ggml's denormals).
#define LV_MXROW(R, P) \
	LV_LOAD4(R, 34); \
	VMOVDQU64   LV_SCALE(DX), Z8; \
	VPERMI2B    Z1, Z0, Z8; \
	VMOVDQU64   LV_SCALE(DX), Z10; \
	VPERMI2B    Z3, Z2, Z10; \
	VPUNPCKLDQ  X10, X8, X8; \
	VPMOVZXBD   X8, Y8; \
	VPCMPUD     $1, LV_TWOS(DX), Y8, K2; \
	VPSUBD      LV_ONES(DX), Y8, Y10; \
	VPSLLD      $23, Y10, Y10; \
	VMOVDQU64   LV_DENORM(DX), Y11; \
	VPSLLVD     Y8, Y11, K2, Y10; \
	VMULPS      Y10, Y24, Y8; \
	LV_NLPAIR(Z0, Z16, Z20, Z4); \
	LV_NLPAIR(Z1, Z17, Z21, Z5); \
	LV_NLPAIR(Z2, Z18, Z22, Z6); \
	LV_NLPAIR(Z3, Z19, Z23, Z7); \
	LV_REDUCE; \
	VMULPS Y8, Y4, P

// func legacyMXFP4Rows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[4]float32)
TEXT ·legacyMXFP4Rows4VNNI(SB), NOSPLIT, $0-48
	MOVQ      tab+0(FP), DX
	MOVQ      w+8(FP), R8
	MOVQ      wstride+16(FP), BX
	MOVQ      a+24(FP), DI
	MOVQ      groups+32(FP), CX
	LV_SETUP
	VMOVDQU64 LV_LUT(DX), Z28
	VXORPS    X25, X25, X25

lvmxloop:
	LV_Q8_0ACT
	LV_MXROW(R8, Y12)
	LV_MXROW(R9, Y13)
	LV_MXROW(R10, Y14)
	LV_MXROW(R11, Y15)
	LV_TADD(Y12, Y13, Y14, Y15, X12, X13, X14, X15, X25)
	LV_NEXT(136)
	ADDQ $272, DI
	DECQ CX
	JNZ  lvmxloop

	MOVQ    res+40(FP), AX
	VMOVUPS X25, (AX)
	VZEROUPPER
	RET

// ---- Q4_1 and Q5_1: sumf += sumi * (dx*dy) and summs += m*s, block by
// block; the bytes 0x0f at LV_LUT (Z28 holds the sums), Z31 = bytes 0x10.

// LV_DM sets Y8 to the 8 blocks' dx*dy and P to their m*s (after
// LV_SCALES16: d in the low words of X8, X10, m in the high ones).
#define LV_DM(P) \
	VPUNPCKHQDQ X10, X8, X11; \
	VPUNPCKLQDQ X10, X8, X8; \
	VCVTPH2PS   X11, Y11; \
	VCVTPH2PS   X8, Y8; \
	VMULPS      Y25, Y11, P; \
	VMULPS      Y24, Y8, Y8

// LV_Q41ROW sets P to the row's 8 products sumi*(dx*dy), M to its m*s.
#define LV_Q41ROW(R, P, M) \
	LV_LOAD4(R, 40); \
	LV_SCALES16; \
	LV_DM(M); \
	LV_NIBS(Z0); \
	VPANDD LV_LUT(DX), Z9, Z9; \
	LV_DOT0(Z16, Z4); \
	LV_NIBS(Z1); \
	VPANDD LV_LUT(DX), Z9, Z9; \
	LV_DOT0(Z17, Z5); \
	LV_NIBS(Z2); \
	VPANDD LV_LUT(DX), Z9, Z9; \
	LV_DOT0(Z18, Z6); \
	LV_NIBS(Z3); \
	VPANDD LV_LUT(DX), Z9, Z9; \
	LV_DOT0(Z19, Z7); \
	LV_REDUCE; \
	VMULPS Y8, Y4, P

// LV_Q51ROW is LV_Q41ROW for Q5_1.
#define LV_Q51ROW(R, P, M) \
	LV_LOAD4(R, 48); \
	LV_SCALES16; \
	LV_DM(M); \
	LV_NIBS(Z0); \
	VPANDD LV_LUT(DX), Z9, Z9; \
	LV_HIGH(R, 4, 28); \
	LV_DOT0(Z16, Z4); \
	LV_NIBS(Z1); \
	VPANDD LV_LUT(DX), Z9, Z9; \
	LV_HIGH(R, 52, 76); \
	LV_DOT0(Z17, Z5); \
	LV_NIBS(Z2); \
	VPANDD LV_LUT(DX), Z9, Z9; \
	LV_HIGH(R, 100, 124); \
	LV_DOT0(Z18, Z6); \
	LV_NIBS(Z3); \
	VPANDD LV_LUT(DX), Z9, Z9; \
	LV_HIGH(R, 148, 172); \
	LV_DOT0(Z19, Z7); \
	LV_REDUCE; \
	VMULPS Y8, Y4, P

// LV_STORE2 writes the 4 sums X28 and the 4 summs X29 to res.
#define LV_STORE2 \
	MOVQ    res+40(FP), AX; \
	VMOVUPS X28, (AX); \
	VMOVUPS X29, 16(AX); \
	VZEROUPPER

// func legacyQ4_1Rows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[8]float32)
TEXT ·legacyQ4_1Rows4VNNI(SB), NOSPLIT, $0-48
	MOVQ   tab+0(FP), DX
	MOVQ   w+8(FP), R8
	MOVQ   wstride+16(FP), BX
	MOVQ   a+24(FP), DI
	MOVQ   groups+32(FP), CX
	LV_SETUP
	VXORPS X28, X28, X28
	VXORPS X29, X29, X29

lvq41loop:
	LV_Q8_1ACT
	LV_Q41ROW(R8, Y12, Y20)
	LV_Q41ROW(R9, Y13, Y21)
	LV_Q41ROW(R10, Y14, Y22)
	LV_Q41ROW(R11, Y15, Y23)
	LV_TADD(Y12, Y13, Y14, Y15, X12, X13, X14, X15, X28)
	LV_TADD(Y20, Y21, Y22, Y23, X20, X21, X22, X23, X29)
	LV_NEXT(160)
	ADDQ $288, DI
	DECQ CX
	JNZ  lvq41loop

	LV_STORE2
	RET

// func legacyQ5_1Rows4VNNI(tab *legacyVNNITab, w *byte, wstride int, a *byte, groups int, res *[8]float32)
TEXT ·legacyQ5_1Rows4VNNI(SB), NOSPLIT, $0-48
	MOVQ   tab+0(FP), DX
	MOVQ   w+8(FP), R8
	MOVQ   wstride+16(FP), BX
	MOVQ   a+24(FP), DI
	MOVQ   groups+32(FP), CX
	LV_SETUP
	VXORPS X28, X28, X28
	VXORPS X29, X29, X29

lvq51loop:
	LV_Q8_1ACT
	LV_Q51ROW(R8, Y12, Y20)
	LV_Q51ROW(R9, Y13, Y21)
	LV_Q51ROW(R10, Y14, Y22)
	LV_Q51ROW(R11, Y15, Y23)
	LV_TADD(Y12, Y13, Y14, Y15, X12, X13, X14, X15, X28)
	LV_TADD(Y20, Y21, Y22, Y23, X20, X21, X22, X23, X29)
	LV_NEXT(192)
	ADDQ $288, DI
	DECQ CX
	JNZ  lvq51loop

	LV_STORE2
	RET
