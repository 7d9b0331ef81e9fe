//go:build !purego

#include "textflag.h"

// AVX2 dot products of IQ1_S, IQ1_M, TQ1_0 and TQ2_0 weight rows with Q8_K
// activation rows. Each keeps the Go version's exact int32 sums per
// super-block and its float steps in the same order, so the result is
// bit-identical to the Go dot for every input byte string.
//
// Signed products as in simd_iq_amd64.s: the weight bytes t (here in
// -1..2) take the sign of the activation, t*sgn(q8), and the product is
// maddubs(|q8|, t), right for q8 = -128 too; the int16 pair sums stay
// within 2*128*2, far from saturation. TQ1_0's trits are made in 16-bit
// lanes (AVX2 has no byte multiply) and multiplied with VPMADDWD.

DATA tqM3<>+0x00(SB)/8, $0x0303030303030303
DATA tqM3<>+0x08(SB)/8, $0x0303030303030303
DATA tqM3<>+0x10(SB)/8, $0x0303030303030303
DATA tqM3<>+0x18(SB)/8, $0x0303030303030303
GLOBL tqM3<>(SB), RODATA|NOPTR, $32

DATA tqOnes8<>+0x00(SB)/8, $0x0101010101010101
DATA tqOnes8<>+0x08(SB)/8, $0x0101010101010101
DATA tqOnes8<>+0x10(SB)/8, $0x0101010101010101
DATA tqOnes8<>+0x18(SB)/8, $0x0101010101010101
GLOBL tqOnes8<>(SB), RODATA|NOPTR, $32

DATA tqOnes16<>+0x00(SB)/8, $0x0001000100010001
DATA tqOnes16<>+0x08(SB)/8, $0x0001000100010001
DATA tqOnes16<>+0x10(SB)/8, $0x0001000100010001
DATA tqOnes16<>+0x18(SB)/8, $0x0001000100010001
GLOBL tqOnes16<>(SB), RODATA|NOPTR, $32

DATA tqFF16<>+0x00(SB)/8, $0x00ff00ff00ff00ff
DATA tqFF16<>+0x08(SB)/8, $0x00ff00ff00ff00ff
DATA tqFF16<>+0x10(SB)/8, $0x00ff00ff00ff00ff
DATA tqFF16<>+0x18(SB)/8, $0x00ff00ff00ff00ff
GLOBL tqFF16<>(SB), RODATA|NOPTR, $32

// The multipliers 3^n of TQ1_0's qh values 240+4n+j, as int16.
DATA tqQhPow<>+0x00(SB)/8, $0x0001000100010001
DATA tqQhPow<>+0x08(SB)/8, $0x0003000300030003
DATA tqQhPow<>+0x10(SB)/8, $0x0009000900090009
DATA tqQhPow<>+0x18(SB)/8, $0x001b001b001b001b
GLOBL tqQhPow<>(SB), RODATA|NOPTR, $32

// TQ_BLOCK_END adds (fp16 d at doff(SI) times the Q8_K d) times the int32
// sum of the lanes of Y8 to X0.
#define TQ_BLOCK_END(doff) \
	MOVWLZX doff(SI), AX     \
	VMOVD   AX, X1           \
	VCVTPH2PS X1, X1         \
	VMULSS  (DI), X1, X1     \
	VEXTRACTI128 $1, Y8, X9  \
	VPADDD  X9, X8, X8       \
	VPSHUFD $0x4e, X8, X9    \
	VPADDD  X9, X8, X8       \
	VPSHUFD $0xb1, X8, X9    \
	VPADDD  X9, X8, X8       \
	VCVTDQ2PS X8, X8         \
	VMULSS  X8, X1, X8       \
	VADDSS  X8, X0, X0

// TQ2_L: the values (src >> sh) & 3, minus 1, times the 32 activations at
// q8off(R10), added as int32 to Y8.
#define TQ2_L(src, sh, q8off) \
	VPSRLW     $(sh), src, Y9 \
	VPAND      Y12, Y9, Y9    \
	VPSUBB     Y13, Y9, Y9    \
	VMOVDQU    q8off(R10), Y11 \
	VPSIGNB    Y11, Y9, Y9    \
	VPABSB     Y11, Y11       \
	VPMADDUBSW Y9, Y11, Y9    \
	VPMADDWD   Y14, Y9, Y9    \
	VPADDD     Y9, Y8, Y8

// func tq2DotAVX2(w, a *byte, nb int) float32
TEXT ·tq2DotAVX2(SB), NOSPLIT, $0-28
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    nb+16(FP), CX
	VMOVDQU tqM3<>(SB), Y12
	VMOVDQU tqOnes8<>(SB), Y13
	VMOVDQU tqOnes16<>(SB), Y14
	VXORPS  X0, X0, X0

tq2Block:
	LEAQ    4(DI), R10
	VPXOR   Y8, Y8, Y8
	VMOVDQU (SI), Y4
	VMOVDQU 32(SI), Y5
	TQ2_L(Y4, 0, 0)
	TQ2_L(Y4, 2, 32)
	TQ2_L(Y4, 4, 64)
	TQ2_L(Y4, 6, 96)
	TQ2_L(Y5, 0, 128)
	TQ2_L(Y5, 2, 160)
	TQ2_L(Y5, 4, 192)
	TQ2_L(Y5, 6, 224)
	TQ_BLOCK_END(64)

	ADDQ $66, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  tq2Block

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// TQ1_T: the trits of the 16 int16 bytes of src times the multiplier
// mul, ((b*mul mod 256)*3) >> 8, minus 1, times the 16 activations at
// q8off(R10), added as int32 to Y8.
#define TQ1_T(src, mul, q8off) \
	VPMULLW   mul, src, Y9    \
	VPAND     Y12, Y9, Y9     \
	VPMULLW   Y3, Y9, Y9      \
	VPSRLW    $8, Y9, Y9      \
	VPSUBW    Y14, Y9, Y9     \
	VPMOVSXBW q8off(R10), Y10 \
	VPMADDWD  Y10, Y9, Y9     \
	VPADDD    Y9, Y8, Y8

// TQ1_SETUP loads TQ1_0's constants: Y12 the int16 mask 0xff, Y14 int16
// ones, Y7 the qh multipliers, Y3..Y6 the multipliers 3, 9, 27, 81.
#define TQ1_SETUP \
	VMOVDQU tqFF16<>(SB), Y12    \
	VMOVDQU tqOnes16<>(SB), Y14  \
	VMOVDQU tqQhPow<>(SB), Y7    \
	MOVL    $3, AX               \
	VMOVD   AX, X3               \
	VPBROADCASTW X3, Y3          \
	MOVL    $9, AX               \
	VMOVD   AX, X4               \
	VPBROADCASTW X4, Y4          \
	MOVL    $27, AX              \
	VMOVD   AX, X5               \
	VPBROADCASTW X5, Y5          \
	MOVL    $81, AX              \
	VMOVD   AX, X6               \
	VPBROADCASTW X6, Y6

// func tq1DotAVX2(w, a *byte, nb int) float32
TEXT ·tq1DotAVX2(SB), NOSPLIT, $0-28
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    nb+16(FP), CX
	TQ1_SETUP
	VXORPS  X0, X0, X0

tq1Block:
	LEAQ    4(DI), R10
	VPXOR   Y8, Y8, Y8
	// qs[0..31]: trit n of byte m is value 32n+m.
	VPMOVZXBW (SI), Y2
	VPMOVZXBW 16(SI), Y11
	TQ1_T(Y2, Y14, 0)
	TQ1_T(Y11, Y14, 16)
	TQ1_T(Y2, Y3, 32)
	TQ1_T(Y11, Y3, 48)
	TQ1_T(Y2, Y4, 64)
	TQ1_T(Y11, Y4, 80)
	TQ1_T(Y2, Y5, 96)
	TQ1_T(Y11, Y5, 112)
	TQ1_T(Y2, Y6, 128)
	TQ1_T(Y11, Y6, 144)
	// qs[32..47]: value 160+16n+m.
	VPMOVZXBW 32(SI), Y2
	TQ1_T(Y2, Y14, 160)
	TQ1_T(Y2, Y3, 176)
	TQ1_T(Y2, Y4, 192)
	TQ1_T(Y2, Y5, 208)
	TQ1_T(Y2, Y6, 224)
	// qh[0..3], repeated 4 times: value 240+4n+j.
	VPBROADCASTD 48(SI), X2
	VPMOVZXBW X2, Y2
	TQ1_T(Y2, Y7, 240)
	TQ_BLOCK_END(52)

	ADDQ $54, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  tq1Block

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// IQ1_IDX sets AX to the 11-bit iq1s_grid index of group l of the 32
// values ib: qs byte at qsoff(SI) | ((BX >> sh) & 7) << 8.
#define IQ1_IDX(qsoff, sh) \
	MOVBLZX qsoff(SI), AX \
	MOVL    BX, DX        \
	SHRL    $(sh), DX     \
	ANDL    $7, DX        \
	SHLL    $8, DX        \
	ORL     DX, AX

// IQ1_GRID gathers the four grid entries of the 32 values at qsoff(SI)
// into Y9 (high index bits of group l at bit step*l of BX).
#define IQ1_GRID(qsoff, step) \
	IQ1_IDX(qsoff, 0)                    \
	VMOVQ   (R8)(AX*8), X9               \
	IQ1_IDX(qsoff+1, step)               \
	VPINSRQ $1, (R8)(AX*8), X9, X9       \
	IQ1_IDX(qsoff+2, 2*(step))           \
	VMOVQ   (R8)(AX*8), X10              \
	IQ1_IDX(qsoff+3, 3*(step))           \
	VPINSRQ $1, (R8)(AX*8), X10, X10     \
	VINSERTI128 $1, X10, Y9, Y9

// IQ1_FLOAT adds (X1 = d) times the float of the int32 in X(r) to X(s).
#define IQ1_FLOAT(r, s) \
	VCVTDQ2PS r, r     \
	VMULSS    r, X1, r \
	VADDSS    r, s, s

// HSUM8 leaves the int32 sum of the lanes of Y8 in X8 (X9 scratch).
#define HSUM8 \
	VEXTRACTI128 $1, Y8, X9  \
	VPADDD  X9, X8, X8       \
	VPSHUFD $0x4e, X8, X9    \
	VPADDD  X9, X8, X8       \
	VPSHUFD $0xb1, X8, X9    \
	VPADDD  X9, X8, X8

// HSUM7 is HSUM8 for Y7.
#define HSUM7 \
	VEXTRACTI128 $1, Y7, X9  \
	VPADDD  X9, X7, X7       \
	VPSHUFD $0x4e, X7, X9    \
	VPADDD  X9, X7, X7       \
	VPSHUFD $0xb1, X7, X9    \
	VPADDD  X9, X7, X7

// IQ1S_GROUP: the 32 values ib of an IQ1_S block. Grid part into Y8 (pair
// sums times 2s+1), shift part ±(bsums[2ib]+bsums[2ib+1])*(2s+1) into R9.
#define IQ1S_GROUP(ib) \
	MOVWLZX (34+2*(ib))(SI), BX          \
	IQ1_GRID(2+4*(ib), 3)                \
	VMOVDQU (32*(ib))(R10), Y11          \
	VPSIGNB Y11, Y9, Y9                  \
	VPABSB  Y11, Y11                     \
	VPMADDUBSW Y9, Y11, Y9               \
	MOVL    BX, AX                       \
	SHRL    $12, AX                      \
	ANDL    $7, AX                       \
	LEAL    1(AX)(AX*1), AX              \
	VMOVD   AX, X10                      \
	VPBROADCASTW X10, Y10                \
	VPMADDWD Y10, Y9, Y9                 \
	VPADDD  Y9, Y8, Y8                   \
	MOVWLSX (260+4*(ib))(DI), DX         \
	MOVWLSX (262+4*(ib))(DI), R11        \
	ADDL    R11, DX                      \
	MOVL    BX, R11                      \
	SHLL    $16, R11                     \
	SARL    $31, R11                     \
	XORL    R11, DX                      \
	SUBL    R11, DX                      \
	IMULL   AX, DX                       \
	ADDL    DX, R9

// func iq1sDotAVX2(w, a *byte, nb int) float32
TEXT ·iq1sDotAVX2(SB), NOSPLIT, $0-28
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    nb+16(FP), CX
	LEAQ    ·iq1sGrid(SB), R8
	VXORPS  X0, X0, X0
	VXORPS  X2, X2, X2

iq1sBlock:
	LEAQ    4(DI), R10
	VPXOR   Y8, Y8, Y8
	XORL    R9, R9
	IQ1S_GROUP(0)
	IQ1S_GROUP(1)
	IQ1S_GROUP(2)
	IQ1S_GROUP(3)
	IQ1S_GROUP(4)
	IQ1S_GROUP(5)
	IQ1S_GROUP(6)
	IQ1S_GROUP(7)
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DI), X1, X1
	HSUM8
	IQ1_FLOAT(X8, X0)
	VMOVD   R9, X8
	IQ1_FLOAT(X8, X2)

	ADDQ $50, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq1sBlock

	MOVL   $0x3e000000, AX // 0.125
	VMOVD  AX, X3
	VMULSS X3, X2, X2
	VADDSS X2, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// IQ1M_SHIFT sets R11 to 8 bytes of +1 or, with bit sh of BX set, -1.
#define IQ1M_SHIFT(sh) \
	MOVL    BX, R11  \
	SHRL    $(sh), R11 \
	ANDL    $1, R11  \
	NEGQ    R11      \
	ORQ     R12, R11

// IQ1M_GROUP: the 32 values ib of an IQ1_M block. The half groups' scales
// 2s+1 (values 0..15, 16..31) multiply the grid pair sums into Y8 and the
// shift pair sums (activations times ±1 per 8 values) into Y7.
#define IQ1M_GROUP(ib) \
	MOVWLZX (32+2*(ib))(SI), BX          \
	IQ1_GRID(4*(ib), 4)                  \
	IQ1M_SHIFT(3)                        \
	VMOVQ   R11, X13                     \
	IQ1M_SHIFT(7)                        \
	VPINSRQ $1, R11, X13, X13            \
	IQ1M_SHIFT(11)                       \
	VMOVQ   R11, X10                     \
	IQ1M_SHIFT(15)                       \
	VPINSRQ $1, R11, X10, X10            \
	VINSERTI128 $1, X10, Y13, Y13        \
	VMOVDQU (32*(ib))(R10), Y11          \
	VPSIGNB Y11, Y9, Y9                  \
	VPSIGNB Y11, Y13, Y13                \
	VPABSB  Y11, Y11                     \
	VPMADDUBSW Y9, Y11, Y9               \
	VPMADDUBSW Y13, Y11, Y13             \
	MOVWLZX (48+2*((ib)/2))(SI), AX      \
	SHRL    $(6*((ib)%2)), AX            \
	MOVL    AX, DX                       \
	ANDL    $7, AX                       \
	LEAL    1(AX)(AX*1), AX              \
	VMOVD   AX, X10                      \
	VPBROADCASTW X10, X10                \
	SHRL    $3, DX                       \
	ANDL    $7, DX                       \
	LEAL    1(DX)(DX*1), DX              \
	VMOVD   DX, X11                      \
	VPBROADCASTW X11, X11                \
	VINSERTI128 $1, X11, Y10, Y10        \
	VPMADDWD Y10, Y9, Y9                 \
	VPMADDWD Y10, Y13, Y13               \
	VPADDD  Y9, Y8, Y8                   \
	VPADDD  Y13, Y7, Y7

// IQ1M_D sets X1 to an IQ1_M block's fp16 super-block scale (the top
// nibbles of its four scale words at 48(SI)), using R13, AX and DX.
#define IQ1M_D \
	MOVQ    48(SI), R13  \
	MOVQ    R13, AX      \
	SHRQ    $12, AX      \
	ANDL    $0xf, AX     \
	MOVQ    R13, DX      \
	SHRQ    $24, DX      \
	ANDL    $0xf0, DX    \
	ORL     DX, AX       \
	MOVQ    R13, DX      \
	SHRQ    $36, DX      \
	ANDL    $0xf00, DX   \
	ORL     DX, AX       \
	MOVQ    R13, DX      \
	SHRQ    $48, DX      \
	ANDL    $0xf000, DX  \
	ORL     DX, AX       \
	VMOVD   AX, X1       \
	VCVTPH2PS X1, X1

// func iq1mDotAVX2(w, a *byte, nb int) float32
TEXT ·iq1mDotAVX2(SB), NOSPLIT, $0-28
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    nb+16(FP), CX
	LEAQ    ·iq1sGrid(SB), R8
	MOVQ    $0x0101010101010101, R12
	VXORPS  X0, X0, X0
	VXORPS  X2, X2, X2

iq1mBlock:
	LEAQ    4(DI), R10
	VPXOR   Y8, Y8, Y8
	VPXOR   Y7, Y7, Y7
	IQ1M_GROUP(0)
	IQ1M_GROUP(1)
	IQ1M_GROUP(2)
	IQ1M_GROUP(3)
	IQ1M_GROUP(4)
	IQ1M_GROUP(5)
	IQ1M_GROUP(6)
	IQ1M_GROUP(7)
	IQ1M_D
	VMULSS  (DI), X1, X1
	HSUM8
	IQ1_FLOAT(X8, X0)
	HSUM7
	IQ1_FLOAT(X7, X2)

	ADDQ $56, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq1mBlock

	MOVL   $0x3e000000, AX // 0.125
	VMOVD  AX, X3
	VMULSS X3, X2, X2
	VADDSS X2, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Gemm tiles: one weight row against 4 (TQ2_0, TQ1_0) or 2 (IQ1_S, IQ1_M)
// activation rows, column c's Q8_K blocks at a + c*astride, its result to
// out[c*ostride]. Each group of weights is unpacked once for all columns;
// every column keeps the dot's exact integer sums and float steps, so each
// result is bit-identical to the one-row dot.

// TQ_COL adds to acc the int32 sums of the weight bytes Y9 (-1..2) times
// the 32 activations at q8 (an address): sign moved to the weights.
#define TQ_COL(q8, acc) \
	VMOVDQU    q8, Y11          \
	VPSIGNB    Y11, Y9, Y15     \
	VPABSB     Y11, Y11         \
	VPMADDUBSW Y15, Y11, Y15    \
	VPMADDWD   Y14, Y15, Y15    \
	VPADDD     Y15, acc, acc

// TQ2_L4: values (src >> sh) & 3, minus 1, against the 4 columns'
// activations at q8off (column c at R10 + c*R13, R9 = 3*R13).
#define TQ2_L4(src, sh, q8off) \
	VPSRLW     $(sh), src, Y9 \
	VPAND      Y12, Y9, Y9    \
	VPSUBB     Y13, Y9, Y9    \
	TQ_COL(q8off(R10), Y4)        \
	TQ_COL(q8off(R10)(R13*1), Y5) \
	TQ_COL(q8off(R10)(R13*2), Y6) \
	TQ_COL(q8off(R10)(R9*1), Y7)

// TQ_COL_END adds (d = fp16 d) times column c's Q8_K d (at yd) times the
// int32 sum of the lanes of acc to sum.
#define TQ_COL_END(d, yd, acc, accx, sum) \
	VMULSS       yd, d, X10       \
	VEXTRACTI128 $1, acc, X11     \
	VPADDD       X11, accx, accx  \
	VPSHUFD      $0x4e, accx, X11 \
	VPADDD       X11, accx, accx  \
	VPSHUFD      $0xb1, accx, X11 \
	VPADDD       X11, accx, accx  \
	VCVTDQ2PS    accx, accx       \
	VMULSS       accx, X10, accx  \
	VADDSS       accx, sum, sum

// TQ4_BLOCK_END finishes a super-block (fp16 d at doff(SI)) of the 4
// columns.
#define TQ4_BLOCK_END(doff) \
	MOVWLZX doff(SI), AX                     \
	VMOVD   AX, X8                           \
	VCVTPH2PS X8, X8                         \
	TQ_COL_END(X8, (DI), Y4, X4, X0)         \
	TQ_COL_END(X8, (DI)(R13*1), Y5, X5, X1)  \
	TQ_COL_END(X8, (DI)(R13*2), Y6, X6, X2)  \
	TQ_COL_END(X8, (DI)(R9*1), Y7, X7, X3)

// TQ4_STORE writes the 4 column sums to out[c*ostride] (R11 = out, R12 =
// 4*ostride).
#define TQ4_STORE \
	MOVSS X0, (R11)  \
	ADDQ  R12, R11   \
	MOVSS X1, (R11)  \
	ADDQ  R12, R11   \
	MOVSS X2, (R11)  \
	ADDQ  R12, R11   \
	MOVSS X3, (R11)  \
	VZEROUPPER

// func tq2Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
// The weight bytes are in Y10 (free until the block end), the column sums
// in X0..X3.
TEXT ·tq2Gemm4AVX2(SB), NOSPLIT, $0-48
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    astride+16(FP), R13
	MOVQ    nb+24(FP), CX
	LEAQ    (R13)(R13*2), R9
	VMOVDQU tqM3<>(SB), Y12
	VMOVDQU tqOnes8<>(SB), Y13
	VMOVDQU tqOnes16<>(SB), Y14
	VXORPS  X0, X0, X0
	VXORPS  X1, X1, X1
	VXORPS  X2, X2, X2
	VXORPS  X3, X3, X3

tq2G4Block:
	LEAQ    4(DI), R10
	VPXOR   Y4, Y4, Y4
	VPXOR   Y5, Y5, Y5
	VPXOR   Y6, Y6, Y6
	VPXOR   Y7, Y7, Y7
	VMOVDQU (SI), Y10
	TQ2_L4(Y10, 0, 0)
	TQ2_L4(Y10, 2, 32)
	TQ2_L4(Y10, 4, 64)
	TQ2_L4(Y10, 6, 96)
	VMOVDQU 32(SI), Y10
	TQ2_L4(Y10, 0, 128)
	TQ2_L4(Y10, 2, 160)
	TQ2_L4(Y10, 4, 192)
	TQ2_L4(Y10, 6, 224)
	TQ4_BLOCK_END(64)
	ADDQ $66, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  tq2G4Block

	MOVQ out+32(FP), R11
	MOVQ ostride+40(FP), R12
	SHLQ $2, R12
	TQ4_STORE
	RET

// TQ1_T4: the trits of the 16 int16 bytes of src times mul (as TQ1_T) in
// Y9, against the 4 columns' 16 activations at q8off.
#define TQ1_T4(src, mul, q8off) \
	VPMULLW   mul, src, Y9          \
	VPAND     Y12, Y9, Y9           \
	VPMULLW   Y3, Y9, Y9            \
	VPSRLW    $8, Y9, Y9            \
	VPSUBW    Y14, Y9, Y9           \
	VPMOVSXBW q8off(R10), Y10       \
	VPMADDWD  Y10, Y9, Y10          \
	VPADDD    Y10, Y4, Y4           \
	VPMOVSXBW q8off(R10)(R13*1), Y10 \
	VPMADDWD  Y10, Y9, Y10          \
	VPADDD    Y10, Y5, Y5           \
	VPMOVSXBW q8off(R10)(R13*2), Y10 \
	VPMADDWD  Y10, Y9, Y10          \
	VPADDD    Y10, Y6, Y6           \
	VPMOVSXBW q8off(R10)(R9*1), Y10 \
	VPMADDWD  Y10, Y9, Y10          \
	VPADDD    Y10, Y7, Y7

// TQ1_POW sets the int16 lanes of Y13 to p.
#define TQ1_POW(p) \
	MOVL         $(p), AX \
	VMOVD        AX, X13  \
	VPBROADCASTW X13, Y13

// func tq1Gemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
// Y2, Y11 hold the weight bytes, Y3 = 3, Y13 the multiplier, so the column
// sums are in X0, X1, X8, X15.
TEXT ·tq1Gemm4AVX2(SB), NOSPLIT, $0-48
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    astride+16(FP), R13
	MOVQ    nb+24(FP), CX
	LEAQ    (R13)(R13*2), R9
	VMOVDQU tqFF16<>(SB), Y12
	VMOVDQU tqOnes16<>(SB), Y14
	MOVL    $3, AX
	VMOVD   AX, X3
	VPBROADCASTW X3, Y3
	VXORPS  X0, X0, X0
	VXORPS  X1, X1, X1
	VXORPS  X8, X8, X8
	VXORPS  X15, X15, X15

tq1G4Block:
	LEAQ    4(DI), R10
	VPXOR   Y4, Y4, Y4
	VPXOR   Y5, Y5, Y5
	VPXOR   Y6, Y6, Y6
	VPXOR   Y7, Y7, Y7
	VPMOVZXBW (SI), Y2
	VPMOVZXBW 16(SI), Y11
	TQ1_T4(Y2, Y14, 0)
	TQ1_T4(Y11, Y14, 16)
	TQ1_T4(Y2, Y3, 32)
	TQ1_T4(Y11, Y3, 48)
	TQ1_POW(9)
	TQ1_T4(Y2, Y13, 64)
	TQ1_T4(Y11, Y13, 80)
	TQ1_POW(27)
	TQ1_T4(Y2, Y13, 96)
	TQ1_T4(Y11, Y13, 112)
	TQ1_POW(81)
	TQ1_T4(Y2, Y13, 128)
	TQ1_T4(Y11, Y13, 144)
	VPMOVZXBW 32(SI), Y2
	TQ1_T4(Y2, Y14, 160)
	TQ1_T4(Y2, Y3, 176)
	TQ1_POW(9)
	TQ1_T4(Y2, Y13, 192)
	TQ1_POW(27)
	TQ1_T4(Y2, Y13, 208)
	TQ1_POW(81)
	TQ1_T4(Y2, Y13, 224)
	VPBROADCASTD 48(SI), X2
	VPMOVZXBW X2, Y2
	VMOVDQU tqQhPow<>(SB), Y13
	TQ1_T4(Y2, Y13, 240)
	MOVWLZX 52(SI), AX
	VMOVD   AX, X9
	VCVTPH2PS X9, X9
	TQ_COL_END(X9, (DI), Y4, X4, X0)
	TQ_COL_END(X9, (DI)(R13*1), Y5, X5, X1)
	TQ_COL_END(X9, (DI)(R13*2), Y6, X6, X8)
	TQ_COL_END(X9, (DI)(R9*1), Y7, X7, X15)
	ADDQ $54, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  tq1G4Block

	MOVQ  out+32(FP), R11
	MOVQ  ostride+40(FP), R12
	SHLQ  $2, R12
	MOVSS X0, (R11)
	ADDQ  R12, R11
	MOVSS X1, (R11)
	ADDQ  R12, R11
	MOVSS X8, (R11)
	ADDQ  R12, R11
	MOVSS X15, (R11)
	VZEROUPPER
	RET

// IQ1_COL adds to acc the int32 sums of the grid bytes Y9 times the 32
// activations at q8 (an address) times the int16 scales Y10.
#define IQ1_COL(q8, acc) \
	VMOVDQU    q8, Y11          \
	VPSIGNB    Y11, Y9, Y15     \
	VPABSB     Y11, Y11         \
	VPMADDUBSW Y15, Y11, Y15    \
	VPMADDWD   Y10, Y15, Y15    \
	VPADDD     Y15, acc, acc

// HSUMX leaves the int32 sum of the lanes of acc in accx (X11 scratch).
#define HSUMX(acc, accx) \
	VEXTRACTI128 $1, acc, X11     \
	VPADDD       X11, accx, accx  \
	VPSHUFD      $0x4e, accx, X11 \
	VPADDD       X11, accx, accx  \
	VPSHUFD      $0xb1, accx, X11 \
	VPADDD       X11, accx, accx

// IQ1S_G2: group ib of an IQ1_S block against 2 columns (column 1 at
// R10 + R13); its shift coefficient ±(2s+1) goes to word ib of X14.
#define IQ1S_G2(ib) \
	MOVWLZX (34+2*(ib))(SI), BX          \
	IQ1_GRID(2+4*(ib), 3)                \
	MOVL    BX, AX                       \
	SHRL    $12, AX                      \
	ANDL    $7, AX                       \
	LEAL    1(AX)(AX*1), AX              \
	VMOVD   AX, X10                      \
	VPBROADCASTW X10, Y10                \
	MOVL    BX, R11                      \
	SHLL    $16, R11                     \
	SARL    $31, R11                     \
	XORL    R11, AX                      \
	SUBL    R11, AX                      \
	VPINSRW $(ib), AX, X14, X14          \
	IQ1_COL((32*(ib))(R10), Y4)          \
	IQ1_COL((32*(ib))(R10)(R13*1), Y5)

// IQ1S_G2_COL_END adds, for the column whose Q8_K block is at col (its
// bsums at bs), d*grid sum (acc) to sum and d*shift sum (Σ bsums times
// Y13) to sum1; X8 = fp16 d.
#define IQ1S_G2_COL_END(col, bs, acc, accx, sum, sum1) \
	VMULSS    col, X8, X12         \
	HSUMX(acc, accx)               \
	VCVTDQ2PS accx, accx           \
	VMULSS    accx, X12, accx      \
	VADDSS    accx, sum, sum       \
	VPMADDWD  bs, Y13, Y6          \
	HSUMX(Y6, X6)                  \
	VCVTDQ2PS X6, X6               \
	VMULSS    X6, X12, X6          \
	VADDSS    X6, sum1, sum1

// func iq1sGemm2AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
TEXT ·iq1sGemm2AVX2(SB), NOSPLIT, $0-48
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    astride+16(FP), R13
	MOVQ    nb+24(FP), CX
	LEAQ    ·iq1sGrid(SB), R8
	VXORPS  X0, X0, X0
	VXORPS  X1, X1, X1
	VXORPS  X2, X2, X2
	VXORPS  X3, X3, X3

iq1sG2Block:
	LEAQ    4(DI), R10
	VPXOR   Y4, Y4, Y4
	VPXOR   Y5, Y5, Y5
	IQ1S_G2(0)
	IQ1S_G2(1)
	IQ1S_G2(2)
	IQ1S_G2(3)
	IQ1S_G2(4)
	IQ1S_G2(5)
	IQ1S_G2(6)
	IQ1S_G2(7)
	// The shift coefficients, each twice (one per 16 bsums).
	VPUNPCKLWD  X14, X14, X13
	VPUNPCKHWD  X14, X14, X15
	VINSERTI128 $1, X15, Y13, Y13
	MOVWLZX (SI), AX
	VMOVD   AX, X8
	VCVTPH2PS X8, X8
	IQ1S_G2_COL_END((DI), 260(DI), Y4, X4, X0, X2)
	IQ1S_G2_COL_END((DI)(R13*1), 260(DI)(R13*1), Y5, X5, X1, X3)
	ADDQ $50, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq1sG2Block

	MOVL   $0x3e000000, AX // 0.125
	VMOVD  AX, X8
	VMULSS X8, X2, X2
	VADDSS X2, X0, X0
	VMULSS X8, X3, X3
	VADDSS X3, X1, X1
	MOVQ   out+32(FP), R11
	MOVQ   ostride+40(FP), R12
	MOVSS  X0, (R11)
	MOVSS  X1, (R11)(R12*4)
	VZEROUPPER
	RET

// IQ1M_COL adds to gacc (grid) and sacc (shift) the int32 sums of Y9 and
// Y13 times the 32 activations at q8 times the int16 scales Y10.
#define IQ1M_COL(q8, gacc, sacc) \
	VMOVDQU    q8, Y11          \
	VPSIGNB    Y11, Y9, Y15     \
	VPSIGNB    Y11, Y13, Y12    \
	VPABSB     Y11, Y11         \
	VPMADDUBSW Y15, Y11, Y15    \
	VPMADDUBSW Y12, Y11, Y12    \
	VPMADDWD   Y10, Y15, Y15    \
	VPMADDWD   Y10, Y12, Y12    \
	VPADDD     Y15, gacc, gacc  \
	VPADDD     Y12, sacc, sacc

// IQ1M_G2: group ib of an IQ1_M block against 2 columns.
#define IQ1M_G2(ib) \
	MOVWLZX (32+2*(ib))(SI), BX          \
	IQ1_GRID(4*(ib), 4)                  \
	IQ1M_SHIFT(3)                        \
	VMOVQ   R11, X13                     \
	IQ1M_SHIFT(7)                        \
	VPINSRQ $1, R11, X13, X13            \
	IQ1M_SHIFT(11)                       \
	VMOVQ   R11, X10                     \
	IQ1M_SHIFT(15)                       \
	VPINSRQ $1, R11, X10, X10            \
	VINSERTI128 $1, X10, Y13, Y13        \
	MOVWLZX (48+2*((ib)/2))(SI), AX      \
	SHRL    $(6*((ib)%2)), AX            \
	MOVL    AX, DX                       \
	ANDL    $7, AX                       \
	LEAL    1(AX)(AX*1), AX              \
	VMOVD   AX, X10                      \
	VPBROADCASTW X10, X10                \
	SHRL    $3, DX                       \
	ANDL    $7, DX                       \
	LEAL    1(DX)(DX*1), DX              \
	VMOVD   DX, X11                      \
	VPBROADCASTW X11, X11                \
	VINSERTI128 $1, X11, Y10, Y10        \
	IQ1M_COL((32*(ib))(R10), Y4, Y6)     \
	IQ1M_COL((32*(ib))(R10)(R13*1), Y5, Y7)

// IQ1M_G2_COL_END adds, for the column whose Q8_K d is at yd, d*grid sum
// to sum and d*shift sum to sum1; X8 = fp16 d.
#define IQ1M_G2_COL_END(yd, gacc, gaccx, sacc, saccx, sum, sum1) \
	VMULSS    yd, X8, X12          \
	HSUMX(gacc, gaccx)             \
	VCVTDQ2PS gaccx, gaccx         \
	VMULSS    gaccx, X12, gaccx    \
	VADDSS    gaccx, sum, sum      \
	HSUMX(sacc, saccx)             \
	VCVTDQ2PS saccx, saccx         \
	VMULSS    saccx, X12, saccx    \
	VADDSS    saccx, sum1, sum1

// func iq1mGemm2AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
TEXT ·iq1mGemm2AVX2(SB), NOSPLIT, $0-48
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    astride+16(FP), R13
	MOVQ    nb+24(FP), CX
	LEAQ    ·iq1sGrid(SB), R8
	MOVQ    $0x0101010101010101, R12
	VXORPS  X0, X0, X0
	VXORPS  X1, X1, X1
	VXORPS  X2, X2, X2
	VXORPS  X3, X3, X3

iq1mG2Block:
	LEAQ    4(DI), R10
	VPXOR   Y4, Y4, Y4
	VPXOR   Y5, Y5, Y5
	VPXOR   Y6, Y6, Y6
	VPXOR   Y7, Y7, Y7
	IQ1M_G2(0)
	IQ1M_G2(1)
	IQ1M_G2(2)
	IQ1M_G2(3)
	IQ1M_G2(4)
	IQ1M_G2(5)
	IQ1M_G2(6)
	IQ1M_G2(7)
	// d: the top nibbles of the four scale words at 48(SI).
	MOVQ    48(SI), R11
	MOVQ    R11, AX
	SHRQ    $12, AX
	ANDL    $0xf, AX
	MOVQ    R11, DX
	SHRQ    $24, DX
	ANDL    $0xf0, DX
	ORL     DX, AX
	MOVQ    R11, DX
	SHRQ    $36, DX
	ANDL    $0xf00, DX
	ORL     DX, AX
	MOVQ    R11, DX
	SHRQ    $48, DX
	ANDL    $0xf000, DX
	ORL     DX, AX
	VMOVD   AX, X8
	VCVTPH2PS X8, X8
	IQ1M_G2_COL_END((DI), Y4, X4, Y6, X6, X0, X2)
	IQ1M_G2_COL_END((DI)(R13*1), Y5, X5, Y7, X7, X1, X3)
	ADDQ $56, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq1mG2Block

	MOVL   $0x3e000000, AX // 0.125
	VMOVD  AX, X8
	VMULSS X8, X2, X2
	VADDSS X2, X0, X0
	VMULSS X8, X3, X3
	VADDSS X3, X1, X1
	MOVQ   out+32(FP), R11
	MOVQ   ostride+40(FP), R12
	MOVSS  X0, (R11)
	MOVSS  X1, (R11)(R12*4)
	VZEROUPPER
	RET

// Unpacked records of IQ1_S and IQ1_M for prompts (gemmIQSUnpacked; the
// layout is gemmiqgen's narrow record: 256 signed weight bytes, an int16
// scale vector per group of 32, a float32 at 512). A value is
// d*s*(g ± 1/8) with g in -1..1 the grid and s = 2k+1 the scale, so the
// weight byte is 8g ± 1 (-9..9) and the float d/8: the integer sums with
// the activations are exact, the float steps those of the unpacked
// kernels, not the dot's (which sums the grid and the ±1/8 parts apart).

// IQ1_UNPACK_W stores Y9 (grid bytes -1..1) times 8 plus Y10 (bytes ±1)
// as group ib's weight bytes at DI.
#define IQ1_UNPACK_W(ib) \
	VPADDB  Y9, Y9, Y9                   \
	VPADDB  Y9, Y9, Y9                   \
	VPADDB  Y9, Y9, Y9                   \
	VPADDB  Y10, Y9, Y9                  \
	VMOVDQU Y9, (32*(ib))(DI)

// IQ1S_UNPACK: group ib of an IQ1_S block: the qh word's bit 15 gives the
// ±1/8 of all 32 values, bits 12-14 the scale.
#define IQ1S_UNPACK(ib) \
	MOVWLZX (34+2*(ib))(SI), BX          \
	IQ1_GRID(2+4*(ib), 3)                \
	MOVL    BX, AX                       \
	SHLL    $16, AX                      \
	SARL    $31, AX                      \
	ORL     $1, AX                       \
	VMOVD   AX, X10                      \
	VPBROADCASTB X10, Y10                \
	IQ1_UNPACK_W(ib)                     \
	MOVL    BX, AX                       \
	SHRL    $12, AX                      \
	ANDL    $7, AX                       \
	LEAL    1(AX)(AX*1), AX              \
	VMOVD   AX, X10                      \
	VPBROADCASTW X10, Y10                \
	VMOVDQU Y10, (256+32*(ib))(DI)

// func gemmIQ1SUnpack(x *byte, nb int, buf *byte)
TEXT ·gemmIQ1SUnpack(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ buf+16(FP), DI
	LEAQ ·iq1sGrid(SB), R8

iq1sUnpackBlock:
	IQ1S_UNPACK(0)
	IQ1S_UNPACK(1)
	IQ1S_UNPACK(2)
	IQ1S_UNPACK(3)
	IQ1S_UNPACK(4)
	IQ1S_UNPACK(5)
	IQ1S_UNPACK(6)
	IQ1S_UNPACK(7)
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	MOVL    $0x3e000000, AX // 0.125
	VMOVD   AX, X3
	VMULSS  X3, X1, X1
	VMOVSS  X1, 512(DI)
	ADDQ $50, SI
	ADDQ $544, DI
	DECQ CX
	JNZ  iq1sUnpackBlock
	VZEROUPPER
	RET

// IQ1M_UNPACK: group ib of an IQ1_M block: ±1/8 per 8 values from bits
// 3, 7, 11, 15 of its qh word (IQ1M_SHIFT), scales per 16 values.
#define IQ1M_UNPACK(ib) \
	MOVWLZX (32+2*(ib))(SI), BX          \
	IQ1_GRID(4*(ib), 4)                  \
	IQ1M_SHIFT(3)                        \
	VMOVQ   R11, X10                     \
	IQ1M_SHIFT(7)                        \
	VPINSRQ $1, R11, X10, X10            \
	IQ1M_SHIFT(11)                       \
	VMOVQ   R11, X11                     \
	IQ1M_SHIFT(15)                       \
	VPINSRQ $1, R11, X11, X11            \
	VINSERTI128 $1, X11, Y10, Y10        \
	IQ1_UNPACK_W(ib)                     \
	MOVWLZX (48+2*((ib)/2))(SI), AX      \
	SHRL    $(6*((ib)%2)), AX            \
	MOVL    AX, DX                       \
	ANDL    $7, AX                       \
	LEAL    1(AX)(AX*1), AX              \
	VMOVD   AX, X10                      \
	VPBROADCASTW X10, X10                \
	SHRL    $3, DX                       \
	ANDL    $7, DX                       \
	LEAL    1(DX)(DX*1), DX              \
	VMOVD   DX, X11                      \
	VPBROADCASTW X11, X11                \
	VINSERTI128 $1, X11, Y10, Y10        \
	VMOVDQU Y10, (256+32*(ib))(DI)

// func gemmIQ1MUnpack(x *byte, nb int, buf *byte)
TEXT ·gemmIQ1MUnpack(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ buf+16(FP), DI
	LEAQ ·iq1sGrid(SB), R8
	MOVQ $0x0101010101010101, R12

iq1mUnpackBlock:
	IQ1M_UNPACK(0)
	IQ1M_UNPACK(1)
	IQ1M_UNPACK(2)
	IQ1M_UNPACK(3)
	IQ1M_UNPACK(4)
	IQ1M_UNPACK(5)
	IQ1M_UNPACK(6)
	IQ1M_UNPACK(7)
	IQ1M_D
	MOVL    $0x3e000000, AX // 0.125
	VMOVD   AX, X3
	VMULSS  X3, X1, X1
	VMOVSS  X1, 512(DI)
	ADDQ $56, SI
	ADDQ $544, DI
	DECQ CX
	JNZ  iq1mUnpackBlock
	VZEROUPPER
	RET

// The IQ1 dots, second form (iq1sDotAVX2V, iq1mDotAVX2V): the same
// integer sums and float steps, fewer instructions per group of 32.
//  - The grid comes from iq1sGridU (each byte + 1: 0, 1, 2), so the
//    product is maddubs(grid+1, q8) with no sign moves; the extra
//    Σ s*q8 per scale s is subtracted once per block from the Q8_K block
//    sums (Σ over the same 16 values), which the shift part needs anyway.
//  - The grid indices of two groups are built in vector lanes (VPSRLVD
//    of the qh words) and read two at a time from general registers.
//  - The scales, signs and block sums of the shift part are vectors per
//    block instead of scalar work per group.

DATA iq1Cnt3<>+0x00(SB)/8, $0x0000000300000000
DATA iq1Cnt3<>+0x08(SB)/8, $0x0000000900000006
DATA iq1Cnt3<>+0x10(SB)/8, $0x0000001300000010
DATA iq1Cnt3<>+0x18(SB)/8, $0x0000001900000016
GLOBL iq1Cnt3<>(SB), RODATA|NOPTR, $32

DATA iq1D7<>+0x00(SB)/4, $7
GLOBL iq1D7<>(SB), RODATA|NOPTR, $4
DATA iq1D1<>+0x00(SB)/4, $1
GLOBL iq1D1<>(SB), RODATA|NOPTR, $4
DATA iq1W1<>+0x00(SB)/4, $0x00010001
GLOBL iq1W1<>(SB), RODATA|NOPTR, $4

// IQ1_IDX8 sets the dwords of Y4 to the grid indices of groups g and g+1
// (qs bytes at qsoff(SI), the 16 bits of the qh word pair at qhoff(SI)
// shifted by the counts in Y14, masked by Y13 = 7) and moves them to AX,
// BX (group g) and DX, R9 (group g+1), two per register.
#define IQ1_IDX8(qsoff, qhoff) \
	VPMOVZXBD    qsoff(SI), Y4           \
	VPBROADCASTD qhoff(SI), Y5           \
	VPSRLVD      Y14, Y5, Y5             \
	VPAND        Y13, Y5, Y5             \
	VPSLLD       $8, Y5, Y5              \
	VPOR         Y5, Y4, Y4              \
	VMOVQ        X4, AX                  \
	VPEXTRQ      $1, X4, BX              \
	VEXTRACTI128 $1, Y4, X4              \
	VMOVQ        X4, DX                  \
	VPEXTRQ      $1, X4, R9

// IQ1_GRIDU loads the four iq1sGridU entries whose indices are the
// dwords of lo and hi into Y9 (X10 scratch).
#define IQ1_GRIDU(lo, hi) \
	MOVL    lo, R10                      \
	VMOVQ   (R8)(R10*8), X9              \
	SHRQ    $32, lo                      \
	VPINSRQ $1, (R8)(lo*8), X9, X9       \
	MOVL    hi, R10                      \
	VMOVQ   (R8)(R10*8), X10             \
	SHRQ    $32, hi                      \
	VPINSRQ $1, (R8)(hi*8), X10, X10     \
	VINSERTI128 $1, X10, Y9, Y9

// IQ1S_GROUPU: group ib's grid part into Y8: maddubs(grid+1, q8) times
// its scale, the dword at 4*ib(SP) (two int16 copies).
#define IQ1S_GROUPU(ib, lo, hi) \
	IQ1_GRIDU(lo, hi)                    \
	VPMADDUBSW (32*(ib))(R11), Y9, Y9    \
	VPBROADCASTD (4*(ib))(SP), Y10       \
	VPMADDWD Y10, Y9, Y9                 \
	VPADDD   Y9, Y8, Y8

// func iq1sDotAVX2V(w, a *byte, nb int) float32
TEXT ·iq1sDotAVX2V(SB), NOSPLIT, $32-28
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    nb+16(FP), CX
	LEAQ    ·iq1sGridU(SB), R8
	VMOVDQU iq1Cnt3<>(SB), Y14
	VPBROADCASTD iq1D7<>(SB), Y13
	VPBROADCASTD iq1D1<>(SB), Y12
	VPBROADCASTD iq1W1<>(SB), Y15
	VXORPS  X0, X0, X0
	VXORPS  X2, X2, X2

iq1sVBlock:
	LEAQ    4(DI), R11
	// Per group g (dword lanes): s = 2*((qh>>12)&7)+1, t = s*(bsums
	// 2g + 2g+1). Y8 starts at -Σt (the grid's +1), Y11 is the shift
	// part ±t (minus where qh bit 15 is set).
	VPMOVZXWD 34(SI), Y4
	VPSRLD  $12, Y4, Y5
	VPAND   Y13, Y5, Y5
	VPADDD  Y5, Y5, Y5
	VPADDD  Y12, Y5, Y5
	VPMADDWD 260(DI), Y15, Y6
	VPMULLD Y5, Y6, Y6
	VPXOR   Y8, Y8, Y8
	VPSUBD  Y6, Y8, Y8
	VPSLLD  $16, Y4, Y7
	VPSRAD  $31, Y7, Y7
	VPXOR   Y7, Y6, Y11
	VPSUBD  Y7, Y11, Y11
	VPSLLD  $16, Y5, Y6
	VPOR    Y6, Y5, Y5
	VMOVDQU Y5, 0(SP)
	IQ1_IDX8(2, 34)
	IQ1S_GROUPU(0, AX, BX)
	IQ1S_GROUPU(1, DX, R9)
	IQ1_IDX8(10, 38)
	IQ1S_GROUPU(2, AX, BX)
	IQ1S_GROUPU(3, DX, R9)
	IQ1_IDX8(18, 42)
	IQ1S_GROUPU(4, AX, BX)
	IQ1S_GROUPU(5, DX, R9)
	IQ1_IDX8(26, 46)
	IQ1S_GROUPU(6, AX, BX)
	IQ1S_GROUPU(7, DX, R9)
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DI), X1, X1
	HSUM8
	IQ1_FLOAT(X8, X0)
	VMOVDQA Y11, Y8
	HSUM8
	IQ1_FLOAT(X8, X2)

	ADDQ $50, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq1sVBlock

	MOVL   $0x3e000000, AX // 0.125
	VMOVD  AX, X3
	VMULSS X3, X2, X2
	VADDSS X2, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// IQ1_M constants: grid index shifts (qh bits 0-2, 4-6, 8-10, 12-14 of a
// group's word, the next group's 16 bits up), shift-sign bit positions (3,
// 7, 11, 15 likewise), scale-word shuffles and shifts, and the shuffles
// that spread one dword per 8 values (sign bytes) and one word per half
// group (scales).
DATA iq1mCntIdx<>+0x00(SB)/8, $0x0000000400000000
DATA iq1mCntIdx<>+0x08(SB)/8, $0x0000000c00000008
DATA iq1mCntIdx<>+0x10(SB)/8, $0x0000001400000010
DATA iq1mCntIdx<>+0x18(SB)/8, $0x0000001c00000018
GLOBL iq1mCntIdx<>(SB), RODATA|NOPTR, $32
DATA iq1mCntSgn<>+0x00(SB)/8, $0x0000000700000003
DATA iq1mCntSgn<>+0x08(SB)/8, $0x0000000f0000000b
DATA iq1mCntSgn<>+0x10(SB)/8, $0x0000001700000013
DATA iq1mCntSgn<>+0x18(SB)/8, $0x0000001f0000001b
GLOBL iq1mCntSgn<>(SB), RODATA|NOPTR, $32
// Scale words w0..w3 (a qword broadcast): A = w0 x4 | w1 x4, B = w2 x4 |
// w3 x4 as dwords; shifts 0, 3, 6, 9 per dword.
DATA iq1mScA<>+0x00(SB)/8, $0xffff0100ffff0100
DATA iq1mScA<>+0x08(SB)/8, $0xffff0100ffff0100
DATA iq1mScA<>+0x10(SB)/8, $0xffff0302ffff0302
DATA iq1mScA<>+0x18(SB)/8, $0xffff0302ffff0302
GLOBL iq1mScA<>(SB), RODATA|NOPTR, $32
DATA iq1mScB<>+0x00(SB)/8, $0xffff0504ffff0504
DATA iq1mScB<>+0x08(SB)/8, $0xffff0504ffff0504
DATA iq1mScB<>+0x10(SB)/8, $0xffff0706ffff0706
DATA iq1mScB<>+0x18(SB)/8, $0xffff0706ffff0706
GLOBL iq1mScB<>(SB), RODATA|NOPTR, $32
DATA iq1mScCnt<>+0x00(SB)/8, $0x0000000300000000
DATA iq1mScCnt<>+0x08(SB)/8, $0x0000000900000006
DATA iq1mScCnt<>+0x10(SB)/8, $0x0000000300000000
DATA iq1mScCnt<>+0x18(SB)/8, $0x0000000900000006
GLOBL iq1mScCnt<>(SB), RODATA|NOPTR, $32
// Sign bytes: in each lane, bytes 0-7 from byte 0 (low lane: dword 0,
// high lane: dword 2 after VPERMQ) and 8-15 from byte 4 (dwords 1, 3):
// the lane's two dwords each spread over 8 values.
DATA iq1mSgnShuf<>+0x00(SB)/8, $0x0000000000000000
DATA iq1mSgnShuf<>+0x08(SB)/8, $0x0404040404040404
DATA iq1mSgnShuf<>+0x10(SB)/8, $0x0808080808080808
DATA iq1mSgnShuf<>+0x18(SB)/8, $0x0c0c0c0c0c0c0c0c
GLOBL iq1mSgnShuf<>(SB), RODATA|NOPTR, $32
// Scales: low lane the word at bytes 0-1 (the first 16 values), high lane
// the word at bytes 2-3.
DATA iq1mScShuf<>+0x00(SB)/8, $0x0100010001000100
DATA iq1mScShuf<>+0x08(SB)/8, $0x0100010001000100
DATA iq1mScShuf<>+0x10(SB)/8, $0x0302030203020302
DATA iq1mScShuf<>+0x18(SB)/8, $0x0302030203020302
GLOBL iq1mScShuf<>(SB), RODATA|NOPTR, $32

// IQ1M_SIGNU sets Y5 to group ib's shift bytes plus one (2 where the
// shift is +1/8, 0 where -1/8), from the 0/1 dwords of Y6 (lane sel of
// VPERMQ: $0x44 for the first group of a pair, $0xee for the second).
#define IQ1M_SIGNU(sel) \
	VPERMQ  $(sel), Y6, Y5               \
	VPSHUFB iq1mSgnShuf<>(SB), Y5, Y5

// IQ1M_GROUPU: group ib's grid part into Y8 and shift part into Y7, each
// maddubs(x+1, q8) times the half groups' scales (words 2ib, 2ib+1 at SP).
#define IQ1M_GROUPU(ib, lo, hi, sel) \
	IQ1_GRIDU(lo, hi)                    \
	IQ1M_SIGNU(sel)                      \
	VPBROADCASTD (4*(ib))(SP), Y10       \
	VPSHUFB Y15, Y10, Y10                \
	VPMADDUBSW (32*(ib))(R11), Y9, Y9    \
	VPMADDUBSW (32*(ib))(R11), Y5, Y5    \
	VPMADDWD Y10, Y9, Y9                 \
	VPMADDWD Y10, Y5, Y5                 \
	VPADDD   Y9, Y8, Y8                  \
	VPADDD   Y5, Y7, Y7

// IQ1M_PAIR: groups ib and ib+1 (indices, shift signs, both groups).
#define IQ1M_PAIR(ib) \
	IQ1_IDX8(4*(ib), 32+2*(ib))          \
	VPBROADCASTD (32+2*(ib))(SI), Y6     \
	VPSRLVD Y12, Y6, Y6                  \
	VPANDN  Y11, Y6, Y6                  \
	VPADDD  Y6, Y6, Y6                   \
	IQ1M_GROUPU(ib, AX, BX, 0x44)        \
	IQ1M_GROUPU((ib)+1, DX, R9, 0xee)

// func iq1mDotAVX2V(w, a *byte, nb int) float32
TEXT ·iq1mDotAVX2V(SB), NOSPLIT, $32-28
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    nb+16(FP), CX
	LEAQ    ·iq1sGridU(SB), R8
	VMOVDQU iq1mCntIdx<>(SB), Y14
	VMOVDQU iq1mCntSgn<>(SB), Y12
	VMOVDQU iq1mScShuf<>(SB), Y15
	VPBROADCASTD iq1D7<>(SB), Y13
	VPBROADCASTD iq1D1<>(SB), Y11
	VXORPS  X0, X0, X0
	VXORPS  X2, X2, X2

iq1mVBlock:
	LEAQ    4(DI), R11
	// The 16 half-group scales 2s+1 as words at 0(SP); Y8 and Y7 start
	// at -Σ s*bsum (the +1 of both maddubs operands).
	VPBROADCASTQ 48(SI), Y4
	VPSHUFB iq1mScA<>(SB), Y4, Y5
	VPSHUFB iq1mScB<>(SB), Y4, Y4
	VPSRLVD iq1mScCnt<>(SB), Y5, Y5
	VPSRLVD iq1mScCnt<>(SB), Y4, Y4
	VPAND   Y13, Y5, Y5
	VPAND   Y13, Y4, Y4
	VPADDD  Y5, Y5, Y5
	VPADDD  Y4, Y4, Y4
	VPADDD  Y11, Y5, Y5
	VPADDD  Y11, Y4, Y4
	VPACKUSDW Y4, Y5, Y5
	VPERMQ  $0xd8, Y5, Y5
	VMOVDQU Y5, 0(SP)
	VPMADDWD 260(DI), Y5, Y6
	VPXOR   Y8, Y8, Y8
	VPSUBD  Y6, Y8, Y8
	VMOVDQA Y8, Y7
	IQ1M_PAIR(0)
	IQ1M_PAIR(2)
	IQ1M_PAIR(4)
	IQ1M_PAIR(6)
	IQ1M_D
	VMULSS  (DI), X1, X1
	HSUM8
	IQ1_FLOAT(X8, X0)
	HSUM7
	IQ1_FLOAT(X7, X2)

	ADDQ $56, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq1mVBlock

	MOVL   $0x3e000000, AX // 0.125
	VMOVD  AX, X3
	VMULSS X3, X2, X2
	VADDSS X2, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Unpacked records (gemmIQSUnpacked) of TQ2_0 and TQ1_0 for prompts: the
// values -1..1 as weight bytes, scale vectors of ones, the float d.

// TQ2_U stores the values (src >> sh) & 3, minus 1, as group g at DI.
#define TQ2_U(src, sh, g) \
	VPSRLW  $(sh), src, Y9               \
	VPAND   Y12, Y9, Y9                  \
	VPSUBB  Y13, Y9, Y9                  \
	VMOVDQU Y9, (32*(g))(DI)             \
	VMOVDQU Y14, (256+32*(g))(DI)

// func gemmTQ2Unpack(x *byte, nb int, buf *byte)
TEXT ·gemmTQ2Unpack(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ buf+16(FP), DI
	VMOVDQU tqM3<>(SB), Y12
	VMOVDQU tqOnes8<>(SB), Y13
	VMOVDQU tqOnes16<>(SB), Y14

tq2UnpackBlock:
	VMOVDQU (SI), Y4
	VMOVDQU 32(SI), Y5
	TQ2_U(Y4, 0, 0)
	TQ2_U(Y4, 2, 1)
	TQ2_U(Y4, 4, 2)
	TQ2_U(Y4, 6, 3)
	TQ2_U(Y5, 0, 4)
	TQ2_U(Y5, 2, 5)
	TQ2_U(Y5, 4, 6)
	TQ2_U(Y5, 6, 7)
	MOVWLZX 64(SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMOVSS  X1, 512(DI)
	ADDQ $66, SI
	ADDQ $544, DI
	DECQ CX
	JNZ  tq2UnpackBlock
	VZEROUPPER
	RET

// TQ1_V sets dst to the trits of the 16 int16 bytes of src times mul,
// minus 1, as int16 (TQ1_T's first steps).
#define TQ1_V(src, mul, dst) \
	VPMULLW   mul, src, dst   \
	VPAND     Y12, dst, dst   \
	VPMULLW   Y3, dst, dst    \
	VPSRLW    $8, dst, dst    \
	VPSUBW    Y14, dst, dst

// TQ1_U stores the int16 values lo (16) and hi (16) as group g's weight
// bytes at DI, with a scale vector of ones.
#define TQ1_U(lo, hi, g) \
	VPACKSSWB hi, lo, Y9                 \
	VPERMQ  $0xd8, Y9, Y9                \
	VMOVDQU Y9, (32*(g))(DI)             \
	VMOVDQU Y14, (256+32*(g))(DI)

// func gemmTQ1Unpack(x *byte, nb int, buf *byte)
TEXT ·gemmTQ1Unpack(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ buf+16(FP), DI
	TQ1_SETUP

tq1UnpackBlock:
	// qs[0..31]: trit n of byte m is value 32n+m (group n).
	VPMOVZXBW (SI), Y2
	VPMOVZXBW 16(SI), Y11
	TQ1_V(Y2, Y14, Y10)
	TQ1_V(Y11, Y14, Y13)
	TQ1_U(Y10, Y13, 0)
	TQ1_V(Y2, Y3, Y10)
	TQ1_V(Y11, Y3, Y13)
	TQ1_U(Y10, Y13, 1)
	TQ1_V(Y2, Y4, Y10)
	TQ1_V(Y11, Y4, Y13)
	TQ1_U(Y10, Y13, 2)
	TQ1_V(Y2, Y5, Y10)
	TQ1_V(Y11, Y5, Y13)
	TQ1_U(Y10, Y13, 3)
	TQ1_V(Y2, Y6, Y10)
	TQ1_V(Y11, Y6, Y13)
	TQ1_U(Y10, Y13, 4)
	// qs[32..47]: value 160+16n+m; qh[0..3] (4 times): value 240+4n+j.
	VPMOVZXBW 32(SI), Y2
	TQ1_V(Y2, Y14, Y10)
	TQ1_V(Y2, Y3, Y13)
	TQ1_U(Y10, Y13, 5)
	TQ1_V(Y2, Y4, Y10)
	TQ1_V(Y2, Y5, Y13)
	TQ1_U(Y10, Y13, 6)
	TQ1_V(Y2, Y6, Y10)
	VPBROADCASTD 48(SI), X11
	VPMOVZXBW X11, Y11
	TQ1_V(Y11, Y7, Y13)
	TQ1_U(Y10, Y13, 7)
	MOVWLZX 52(SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMOVSS  X1, 512(DI)
	ADDQ $54, SI
	ADDQ $544, DI
	DECQ CX
	JNZ  tq1UnpackBlock
	VZEROUPPER
	RET
