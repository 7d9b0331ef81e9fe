//go:build !purego

#include "textflag.h"

// Gemm tiles of the 32-value formats Q5_0, IQ4_NL, MXFP4 (Q8_0 activations),
// Q4_1 and Q5_1 (Q8_1): one weight row against 4 activation rows, column c's
// blocks at a + c*astride, its result to out[c*ostride]. Each weight block
// is unpacked once for the 4 columns; the 4 exact block sums are reduced
// together (VPHADDD) into one lane per column, and every lane's float
// steps are those of the Go reference in the same order (a lane-wise
// VMULPS/VADDPS is the scalar operation), so each result is bit-identical
// to the one-row dot.

DATA lgNib<>+0(SB)/4, $0x0f0f0f0f
GLOBL lgNib<>(SB), RODATA|NOPTR, $4
DATA lgOnesW<>+0(SB)/4, $0x00010001
GLOBL lgOnesW<>(SB), RODATA|NOPTR, $4
DATA lgSixteens<>+0(SB)/4, $0x10101010
GLOBL lgSixteens<>(SB), RODATA|NOPTR, $4
DATA lgShuf<>+0(SB)/8, $0x0000000000000000
DATA lgShuf<>+8(SB)/8, $0x0101010101010101
DATA lgShuf<>+16(SB)/8, $0x0202020202020202
DATA lgShuf<>+24(SB)/8, $0x0303030303030303
GLOBL lgShuf<>(SB), RODATA|NOPTR, $32
DATA lgBits<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA lgBits<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA lgBits<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA lgBits<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL lgBits<>(SB), RODATA|NOPTR, $32
DATA lgNLValues<>+0(SB)/8, $0xf6eaddcfbfad9881 // -127 -104 -83 -65 -49 -35 -22 -10
DATA lgNLValues<>+8(SB)/8, $0x7159453526190d01 // 1 13 25 38 53 69 89 113
GLOBL lgNLValues<>(SB), RODATA|NOPTR, $16

// LG_NIB32 sets Y12 to the 32 4-bit quants at qo(SI): low nibbles (values
// 0..15) in the low lane, high nibbles (16..31) in the high lane.
// Y11 = bytes 0x0f.
#define LG_NIB32(qo) \
	VMOVDQU     qo(SI), X12; \
	VPSRLW      $4, X12, X13; \
	VINSERTI128 $1, X13, Y12, Y12; \
	VPAND       Y11, Y12, Y12

// LG_HIB32 ORs 0x10 into the bytes of Y12 whose bit is set in the uint32
// at ho(SI). Y8 = all ones, Y10 = bytes 0x10.
#define LG_HIB32(ho) \
	VPBROADCASTD ho(SI), Y13; \
	VPSHUFB      lgShuf<>(SB), Y13, Y13; \
	VPOR         lgBits<>(SB), Y13, Y13; \
	VPCMPEQB     Y8, Y13, Y13; \
	VPAND        Y10, Y13, Y13; \
	VPOR         Y13, Y12, Y12

// LG_UCOL sets acc to the 8 int32 partial sums of the unsigned weight
// bytes Y12 times the 32 activations at q8 (Y9 = int16 ones).
#define LG_UCOL(q8, acc) \
	VPMADDUBSW q8, Y12, acc; \
	VPMADDWD   Y9, acc, acc

// LG_Q5COL is LG_UCOL for Q5_0's q-16: Σ q*y - 16*Σ y in int16 pairs.
#define LG_Q5COL(q8, acc) \
	VMOVDQU    q8, Y13; \
	VPMADDUBSW Y13, Y12, acc; \
	VPMADDUBSW Y13, Y10, Y14; \
	VPSUBW     Y14, acc, acc; \
	VPMADDWD   Y9, acc, acc

// LG_NLCOL: the int16 weights Y12 (values 0..15), Y13 (16..31) times the
// activations at q8lo, q8hi, sign-extended.
#define LG_NLCOL(q8lo, q8hi, acc) \
	VPMOVSXBW q8lo, Y14; \
	VPMADDWD  Y14, Y12, acc; \
	VPMOVSXBW q8hi, Y14; \
	VPMADDWD  Y14, Y13, Y14; \
	VPADDD    Y14, acc, acc

// LG_NLUNPACK maps the nibbles at qo(SI) through the codebook Y10 and
// sign-extends them: Y12 values 0..15, Y13 16..31.
#define LG_NLUNPACK(qo) \
	LG_NIB32(qo); \
	VPSHUFB      Y12, Y10, Y12; \
	VEXTRACTI128 $1, Y12, X13; \
	VPMOVSXBW    X12, Y12; \
	VPMOVSXBW    X13, Y13

// LG_REDUCE4 leaves the float32 of the 4 columns' block sums (Y4..Y7) in
// the lanes of X4.
#define LG_REDUCE4 \
	VPHADDD      Y5, Y4, Y4; \
	VPHADDD      Y7, Y6, Y6; \
	VPHADDD      Y6, Y4, Y4; \
	VEXTRACTI128 $1, Y4, X5; \
	VPADDD       X5, X4, X4; \
	VCVTDQ2PS    X4, X4

// LG_FP16x4 sets X to the float32 of the fp16 at off of the 4 columns'
// blocks (column c at DI + c*R13, R9 = 3*R13).
#define LG_FP16x4(off, X) \
	MOVWLZX   off(DI), AX; \
	VMOVD     AX, X; \
	VPINSRW   $1, off(DI)(R13*1), X, X; \
	VPINSRW   $2, off(DI)(R13*2), X, X; \
	VPINSRW   $3, off(DI)(R9*1), X, X; \
	VCVTPH2PS X, X

// LG_FP16B sets X to the fp16 at off(SI) as float32 in every lane.
#define LG_FP16B(off, X) \
	MOVWLZX      off(SI), AX; \
	VMOVD        AX, X; \
	VCVTPH2PS    X, X; \
	VBROADCASTSS X, X

// LG_SETUP loads the arguments and the constants and zeroes the sums.
#define LG_ARGS \
	MOVQ         w+0(FP), SI; \
	MOVQ         a+8(FP), DI; \
	MOVQ         astride+16(FP), R13; \
	MOVQ         nb+24(FP), CX; \
	LEAQ         (R13)(R13*2), R9; \
	VPBROADCASTD lgOnesW<>(SB), Y9; \
	VPBROADCASTD lgNib<>(SB), Y11; \
	VXORPS       X0, X0, X0; \
	VXORPS       X1, X1, X1

// LG_STORE writes the lanes of X0 to out[c*ostride].
#define LG_STORE \
	MOVQ      out+32(FP), R11; \
	MOVQ      ostride+40(FP), R12; \
	SHLQ      $2, R12; \
	VMOVSS    X0, (R11); \
	ADDQ      R12, R11; \
	VEXTRACTPS $1, X0, (R11); \
	ADDQ      R12, R11; \
	VEXTRACTPS $2, X0, (R11); \
	ADDQ      R12, R11; \
	VEXTRACTPS $3, X0, (R11); \
	VZEROUPPER

// func q5_0Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
// sumf += sumi * (dx*dy), block by block.
TEXT ·q5_0Gemm4AVX2(SB), NOSPLIT, $0-48
	LG_ARGS
	VPBROADCASTD lgSixteens<>(SB), Y10
	VPCMPEQB     Y8, Y8, Y8

q50g4:
	LG_NIB32(6)
	LG_HIB32(2)
	LG_Q5COL(2(DI), Y4)
	LG_Q5COL(2(DI)(R13*1), Y5)
	LG_Q5COL(2(DI)(R13*2), Y6)
	LG_Q5COL(2(DI)(R9*1), Y7)
	LG_REDUCE4
	LG_FP16B(0, X3)
	LG_FP16x4(0, X2)
	VMULPS X2, X3, X2 // dx*dy
	VMULPS X2, X4, X4
	VADDPS X4, X0, X0
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q50g4

	LG_STORE
	RET

// func iq4nlGemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
// sumf += (dy*dx) * sumi, block by block.
TEXT ·iq4nlGemm4AVX2(SB), NOSPLIT, $0-48
	LG_ARGS
	VBROADCASTI128 lgNLValues<>(SB), Y10

nlg4:
	LG_NLUNPACK(2)
	LG_NLCOL(2(DI), 18(DI), Y4)
	LG_NLCOL(2(DI)(R13*1), 18(DI)(R13*1), Y5)
	LG_NLCOL(2(DI)(R13*2), 18(DI)(R13*2), Y6)
	LG_NLCOL(2(DI)(R9*1), 18(DI)(R9*1), Y7)
	LG_REDUCE4
	LG_FP16B(0, X3)
	LG_FP16x4(0, X2)
	VMULPS X3, X2, X2 // dy*dx
	VMULPS X4, X2, X4
	VADDPS X4, X0, X0
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  nlg4

	LG_STORE
	RET

// LG_E8M0 sets DX to the bits of ggml_e8m0_to_fp32_half of the byte at
// (SI): (e-1)<<23, or (e+1)<<21 for e < 2.
#define LG_E8M0 \
	MOVBLZX (SI), AX; \
	LEAL    1(AX), R8; \
	SHLL    $21, R8; \
	LEAL    -1(AX), DX; \
	SHLL    $23, DX; \
	CMPL    AX, $2; \
	CMOVLCS R8, DX

// func mxfp4Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
// sumf += (dy*2^(e-128)) * sumi, block by block.
TEXT ·mxfp4Gemm4AVX2(SB), NOSPLIT, $0-48
	LG_ARGS
	VBROADCASTI128 ·kvaluesFP4(SB), Y10

mxg4:
	LG_NLUNPACK(1)
	LG_NLCOL(2(DI), 18(DI), Y4)
	LG_NLCOL(2(DI)(R13*1), 18(DI)(R13*1), Y5)
	LG_NLCOL(2(DI)(R13*2), 18(DI)(R13*2), Y6)
	LG_NLCOL(2(DI)(R9*1), 18(DI)(R9*1), Y7)
	LG_REDUCE4
	LG_E8M0
	VMOVD        DX, X3
	VBROADCASTSS X3, X3
	LG_FP16x4(0, X2)
	VMULPS X3, X2, X2 // dy*scale
	VMULPS X4, X2, X4
	VADDPS X4, X0, X0
	ADDQ $17, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  mxg4

	LG_STORE
	RET

// LG_MIN_END finishes a Q4_1/Q5_1 block: sumf += sumi*(dx*dy), summs +=
// m*s (m at 2(SI), s at 2 of each column's block).
#define LG_MIN_END \
	LG_REDUCE4; \
	LG_FP16B(0, X3); \
	LG_FP16x4(0, X2); \
	VMULPS X2, X3, X2; \
	VMULPS X2, X4, X4; \
	VADDPS X4, X0, X0; \
	LG_FP16B(2, X3); \
	LG_FP16x4(2, X2); \
	VMULPS X2, X3, X2; \
	VADDPS X2, X1, X1

// func q4_1Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
// the lanes of X0 are sumf + summs at the end.
TEXT ·q4_1Gemm4AVX2(SB), NOSPLIT, $0-48
	LG_ARGS

q41g4:
	LG_NIB32(4)
	LG_UCOL(4(DI), Y4)
	LG_UCOL(4(DI)(R13*1), Y5)
	LG_UCOL(4(DI)(R13*2), Y6)
	LG_UCOL(4(DI)(R9*1), Y7)
	LG_MIN_END
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q41g4

	VADDPS X1, X0, X0
	LG_STORE
	RET

// func q5_1Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
TEXT ·q5_1Gemm4AVX2(SB), NOSPLIT, $0-48
	LG_ARGS
	VPBROADCASTD lgSixteens<>(SB), Y10
	VPCMPEQB     Y8, Y8, Y8

q51g4:
	LG_NIB32(8)
	LG_HIB32(4)
	LG_UCOL(4(DI), Y4)
	LG_UCOL(4(DI)(R13*1), Y5)
	LG_UCOL(4(DI)(R13*2), Y6)
	LG_UCOL(4(DI)(R9*1), Y7)
	LG_MIN_END
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q51g4

	VADDPS X1, X0, X0
	LG_STORE
	RET
