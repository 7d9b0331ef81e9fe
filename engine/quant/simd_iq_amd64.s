//go:build !purego

#include "textflag.h"

// AVX2 dot products of IQ2_XS, IQ2_XXS, IQ3_XXS and IQ4_XS weight rows with
// Q8_K activation rows, ported from llama.cpp's ggml_vec_dot_iq*_q8_K
// (ggml/src/ggml-cpu/arch/x86/quants.c). Each returns the float32 sum over
// blocks of (fp16 d * Q8_K d) * bsum, accumulated block by block in the
// order of the Go versions, where bsum is the exact int32 sum of the block's
// scaled products (at most 256*128*127*32 in magnitude, so no overflow):
// with the final 1/8 or 1/4 that the Go wrappers apply, the result is
// bit-identical to the Go dot. (llama.cpp instead accumulates 8 float lanes
// with FMA; the integer sums are the same, the float rounding differs.)
//
// Grid entries are fetched with scalar loads, as llama.cpp does: gathers
// were slower on the AMD machine this was tuned on and are much slower on
// Intel CPUs with the GDS microcode mitigation.
//
// Signed products: llama.cpp computes maddubs(grid, sign(q8, s)), which is
// wrong for q8 = -128 with a negative sign (sign_epi8 wraps). Here the sign
// goes to the weight side, t = weight * sign(s) * sgn(q8), and the product is
// maddubs(|q8|, t): |q8| read unsigned is right for -128 too, and |t| < 128,
// so every input byte string gives the Go result. The int16 pair sums stay
// below 2*128*127 = 32512, so maddubs never saturates.

// Shuffle masks replicating sign byte 2j of a lane over the 8 bytes of
// group j (IQ2_XS sign words hold their 8 sign bits in the low byte).
// The first 32 bytes serve groups 0 and 2 of a half block, the next 32
// groups 1 and 3.
DATA iqSignShuf<>+0x00(SB)/8, $0x0000000000000000
DATA iqSignShuf<>+0x08(SB)/8, $0x0202020202020202
DATA iqSignShuf<>+0x10(SB)/8, $0x0404040404040404
DATA iqSignShuf<>+0x18(SB)/8, $0x0606060606060606
DATA iqSignShuf<>+0x20(SB)/8, $0x0808080808080808
DATA iqSignShuf<>+0x28(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA iqSignShuf<>+0x30(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA iqSignShuf<>+0x38(SB)/8, $0x0e0e0e0e0e0e0e0e
GLOBL iqSignShuf<>(SB), RODATA|NOPTR, $64

// Bit j of byte j%8.
DATA iqBitSel<>+0x00(SB)/8, $0x8040201008040201
DATA iqBitSel<>+0x08(SB)/8, $0x8040201008040201
DATA iqBitSel<>+0x10(SB)/8, $0x8040201008040201
DATA iqBitSel<>+0x18(SB)/8, $0x8040201008040201
GLOBL iqBitSel<>(SB), RODATA|NOPTR, $32

// 0x80 where the 4-bit index has odd parity (llama.cpp's k_bit_helper): the
// eighth sign bit of a 7-bit ksigns_iq2xs index.
DATA iqBitHelper<>+0x00(SB)/8, $0x8000008000808000
DATA iqBitHelper<>+0x08(SB)/8, $0x0080800080000080
DATA iqBitHelper<>+0x10(SB)/8, $0x8000008000808000
DATA iqBitHelper<>+0x18(SB)/8, $0x0080800080000080
GLOBL iqBitHelper<>(SB), RODATA|NOPTR, $32

DATA iqOnes8<>+0x00(SB)/8, $0x0101010101010101
DATA iqOnes8<>+0x08(SB)/8, $0x0101010101010101
DATA iqOnes8<>+0x10(SB)/8, $0x0101010101010101
DATA iqOnes8<>+0x18(SB)/8, $0x0101010101010101
GLOBL iqOnes8<>(SB), RODATA|NOPTR, $32

DATA iq7f<>+0x00(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA iq7f<>+0x08(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA iq7f<>+0x10(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA iq7f<>+0x18(SB)/8, $0x7f7f7f7f7f7f7f7f
GLOBL iq7f<>(SB), RODATA|NOPTR, $32

DATA iqM4<>+0x00(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA iqM4<>+0x08(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA iqM4<>+0x10(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA iqM4<>+0x18(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL iqM4<>(SB), RODATA|NOPTR, $32

// Row k (32 bytes): the int16 zero-extensions of byte 2k (low lane) and
// byte 2k+1 (high lane) eight times each.
DATA iqScaleShuf<>+0x00(SB)/8, $0x8000800080008000
DATA iqScaleShuf<>+0x08(SB)/8, $0x8000800080008000
DATA iqScaleShuf<>+0x10(SB)/8, $0x8001800180018001
DATA iqScaleShuf<>+0x18(SB)/8, $0x8001800180018001
DATA iqScaleShuf<>+0x20(SB)/8, $0x8002800280028002
DATA iqScaleShuf<>+0x28(SB)/8, $0x8002800280028002
DATA iqScaleShuf<>+0x30(SB)/8, $0x8003800380038003
DATA iqScaleShuf<>+0x38(SB)/8, $0x8003800380038003
DATA iqScaleShuf<>+0x40(SB)/8, $0x8004800480048004
DATA iqScaleShuf<>+0x48(SB)/8, $0x8004800480048004
DATA iqScaleShuf<>+0x50(SB)/8, $0x8005800580058005
DATA iqScaleShuf<>+0x58(SB)/8, $0x8005800580058005
DATA iqScaleShuf<>+0x60(SB)/8, $0x8006800680068006
DATA iqScaleShuf<>+0x68(SB)/8, $0x8006800680068006
DATA iqScaleShuf<>+0x70(SB)/8, $0x8007800780078007
DATA iqScaleShuf<>+0x78(SB)/8, $0x8007800780078007
DATA iqScaleShuf<>+0x80(SB)/8, $0x8008800880088008
DATA iqScaleShuf<>+0x88(SB)/8, $0x8008800880088008
DATA iqScaleShuf<>+0x90(SB)/8, $0x8009800980098009
DATA iqScaleShuf<>+0x98(SB)/8, $0x8009800980098009
DATA iqScaleShuf<>+0xa0(SB)/8, $0x800a800a800a800a
DATA iqScaleShuf<>+0xa8(SB)/8, $0x800a800a800a800a
DATA iqScaleShuf<>+0xb0(SB)/8, $0x800b800b800b800b
DATA iqScaleShuf<>+0xb8(SB)/8, $0x800b800b800b800b
DATA iqScaleShuf<>+0xc0(SB)/8, $0x800c800c800c800c
DATA iqScaleShuf<>+0xc8(SB)/8, $0x800c800c800c800c
DATA iqScaleShuf<>+0xd0(SB)/8, $0x800d800d800d800d
DATA iqScaleShuf<>+0xd8(SB)/8, $0x800d800d800d800d
DATA iqScaleShuf<>+0xe0(SB)/8, $0x800e800e800e800e
DATA iqScaleShuf<>+0xe8(SB)/8, $0x800e800e800e800e
DATA iqScaleShuf<>+0xf0(SB)/8, $0x800f800f800f800f
DATA iqScaleShuf<>+0xf8(SB)/8, $0x800f800f800f800f
GLOBL iqScaleShuf<>(SB), RODATA|NOPTR, $256

// IQ_SCALE_D sets X1 to fp16 d (at (SI)) times the Q8_K d (at (DI)).
#define IQ_SCALE_D \
	MOVWLZX (SI), AX         \
	VMOVD   AX, X1           \
	VCVTPH2PS X1, X1         \
	VMULSS  (DI), X1, X1

// IQ_BLOCK_END adds d (X1) times the int32 sum of the lanes of Y8 to X0.
#define IQ_BLOCK_END \
	VEXTRACTI128 $1, Y8, X9  \
	VPADDD  X9, X8, X8       \
	VPSHUFD $0x4e, X8, X9    \
	VPADDD  X9, X8, X8       \
	VPSHUFD $0xb1, X8, X9    \
	VPADDD  X9, X8, X8       \
	VCVTDQ2PS X8, X8         \
	VMULSS  X8, X1, X8       \
	VADDSS  X8, X0, X0

// IQ_SIGNS sets the bytes of Y10, the sign bytes spread over their 8
// values each, to 0x7f where bit j%8 (iqBitSel, Y12) is clear and to a
// negative byte where it is set: a VPSIGNB operand for +1/-1. Y13 holds
// bytes of 0x7f.
#define IQ_SIGNS \
	VPAND   Y12, Y10, Y10 \
	VPADDB  Y13, Y10, Y10

// IQ_SIGNED_DOT: Y9 = 16 int16 pair sums of grid bytes Y9 (unsigned) signed
// by Y10 (IQ_SIGNS) times the 32 int8 activations at q8off(R10).
// Clobbers Y11.
#define IQ_SIGNED_DOT(q8off) \
	VMOVDQU    q8off(R10), Y11 \
	VPSIGNB    Y10, Y9, Y9     \
	VPSIGNB    Y11, Y9, Y9     \
	VPABSB     Y11, Y11        \
	VPMADDUBSW Y9, Y11, Y9

// IQ2_XS group of 32 values: grid indices in the low 9 bits of words
// j..j+3 at qsoff(SI), signs from Y6 or Y7 (sreg) with shuffle shuf,
// activations at q8off(R10), scale row k of Y2. (The indices are split
// with scalar shifts: storing them from a vector register and reloading
// them as words stalled on store forwarding and cost a quarter of the
// speed.)
#define IQ2XS_GROUP(qsoff, j, sreg, shuf, q8off, k) \
	MOVQ    (qsoff+2*(j))(SI), AX        \
	MOVL    AX, BX                       \
	ANDL    $511, BX                     \
	VMOVQ   (R8)(BX*8), X9               \
	MOVL    AX, DX                       \
	SHRL    $16, DX                      \
	ANDL    $511, DX                     \
	VPINSRQ $1, (R8)(DX*8), X9, X9       \
	SHRQ    $32, AX                      \
	MOVL    AX, BX                       \
	ANDL    $511, BX                     \
	VMOVQ   (R8)(BX*8), X10              \
	SHRL    $16, AX                      \
	ANDL    $511, AX                     \
	VPINSRQ $1, (R8)(AX*8), X10, X10     \
	VINSERTI128 $1, X10, Y9, Y9          \
	VPSHUFB shuf, sreg, Y10              \
	IQ_SIGNS                             \
	IQ_SIGNED_DOT(q8off)                 \
	VPSHUFB (32*(k))(R11), Y2, Y10       \
	VPMADDWD Y10, Y9, Y9                 \
	VPADDD  Y9, Y8, Y8

// IQ2_XS half block of 128 values: 16 uint16 at qsoff(SI).
#define IQ2XS_HALF(qsoff, q8off, k) \
	VMOVDQU qsoff(SI), Y3                \
	VPSRLW  $9, Y3, Y5                   \
	VPSRLW  $13, Y3, Y6                  \
	VPXOR   Y6, Y5, Y6                   \
	VPSHUFB Y6, Y14, Y6                  \
	VPOR    Y6, Y5, Y5                   \
	VPERMQ  $0x44, Y5, Y6                \
	VPERMQ  $0xee, Y5, Y7                \
	IQ2XS_GROUP(qsoff, 0, Y6, (R12), q8off, k)     \
	IQ2XS_GROUP(qsoff, 4, Y6, 32(R12), q8off+32, k+1) \
	IQ2XS_GROUP(qsoff, 8, Y7, (R12), q8off+64, k+2) \
	IQ2XS_GROUP(qsoff, 12, Y7, 32(R12), q8off+96, k+3)

// func iq2xsDotAVX2(w, a *byte, nb int) float32
TEXT ·iq2xsDotAVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nb+16(FP), CX
	LEAQ ·iq2xsGrid(SB), R8
	LEAQ iqScaleShuf<>(SB), R11
	LEAQ iqSignShuf<>(SB), R12
	VMOVDQU iqBitSel<>(SB), Y12
	VMOVDQU iq7f<>(SB), Y13
	VMOVDQU iqBitHelper<>(SB), Y14
	VXORPS  X0, X0, X0

iq2xsBlock:
	IQ_SCALE_D

	// Scales 2*s+1 as bytes: low nibble of byte k at 2k, high at 2k+1.
	VMOVQ      66(SI), X2
	VPSRLW     $4, X2, X3
	VPAND      iqM4<>(SB), X2, X2
	VPAND      iqM4<>(SB), X3, X3
	VPUNPCKLBW X3, X2, X2
	VPADDB     X2, X2, X2
	VPADDB     iqOnes8<>(SB), X2, X2
	VINSERTI128 $1, X2, Y2, Y2

	LEAQ  4(DI), R10
	VPXOR Y8, Y8, Y8

	IQ2XS_HALF(2, 0, 0)
	IQ2XS_HALF(34, 128, 4)

	IQ_BLOCK_END

	ADDQ $74, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq2xsBlock

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Constants for the sign/scale words of IQ2_XXS and IQ3_XXS.
DATA iqAux7f<>+0x00(SB)/4, $0x0000007f
DATA iqAux7f<>+0x04(SB)/4, $0x00007f00
DATA iqAux7f<>+0x08(SB)/4, $0x007f0000
DATA iqAux7f<>+0x0c(SB)/4, $0x7f000000
GLOBL iqAux7f<>(SB), RODATA|NOPTR, $16

DATA iqOnes32<>+0x00(SB)/4, $0x00000001
GLOBL iqOnes32<>(SB), RODATA|NOPTR, $4

// Row j (32 bytes): byte 4j of the low lane over its first 8 bytes and
// byte 4j+1 over its next 8, bytes 4j+2 and 4j+3 likewise in the high
// lane: the four sign bytes of group j of a lane, one per 8 values.
DATA iqSignGrp<>+0x00(SB)/8, $0x0000000000000000
DATA iqSignGrp<>+0x08(SB)/8, $0x0101010101010101
DATA iqSignGrp<>+0x10(SB)/8, $0x0202020202020202
DATA iqSignGrp<>+0x18(SB)/8, $0x0303030303030303
DATA iqSignGrp<>+0x20(SB)/8, $0x0404040404040404
DATA iqSignGrp<>+0x28(SB)/8, $0x0505050505050505
DATA iqSignGrp<>+0x30(SB)/8, $0x0606060606060606
DATA iqSignGrp<>+0x38(SB)/8, $0x0707070707070707
DATA iqSignGrp<>+0x40(SB)/8, $0x0808080808080808
DATA iqSignGrp<>+0x48(SB)/8, $0x0909090909090909
DATA iqSignGrp<>+0x50(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA iqSignGrp<>+0x58(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA iqSignGrp<>+0x60(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA iqSignGrp<>+0x68(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA iqSignGrp<>+0x70(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA iqSignGrp<>+0x78(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL iqSignGrp<>(SB), RODATA|NOPTR, $128

// IQ_AUX_SIGNS takes the eight sign/scale words of a block in Y5 and
// computes their 32 sign bytes (one per 8 values, the 7-bit ksigns_iq2xs
// index plus its parity bit: ksigns_iq2xs itself), those of groups 0-3
// into both lanes of Y4 and those of groups 4-7 into both lanes of Y2,
// and the group scales 2*s+1, as two int16 per dword, those of groups 0-3
// into both lanes of Y3 and those of groups 4-7 into both lanes of Y5.
// Clobbers Y6, Y7, Y9.
#define IQ_AUX_SIGNS \
	VPBROADCASTD iqAux7f<>+0x00(SB), Y9  \
	VPAND        Y9, Y5, Y6              \
	VPSLLD       $1, Y5, Y7              \
	VPBROADCASTD iqAux7f<>+0x04(SB), Y9  \
	VPAND        Y9, Y7, Y7              \
	VPOR         Y7, Y6, Y6              \
	VPSLLD       $2, Y5, Y7              \
	VPBROADCASTD iqAux7f<>+0x08(SB), Y9  \
	VPAND        Y9, Y7, Y7              \
	VPOR         Y7, Y6, Y6              \
	VPSLLD       $3, Y5, Y7              \
	VPBROADCASTD iqAux7f<>+0x0c(SB), Y9  \
	VPAND        Y9, Y7, Y7              \
	VPOR         Y7, Y6, Y6              \
	VPSRLW       $4, Y6, Y7              \
	VPXOR        Y6, Y7, Y7              \
	VPAND        Y15, Y7, Y7             \
	VPSHUFB      Y7, Y14, Y7             \
	VPOR         Y7, Y6, Y6              \
	VPERMQ       $0x44, Y6, Y4           \
	VPERMQ       $0xee, Y6, Y2           \
	VPSRLD       $28, Y5, Y6             \
	VPADDD       Y6, Y6, Y6              \
	VPBROADCASTD iqOnes32<>(SB), Y9      \
	VPADDD       Y9, Y6, Y6              \
	VPSLLD       $16, Y6, Y7             \
	VPOR         Y7, Y6, Y6              \
	VPERMQ       $0x44, Y6, Y3           \
	VPERMQ       $0xee, Y6, Y5

// IQ_AUX_GROUP finishes group k of 32 values, whose grid bytes are in Y9:
// signs from the lane copy sreg (Y4 for groups 0-3, Y2 for 4-7), dot with
// the activations, scale pair from dword k%4 of screg (Y3 for groups 0-3,
// Y5 for 4-7), int32 sums added to Y8.
// Clobbers Y9, Y10, Y11.
#define IQ_AUX_GROUP(k, sreg, screg) \
	VPSHUFB      iqSignGrp<>+(32*((k)%4))(SB), sreg, Y10 \
	IQ_SIGNS                             \
	IQ_SIGNED_DOT(32*(k))                \
	VPSHUFD      $(0x55*((k)%4)), screg, Y10 \
	VPMADDWD     Y10, Y9, Y9             \
	VPADDD       Y9, Y8, Y8

// IQ2_XXS group k of 32 values: four iq2xxs_grid indices (R8) at 2+8k(SI).
#define IQ2XXS_GROUP(k, sreg, screg) \
	MOVBLZX (2+8*(k))(SI), AX            \
	VMOVQ   (R8)(AX*8), X9               \
	MOVBLZX (3+8*(k))(SI), AX            \
	VPINSRQ $1, (R8)(AX*8), X9, X9       \
	MOVBLZX (4+8*(k))(SI), AX            \
	VMOVQ   (R8)(AX*8), X10              \
	MOVBLZX (5+8*(k))(SI), AX            \
	VPINSRQ $1, (R8)(AX*8), X10, X10     \
	VINSERTI128 $1, X10, Y9, Y9          \
	IQ_AUX_GROUP(k, sreg, screg)

// Registers of the IQ2_XXS and IQ3_XXS loops: SI weights, DI activations,
// R10 activation quants, CX blocks left, R8 grid, X0 sum, X1 block scale,
// Y8 int32 sums, Y2-Y5 sign bytes and scales (IQ_AUX_SIGNS),
// Y12 iqBitSel, Y13 bytes of 0x7f, Y14 iqBitHelper, Y15 bytes of 0x0f.
#define IQ_AUX_SETUP \
	MOVQ    w+0(FP), SI                  \
	MOVQ    a+8(FP), DI                  \
	MOVQ    nb+16(FP), CX                \
	VMOVDQU iqBitSel<>(SB), Y12          \
	VMOVDQU iq7f<>(SB), Y13              \
	VMOVDQU iqBitHelper<>(SB), Y14       \
	VMOVDQU iqM4<>(SB), Y15              \
	VXORPS  X0, X0, X0

// func iq2xxsDotAVX2(w, a *byte, nb int) float32
TEXT ·iq2xxsDotAVX2(SB), NOSPLIT, $0-28
	IQ_AUX_SETUP
	LEAQ ·iq2xxsGrid(SB), R8

iq2xxsBlock:
	IQ_SCALE_D
	LEAQ  4(DI), R10
	VPXOR Y8, Y8, Y8

	// The sign/scale words are dwords 1, 3, 5, 7 of each group pair.
	VMOVDQU 2(SI), Y5
	VMOVDQU 34(SI), Y6
	VSHUFPS $0xdd, Y6, Y5, Y5
	VPERMQ  $0xd8, Y5, Y5
	IQ_AUX_SIGNS

	IQ2XXS_GROUP(0, Y4, Y3)
	IQ2XXS_GROUP(1, Y4, Y3)
	IQ2XXS_GROUP(2, Y4, Y3)
	IQ2XXS_GROUP(3, Y4, Y3)
	IQ2XXS_GROUP(4, Y2, Y5)
	IQ2XXS_GROUP(5, Y2, Y5)
	IQ2XXS_GROUP(6, Y2, Y5)
	IQ2XXS_GROUP(7, Y2, Y5)
	IQ_BLOCK_END

	ADDQ $66, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq2xxsBlock

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// IQ3_XXS group k of 32 values: eight iq3xxs_grid indices (R8) at
// 2+8k(SI).
#define IQ3XXS_GROUP(k, sreg, screg) \
	MOVBLZX (2+8*(k))(SI), AX            \
	VMOVD   (R8)(AX*4), X9               \
	MOVBLZX (3+8*(k))(SI), AX            \
	VPINSRD $1, (R8)(AX*4), X9, X9       \
	MOVBLZX (4+8*(k))(SI), AX            \
	VPINSRD $2, (R8)(AX*4), X9, X9       \
	MOVBLZX (5+8*(k))(SI), AX            \
	VPINSRD $3, (R8)(AX*4), X9, X9       \
	MOVBLZX (6+8*(k))(SI), AX            \
	VMOVD   (R8)(AX*4), X10              \
	MOVBLZX (7+8*(k))(SI), AX            \
	VPINSRD $1, (R8)(AX*4), X10, X10     \
	MOVBLZX (8+8*(k))(SI), AX            \
	VPINSRD $2, (R8)(AX*4), X10, X10     \
	MOVBLZX (9+8*(k))(SI), AX            \
	VPINSRD $3, (R8)(AX*4), X10, X10     \
	VINSERTI128 $1, X10, Y9, Y9          \
	IQ_AUX_GROUP(k, sreg, screg)

// func iq3xxsDotAVX2(w, a *byte, nb int) float32
TEXT ·iq3xxsDotAVX2(SB), NOSPLIT, $0-28
	IQ_AUX_SETUP
	LEAQ ·iq3xxsGrid(SB), R8

iq3xxsBlock:
	IQ_SCALE_D
	LEAQ  4(DI), R10
	VPXOR Y8, Y8, Y8

	VMOVDQU 66(SI), Y5
	IQ_AUX_SIGNS

	IQ3XXS_GROUP(0, Y4, Y3)
	IQ3XXS_GROUP(1, Y4, Y3)
	IQ3XXS_GROUP(2, Y4, Y3)
	IQ3XXS_GROUP(3, Y4, Y3)
	IQ3XXS_GROUP(4, Y2, Y5)
	IQ3XXS_GROUP(5, Y2, Y5)
	IQ3XXS_GROUP(6, Y2, Y5)
	IQ3XXS_GROUP(7, Y2, Y5)
	IQ_BLOCK_END

	ADDQ $98, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq3xxsBlock

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Per-group shifts of the IQ4_XS scale bits: 4 bits of scales_l and 2 of
// scales_h per group.
DATA iq4ShiftL<>+0x00(SB)/8, $0x0000000400000000
DATA iq4ShiftL<>+0x08(SB)/8, $0x0000000c00000008
DATA iq4ShiftL<>+0x10(SB)/8, $0x0000001400000010
DATA iq4ShiftL<>+0x18(SB)/8, $0x0000001c00000018
GLOBL iq4ShiftL<>(SB), RODATA|NOPTR, $32

DATA iq4ShiftH<>+0x00(SB)/8, $0x0000000200000000
DATA iq4ShiftH<>+0x08(SB)/8, $0x0000000600000004
DATA iq4ShiftH<>+0x10(SB)/8, $0x0000000a00000008
DATA iq4ShiftH<>+0x18(SB)/8, $0x0000000e0000000c
GLOBL iq4ShiftH<>(SB), RODATA|NOPTR, $32

DATA iq4Consts<>+0x00(SB)/4, $0x0000000f
DATA iq4Consts<>+0x04(SB)/4, $0x00000030
DATA iq4Consts<>+0x08(SB)/4, $0x00000020
DATA iq4Consts<>+0x0c(SB)/4, $0x0000ffff
GLOBL iq4Consts<>(SB), RODATA|NOPTR, $16

// IQ4_XS group ib of 32 values: 16 bytes of nibbles at 8+16ib(SI), looked
// up in kvalues_iq4nl (Y14, both lanes), scale ls-32 as two int16 in dword
// ib%4 of screg (Y12 for groups 0-3, Y13 for 4-7).
#define IQ4XS_GROUP(ib, screg) \
	VMOVDQU (8+16*(ib))(SI), X9          \
	VPSRLW  $4, X9, X10                  \
	VINSERTI128 $1, X10, Y9, Y9          \
	VPAND   Y15, Y9, Y9                  \
	VPSHUFB Y9, Y14, Y9                  \
	VMOVDQU (32*(ib))(R10), Y11          \
	VPSIGNB Y11, Y9, Y9                  \
	VPABSB  Y11, Y11                     \
	VPMADDUBSW Y9, Y11, Y9               \
	VPSHUFD $(0x55*((ib)%4)), screg, Y10 \
	VPMADDWD Y10, Y9, Y9                 \
	VPADDD  Y9, Y8, Y8

// func iq4xsDotAVX2(w, a *byte, nb int) float32
TEXT ·iq4xsDotAVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nb+16(FP), CX
	VBROADCASTI128 ·kvaluesIQ4NL(SB), Y14
	VMOVDQU iqM4<>(SB), Y15
	VMOVDQU iq4ShiftL<>(SB), Y2
	VMOVDQU iq4ShiftH<>(SB), Y3
	VPBROADCASTD iq4Consts<>+0x00(SB), Y4
	VPBROADCASTD iq4Consts<>+0x04(SB), Y5
	VPBROADCASTD iq4Consts<>+0x08(SB), Y6
	VPBROADCASTD iq4Consts<>+0x0c(SB), Y7
	VXORPS  X0, X0, X0

iq4xsBlock:
	IQ_SCALE_D
	LEAQ    4(DI), R10
	VPXOR   Y8, Y8, Y8

	// Scales ls-32 of the 8 groups, each as an int16 pair, groups 0-3 in
	// both lanes of Y12, groups 4-7 in both lanes of Y13.
	VPBROADCASTD 4(SI), Y9
	VPSRLVD      Y2, Y9, Y9
	VPAND        Y4, Y9, Y9
	VPBROADCASTD 2(SI), Y10
	VPSRLVD      Y3, Y10, Y10
	VPSLLD       $4, Y10, Y10
	VPAND        Y5, Y10, Y10
	VPOR         Y10, Y9, Y9
	VPSUBD       Y6, Y9, Y9
	VPAND        Y7, Y9, Y10
	VPSLLD       $16, Y9, Y9
	VPOR         Y10, Y9, Y9
	VPERMQ       $0x44, Y9, Y12
	VPERMQ       $0xee, Y9, Y13

	IQ4XS_GROUP(0, Y12)
	IQ4XS_GROUP(1, Y12)
	IQ4XS_GROUP(2, Y12)
	IQ4XS_GROUP(3, Y12)
	IQ4XS_GROUP(4, Y13)
	IQ4XS_GROUP(5, Y13)
	IQ4XS_GROUP(6, Y13)
	IQ4XS_GROUP(7, Y13)
	IQ_BLOCK_END

	ADDQ $136, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq4xsBlock

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// IQ3_S and IQ2_S: explicit sign bytes (bit j of the 4 bytes of a group of
// 32 = value j), so a group's signs are bytes_from_bits_32 of one dword:
// iqSpread4 copies byte k of each dword over bytes 8k..8k+7 of its lane.
DATA iqSpread4<>+0x00(SB)/8, $0x0000000000000000
DATA iqSpread4<>+0x08(SB)/8, $0x0101010101010101
DATA iqSpread4<>+0x10(SB)/8, $0x0202020202020202
DATA iqSpread4<>+0x18(SB)/8, $0x0303030303030303
GLOBL iqSpread4<>(SB), RODATA|NOPTR, $32

#define IQS_SETUP \
	MOVQ    w+0(FP), SI                  \
	MOVQ    a+8(FP), DI                  \
	MOVQ    nb+16(FP), CX                \
	VMOVDQU iqBitSel<>(SB), Y12          \
	VMOVDQU iq7f<>(SB), Y13              \
	VMOVDQU iqSpread4<>(SB), Y14         \
	VXORPS  X0, X0, X0

// IQS_SIGNS_DOT signs the 32 grid bytes of Y9 by the bits of the dword at
// soff(SI) and dots them with the activations at q8off(R10): Y9 = 16 int16
// pair sums.
#define IQS_SIGNS_DOT(soff, q8off) \
	VPBROADCASTD soff(SI), Y10           \
	VPSHUFB Y14, Y10, Y10                \
	IQ_SIGNS                             \
	IQ_SIGNED_DOT(q8off)

// IQS_SIGNS_DOT_S is IQS_SIGNS_DOT with the signs moved to the
// activations, maddubs(grid, sign(q8, s)), as llama.cpp does: the grids of
// IQ3_S and IQ2_S are all positive, so this is two instructions fewer per
// 32 weights and the same integer sums for every q8 but -128 (which
// sign_epi8 cannot negate; see q8KHasMin). Measured on Zen 3 (rows in L2,
// medians of 41 alternating rounds): the dot 1.04x (IQ3_S) and 1.08-1.17x
// (IQ2_S) as fast, the tiles (IQS_COL_S) 1.06-1.08x.
#define IQS_SIGNS_DOT_S(soff, q8off) \
	VPBROADCASTD soff(SI), Y10           \
	VPSHUFB Y14, Y10, Y10                \
	IQ_SIGNS                             \
	VMOVDQU    q8off(R10), Y11           \
	VPSIGNB    Y10, Y11, Y11             \
	VPMADDUBSW Y11, Y9, Y9

// IQ3S_IDX sets AX to grid index k of group ib: qs byte k | bit k of the
// group's qh byte (BX, pre-shifted left by 8 and shifted right by one per
// index) << 8.
#define IQ3S_IDX(ib, k) \
	MOVBLZX (2+8*(ib)+(k))(SI), AX       \
	MOVL    BX, DX                       \
	ANDL    $256, DX                     \
	ORL     DX, AX                       \
	SHRL    $1, BX

// IQ3_S's grid indices, 8 per group: the group's qs bytes zero-extended
// to words, OR bit k of its qh byte times 256 into word k (the qh byte
// broadcast, as the word qh*257, times 2^(8-k), AND 0x100: the high copy
// lands at bit 9 or above); the 8 words are moved to AX and DX at once
// and split with shifts, instead of five scalar operations per index
// (IQ3S_IDX): 40 scalar operations per group down to 15, plus 5 vector
// ones. The dot takes it (IQ3_S dot 35.2 -> 32.6 ns per super-block on
// Zen 3, in L2, medians of 41 alternating rounds); the tiles keep IQ3S_IDX,
// whose scalar work overlaps their column products (47.5 -> 50.1 ns with
// IQ3S_GRID8). tmp is a free X register.
DATA iq3sQhMul<>+0x00(SB)/8, $0x0020004000800100
DATA iq3sQhMul<>+0x08(SB)/8, $0x0002000400080010
GLOBL iq3sQhMul<>(SB), RODATA|NOPTR, $16
DATA iq3sM100<>+0x00(SB)/8, $0x0100010001000100
DATA iq3sM100<>+0x08(SB)/8, $0x0100010001000100
GLOBL iq3sM100<>(SB), RODATA|NOPTR, $16

// IQ3S_GRID8 sets Y9 to the 8 grid entries (4 magnitudes each) of group
// ib, using X10, BX, AX, DX and tmp.
#define IQ3S_GRID8(ib, tmp) \
	VPMOVZXBW    (2+8*(ib))(SI), X9      \
	VPBROADCASTB (66+(ib))(SI), tmp      \
	VPMULLW      iq3sQhMul<>(SB), tmp, tmp \
	VPAND        iq3sM100<>(SB), tmp, tmp  \
	VPOR         tmp, X9, X9             \
	VMOVQ        X9, AX                  \
	VPEXTRQ      $1, X9, DX              \
	MOVWQZX      AX, BX                  \
	VMOVD        (R8)(BX*4), X9          \
	SHRQ         $16, AX                 \
	MOVWQZX      AX, BX                  \
	VPINSRD      $1, (R8)(BX*4), X9, X9  \
	SHRQ         $16, AX                 \
	MOVWQZX      AX, BX                  \
	VPINSRD      $2, (R8)(BX*4), X9, X9  \
	SHRQ         $16, AX                 \
	VPINSRD      $3, (R8)(AX*4), X9, X9  \
	MOVWQZX      DX, BX                  \
	VMOVD        (R8)(BX*4), X10         \
	SHRQ         $16, DX                 \
	MOVWQZX      DX, BX                  \
	VPINSRD      $1, (R8)(BX*4), X10, X10 \
	SHRQ         $16, DX                 \
	MOVWQZX      DX, BX                  \
	VPINSRD      $2, (R8)(BX*4), X10, X10 \
	SHRQ         $16, DX                 \
	VPINSRD      $3, (R8)(DX*4), X10, X10 \
	VINSERTI128  $1, X10, Y9, Y9

// IQ3_S group ib of 32 values: 8 grid entries of 4 magnitudes, signs at
// 74+4ib, activations at 32ib(R10), scale 1+2s from nibble ib%2 of byte
// 106+ib/2. SIGNDOT is IQS_SIGNS_DOT, or IQS_SIGNS_DOT_S for activations
// without -128.
#define IQ3S_GROUP(ib, SIGNDOT) \
	IQ3S_GRID8(ib, X7)                \
	SIGNDOT(74+4*(ib), 32*(ib))          \
	VPSHUFB (32*(ib))(R11), Y15, Y10     \
	VPMADDWD Y10, Y9, Y9                 \
	VPADDD  Y9, Y8, Y8

// IQS_SCALES8 sets bytes 2k and 2k+1 of Y15 (both lanes) to 2s+1 of the
// 4-bit scale k (k = 0..7) in the 4 bytes at off(SI), for VPSHUFB with
// the rows of iqScaleShuf (R11), as IQS_SCALES16.
#define IQS_SCALES8(off) \
	VMOVD      off(SI), X15              \
	VPSRLW     $4, X15, X10              \
	VPUNPCKLBW X10, X15, X15             \
	VPAND      iqM4<>(SB), X15, X15      \
	VPUNPCKLBW X15, X15, X15             \
	VPADDB     X15, X15, X15             \
	VPOR       iqOnes8<>(SB), X15, X15   \
	VINSERTI128 $1, X15, Y15, Y15

// func iq3sDotAVX2(w, a *byte, nb int) float32
TEXT ·iq3sDotAVX2(SB), NOSPLIT, $0-28
	IQS_SETUP
	LEAQ ·iq3sGrid(SB), R8
	LEAQ iqScaleShuf<>(SB), R11

iq3sBlock:
	IQ_SCALE_D
	LEAQ  4(DI), R10
	VPXOR Y8, Y8, Y8
	IQS_SCALES8(106)
	IQ3S_GROUP(0, IQS_SIGNS_DOT)
	IQ3S_GROUP(1, IQS_SIGNS_DOT)
	IQ3S_GROUP(2, IQS_SIGNS_DOT)
	IQ3S_GROUP(3, IQS_SIGNS_DOT)
	IQ3S_GROUP(4, IQS_SIGNS_DOT)
	IQ3S_GROUP(5, IQS_SIGNS_DOT)
	IQ3S_GROUP(6, IQS_SIGNS_DOT)
	IQ3S_GROUP(7, IQS_SIGNS_DOT)
	IQ_BLOCK_END

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq3sBlock

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// iq3sDotAVX2S is iq3sDotAVX2 for activations without the quant -128 (IQS_SIGNS_DOT_S):
// the same integer sums and float steps, so the same bits.
//
// func iq3sDotAVX2S(w, a *byte, nb int) float32
TEXT ·iq3sDotAVX2S(SB), NOSPLIT, $0-28
	IQS_SETUP
	LEAQ ·iq3sGrid(SB), R8
	LEAQ iqScaleShuf<>(SB), R11

iq3sBlockS:
	IQ_SCALE_D
	LEAQ  4(DI), R10
	VPXOR Y8, Y8, Y8
	IQS_SCALES8(106)
	IQ3S_GROUP(0, IQS_SIGNS_DOT_S)
	IQ3S_GROUP(1, IQS_SIGNS_DOT_S)
	IQ3S_GROUP(2, IQS_SIGNS_DOT_S)
	IQ3S_GROUP(3, IQS_SIGNS_DOT_S)
	IQ3S_GROUP(4, IQS_SIGNS_DOT_S)
	IQ3S_GROUP(5, IQS_SIGNS_DOT_S)
	IQ3S_GROUP(6, IQS_SIGNS_DOT_S)
	IQ3S_GROUP(7, IQS_SIGNS_DOT_S)
	IQ_BLOCK_END

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq3sBlockS

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// IQ2S_IDX sets AX to grid index l of group ib: qs byte | bits 2l, 2l+1 of
// the group's qh byte (BX, pre-shifted left by 8, two right per index).
#define IQ2S_IDX(ib, l) \
	MOVBLZX (2+4*(ib)+(l))(SI), AX       \
	MOVL    BX, DX                       \
	ANDL    $0x300, DX                   \
	ORL     DX, AX                       \
	SHRL    $2, BX

// IQS_SCALES16 sets the bytes of Y15 (both lanes) to 2s+1 of the 16
// 4-bit scales in the 8 bytes at off(SI), byte 2k the low nibble of byte k
// and 2k+1 its high nibble, for VPSHUFB with the rows of iqScaleShuf (R11):
// one shuffle per group instead of two scalar extractions and broadcasts
// (IQ2_S: 411 -> 331 instructions per super-block, callgrind).
#define IQS_SCALES16(off) \
	VMOVQ      off(SI), X15              \
	VPSRLW     $4, X15, X10              \
	VPUNPCKLBW X10, X15, X15             \
	VPAND      iqM4<>(SB), X15, X15      \
	VPADDB     X15, X15, X15             \
	VPOR       iqOnes8<>(SB), X15, X15   \
	VINSERTI128 $1, X15, Y15, Y15

// IQ2_S's grid indices, 32 per super-block, built with vectors: qs bytes
// zero-extended to words, OR the qh bits (qh byte of the group times
// 2^(8-2l), AND 0x300) of index l; each group's four words are then moved
// to a general register at once (VMOVQ/VPEXTRQ) and split with shifts,
// instead of five scalar operations per index (callgrind instructions per
// super-block: 339 -> 232).
DATA iq2sQhShufA<>+0x00(SB)/8, $0x8000800080008000
DATA iq2sQhShufA<>+0x08(SB)/8, $0x8001800180018001
DATA iq2sQhShufA<>+0x10(SB)/8, $0x8002800280028002
DATA iq2sQhShufA<>+0x18(SB)/8, $0x8003800380038003
GLOBL iq2sQhShufA<>(SB), RODATA|NOPTR, $32
DATA iq2sQhShufB<>+0x00(SB)/8, $0x8004800480048004
DATA iq2sQhShufB<>+0x08(SB)/8, $0x8005800580058005
DATA iq2sQhShufB<>+0x10(SB)/8, $0x8006800680068006
DATA iq2sQhShufB<>+0x18(SB)/8, $0x8007800780078007
GLOBL iq2sQhShufB<>(SB), RODATA|NOPTR, $32
DATA iq2sQhMul<>+0x00(SB)/8, $0x0004001000400100
DATA iq2sQhMul<>+0x08(SB)/8, $0x0004001000400100
DATA iq2sQhMul<>+0x10(SB)/8, $0x0004001000400100
DATA iq2sQhMul<>+0x18(SB)/8, $0x0004001000400100
GLOBL iq2sQhMul<>(SB), RODATA|NOPTR, $32
DATA iq2sM300<>+0x00(SB)/8, $0x0300030003000300
DATA iq2sM300<>+0x08(SB)/8, $0x0300030003000300
DATA iq2sM300<>+0x10(SB)/8, $0x0300030003000300
DATA iq2sM300<>+0x18(SB)/8, $0x0300030003000300
GLOBL iq2sM300<>(SB), RODATA|NOPTR, $32

// IQ2S_INDICES sets the words of Y2 to the indices of groups 0..3 and Y3
// to those of groups 4..7.
#define IQ2S_INDICES \
	VPMOVZXBW    2(SI), Y2               \
	VPMOVZXBW    18(SI), Y3              \
	VPBROADCASTQ 66(SI), Y4              \
	VPSHUFB      iq2sQhShufA<>(SB), Y4, Y5 \
	VPSHUFB      iq2sQhShufB<>(SB), Y4, Y6 \
	VPMULLW      iq2sQhMul<>(SB), Y5, Y5 \
	VPMULLW      iq2sQhMul<>(SB), Y6, Y6 \
	VPAND        iq2sM300<>(SB), Y5, Y5  \
	VPAND        iq2sM300<>(SB), Y6, Y6  \
	VPOR         Y5, Y2, Y2              \
	VPOR         Y6, Y3, Y3

// IQ2S_GATHER loads the 4 grid entries whose indices are the words of AX
// into Y9.
#define IQ2S_GATHER \
	MOVWQZX AX, DX                       \
	VMOVQ   (R8)(DX*8), X9               \
	SHRQ    $16, AX                      \
	MOVWQZX AX, DX                       \
	VPINSRQ $1, (R8)(DX*8), X9, X9       \
	SHRQ    $16, AX                      \
	MOVWQZX AX, DX                       \
	VMOVQ   (R8)(DX*8), X10              \
	SHRQ    $16, AX                      \
	VPINSRQ $1, (R8)(AX*8), X10, X10     \
	VINSERTI128 $1, X10, Y9, Y9

// IQ2S_DOT finishes group ib: signs, dot with the activations (SIGNDOT as
// in IQ3S_GROUP), scales.
#define IQ2S_DOT(ib, SIGNDOT) \
	SIGNDOT(34+4*(ib), 32*(ib))          \
	VPSHUFB (32*(ib))(R11), Y15, Y10     \
	VPMADDWD Y10, Y9, Y9                 \
	VPADDD  Y9, Y8, Y8

// func iq2sDotAVX2(w, a *byte, nb int) float32
TEXT ·iq2sDotAVX2(SB), NOSPLIT, $0-28
	IQS_SETUP
	LEAQ ·iq2sGrid(SB), R8
	LEAQ iqScaleShuf<>(SB), R11

iq2sBlock:
	IQ_SCALE_D
	LEAQ  4(DI), R10
	VPXOR Y8, Y8, Y8
	IQS_SCALES16(74)
	IQ2S_INDICES
	VMOVQ   X2, AX
	IQ2S_GATHER
	IQ2S_DOT(0, IQS_SIGNS_DOT)
	VPEXTRQ $1, X2, AX
	IQ2S_GATHER
	IQ2S_DOT(1, IQS_SIGNS_DOT)
	VEXTRACTI128 $1, Y2, X7
	VMOVQ   X7, AX
	IQ2S_GATHER
	IQ2S_DOT(2, IQS_SIGNS_DOT)
	VPEXTRQ $1, X7, AX
	IQ2S_GATHER
	IQ2S_DOT(3, IQS_SIGNS_DOT)
	VMOVQ   X3, AX
	IQ2S_GATHER
	IQ2S_DOT(4, IQS_SIGNS_DOT)
	VPEXTRQ $1, X3, AX
	IQ2S_GATHER
	IQ2S_DOT(5, IQS_SIGNS_DOT)
	VEXTRACTI128 $1, Y3, X7
	VMOVQ   X7, AX
	IQ2S_GATHER
	IQ2S_DOT(6, IQS_SIGNS_DOT)
	VPEXTRQ $1, X7, AX
	IQ2S_GATHER
	IQ2S_DOT(7, IQS_SIGNS_DOT)
	IQ_BLOCK_END

	ADDQ $82, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq2sBlock

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// iq2sDotAVX2S is iq2sDotAVX2 for activations without the quant -128 (IQS_SIGNS_DOT_S):
// the same integer sums and float steps, so the same bits.
//
// func iq2sDotAVX2S(w, a *byte, nb int) float32
TEXT ·iq2sDotAVX2S(SB), NOSPLIT, $0-28
	IQS_SETUP
	LEAQ ·iq2sGrid(SB), R8
	LEAQ iqScaleShuf<>(SB), R11

iq2sBlockS:
	IQ_SCALE_D
	LEAQ  4(DI), R10
	VPXOR Y8, Y8, Y8
	IQS_SCALES16(74)
	IQ2S_INDICES
	VMOVQ   X2, AX
	IQ2S_GATHER
	IQ2S_DOT(0, IQS_SIGNS_DOT_S)
	VPEXTRQ $1, X2, AX
	IQ2S_GATHER
	IQ2S_DOT(1, IQS_SIGNS_DOT_S)
	VEXTRACTI128 $1, Y2, X7
	VMOVQ   X7, AX
	IQ2S_GATHER
	IQ2S_DOT(2, IQS_SIGNS_DOT_S)
	VPEXTRQ $1, X7, AX
	IQ2S_GATHER
	IQ2S_DOT(3, IQS_SIGNS_DOT_S)
	VMOVQ   X3, AX
	IQ2S_GATHER
	IQ2S_DOT(4, IQS_SIGNS_DOT_S)
	VPEXTRQ $1, X3, AX
	IQ2S_GATHER
	IQ2S_DOT(5, IQS_SIGNS_DOT_S)
	VEXTRACTI128 $1, Y3, X7
	VMOVQ   X7, AX
	IQ2S_GATHER
	IQ2S_DOT(6, IQS_SIGNS_DOT_S)
	VPEXTRQ $1, X7, AX
	IQ2S_GATHER
	IQ2S_DOT(7, IQS_SIGNS_DOT_S)
	IQ_BLOCK_END

	ADDQ $82, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq2sBlockS

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Gemm tiles of IQ3_S and IQ2_S: one weight row against 4 activation rows
// (Kernel.Gemm for prefill and batches). Each group of 32 weights is
// unpacked once (grid lookups, signs) into signed bytes and multiplied with
// the 4 columns' activations, the sign moved to the weights as in the dots
// (maddubs(|q8|, w*sgn(q8)), exact for q8 = -128). Every column keeps the
// dot's exact integer sums and its float steps, so each result is
// bit-identical to the one-row dot.

// IQS_SIGN_W signs the grid bytes of Y9 by the bits of the dword at
// soff(SI). Clobbers Y10.
#define IQS_SIGN_W(soff) \
	VPBROADCASTD soff(SI), Y10           \
	VPSHUFB Y14, Y10, Y10                \
	IQ_SIGNS                             \
	VPSIGNB Y10, Y9, Y9

// IQS_COL adds to Y(acc) the int32 sums of the signed weights Y9 times the
// activations at q8 (an address), times the int16 scales Y10.
#define IQS_COL(q8, acc) \
	VMOVDQU    q8, Y11          \
	VPSIGNB    Y11, Y9, Y15     \
	VPABSB     Y11, Y11         \
	VPMADDUBSW Y15, Y11, Y15    \
	VPMADDWD   Y10, Y15, Y15    \
	VPADDD     Y15, acc, acc

// IQS_SIGN_S and IQS_COL_S are the tile's steps with the
// signs moved to the activations (as IQS_SIGNS_DOT_S): the grid bytes stay
// unsigned in Y9, the group's signs go to Y8, and each column is
// maddubs(grid, sign(q8, s)), one instruction fewer per column than
// IQS_COL and one fewer per group; the same integer sums for every q8 but
// -128.
#define IQS_SIGN_S(soff) \
	VPBROADCASTD soff(SI), Y8            \
	VPSHUFB Y14, Y8, Y8                  \
	VPAND   Y12, Y8, Y8                  \
	VPADDB  Y13, Y8, Y8

#define IQS_COL_S(q8, acc) \
	VMOVDQU    q8, Y11          \
	VPSIGNB    Y8, Y11, Y11     \
	VPMADDUBSW Y11, Y9, Y15     \
	VPMADDWD   Y10, Y15, Y15    \
	VPADDD     Y15, acc, acc

// IQS_COLS4 is COL (IQS_COL, or IQS_COL_S after IQS_SIGN_S) for the 4
// columns of the group's 32 activations at q8off: column c at R10 + c*R13
// (R9 = 3*R13).
#define IQS_COLS4(q8off, COL) \
	COL(q8off(R10), Y4)         \
	COL(q8off(R10)(R13*1), Y5)  \
	COL(q8off(R10)(R13*2), Y6)  \
	COL(q8off(R10)(R9*1), Y7)

// IQ3S_UNPACK: group ib of an IQ3_S block as signed bytes in Y9 and its
// scale 1+2s as int16 in Y10; with SIGN = IQS_SIGN_S instead of IQS_SIGN_W
// the grid bytes stay unsigned and the signs go to Y8.
#define IQ3S_UNPACK(ib, SIGN) \
	MOVBLZX (66+(ib))(SI), BX            \
	SHLL    $8, BX                       \
	IQ3S_IDX(ib, 0)                      \
	VMOVD   (R8)(AX*4), X9               \
	IQ3S_IDX(ib, 1)                      \
	VPINSRD $1, (R8)(AX*4), X9, X9       \
	IQ3S_IDX(ib, 2)                      \
	VPINSRD $2, (R8)(AX*4), X9, X9       \
	IQ3S_IDX(ib, 3)                      \
	VPINSRD $3, (R8)(AX*4), X9, X9       \
	IQ3S_IDX(ib, 4)                      \
	VMOVD   (R8)(AX*4), X10              \
	IQ3S_IDX(ib, 5)                      \
	VPINSRD $1, (R8)(AX*4), X10, X10     \
	IQ3S_IDX(ib, 6)                      \
	VPINSRD $2, (R8)(AX*4), X10, X10     \
	IQ3S_IDX(ib, 7)                      \
	VPINSRD $3, (R8)(AX*4), X10, X10     \
	VINSERTI128 $1, X10, Y9, Y9          \
	SIGN(74+4*(ib))                \
	MOVBLZX (106+(ib)/2)(SI), AX         \
	SHRL    $(4*((ib)%2)), AX            \
	ANDL    $15, AX                      \
	LEAL    1(AX)(AX*1), AX              \
	VMOVD   AX, X10                      \
	VPBROADCASTW X10, Y10

// IQ2S_UNPACK: group ib of an IQ2_S block as signed bytes in Y9 and the
// scales 1+2s of its halves as int16 in the two lanes of Y10; SIGN as in
// IQ3S_UNPACK.
#define IQ2S_UNPACK(ib, SIGN) \
	MOVBLZX (66+(ib))(SI), BX            \
	SHLL    $8, BX                       \
	IQ2S_IDX(ib, 0)                      \
	VMOVQ   (R8)(AX*8), X9               \
	IQ2S_IDX(ib, 1)                      \
	VPINSRQ $1, (R8)(AX*8), X9, X9       \
	IQ2S_IDX(ib, 2)                      \
	VMOVQ   (R8)(AX*8), X10              \
	IQ2S_IDX(ib, 3)                      \
	VPINSRQ $1, (R8)(AX*8), X10, X10     \
	VINSERTI128 $1, X10, Y9, Y9          \
	SIGN(34+4*(ib))                \
	MOVBLZX (74+(ib))(SI), AX            \
	MOVL    AX, DX                       \
	ANDL    $15, AX                      \
	LEAL    1(AX)(AX*1), AX              \
	VMOVD   AX, X10                      \
	VPBROADCASTW X10, X10                \
	SHRL    $4, DX                       \
	LEAL    1(DX)(DX*1), DX              \
	VMOVD   DX, X11                      \
	VPBROADCASTW X11, X11                \
	VINSERTI128 $1, X11, Y10, Y10

// IQS_COL_END adds (X8 = fp16 d) times column c's Q8_K d (at yd) times the
// int32 sum of the lanes of Y(acc) to X(sum).
#define IQS_COL_END(yd, acc, accx, sum) \
	VMULSS       yd, X8, X10    \
	VEXTRACTI128 $1, acc, X11   \
	VPADDD       X11, accx, accx \
	VPSHUFD      $0x4e, accx, X11 \
	VPADDD       X11, accx, accx \
	VPSHUFD      $0xb1, accx, X11 \
	VPADDD       X11, accx, accx \
	VCVTDQ2PS    accx, accx     \
	VMULSS       accx, X10, accx \
	VADDSS       accx, sum, sum

// IQS_GEMM4_SETUP sets the constants and zeroes the sums; the functions
// load their arguments (SI = w, DI = a, R13 = astride, CX = nb) first.
#define IQS_GEMM4_SETUP \
	LEAQ    (R13)(R13*2), R9             \
	VMOVDQU iqBitSel<>(SB), Y12          \
	VMOVDQU iq7f<>(SB), Y13              \
	VMOVDQU iqSpread4<>(SB), Y14         \
	VXORPS  X0, X0, X0                   \
	VXORPS  X1, X1, X1                   \
	VXORPS  X2, X2, X2                   \
	VXORPS  X3, X3, X3

// IQS_GEMM4_BLOCK_END finishes a super-block of the 4 columns and moves on.
#define IQS_GEMM4_BLOCK_END(wsize) \
	MOVWLZX (SI), AX                          \
	VMOVD   AX, X8                            \
	VCVTPH2PS X8, X8                          \
	IQS_COL_END((DI), Y4, X4, X0)             \
	IQS_COL_END((DI)(R13*1), Y5, X5, X1)      \
	IQS_COL_END((DI)(R13*2), Y6, X6, X2)      \
	IQS_COL_END((DI)(R9*1), Y7, X7, X3)       \
	ADDQ $(wsize), SI                         \
	ADDQ $292, DI

// IQS_GEMM4_STORE writes the 4 column sums to out[c*ostride] (R11 = out,
// R12 = 4*ostride).
#define IQS_GEMM4_STORE \
	MOVSS X0, (R11)                      \
	ADDQ  R12, R11                       \
	MOVSS X1, (R11)                      \
	ADDQ  R12, R11                       \
	MOVSS X2, (R11)                      \
	ADDQ  R12, R11                       \
	MOVSS X3, (R11)                      \
	VZEROUPPER

// func iq3sGemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
TEXT ·iq3sGemm4AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ astride+16(FP), R13
	MOVQ nb+24(FP), CX
	IQS_GEMM4_SETUP
	LEAQ ·iq3sGrid(SB), R8

iq3sG4Block:
	LEAQ  4(DI), R10
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	IQ3S_UNPACK(0, IQS_SIGN_W)
	IQS_COLS4(0, IQS_COL)
	IQ3S_UNPACK(1, IQS_SIGN_W)
	IQS_COLS4(32, IQS_COL)
	IQ3S_UNPACK(2, IQS_SIGN_W)
	IQS_COLS4(64, IQS_COL)
	IQ3S_UNPACK(3, IQS_SIGN_W)
	IQS_COLS4(96, IQS_COL)
	IQ3S_UNPACK(4, IQS_SIGN_W)
	IQS_COLS4(128, IQS_COL)
	IQ3S_UNPACK(5, IQS_SIGN_W)
	IQS_COLS4(160, IQS_COL)
	IQ3S_UNPACK(6, IQS_SIGN_W)
	IQS_COLS4(192, IQS_COL)
	IQ3S_UNPACK(7, IQS_SIGN_W)
	IQS_COLS4(224, IQS_COL)
	IQS_GEMM4_BLOCK_END(110)
	DECQ CX
	JNZ  iq3sG4Block

	MOVQ out+32(FP), R11
	MOVQ ostride+40(FP), R12
	SHLQ $2, R12
	IQS_GEMM4_STORE
	RET

// func iq3sGemm4AVX2S(w, a *byte, astride, nb int, out *float32, ostride int)
//
// iq3sGemm4AVX2S is iq3sGemm4AVX2 for activations without the quant -128 (IQS_COL_S):
// the same integer sums and float steps, so the same bits.
TEXT ·iq3sGemm4AVX2S(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ astride+16(FP), R13
	MOVQ nb+24(FP), CX
	IQS_GEMM4_SETUP
	LEAQ ·iq3sGrid(SB), R8

iq3sG4BlockS:
	LEAQ  4(DI), R10
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	IQ3S_UNPACK(0, IQS_SIGN_S)
	IQS_COLS4(0, IQS_COL_S)
	IQ3S_UNPACK(1, IQS_SIGN_S)
	IQS_COLS4(32, IQS_COL_S)
	IQ3S_UNPACK(2, IQS_SIGN_S)
	IQS_COLS4(64, IQS_COL_S)
	IQ3S_UNPACK(3, IQS_SIGN_S)
	IQS_COLS4(96, IQS_COL_S)
	IQ3S_UNPACK(4, IQS_SIGN_S)
	IQS_COLS4(128, IQS_COL_S)
	IQ3S_UNPACK(5, IQS_SIGN_S)
	IQS_COLS4(160, IQS_COL_S)
	IQ3S_UNPACK(6, IQS_SIGN_S)
	IQS_COLS4(192, IQS_COL_S)
	IQ3S_UNPACK(7, IQS_SIGN_S)
	IQS_COLS4(224, IQS_COL_S)
	IQS_GEMM4_BLOCK_END(110)
	DECQ CX
	JNZ  iq3sG4BlockS

	MOVQ out+32(FP), R11
	MOVQ ostride+40(FP), R12
	SHLQ $2, R12
	IQS_GEMM4_STORE
	RET

// func iq2sGemm4AVX2(w, a *byte, astride, nb int, out *float32, ostride int)
TEXT ·iq2sGemm4AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ astride+16(FP), R13
	MOVQ nb+24(FP), CX
	IQS_GEMM4_SETUP
	LEAQ ·iq2sGrid(SB), R8

iq2sG4Block:
	LEAQ  4(DI), R10
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	IQ2S_UNPACK(0, IQS_SIGN_W)
	IQS_COLS4(0, IQS_COL)
	IQ2S_UNPACK(1, IQS_SIGN_W)
	IQS_COLS4(32, IQS_COL)
	IQ2S_UNPACK(2, IQS_SIGN_W)
	IQS_COLS4(64, IQS_COL)
	IQ2S_UNPACK(3, IQS_SIGN_W)
	IQS_COLS4(96, IQS_COL)
	IQ2S_UNPACK(4, IQS_SIGN_W)
	IQS_COLS4(128, IQS_COL)
	IQ2S_UNPACK(5, IQS_SIGN_W)
	IQS_COLS4(160, IQS_COL)
	IQ2S_UNPACK(6, IQS_SIGN_W)
	IQS_COLS4(192, IQS_COL)
	IQ2S_UNPACK(7, IQS_SIGN_W)
	IQS_COLS4(224, IQS_COL)
	IQS_GEMM4_BLOCK_END(82)
	DECQ CX
	JNZ  iq2sG4Block

	MOVQ out+32(FP), R11
	MOVQ ostride+40(FP), R12
	SHLQ $2, R12
	IQS_GEMM4_STORE
	RET

// func iq2sGemm4AVX2S(w, a *byte, astride, nb int, out *float32, ostride int)
//
// iq2sGemm4AVX2S is iq2sGemm4AVX2 for activations without the quant -128 (IQS_COL_S):
// the same integer sums and float steps, so the same bits.
TEXT ·iq2sGemm4AVX2S(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ astride+16(FP), R13
	MOVQ nb+24(FP), CX
	IQS_GEMM4_SETUP
	LEAQ ·iq2sGrid(SB), R8

iq2sG4BlockS:
	LEAQ  4(DI), R10
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	IQ2S_UNPACK(0, IQS_SIGN_S)
	IQS_COLS4(0, IQS_COL_S)
	IQ2S_UNPACK(1, IQS_SIGN_S)
	IQS_COLS4(32, IQS_COL_S)
	IQ2S_UNPACK(2, IQS_SIGN_S)
	IQS_COLS4(64, IQS_COL_S)
	IQ2S_UNPACK(3, IQS_SIGN_S)
	IQS_COLS4(96, IQS_COL_S)
	IQ2S_UNPACK(4, IQS_SIGN_S)
	IQS_COLS4(128, IQS_COL_S)
	IQ2S_UNPACK(5, IQS_SIGN_S)
	IQS_COLS4(160, IQS_COL_S)
	IQ2S_UNPACK(6, IQS_SIGN_S)
	IQS_COLS4(192, IQS_COL_S)
	IQ2S_UNPACK(7, IQS_SIGN_S)
	IQS_COLS4(224, IQS_COL_S)
	IQS_GEMM4_BLOCK_END(82)
	DECQ CX
	JNZ  iq2sG4BlockS

	MOVQ out+32(FP), R11
	MOVQ ostride+40(FP), R12
	SHLQ $2, R12
	IQS_GEMM4_STORE
	RET

// Unpacked records of IQ3_S and IQ2_S for the type-independent unpacked
// kernels (gemmIQUnpackedR2C1/C2, simd_gemm_iq_amd64.s; record layout in
// internal/gemmiqgen): per super-block the 256 weights as signed bytes
// (group k at 32k), each group's int16 scale vector (at 256+32k: 2s+1 for
// the 16 weights of each lane) and d times the type's final factor as a
// float32 at 512.

// IQS_UNPACK_SETUP loads IQS_SIGN_W's constants.
#define IQS_UNPACK_SETUP \
	VMOVDQU iqBitSel<>(SB), Y12          \
	VMOVDQU iq7f<>(SB), Y13              \
	VMOVDQU iqSpread4<>(SB), Y14

#define IQS_UNPACK_STORE(ib) \
	VMOVDQU Y9, (32*(ib))(DI)            \
	VMOVDQU Y10, (256+32*(ib))(DI)

// IQS_UNPACK_D stores fp16 d at (SI) times factor (float32 bits) at 512(DI).
#define IQS_UNPACK_D(factor) \
	MOVWLZX (SI), AX                     \
	VMOVD   AX, X8                       \
	VCVTPH2PS X8, X8                     \
	MOVL    $(factor), AX                \
	VMOVD   AX, X9                       \
	VMULSS  X9, X8, X8                   \
	VMOVSS  X8, 512(DI)

// func gemmIQ3SUnpack(x *byte, nb int, buf *byte)
TEXT ·gemmIQ3SUnpack(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ buf+16(FP), DI
	IQS_UNPACK_SETUP
	LEAQ ·iq3sGrid(SB), R8

iq3sUnpackBlock:
	IQ3S_UNPACK(0, IQS_SIGN_W)
	IQS_UNPACK_STORE(0)
	IQ3S_UNPACK(1, IQS_SIGN_W)
	IQS_UNPACK_STORE(1)
	IQ3S_UNPACK(2, IQS_SIGN_W)
	IQS_UNPACK_STORE(2)
	IQ3S_UNPACK(3, IQS_SIGN_W)
	IQS_UNPACK_STORE(3)
	IQ3S_UNPACK(4, IQS_SIGN_W)
	IQS_UNPACK_STORE(4)
	IQ3S_UNPACK(5, IQS_SIGN_W)
	IQS_UNPACK_STORE(5)
	IQ3S_UNPACK(6, IQS_SIGN_W)
	IQS_UNPACK_STORE(6)
	IQ3S_UNPACK(7, IQS_SIGN_W)
	IQS_UNPACK_STORE(7)
	IQS_UNPACK_D(0x3f800000)
	ADDQ $110, SI
	ADDQ $544, DI
	DECQ CX
	JNZ  iq3sUnpackBlock
	VZEROUPPER
	RET

// func gemmIQ2SUnpack(x *byte, nb int, buf *byte)
TEXT ·gemmIQ2SUnpack(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ buf+16(FP), DI
	IQS_UNPACK_SETUP
	LEAQ ·iq2sGrid(SB), R8

iq2sUnpackBlock:
	IQ2S_UNPACK(0, IQS_SIGN_W)
	IQS_UNPACK_STORE(0)
	IQ2S_UNPACK(1, IQS_SIGN_W)
	IQS_UNPACK_STORE(1)
	IQ2S_UNPACK(2, IQS_SIGN_W)
	IQS_UNPACK_STORE(2)
	IQ2S_UNPACK(3, IQS_SIGN_W)
	IQS_UNPACK_STORE(3)
	IQ2S_UNPACK(4, IQS_SIGN_W)
	IQS_UNPACK_STORE(4)
	IQ2S_UNPACK(5, IQS_SIGN_W)
	IQS_UNPACK_STORE(5)
	IQ2S_UNPACK(6, IQS_SIGN_W)
	IQS_UNPACK_STORE(6)
	IQ2S_UNPACK(7, IQS_SIGN_W)
	IQS_UNPACK_STORE(7)
	IQS_UNPACK_D(0x3e000000)
	ADDQ $82, SI
	ADDQ $544, DI
	DECQ CX
	JNZ  iq2sUnpackBlock
	VZEROUPPER
	RET

// AVX-512 (F, BW) dots of IQ2_S and IQ3_S for activations without the
// quant -128, two groups (64 values) per 512-bit register: the grid
// entries come from one VPGATHERQQ/VPGATHERDD per two groups instead of
// eight or sixteen scalar loads and inserts, and the signs from a mask
// register (the 64 sign bits of two groups, KMOVQ) that negates the
// activations in one masked VPSUBB (0 - q8: wrong only for q8 = -128,
// which QuantizeQ8K never writes; see q8KHasMin). The products are
// maddubs(grid, ±q8) and VPMADDWD with the scales as in the AVX2 S
// kernels, so every block's int32 sum is the same integer and the float
// steps (IQ_BLOCK_END) are the same: the same bits as the Go reference.

// IQS512_SETUP zeroes X0 and Z16 and loads the four 64-byte rows (two
// groups each) of iqScaleShuf into Z17..Z20.
#define IQS512_SETUP \
	LEAQ    iqScaleShuf<>(SB), R11       \
	VMOVDQU64 0(R11), Z17                \
	VMOVDQU64 64(R11), Z18               \
	VMOVDQU64 128(R11), Z19              \
	VMOVDQU64 192(R11), Z20              \
	VPXORD  Z16, Z16, Z16                \
	VXORPS  X0, X0, X0

// IQS512_DOT adds to the int32 lanes of Z8 the dot of the 64 grid bytes
// of Z9 (groups ib and ib+1), signed by the 64 bits at soff(SI), with
// the activations at 32*ib(R10), times the scales of Z15 picked by the
// shuffle rows SHUF.
#define IQS512_DOT(ib, soff, SHUF) \
	KMOVQ      soff(SI), K1              \
	VMOVDQU8   (32*(ib))(R10), Z11       \
	VPSUBB     Z11, Z16, K1, Z11         \
	VPMADDUBSW Z11, Z9, Z9               \
	VPSHUFB    SHUF, Z15, Z10            \
	VPMADDWD   Z10, Z9, Z9               \
	VPADDD     Z9, Z8, Z8

// IQS512_BLOCK_END folds Z8 into Y8 (the same int32 total) for IQ_BLOCK_END.
#define IQS512_BLOCK_END \
	VEXTRACTI64X4 $1, Z8, Y9             \
	VPADDD  Y9, Y8, Y8                   \
	IQ_BLOCK_END

// IQ2S512_GATHER sets Z9 to the 8 grid entries (groups of two) whose
// indices are the 8 words of X: scalar loads and inserts, as IQ2S_GATHER
// (VPGATHERQQ was 2.3x slower on Zen 5).
#define IQ2S512_GATHER(X) \
	VMOVQ   X, AX                        \
	IQ2S_GATHER                          \
	VPEXTRQ $1, X, AX                    \
	VMOVDQA Y9, Y5                       \
	IQ2S_GATHER                          \
	VINSERTI64X4 $1, Y9, Z5, Z9

// func iq2sDotAVX512S(w, a *byte, nb int) float32
TEXT ·iq2sDotAVX512S(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nb+16(FP), CX
	IQS512_SETUP
	LEAQ ·iq2sGrid(SB), R8

iq2s512Block:
	IQ_SCALE_D
	LEAQ  4(DI), R10
	VPXORD Z8, Z8, Z8
	IQS_SCALES16(74)
	VINSERTI64X4 $1, Y15, Z15, Z15
	IQ2S_INDICES
	IQ2S512_GATHER(X2)
	IQS512_DOT(0, 34, Z17)
	VEXTRACTI128 $1, Y2, X7
	IQ2S512_GATHER(X7)
	IQS512_DOT(2, 42, Z18)
	IQ2S512_GATHER(X3)
	IQS512_DOT(4, 50, Z19)
	VEXTRACTI128 $1, Y3, X7
	IQ2S512_GATHER(X7)
	IQS512_DOT(6, 58, Z20)
	IQS512_BLOCK_END

	ADDQ $82, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq2s512Block

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// IQ3S512_GATHER sets Z9 to the 16 grid entries of groups ib and ib+1
// (IQ3S_GRID8 twice; VPGATHERDD was slower on Zen 5).
#define IQ3S512_GATHER(ib) \
	IQ3S_GRID8(ib, X7)                   \
	VMOVDQA Y9, Y5                       \
	IQ3S_GRID8((ib)+1, X7)               \
	VINSERTI64X4 $1, Y9, Z5, Z9

// func iq3sDotAVX512S(w, a *byte, nb int) float32
TEXT ·iq3sDotAVX512S(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nb+16(FP), CX
	IQS512_SETUP
	LEAQ ·iq3sGrid(SB), R8

iq3s512Block:
	IQ_SCALE_D
	LEAQ  4(DI), R10
	VPXORD Z8, Z8, Z8
	IQS_SCALES8(106)
	VINSERTI64X4 $1, Y15, Z15, Z15
	IQ3S512_GATHER(0)
	IQS512_DOT(0, 74, Z17)
	IQ3S512_GATHER(2)
	IQS512_DOT(2, 82, Z18)
	IQ3S512_GATHER(4)
	IQS512_DOT(4, 90, Z19)
	IQ3S512_GATHER(6)
	IQS512_DOT(6, 98, Z20)
	IQS512_BLOCK_END

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq3s512Block

	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
