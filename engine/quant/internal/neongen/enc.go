package main

import (
	"fmt"
	"strings"
)

// gen accumulates the lines of a Go assembler file. Instructions that Go's
// arm64 assembler does not know (SDOT, most vector arithmetic) are emitted
// as WORD encodings followed by a comment in GNU syntax; enc_test.go checks
// every such comment against the word with aarch64 binutils when present.
type gen struct {
	b strings.Builder
}

// op emits one Go assembler line.
func (g *gen) op(format string, args ...any) {
	fmt.Fprintf(&g.b, "\t"+format+"\n", args...)
}

func (g *gen) label(name string) { fmt.Fprintf(&g.b, "%s:\n", name) }

func (g *gen) comment(format string, args ...any) {
	fmt.Fprintf(&g.b, "\t// "+format+"\n", args...)
}

// word emits an encoded instruction with its GNU-syntax text.
func (g *gen) word(enc uint32, format string, args ...any) {
	fmt.Fprintf(&g.b, "\tWORD $0x%08x // %s\n", enc, fmt.Sprintf(format, args...))
}

func reg(r int) uint32 {
	if r < 0 || r > 31 {
		panic(fmt.Sprintf("register %d out of range", r))
	}
	return uint32(r)
}

// rrr encodes the common three-register form base | m<<16 | n<<5 | d.
func rrr(base uint32, d, n, m int) uint32 { return base | reg(m)<<16 | reg(n)<<5 | reg(d) }

// Integer vector arithmetic.

func (g *gen) sdot(d, n, m int) {
	g.word(rrr(0x4e809400, d, n, m), "sdot v%d.4s, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) add4s(d, n, m int) {
	g.word(rrr(0x4ea08400, d, n, m), "add v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) sub4s(d, n, m int) {
	g.word(rrr(0x6ea08400, d, n, m), "sub v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) add16b(d, n, m int) {
	g.word(rrr(0x4e208400, d, n, m), "add v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) sub16b(d, n, m int) {
	g.word(rrr(0x6e208400, d, n, m), "sub v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) and16b(d, n, m int) {
	g.word(rrr(0x4e201c00, d, n, m), "and v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) orr16b(d, n, m int) {
	g.word(rrr(0x4ea01c00, d, n, m), "orr v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) eor16b(d, n, m int) {
	g.word(rrr(0x6e201c00, d, n, m), "eor v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) mla4s(d, n, m int) {
	g.word(rrr(0x4ea09400, d, n, m), "mla v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) mul16b(d, n, m int) {
	g.word(rrr(0x4e209c00, d, n, m), "mul v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) addp4s(d, n, m int) {
	g.word(rrr(0x4ea0bc00, d, n, m), "addp v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) addp8h(d, n, m int) {
	g.word(rrr(0x4e60bc00, d, n, m), "addp v%d.8h, v%d.8h, v%d.8h", d, n, m)
}
func (g *gen) smull(d, n, m int) {
	g.word(rrr(0x0e60c000, d, n, m), "smull v%d.4s, v%d.4h, v%d.4h", d, n, m)
}
func (g *gen) smlal(d, n, m int) {
	g.word(rrr(0x0e608000, d, n, m), "smlal v%d.4s, v%d.4h, v%d.4h", d, n, m)
}
func (g *gen) smlal2(d, n, m int) {
	g.word(rrr(0x4e608000, d, n, m), "smlal2 v%d.4s, v%d.8h, v%d.8h", d, n, m)
}
func (g *gen) tbl1(d, n, m int) {
	g.word(rrr(0x4e000000, d, n, m), "tbl v%d.16b, {v%d.16b}, v%d.16b", d, n, m)
}
func (g *gen) zip1d(d, n, m int) {
	g.word(rrr(0x4ec03800, d, n, m), "zip1 v%d.2d, v%d.2d, v%d.2d", d, n, m)
}
func (g *gen) zip18h(d, n, m int) {
	g.word(rrr(0x4e403800, d, n, m), "zip1 v%d.8h, v%d.8h, v%d.8h", d, n, m)
}
func (g *gen) zip28h(d, n, m int) {
	g.word(rrr(0x4e407800, d, n, m), "zip2 v%d.8h, v%d.8h, v%d.8h", d, n, m)
}
func (g *gen) zip116b(d, n, m int) {
	g.word(rrr(0x4e003800, d, n, m), "zip1 v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) uzp24s(d, n, m int) {
	g.word(rrr(0x4e805800, d, n, m), "uzp2 v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) mul4s(d, n, m int) {
	g.word(rrr(0x4ea09c00, d, n, m), "mul v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) ushr4s(d, n, sh int) {
	if sh < 1 || sh > 32 {
		panic("shift")
	}
	g.word(rr(0x6f000400, d, n)|uint32(64-sh)<<16, "ushr v%d.4s, v%d.4s, #%d", d, n, sh)
}

// movi4s sets every 32-bit lane of d to imm.
func (g *gen) movi4s(d int, imm uint8) {
	g.word(0x4f000400|uint32(imm>>5)<<16|uint32(imm&31)<<5|reg(d), "movi v%d.4s, #0x%x", d, imm)
}
func (g *gen) cmeq16b(d, n, m int) {
	g.word(rrr(0x6e208c00, d, n, m), "cmeq v%d.16b, v%d.16b, v%d.16b", d, n, m)
}

// elem encodes a by-element form on 32-bit lanes: index i = H:L.
func elem(base uint32, d, n, m, i int) uint32 {
	if i < 0 || i > 3 {
		panic("lane out of range")
	}
	return rrr(base, d, n, m) | uint32(i&1)<<21 | uint32(i>>1)<<11
}

func (g *gen) mla4sElem(d, n, m, i int) {
	g.word(elem(0x6f800000, d, n, m, i), "mla v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
}
func (g *gen) mul4sElem(d, n, m, i int) {
	g.word(elem(0x4f808000, d, n, m, i), "mul v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
}
func (g *gen) fmla4sElem(d, n, m, i int) {
	g.word(elem(0x4f801000, d, n, m, i), "fmla v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
}

// Two-register forms.

func rr(base uint32, d, n int) uint32 { return base | reg(n)<<5 | reg(d) }

func (g *gen) addv4s(d, n int)  { g.word(rr(0x4eb1b800, d, n), "addv s%d, v%d.4s", d, n) }
func (g *gen) scvtf4s(d, n int) { g.word(rr(0x4e21d800, d, n), "scvtf v%d.4s, v%d.4s", d, n) }
func (g *gen) scvtfS(d, n int)  { g.word(rr(0x5e21d800, d, n), "scvtf s%d, s%d", d, n) }
func (g *gen) uxtl8h(d, n int)  { g.word(rr(0x2f08a400, d, n), "uxtl v%d.8h, v%d.8b", d, n) }
func (g *gen) uxtl28h(d, n int) { g.word(rr(0x6f08a400, d, n), "uxtl2 v%d.8h, v%d.16b", d, n) }
func (g *gen) uxtl4s(d, n int)  { g.word(rr(0x2f10a400, d, n), "uxtl v%d.4s, v%d.4h", d, n) }
func (g *gen) uxtl24s(d, n int) { g.word(rr(0x6f10a400, d, n), "uxtl2 v%d.4s, v%d.8h", d, n) }
func (g *gen) sxtl8h(d, n int)  { g.word(rr(0x0f08a400, d, n), "sxtl v%d.8h, v%d.8b", d, n) }
func (g *gen) sxtl28h(d, n int) { g.word(rr(0x4f08a400, d, n), "sxtl2 v%d.8h, v%d.16b", d, n) }
func (g *gen) sxtl4s(d, n int)  { g.word(rr(0x0f10a400, d, n), "sxtl v%d.4s, v%d.4h", d, n) }
func (g *gen) sxtl24s(d, n int) { g.word(rr(0x4f10a400, d, n), "sxtl2 v%d.4s, v%d.8h", d, n) }

// Shifts by immediate.

func (g *gen) ushr16b(d, n, sh int) {
	if sh < 1 || sh > 8 {
		panic("shift")
	}
	g.word(rr(0x6f000400, d, n)|uint32(16-sh)<<16, "ushr v%d.16b, v%d.16b, #%d", d, n, sh)
}
func (g *gen) shl16b(d, n, sh int) {
	if sh < 0 || sh > 7 {
		panic("shift")
	}
	g.word(rr(0x4f005400, d, n)|uint32(8+sh)<<16, "shl v%d.16b, v%d.16b, #%d", d, n, sh)
}
func (g *gen) shl4s(d, n, sh int) {
	if sh < 0 || sh > 31 {
		panic("shift")
	}
	g.word(rr(0x4f005400, d, n)|uint32(32+sh)<<16, "shl v%d.4s, v%d.4s, #%d", d, n, sh)
}

// Moves and constants.

func (g *gen) movi16b(d int, imm uint8) {
	g.word(0x4f00e400|uint32(imm>>5)<<16|uint32(imm&31)<<5|reg(d), "movi v%d.16b, #0x%x", d, imm)
}
func (g *gen) zero(d int) { g.movi16b(d, 0) }

// insS moves general register w into lane i of a 32-bit vector.
func (g *gen) insS(d, i, w int) {
	g.word(0x4e001c00|uint32(i<<3|4)<<16|reg(w)<<5|reg(d), "mov v%d.s[%d], w%d", d, i, w)
}

// insD moves general register x into lane i of a 64-bit vector.
func (g *gen) insD(d, i, x int) {
	g.word(0x4e001c00|uint32(i<<4|8)<<16|reg(x)<<5|reg(d), "mov v%d.d[%d], x%d", d, i, x)
}

func (g *gen) dup4s(d, w int) { g.word(rr(0x4e040c00, d, w), "dup v%d.4s, w%d", d, w) }

// ld1D1 loads 8 bytes at [xn] into the upper half of vd (lane 1).
func (g *gen) ld1D1(d, xn int) { g.word(rr(0x4d408400, d, xn), "ld1 {v%d.d}[1], [x%d]", d, xn) }

// ld1S loads 4 bytes at [xn] into lane i of vd.
func (g *gen) ld1S(d, i, xn int) {
	enc := rr(0x0d408000, d, xn) | uint32(i>>1)<<30 | uint32(i&1)<<12
	g.word(enc, "ld1 {v%d.s}[%d], [x%d]", d, i, xn)
}

// Scalar floating point.

func (g *gen) fmovSW(d, w int) { g.word(rr(0x1e270000, d, w), "fmov s%d, w%d", d, w) }
func (g *gen) fcvtSH(d, n int) { g.word(rr(0x1ee24000, d, n), "fcvt s%d, h%d", d, n) }
func (g *gen) fmulS(d, n, m int) {
	g.word(rrr(0x1e200800, d, n, m), "fmul s%d, s%d, s%d", d, n, m)
}
func (g *gen) faddS(d, n, m int) {
	g.word(rrr(0x1e202800, d, n, m), "fadd s%d, s%d, s%d", d, n, m)
}
func (g *gen) fsubS(d, n, m int) {
	g.word(rrr(0x1e203800, d, n, m), "fsub s%d, s%d, s%d", d, n, m)
}

// Vector floating point.

func (g *gen) fadd4s(d, n, m int) {
	g.word(rrr(0x4e20d400, d, n, m), "fadd v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) faddp4s(d, n, m int) {
	g.word(rrr(0x6e20d400, d, n, m), "faddp v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) faddpS(d, n int) { g.word(rr(0x7e30d800, d, n), "faddp s%d, v%d.2s", d, n) }

// fp16 loads the fp16 at off(Rbase) and converts it to float32 in Fd,
// using general register tmp.
func (g *gen) fp16(d int, off int, base, tmp int) {
	g.op("MOVHU %d(R%d), R%d", off, base, tmp)
	g.fmovSW(d, tmp)
	g.fcvtSH(d, d)
}

// Encodings added for the Q3_K dot, the float dots, the activation
// quantizers and the Gemm tiles.

func (g *gen) bic16b(d, n, m int) {
	g.word(rrr(0x4e601c00, d, n, m), "bic v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) smin4s(d, n, m int) {
	g.word(rrr(0x4ea06c00, d, n, m), "smin v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fmla4s(d, n, m int) {
	g.word(rrr(0x4e20cc00, d, n, m), "fmla v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fmul4s(d, n, m int) {
	g.word(rrr(0x6e20dc00, d, n, m), "fmul v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fsub4s(d, n, m int) {
	g.word(rrr(0x4ea0d400, d, n, m), "fsub v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fmax4s(d, n, m int) {
	g.word(rrr(0x4e20f400, d, n, m), "fmax v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fcmeq4s(d, n, m int) {
	g.word(rrr(0x4e20e400, d, n, m), "fcmeq v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fmul4sElem(d, n, m, i int) {
	g.word(elem(0x4f809000, d, n, m, i), "fmul v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
}

// ext16b is EXT with a byte offset: bytes imm.. of n followed by m.
func (g *gen) ext16b(d, n, m, imm int) {
	if imm < 0 || imm > 15 {
		panic("ext offset")
	}
	g.word(rrr(0x6e000000, d, n, m)|uint32(imm)<<11, "ext v%d.16b, v%d.16b, v%d.16b, #%d", d, n, m, imm)
}

func (g *gen) fabs4s(d, n int)    { g.word(rr(0x4ea0f800, d, n), "fabs v%d.4s, v%d.4s", d, n) }
func (g *gen) fmaxvS(d, n int)    { g.word(rr(0x6e30f800, d, n), "fmaxv s%d, v%d.4s", d, n) }
func (g *gen) umaxvS(d, n int)    { g.word(rr(0x6eb0a800, d, n), "umaxv s%d, v%d.4s", d, n) }
func (g *gen) fcvtns4s(d, n int)  { g.word(rr(0x4e21a800, d, n), "fcvtns v%d.4s, v%d.4s", d, n) }
func (g *gen) fcvtl4s(d, n int)   { g.word(rr(0x0e217800, d, n), "fcvtl v%d.4s, v%d.4h", d, n) }
func (g *gen) fcvtl24s(d, n int)  { g.word(rr(0x4e217800, d, n), "fcvtl2 v%d.4s, v%d.8h", d, n) }
func (g *gen) xtn4h(d, n int)     { g.word(rr(0x0e612800, d, n), "xtn v%d.4h, v%d.4s", d, n) }
func (g *gen) xtn28h(d, n int)    { g.word(rr(0x4e612800, d, n), "xtn2 v%d.8h, v%d.4s", d, n) }
func (g *gen) xtn8b(d, n int)     { g.word(rr(0x0e212800, d, n), "xtn v%d.8b, v%d.8h", d, n) }
func (g *gen) xtn216b(d, n int)   { g.word(rr(0x4e212800, d, n), "xtn2 v%d.16b, v%d.8h", d, n) }
func (g *gen) saddlp8h(d, n int)  { g.word(rr(0x4e202800, d, n), "saddlp v%d.8h, v%d.16b", d, n) }
func (g *gen) dup4sElem(d, n int) { g.word(rr(0x4e040400, d, n), "dup v%d.4s, v%d.s[0]", d, n) }

// insH moves general register w into lane i of a 16-bit vector.
func (g *gen) insH(d, i, w int) {
	if i < 0 || i > 7 {
		panic("lane out of range")
	}
	g.word(0x4e001c00|uint32(i<<2|2)<<16|reg(w)<<5|reg(d), "mov v%d.h[%d], w%d", d, i, w)
}

// umovS moves lane i of a 32-bit vector into general register w.
func (g *gen) umovS(w, n, i int) {
	if i < 0 || i > 3 {
		panic("lane out of range")
	}
	g.word(0x0e003c00|uint32(i<<3|4)<<16|reg(n)<<5|reg(w), "mov w%d, v%d.s[%d]", w, n, i)
}

func (g *gen) fdivS(d, n, m int) {
	g.word(rrr(0x1e201800, d, n, m), "fdiv s%d, s%d, s%d", d, n, m)
}
func (g *gen) fabsS(d, n int)  { g.word(rr(0x1e20c000, d, n), "fabs s%d, s%d", d, n) }
func (g *gen) fcvtHS(d, n int) { g.word(rr(0x1e23c000, d, n), "fcvt h%d, s%d", d, n) }
func (g *gen) fmovWS(w, n int) { g.word(rr(0x1e260000, w, n), "fmov w%d, s%d", w, n) }

// Encodings added for the vector expf of engine/cpu (exp.go) and the fp16
// conversions and row dots (half.go).

func (g *gen) fmls4s(d, n, m int) {
	g.word(rrr(0x4ea0cc00, d, n, m), "fmls v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fdiv4s(d, n, m int) {
	g.word(rrr(0x6e20fc00, d, n, m), "fdiv v%d.4s, v%d.4s, v%d.4s", d, n, m)
}

// facgt4s sets d to all ones where |n| > |m| (vcagtq_f32).
func (g *gen) facgt4s(d, n, m int) {
	g.word(rrr(0x6ea0ec00, d, n, m), "facgt v%d.4s, v%d.4s, v%d.4s", d, n, m)
}

// fcmlez4s sets d to all ones where n <= 0 (vclezq_f32).
func (g *gen) fcmlez4s(d, n int) { g.word(rr(0x6ea0d800, d, n), "fcmle v%d.4s, v%d.4s, #0.0", d, n) }

// bit16b inserts the bits of n where m is set into d: d = d&^m | n&m.
func (g *gen) bit16b(d, n, m int) {
	g.word(rrr(0x6ea01c00, d, n, m), "bit v%d.16b, v%d.16b, v%d.16b", d, n, m)
}

func (g *gen) fcvtn4h(d, n int) { g.word(rr(0x0e216800, d, n), "fcvtn v%d.4h, v%d.4s", d, n) }
