//go:build !purego

#include "textflag.h"

// AVX2 dot products of K-quant weight rows with Q8_K activation rows, ports
// of llama.cpp's ggml_vec_dot_q{2,3,4,5,6}_K_q8_K (ggml-cpu/arch/x86/quants.c,
// AVX2 branch). Differences from llama.cpp, all to match the Go kernels bit
// for bit: each super-block's integer sum is reduced to one int32 (exact)
// before conversion to float, and the per-block float work is scalar in the
// Go kernels' order. Block scales are applied with VPSHUFB from int16
// scales laid out even-index/odd-index (kquantEvenOdd), so one 32-byte
// mask (kquantShufW row m: int16 lane m broadcast within each 128-bit lane)
// gives the scale of the first 16 values in the low lane and of the next 16
// in the high lane.
//
// Q8_K block: d float32 at 0, qs [256]int8 at 4, bsums [16]int16 at 260.

// kquantShufW row m (32 bytes): bytes 2m, 2m+1 repeated.
DATA ·kquantShufW+0(SB)/8, $0x0100010001000100
DATA ·kquantShufW+8(SB)/8, $0x0100010001000100
DATA ·kquantShufW+16(SB)/8, $0x0100010001000100
DATA ·kquantShufW+24(SB)/8, $0x0100010001000100
DATA ·kquantShufW+32(SB)/8, $0x0302030203020302
DATA ·kquantShufW+40(SB)/8, $0x0302030203020302
DATA ·kquantShufW+48(SB)/8, $0x0302030203020302
DATA ·kquantShufW+56(SB)/8, $0x0302030203020302
DATA ·kquantShufW+64(SB)/8, $0x0504050405040504
DATA ·kquantShufW+72(SB)/8, $0x0504050405040504
DATA ·kquantShufW+80(SB)/8, $0x0504050405040504
DATA ·kquantShufW+88(SB)/8, $0x0504050405040504
DATA ·kquantShufW+96(SB)/8, $0x0706070607060706
DATA ·kquantShufW+104(SB)/8, $0x0706070607060706
DATA ·kquantShufW+112(SB)/8, $0x0706070607060706
DATA ·kquantShufW+120(SB)/8, $0x0706070607060706
DATA ·kquantShufW+128(SB)/8, $0x0908090809080908
DATA ·kquantShufW+136(SB)/8, $0x0908090809080908
DATA ·kquantShufW+144(SB)/8, $0x0908090809080908
DATA ·kquantShufW+152(SB)/8, $0x0908090809080908
DATA ·kquantShufW+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ·kquantShufW+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ·kquantShufW+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ·kquantShufW+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ·kquantShufW+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ·kquantShufW+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ·kquantShufW+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ·kquantShufW+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ·kquantShufW+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA ·kquantShufW+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA ·kquantShufW+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA ·kquantShufW+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL ·kquantShufW(SB), RODATA|NOPTR, $256

// kquantEvenOdd: bytes 0, 2, ..., 14, 1, 3, ..., 15.
DATA ·kquantEvenOdd+0(SB)/8, $0x0e0c0a0806040200
DATA ·kquantEvenOdd+8(SB)/8, $0x0f0d0b0907050301
GLOBL ·kquantEvenOdd(SB), RODATA|NOPTR, $16

// BCASTB sets every byte of y to the byte value c (via the 32-bit register r).
#define BCASTB(c, r, x, y) \
	MOVL  $c, r; \
	VMOVD r, x; \
	VPBROADCASTD x, y

// HSUM1 sets lane 0 of x (the low half of y) to the sum of y's 8 int32 lanes.
#define HSUM1(y, x, t) \
	VEXTRACTI128 $1, y, t; \
	VPADDD t, x, x; \
	VPSHUFD $0x4e, x, t; \
	VPADDD t, x, x; \
	VPSHUFD $0xb1, x, t; \
	VPADDD t, x, x

// HSUM2 sets lanes 0 and 1 of xa to the sums of the 8 int32 lanes of ya
// and yb (xb is the low half of yb; both are clobbered).
#define HSUM2(ya, xa, yb, xb, t) \
	VEXTRACTI128 $1, ya, t; \
	VPADDD t, xa, xa; \
	VEXTRACTI128 $1, yb, t; \
	VPADDD t, xb, xb; \
	VPHADDD xb, xa, xa; \
	VPHADDD xa, xa, xa

// K4SCALES unpacks the 12 scale bytes of a Q4_K/Q5_K block at off(SI) into
// X0 as 16 bytes: scales 0..7 then mins 0..7 (llama.cpp's utmp code).
#define K4SCALES(off) \
	MOVL off+0(SI), AX; \
	MOVL off+4(SI), BX; \
	MOVL off+8(SI), DX; \
	MOVL DX, R8; \
	SHRL $4, R8; \
	ANDL $0x0f0f0f0f, R8; \
	MOVL BX, R9; \
	SHRL $2, R9; \
	ANDL $0x30303030, R9; \
	ORL  R9, R8; \
	MOVL BX, R10; \
	ANDL $0x3f3f3f3f, R10; \
	MOVL DX, R11; \
	ANDL $0x0f0f0f0f, R11; \
	MOVL AX, R9; \
	SHRL $2, R9; \
	ANDL $0x30303030, R9; \
	ORL  R9, R11; \
	ANDL $0x3f3f3f3f, AX; \
	SHLQ $32, R11; \
	ORQ  R11, AX; \
	SHLQ $32, R8; \
	ORQ  R8, R10; \
	VMOVQ AX, X0; \
	VPINSRQ $1, R10, X0, X0

// Q4K_CHUNK: 64 values of a Q4_K block; qs: 32 bytes of nibbles; q8lo, q8hi:
// their activations; shl, shh: kquantShufW rows (byte offsets) of their
// scales. Y4 = int16 scales 0..7 in both lanes, Y13 = 0x0f bytes; Y5 +=.
#define Q4K_CHUNK(qs, q8lo, q8hi, shl, shh) \
	VMOVDQU qs(SI), Y8; \
	VPSRLW  $4, Y8, Y9; \
	VPAND   Y13, Y8, Y8; \
	VPAND   Y13, Y9, Y9; \
	VPMADDUBSW q8lo(DI), Y8, Y8; \
	VPMADDUBSW q8hi(DI), Y9, Y9; \
	VPSHUFB ·kquantShufW+shl(SB), Y4, Y6; \
	VPSHUFB ·kquantShufW+shh(SB), Y4, Y7; \
	VPMADDWD Y6, Y8, Y8; \
	VPMADDWD Y7, Y9, Y9; \
	VPADDD  Y8, Y5, Y5; \
	VPADDD  Y9, Y5, Y5

// func dotQ4KQ8KAVX2(x, y *byte, nb int) float32
//
// Q4_K block (144 bytes): d fp16 at 0, dmin fp16 at 2, scales at 4, qs at 16.
// Per block, as dotQ4KQ8K: sums += (d*yd)*float(isum);
// sumf -= (dmin*yd)*float(summs); result sumf + sums.
TEXT ·dotQ4KQ8KAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS X14, X14, X14 // sums
	VXORPS X15, X15, X15 // sumf
	BCASTB(0x0f0f0f0f, AX, X13, Y13)

q4kLoop:
	K4SCALES(4)
	VPMOVZXBW X0, Y0               // int16: scales 0..7 | mins 0..7
	VMOVDQU   260(DI), Y1          // bsums
	VEXTRACTI128 $1, Y1, X2
	VPHADDW   X2, X1, X1           // bsums[2i] + bsums[2i+1]
	VEXTRACTI128 $1, Y0, X3
	VPMADDWD  X3, X1, X1           // mins * bsums, 4 int32
	VINSERTI128 $1, X0, Y0, Y4     // scales in both lanes
	VPXOR     Y5, Y5, Y5

	Q4K_CHUNK(16, 4, 36, 0, 32)
	Q4K_CHUNK(48, 68, 100, 64, 96)
	Q4K_CHUNK(80, 132, 164, 128, 160)
	Q4K_CHUNK(112, 196, 228, 192, 224)

	HSUM2(Y5, X5, Y1, X1, X6)      // X5 = [isum, summs, ...]
	VCVTDQ2PS X5, X5
	VMOVD     0(SI), X6
	VCVTPH2PS X6, X6               // [d, dmin, 0, 0]
	VBROADCASTSS 0(DI), X7
	VMULPS    X7, X6, X6
	VMULPS    X6, X5, X5
	VADDSS    X5, X14, X14
	VMOVSHDUP X5, X6
	VSUBSS    X6, X15, X15

	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q4kLoop

	VADDSS X14, X15, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q5K_CHUNK is Q4K_CHUNK with 5th bits: Y10 = qh, Y12 = 0x10 bytes;
// opl $nl and oph $nh move the chunk's qh bits to bit 4.
#define Q5K_CHUNK(qs, q8lo, q8hi, shl, shh, opl, nl, oph, nh) \
	VMOVDQU qs(SI), Y8; \
	VPSRLW  $4, Y8, Y9; \
	VPAND   Y13, Y8, Y8; \
	VPAND   Y13, Y9, Y9; \
	opl     $nl, Y10, Y6; \
	oph     $nh, Y10, Y7; \
	VPAND   Y12, Y6, Y6; \
	VPAND   Y12, Y7, Y7; \
	VPOR    Y6, Y8, Y8; \
	VPOR    Y7, Y9, Y9; \
	VPMADDUBSW q8lo(DI), Y8, Y8; \
	VPMADDUBSW q8hi(DI), Y9, Y9; \
	VPSHUFB ·kquantShufW+shl(SB), Y4, Y6; \
	VPSHUFB ·kquantShufW+shh(SB), Y4, Y7; \
	VPMADDWD Y6, Y8, Y8; \
	VPMADDWD Y7, Y9, Y9; \
	VPADDD  Y8, Y5, Y5; \
	VPADDD  Y9, Y5, Y5

// func dotQ5KQ8KAVX2(x, y *byte, nb int) float32
//
// Q5_K block (176 bytes): d at 0, dmin at 2, scales at 4, qh at 16, qs at
// 48. Float order as dotQ4KQ8KAVX2.
TEXT ·dotQ5KQ8KAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS X14, X14, X14
	VXORPS X15, X15, X15
	BCASTB(0x0f0f0f0f, AX, X13, Y13)
	BCASTB(0x10101010, AX, X12, Y12)

q5kLoop:
	K4SCALES(4)
	VPMOVZXBW X0, Y0
	VMOVDQU   260(DI), Y1
	VEXTRACTI128 $1, Y1, X2
	VPHADDW   X2, X1, X1
	VEXTRACTI128 $1, Y0, X3
	VPMADDWD  X3, X1, X1
	VINSERTI128 $1, X0, Y0, Y4
	VPXOR     Y5, Y5, Y5
	VMOVDQU   16(SI), Y10

	Q5K_CHUNK(48, 4, 36, 0, 32, VPSLLW, 4, VPSLLW, 3)
	Q5K_CHUNK(80, 68, 100, 64, 96, VPSLLW, 2, VPSLLW, 1)
	Q5K_CHUNK(112, 132, 164, 128, 160, VPSRLW, 0, VPSRLW, 1)
	Q5K_CHUNK(144, 196, 228, 192, 224, VPSRLW, 2, VPSRLW, 3)

	HSUM2(Y5, X5, Y1, X1, X6)
	VCVTDQ2PS X5, X5
	VMOVD     0(SI), X6
	VCVTPH2PS X6, X6
	VBROADCASTSS 0(DI), X7
	VMULPS    X7, X6, X6
	VMULPS    X6, X5, X5
	VADDSS    X5, X14, X14
	VMOVSHDUP X5, X6
	VSUBSS    X6, X15, X15

	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q5kLoop

	VADDSS X14, X15, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q6K_PART: 32 values of a Q6_K half-block: Y8 = their low 4 bits, Y7 =
// their high 2 bits at bits 4..5; q8: activations, r: kquantShufW row of
// the scales. Y3 = even/odd int16 scales; Y0 +=.
#define Q6K_PART(q8, r) \
	VPOR    Y7, Y8, Y8; \
	VPMADDUBSW q8(DI), Y8, Y8; \
	VPSHUFB ·kquantShufW+r(SB), Y3, Y9; \
	VPMADDWD Y9, Y8, Y8; \
	VPADDD  Y8, Y0, Y0

// Q6K_HALF: 128 values of a Q6_K block: ql at ql1 and ql1+32, qh at qh,
// activations from q8, scales from kquantShufW rows r..r+3 (byte offsets
// r, r+32, ...). Y12 = 0x30 bytes, Y13 = 0x0f bytes.
#define Q6K_HALF(ql1, ql2, qh, q8a, q8b, q8c, q8d, ra, rb, rc, rd) \
	VMOVDQU ql1(SI), Y4; \
	VMOVDQU ql2(SI), Y5; \
	VMOVDQU qh(SI), Y6; \
	VPSLLW  $4, Y6, Y7; \
	VPAND   Y12, Y7, Y7; \
	VPAND   Y13, Y4, Y8; \
	Q6K_PART(q8a, ra); \
	VPSLLW  $2, Y6, Y7; \
	VPAND   Y12, Y7, Y7; \
	VPAND   Y13, Y5, Y8; \
	Q6K_PART(q8b, rb); \
	VPAND   Y12, Y6, Y7; \
	VPSRLW  $4, Y4, Y8; \
	VPAND   Y13, Y8, Y8; \
	Q6K_PART(q8c, rc); \
	VPSRLW  $2, Y6, Y7; \
	VPAND   Y12, Y7, Y7; \
	VPSRLW  $4, Y5, Y8; \
	VPAND   Y13, Y8, Y8; \
	Q6K_PART(q8d, rd)

// func dotQ6KQ8KAVX2(x, y *byte, nb int) float32
//
// Q6_K block (210 bytes): ql at 0, qh at 128, scales [16]int8 at 192, d fp16
// at 208. isum = Σ scale*q*q8 - 32*Σ scale*bsums (llama.cpp's offset
// trick); per block, as dotQ6KQ8K: sumf += (d*yd)*float(isum).
TEXT ·dotQ6KQ8KAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS X14, X14, X14
	BCASTB(0x0f0f0f0f, AX, X13, Y13)
	BCASTB(0x30303030, AX, X12, Y12)

q6kLoop:
	VMOVDQU   192(SI), X2
	VPMOVSXBW X2, Y1
	VPMADDWD  260(DI), Y1, Y1
	VPSLLD    $5, Y1, Y1           // 32 * scale * bsums
	VPSHUFB   ·kquantEvenOdd(SB), X2, X2
	VPMOVSXBW X2, Y3
	VPXOR     Y0, Y0, Y0

	Q6K_HALF(0, 32, 128, 4, 36, 68, 100, 0, 32, 64, 96)
	Q6K_HALF(64, 96, 160, 132, 164, 196, 228, 128, 160, 192, 224)

	VPSUBD    Y1, Y0, Y0
	HSUM1(Y0, X0, X1)
	VCVTDQ2PS X0, X0
	MOVWLZX   208(SI), AX
	VMOVD     AX, X1
	VCVTPH2PS X1, X1
	VMULSS    0(DI), X1, X1
	VMULSS    X1, X0, X0
	VADDSS    X0, X14, X14

	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q6kLoop

	VZEROUPPER
	MOVSS X14, ret+24(FP)
	RET

// Q2K_PART: 32 values of a Q2_K block: bits (Y4 >> n) & 3, activations q8,
// kquantShufW row r. Y3 = even/odd int16 scales, Y12 = 0x03 bytes; Y5 +=.
#define Q2K_PART(n, q8, r) \
	VPSRLW  $n, Y4, Y8; \
	VPAND   Y12, Y8, Y8; \
	VPMADDUBSW q8(DI), Y8, Y8; \
	VPSHUFB ·kquantShufW+r(SB), Y3, Y9; \
	VPMADDWD Y9, Y8, Y8; \
	VPADDD  Y8, Y5, Y5

// func dotQ2KQ8KAVX2(x, y *byte, nb int) float32
//
// Q2_K block (84 bytes): scales at 0 (low nibble scale, high nibble min),
// qs at 16, d fp16 at 80, dmin fp16 at 82. Per block, as dotQ2KQ8K:
// sumf += (yd*d)*float(isum) - (yd*dmin)*float(summs).
TEXT ·dotQ2KQ8KAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS X14, X14, X14
	BCASTB(0x0f0f0f0f, AX, X13, Y13)
	BCASTB(0x03030303, AX, X12, Y12)

q2kLoop:
	VMOVDQU   0(SI), X0
	VPSRLW    $4, X0, X1
	VPAND     X13, X1, X1
	VPMOVZXBW X1, Y1               // mins
	VPMADDWD  260(DI), Y1, Y1      // mins * bsums, 8 int32
	VPAND     X13, X0, X0
	VPSHUFB   ·kquantEvenOdd(SB), X0, X0
	VPMOVZXBW X0, Y3
	VPXOR     Y5, Y5, Y5

	VMOVDQU 16(SI), Y4
	Q2K_PART(0, 4, 0)
	Q2K_PART(2, 36, 32)
	Q2K_PART(4, 68, 64)
	Q2K_PART(6, 100, 96)
	VMOVDQU 48(SI), Y4
	Q2K_PART(0, 132, 128)
	Q2K_PART(2, 164, 160)
	Q2K_PART(4, 196, 192)
	Q2K_PART(6, 228, 224)

	HSUM2(Y5, X5, Y1, X1, X6)      // X5 = [isum, summs, ...]
	VCVTDQ2PS X5, X5
	VMOVD     80(SI), X6
	VCVTPH2PS X6, X6               // [d, dmin, 0, 0]
	VBROADCASTSS 0(DI), X7
	VMULPS    X7, X6, X6
	VMULPS    X6, X5, X5
	VMOVSHDUP X5, X6
	VSUBSS    X6, X5, X5
	VADDSS    X5, X14, X14

	ADDQ $84, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q2kLoop

	VZEROUPPER
	MOVSS X14, ret+24(FP)
	RET

// Q3K_SCALES sets the int16 lanes of Y3 to the 16 scales (6-bit, minus 32)
// of the Q3_K block at SI in the even/odd order of kquantShufW
// (dequantize_row_q3_K's aux/kmask code), with AX, BX, DX, R8-R10 and X0;
// Y13 holds 0x20 bytes.
#define Q3K_SCALES \
	MOVL 96(SI), AX \
	MOVL 100(SI), BX \
	MOVL 104(SI), DX \
	MOVL AX, R8 \
	ANDL $0x0f0f0f0f, R8 \
	MOVL DX, R9 \
	SHLL $4, R9 \
	ANDL $0x30303030, R9 \
	ORL  R9, R8 \
	MOVL BX, R10 \
	ANDL $0x0f0f0f0f, R10 \
	MOVL DX, R9 \
	SHLL $2, R9 \
	ANDL $0x30303030, R9 \
	ORL  R9, R10 \
	SHRL $4, AX \
	ANDL $0x0f0f0f0f, AX \
	MOVL DX, R9 \
	ANDL $0x30303030, R9 \
	ORL  R9, AX \
	SHRL $4, BX \
	ANDL $0x0f0f0f0f, BX \
	SHRL $2, DX \
	ANDL $0x30303030, DX \
	ORL  DX, BX \
	SHLQ $32, R10 \
	ORQ  R10, R8 \
	SHLQ $32, BX \
	ORQ  BX, AX \
	VMOVQ   R8, X0 \
	VPINSRQ $1, AX, X0, X0 \
	VPSUBB  X13, X0, X0 \
	VPSHUFB ·kquantEvenOdd(SB), X0, X0 \
	VPMOVSXBW X0, Y3

// Q3K_GROUP: 32 values of a Q3_K block (group g): low bits (Y4 >> qn) & 3,
// high bit g of Y10 (hmask) moved to bit 2 by hop $hn; value = low - 4 when
// the high bit is clear, as llama.cpp: maddubs(low, q8) - maddubs(4*!h, q8).
// Y3 = even/odd int16 scales, Y11 = 0x04 bytes, Y12 = 0x03 bytes; Y5 +=.
#define Q3K_GROUP(qn, hop, hn, q8, r) \
	VPSRLW  $qn, Y4, Y8; \
	VPAND   Y12, Y8, Y8; \
	hop     $hn, Y10, Y9; \
	VPANDN  Y11, Y9, Y9; \
	VMOVDQU q8(DI), Y7; \
	VPMADDUBSW Y7, Y8, Y8; \
	VPMADDUBSW Y7, Y9, Y9; \
	VPSUBW  Y9, Y8, Y8; \
	VPSHUFB ·kquantShufW+r(SB), Y3, Y6; \
	VPMADDWD Y6, Y8, Y8; \
	VPADDD  Y8, Y5, Y5

// func dotQ3KQ8KAVX2(x, y *byte, nb int) float32
//
// Q3_K block (110 bytes): hmask at 0, qs at 32, scales (12 bytes, 16 6-bit
// values offset by 32) at 96, d fp16 at 108. Per block, as dotQ3KQ8K:
// sumf += (d*yd)*float(isum).
TEXT ·dotQ3KQ8KAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS X14, X14, X14
	BCASTB(0x20202020, AX, X13, Y13)
	BCASTB(0x03030303, AX, X12, Y12)
	BCASTB(0x04040404, AX, X11, Y11)

q3kLoop:
	Q3K_SCALES
	VPXOR   Y5, Y5, Y5
	VMOVDQU 0(SI), Y10

	VMOVDQU 32(SI), Y4
	Q3K_GROUP(0, VPSLLW, 2, 4, 0)
	Q3K_GROUP(2, VPSLLW, 1, 36, 32)
	Q3K_GROUP(4, VPSRLW, 0, 68, 64)
	Q3K_GROUP(6, VPSRLW, 1, 100, 96)
	VMOVDQU 64(SI), Y4
	Q3K_GROUP(0, VPSRLW, 2, 132, 128)
	Q3K_GROUP(2, VPSRLW, 3, 164, 160)
	Q3K_GROUP(4, VPSRLW, 4, 196, 192)
	Q3K_GROUP(6, VPSRLW, 5, 228, 224)

	HSUM1(Y5, X5, X6)
	VCVTDQ2PS X5, X5
	MOVWLZX   108(SI), AX
	VMOVD     AX, X6
	VCVTPH2PS X6, X6
	VMULSS    0(DI), X6, X6
	VMULSS    X6, X5, X5
	VADDSS    X5, X14, X14

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q3kLoop

	VZEROUPPER
	MOVSS X14, ret+24(FP)
	RET

// Q3K_UNPACK_GROUP writes group k (32 values) of a Q3_K block as signed
// bytes low - 4*!h (in -4..3) at 32k(DI) and its int16 scale vector (the
// dot's VPMADDWD operand) at 256+32k(DI); registers as Q3K_GROUP.
#define Q3K_UNPACK_GROUP(qn, hop, hn, k) \
	VPSRLW  $qn, Y4, Y8; \
	VPAND   Y12, Y8, Y8; \
	hop     $hn, Y10, Y9; \
	VPANDN  Y11, Y9, Y9; \
	VPSUBB  Y9, Y8, Y8; \
	VMOVDQU Y8, (32*k)(DI); \
	VPSHUFB ·kquantShufW+(32*k)(SB), Y3, Y6; \
	VMOVDQU Y6, (256+32*k)(DI)

// func gemmQ3KUnpack(x *byte, nb int, buf *byte)
//
// Expands nb Q3_K super-blocks at x into the unpacked records of
// gemmIQUnpackedR2C1/C2 (simd_gemm_iq_amd64.s): 256 signed weight bytes,
// 8 int16 scale vectors, fp16 d as a float32 at 512; 544 bytes each.
TEXT ·gemmQ3KUnpack(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ buf+16(FP), DI
	BCASTB(0x20202020, AX, X13, Y13)
	BCASTB(0x03030303, AX, X12, Y12)
	BCASTB(0x04040404, AX, X11, Y11)

q3kUnpackLoop:
	Q3K_SCALES
	VMOVDQU 0(SI), Y10

	VMOVDQU 32(SI), Y4
	Q3K_UNPACK_GROUP(0, VPSLLW, 2, 0)
	Q3K_UNPACK_GROUP(2, VPSLLW, 1, 1)
	Q3K_UNPACK_GROUP(4, VPSRLW, 0, 2)
	Q3K_UNPACK_GROUP(6, VPSRLW, 1, 3)
	VMOVDQU 64(SI), Y4
	Q3K_UNPACK_GROUP(0, VPSRLW, 2, 4)
	Q3K_UNPACK_GROUP(2, VPSRLW, 3, 5)
	Q3K_UNPACK_GROUP(4, VPSRLW, 4, 6)
	Q3K_UNPACK_GROUP(6, VPSRLW, 5, 7)

	MOVWLZX   108(SI), AX
	VMOVD     AX, X6
	VCVTPH2PS X6, X6
	VMOVSS    X6, 512(DI)

	ADDQ $110, SI
	ADDQ $544, DI
	DECQ CX
	JNZ  q3kUnpackLoop

	VZEROUPPER
	RET
