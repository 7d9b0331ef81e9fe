// Command gemmiqgen writes engine/quant's tiled matrix products of
// i-quant weights (IQ2_XS, IQ2_XXS, IQ3_XXS, IQ4_XS) with Q8_K activations
// (simd_gemm_iq_amd64.s).
//
// Per type T:
//
//   - gemmTAVX2C1 (decode) multiplies one weight row with one activation
//     row, unpacking each group of 32 weights (grid lookups, signs,
//     scales) into signed bytes in registers;
//   - gemmTPairsAVX2 and gemmTPairsVNNI (prefill) unpack each pair of
//     weight rows once into their stack frame and multiply it with all the
//     activation rows, two at a time, so that the unpacking is shared by
//     all columns; the AVX2 records are signed bytes and scale vectors,
//     the VNNI ones (AVX-512: 512-bit registers, VPDPWSSD) the weights
//     times their scales as int16;
//   - gemmTUnpack and the type-independent gemmIQUnpackedR2C1/C2 do the
//     same for rows too long for the frame, with a buffer from the caller.
//
// Integer sums are exact. The one-row kernels keep them per block in
// int32 lanes, converted to float once per block and accumulated with FMA
// in float lanes (llama.cpp's AVX2 vec_dot order, not the Go kernels');
// the lanes are added once at the end. The unpacked (prompt) kernels add
// each output's lanes exactly per block and do one FMA per block
// (blockEnd: llama.cpp's iqp panels' order).
//
// Signed byte products (AVX2): the sign of each activation is moved to the
// weight side, t = weight*sign*sgn(q8), and the product is maddubs(|q8|,
// t): |q8| read unsigned is right for q8 = -128 too, and |t| < 128, so
// every input byte string gives the exact integer sums of the Go kernels.
// The int16 products (VNNI) are exact too. For the types whose grid bytes
// are all positive (IQ2_XS, IQ2_XXS, IQ3_XXS) a gemmTAVX2C1S is written
// too: the signs go to the activations instead, maddubs(grid, q8*sign),
// as llama.cpp's AVX2 kernels do; two instructions fewer per 32 weights
// (IQ2_XS decode 5.5 -> 6.1 GB/s on one thread, side by side), exact
// unless some q8 = -128, which QuantizeQ8K never writes and for which the
// Go side keeps the C1 kernel.
//
// Usage (from engine/quant, via go generate):
//
//	go run ./internal/gemmiqgen -out simd_gemm_iq_amd64.s
package main

import (
	"github.com/strata-llm/strata/engine/quant/internal/genfile"

	"bytes"
	"flag"
	"fmt"
	"log"
	"math"
)

func main() {
	out := flag.String("out", "simd_gemm_iq_amd64.s", "output file")
	flag.Parse()
	if err := genfile.Write(*out, generate()); err != nil {
		log.Fatal(err)
	}
}

type gen struct {
	b bytes.Buffer
	// regs maps a constant's memory operand to the register the current
	// function keeps it in (see bind).
	regs map[string]string
	// signAct is set while writing a C1S kernel: the group leaves the
	// unsigned grid bytes in Y8 and the sign operand in Y10, and the
	// column step moves the signs to the activations (see columns).
	signAct bool
}

// k returns the operand for the 32-byte constant at mem: its register if
// the current function loaded it into one, else mem itself.
func (g *gen) k(mem string) string {
	if r, ok := g.regs[mem]; ok {
		return r
	}
	return mem
}

// bind loads the constants hot (most used first) into the free registers,
// as many as fit, for the function being written.
func (g *gen) bind(free []string, hot []string) {
	g.regs = map[string]string{}
	for i, mem := range hot {
		if i >= len(free) {
			break
		}
		g.regs[mem] = free[i]
		g.p("\tVMOVDQU %s, %s", mem, free[i])
	}
}

func (g *gen) p(format string, args ...any) {
	fmt.Fprintf(&g.b, format, args...)
	g.b.WriteByte('\n')
}

// Q8_K block layout.
const (
	q8KSize = 292
	q8KQs   = 4
)

// Register use common to all kernels:
//
//	SI        weight row (current block)
//	DI        activation column 0 (current block); R12 the column stride,
//	          R13 three times it
//	CX        blocks left
//	R8        grid table; R9 a BEXTR control
//	AX BX DX  scratch
//	Y0..Y3    float accumulators of columns 0..3
//	Y4..Y7    their per-block int32 sums
//	Y8        a group's signed weight bytes, Y9 its int16 scales
//	Y10 Y11   scratch
//	Y12..Y15  per-block state and constants of the type

// col returns the address of byte off of activation column c of the
// current block.
func col(off, c int) string {
	switch c {
	case 0:
		return fmt.Sprintf("%d(DI)", off)
	case 1:
		return fmt.Sprintf("%d(DI)(R12*1)", off)
	case 2:
		return fmt.Sprintf("%d(DI)(R12*2)", off)
	case 3:
		return fmt.Sprintf("%d(DI)(R13*1)", off)
	}
	panic("column out of range")
}

func facc(i int) string { return fmt.Sprintf("Y%d", i) }
func iacc(i int) string { return fmt.Sprintf("Y%d", 4+i) }

// typ describes one weight type to the generator.
type typ struct {
	name   string  // Go name stem: gemm<name>AVX2C1, ...
	size   int     // block bytes
	factor float32 // final multiplier of the sum (1/8 for the 2-bit grids)
	// unsignedGrid: the grid bytes are all positive with separate signs,
	// so a C1S kernel is written too (see columns).
	unsignedGrid bool
	doc          string
	// setup loads the per-call constants.
	setup func(g *gen)
	// hot lists the 32-byte constants of group, most used first, to keep
	// in registers when some are free.
	hot []string
	// block prepares the state of the weight block at SI in Y12..Y15.
	block func(g *gen)
	// group leaves group k's signed weight bytes in Y8 and its int16
	// scales (one per 16-bit lane pair, as VPMADDWD wants) in Y9.
	group func(g *gen, k int)
	// For the unsigned-grid types: grid leaves group k's grid bytes in
	// Y8 (group's first step). For the AVX-512 C1S kernel (kernel512;
	// nil: none), signMask sets K1 to the 64 sign bits of groups k and
	// k+1 (k even) after block, and scales512 sets Z9 to their int16
	// scales.
	grid      func(g *gen, k int)
	signMask  func(g *gen, k int)
	scales512 func(g *gen, k int)
}

func generate() []byte {
	g := &gen{}
	g.p("// Code generated by go run ./internal/gemmiqgen; DO NOT EDIT.")
	g.p("")
	g.p("//go:build !purego")
	g.p("")
	g.p("#include \"textflag.h\"")
	g.p("")
	g.tables()
	for c := 1; c <= 2; c++ {
		g.unpacked2(c)
	}
	g.widen()
	g.wideQuads()
	for _, t := range []typ{iq2xs(), iq2xxs(), iq3xxs(), iq4xs()} {
		g.kernel(t, 1)
		if t.unsignedGrid {
			g.signAct = true
			g.kernel(t, 1)
			g.signAct = false
			// IQ3_XXS's (8 grid loads per group) was no faster on Zen
			// 5 (6.1-7.3 vs 7.0-7.2 GB/s, noise), so it has none.
			if t.signMask != nil {
				g.kernel512(t)
			}
		}
		g.unpack(t)
		g.pairs(t, false, 2)
		g.pairs(t, true, 2)
		g.pairs(t, true, 4)
	}
	return g.b.Bytes()
}

func (g *gen) data32(name string, qwords [4]uint64) {
	for i, q := range qwords {
		g.p("DATA %s<>+0x%02x(SB)/8, $0x%016x", name, 8*i, q)
	}
	g.p("GLOBL %s<>(SB), RODATA|NOPTR, $32", name)
	g.p("")
}

func rep(q uint64) [4]uint64 { return [4]uint64{q, q, q, q} }

// tables writes the constants (file-local symbols).
func (g *gen) tables() {
	// Row j (32 bytes): byte 4j of the low lane over its first 8 bytes and
	// byte 4j+1 over its next 8, bytes 4j+2 and 4j+3 likewise in the high
	// lane: the four sign bytes of group j of a lane, one per 8 values.
	for j := 0; j < 4; j++ {
		for q := 0; q < 4; q++ {
			g.p("DATA giSignGrp<>+0x%02x(SB)/8, $0x%016x", 32*j+8*q, uint64(4*j+q)*0x0101010101010101)
		}
	}
	g.p("GLOBL giSignGrp<>(SB), RODATA|NOPTR, $128")
	g.p("")
	// Row k (32 bytes): the int16 zero-extensions of byte 2k (low lane)
	// and byte 2k+1 (high lane) eight times each.
	for k := 0; k < 8; k++ {
		lo := uint64(0x8000|2*k) * 0x0001000100010001
		hi := uint64(0x8000|(2*k+1)) * 0x0001000100010001
		g.p("DATA giScaleShuf<>+0x%02x(SB)/8, $0x%016x", 32*k, lo)
		g.p("DATA giScaleShuf<>+0x%02x(SB)/8, $0x%016x", 32*k+8, lo)
		g.p("DATA giScaleShuf<>+0x%02x(SB)/8, $0x%016x", 32*k+16, hi)
		g.p("DATA giScaleShuf<>+0x%02x(SB)/8, $0x%016x", 32*k+24, hi)
	}
	g.p("GLOBL giScaleShuf<>(SB), RODATA|NOPTR, $256")
	g.p("")
	g.data32("giBitSel", rep(0x8040201008040201))
	// 0x80 where the 4-bit index has odd parity (llama.cpp's
	// k_bit_helper): the eighth sign bit of a 7-bit ksigns_iq2xs index.
	g.data32("giBitHelper", [4]uint64{0x8000008000808000, 0x0080800080000080, 0x8000008000808000, 0x0080800080000080})
	g.data32("giOnes8", rep(0x0101010101010101))
	g.data32("gi7f", rep(0x7f7f7f7f7f7f7f7f))
	g.data32("giM4", rep(0x0f0f0f0f0f0f0f0f))
	for i := 0; i < 4; i++ {
		g.data32(fmt.Sprintf("giAux%d", i), rep(uint64(0x7f)<<(8*i)*0x0000000100000001))
	}
	g.data32("giOnes32", rep(0x0000000100000001))
	// IQ4_XS scale bits: per-group shifts of scales_l (4 bits) and
	// scales_h (2 bits), masks and the -32 offset.
	g.data32("giIQ4ShiftL", [4]uint64{0x0000000400000000, 0x0000000c00000008, 0x0000001400000010, 0x0000001c00000018})
	g.data32("giIQ4ShiftH", [4]uint64{0x0000000200000000, 0x0000000600000004, 0x0000000a00000008, 0x0000000e0000000c})
	g.data32("giIQ4M0f", rep(0x0000000f0000000f))
	g.data32("giIQ4M30", rep(0x0000003000000030))
	g.data32("giIQ4C20", rep(0x0000002000000020))
	g.data32("giIQ4Mffff", rep(0x0000ffff0000ffff))
}

// kernel writes gemm<name>AVX2C<cols>: one weight row against cols
// activation rows (only cols = 1 is generated: for more, unpacking the
// row once wins).
func (g *gen) kernel(t typ, cols int) {
	name := fmt.Sprintf("gemm%sAVX2C%d", t.name, cols)
	if g.signAct {
		name += "S"
	}
	g.p("// func %s(x, y *byte, ystride, nb int, out *float32, ostride int)", name)
	g.p("//")
	g.p("// One %s weight row x %d activation column(s).", t.doc, cols)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	g.p("\tMOVQ x+0(FP), SI")
	g.p("\tMOVQ y+8(FP), DI")
	g.p("\tMOVQ ystride+16(FP), R12")
	g.p("\tMOVQ nb+24(FP), CX")
	g.p("\tLEAQ (R12)(R12*2), R13")
	for c := 0; c < cols; c++ {
		g.p("\tVXORPS %s, %s, %s", facc(c), facc(c), facc(c))
	}
	t.setup(g)
	var free []string
	for c := cols; c < 4; c++ {
		free = append(free, facc(c), iacc(c))
	}
	g.bind(free, t.hot)
	loop := name + "Block"
	g.p("")
	g.p("%s:", loop)
	for c := 0; c < cols; c++ {
		g.p("\tVPXOR %s, %s, %s", iacc(c), iacc(c), iacc(c))
	}
	t.block(g)
	for k := 0; k < 8; k++ {
		t.group(g, k)
		g.columns(cols, q8KQs+32*k)
	}
	// Block end: acc += (d_w * d_a) * float(isum), per column.
	g.p("\tMOVWLZX (SI), AX")
	g.p("\tVMOVD AX, X8")
	g.p("\tVCVTPH2PS X8, X8")
	g.p("\tVBROADCASTSS X8, Y8")
	for c := 0; c < cols; c++ {
		g.p("\tVBROADCASTSS %s, Y10", col(0, c))
		g.p("\tVMULPS Y8, Y10, Y10")
		g.p("\tVCVTDQ2PS %s, Y11", iacc(c))
		g.p("\tVFMADD231PS Y11, Y10, %s", facc(c))
	}
	g.p("\tADDQ $%d, SI", t.size)
	g.p("\tADDQ $%d, DI", q8KSize)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s", loop)
	g.p("")
	g.epilogue(cols, t.factor)
}

// kernel512 writes gemm<name>AVX512C1S: gemm<name>AVX2C1S (one weight
// row, one activation row without the quant -128) with AVX-512 F/BW/VL, two
// groups per 512-bit register. The signs are a mask register (the pair's
// 64 sign bits, KMOVQ) that negates the activations in one masked VPSUBB,
// instead of a shuffle, an AND, an add and a VPSIGNB per group; the grid
// lookups are the AVX2 kernel's. The int32 lane i of the two groups' sums
// is folded into lane i of the AVX2 kernel's accumulator (the same
// integers), and the float steps are the same: the same bits as C1S.
func (g *gen) kernel512(t typ) {
	name := fmt.Sprintf("gemm%sAVX512C1S", t.name)
	g.p("// func %s(x, y *byte, ystride, nb int, out *float32, ostride int)", name)
	g.p("//")
	g.p("// One %s weight row x 1 activation column (AVX-512).", t.doc)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	g.p("\tMOVQ x+0(FP), SI")
	g.p("\tMOVQ y+8(FP), DI")
	g.p("\tMOVQ ystride+16(FP), R12")
	g.p("\tMOVQ nb+24(FP), CX")
	g.p("\tLEAQ (R12)(R12*2), R13")
	g.p("\tVXORPS %s, %s, %s", facc(0), facc(0), facc(0))
	g.p("\tVPXORD Z17, Z17, Z17")
	t.setup(g)
	g.regs = map[string]string{}
	loop := name + "Block"
	g.p("")
	g.p("%s:", loop)
	g.p("\tVPXORD Z4, Z4, Z4")
	t.block(g)
	if t.name == "IQ2XS" {
		g.p("\tVINSERTI64X4 $1, Y12, Z12, Z12")
	}
	for k := 0; k < 8; k += 2 {
		t.grid(g, k)
		g.p("\tVMOVDQA64 Y8, Y16")
		t.grid(g, k+1)
		g.p("\tVINSERTI64X4 $1, Y8, Z16, Z8")
		t.signMask(g, k)
		t.scales512(g, k)
		g.p("\tVMOVDQU8 %s, Z11", col(q8KQs+32*k, 0))
		g.p("\tVPSUBB Z11, Z17, K1, Z11")
		g.p("\tVPMADDUBSW Z11, Z8, Z11")
		g.p("\tVPMADDWD Z9, Z11, Z11")
		g.p("\tVPADDD Z11, Z4, Z4")
	}
	g.p("\tVEXTRACTI64X4 $1, Z4, Y11")
	g.p("\tVPADDD Y11, %s, %s", iacc(0), iacc(0))
	// Block end: acc += (d_w * d_a) * float(isum), as kernel.
	g.p("\tMOVWLZX (SI), AX")
	g.p("\tVMOVD AX, X8")
	g.p("\tVCVTPH2PS X8, X8")
	g.p("\tVBROADCASTSS X8, Y8")
	g.p("\tVBROADCASTSS %s, Y10", col(0, 0))
	g.p("\tVMULPS Y8, Y10, Y10")
	g.p("\tVCVTDQ2PS %s, Y11", iacc(0))
	g.p("\tVFMADD231PS Y11, Y10, %s", facc(0))
	g.p("\tADDQ $%d, SI", t.size)
	g.p("\tADDQ $%d, DI", q8KSize)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s", loop)
	g.p("")
	g.epilogue(1, t.factor)
}

// epilogue stores factor times the sum of the lanes of column c's float
// accumulator at out + c*ostride*4.
func (g *gen) epilogue(cols int, factor float32) {
	g.p("\tMOVQ out+32(FP), AX")
	g.p("\tMOVQ ostride+40(FP), BX")
	g.p("\tSHLQ $2, BX")
	g.p("\tLEAQ (BX)(BX*2), DX")
	dst := []string{"(AX)", "(AX)(BX*1)", "(AX)(BX*2)", "(AX)(DX*1)"}
	if factor != 1 {
		g.p("\tMOVL $0x%08x, R9", math.Float32bits(factor))
		g.p("\tVMOVD R9, X9")
	}
	for c := 0; c < cols; c++ {
		x := fmt.Sprintf("X%d", c)
		g.p("\tVEXTRACTF128 $1, %s, X8", facc(c))
		g.p("\tVADDPS X8, %s, %s", x, x)
		g.p("\tVMOVHLPS %s, %s, X8", x, x)
		g.p("\tVADDPS X8, %s, %s", x, x)
		g.p("\tVMOVSHDUP %s, X8", x)
		g.p("\tVADDSS X8, %s, %s", x, x)
		if factor != 1 {
			g.p("\tVMULSS X9, %s, %s", x, x)
		}
		g.p("\tVMOVSS %s, %s", x, dst[c])
	}
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// columns multiplies the signed weight bytes Y8 (scales Y9) of one group
// with the activation quants at byte off of each column.
func (g *gen) columns(cols, off int) {
	if g.signAct {
		// C1S: Y8 holds the grid bytes (all positive), Y10 the signs;
		// maddubs(grid, q8*sign) needs q8*sign to fit a byte, which
		// holds unless q8 = -128 (the Go side never runs C1S then). Two
		// instructions fewer per group than moving the sign to the
		// weights (as llama.cpp's AVX2 IQ kernels do too).
		g.p("\tVMOVDQU %s, Y11", col(off, 0))
		g.p("\tVPSIGNB Y10, Y11, Y11")
		g.p("\tVPMADDUBSW Y11, Y8, Y11")
		g.p("\tVPMADDWD Y9, Y11, Y11")
		g.p("\tVPADDD Y11, %s, %s", iacc(0), iacc(0))
		return
	}
	for c := 0; c < cols; c++ {
		g.p("\tVMOVDQU %s, Y10", col(off, c))
		g.p("\tVPSIGNB Y10, Y8, Y11")
		g.p("\tVPABSB Y10, Y10")
		g.p("\tVPMADDUBSW Y11, Y10, Y11")
		g.p("\tVPMADDWD Y9, Y11, Y11")
		g.p("\tVPADDD Y11, %s, %s", iacc(c), iacc(c))
	}
}

// signs turns sign bytes in Y10 (each byte of group j%8 holding its sign
// bits) into a VPSIGNB operand: 0x7f where bit j%8 is clear, negative
// where it is set.
func (g *gen) signs() {
	g.p("\tVPAND %s, Y10, Y10", g.k("giBitSel<>(SB)"))
	g.p("\tVPADDB %s, Y10, Y10", g.k("gi7f<>(SB)"))
}

func iq2xs() typ {
	return typ{
		name: "IQ2XS", size: 74, factor: 0.125, unsignedGrid: true, doc: "IQ2_XS",
		hot: []string{"giBitSel<>(SB)", "gi7f<>(SB)", "giSignGrp<>+0(SB)", "giSignGrp<>+32(SB)"},
		setup: func(g *gen) {
			g.p("\tLEAQ ·iq2xsGrid(SB), R8")
			g.p("\tMOVL $0x900, R9")
		},
		// Y12: scales 2s+1 as bytes (low nibble of byte k at 2k, high at
		// 2k+1) in both lanes; Y15: the 32 sign bytes, byte w for uint16
		// w (its 7-bit ksigns_iq2xs index plus the parity bit). Y13, Y14:
		// scratch.
		block: func(g *gen) {
			g.p("\tVMOVQ 66(SI), X12")
			g.p("\tVPSRLW $4, X12, X10")
			g.p("\tVPAND giM4<>(SB), X12, X12")
			g.p("\tVPAND giM4<>(SB), X10, X10")
			g.p("\tVPUNPCKLBW X10, X12, X12")
			g.p("\tVPADDB X12, X12, X12")
			g.p("\tVPADDB giOnes8<>(SB), X12, X12")
			g.p("\tVINSERTI128 $1, X12, Y12, Y12")
			for h := 0; h < 2; h++ {
				g.p("\tVMOVDQU %d(SI), Y10", 2+32*h)
				g.p("\tVPSRLW $9, Y10, Y11")
				g.p("\tVPSRLW $13, Y10, Y10")
				g.p("\tVPXOR Y10, Y11, Y10")
				g.p("\tVMOVDQU giBitHelper<>(SB), Y9")
				g.p("\tVPSHUFB Y10, Y9, Y10")
				g.p("\tVPOR Y10, Y11, Y%d", 13+h)
			}
			// Y13 holds words 0..15 with the sign byte of word w in byte 2w,
			// Y14 words 16..31: pack the sign bytes into Y15.
			g.p("\tVPACKUSWB Y14, Y13, Y15")
			g.p("\tVPERMQ $0xd8, Y15, Y15")
		},
		grid: func(g *gen, k int) {
			// Index j of the group: the low 9 bits of the uint16 at
			// off+2j (BEXTR with R9 = start 0, length 9). The grid
			// entries are broadcast from memory (a load, no shuffle) and
			// blended into qword j of Y8.
			off := 2 + 8*k
			for j := 0; j < 4; j++ {
				r := []string{"BX", "DX"}[j%2]
				g.p("\tBEXTRL R9, %d(SI), %s", off+2*j, r)
				if j == 0 {
					g.p("\tVPBROADCASTQ (R8)(%s*8), Y8", r)
				} else {
					g.p("\tVPBROADCASTQ (R8)(%s*8), Y10", r)
					g.p("\tVPBLENDD $0x%02x, Y10, Y8, Y8", 3<<(2*j))
				}
			}
		},
		// Y15 holds the 32 sign bytes in order: qword k/2 is the pair's.
		signMask: func(g *gen, k int) { g.signQword("Y15", k/2) },
		// Y12's scale bytes (both lanes) in all four lanes of Z12 (set
		// by block512), shuffled by the pair's two rows of giScaleShuf.
		scales512: func(g *gen, k int) {
			g.p("\tVPSHUFB giScaleShuf<>+%d(SB), Z12, Z9", 32*k)
		},
		group: func(g *gen, k int) {
			iq2xs().grid(g, k)
			// Sign bytes 4k..4k+3 of Y15 (qword k/2, broadcast into Y13 for
			// groups k and k+1): 4k, 4k+1 over the low lane's 8-byte groups,
			// 4k+2, 4k+3 over the high lane's.
			if k%2 == 0 {
				g.p("\tVPERMQ $0x%02x, Y15, Y13", (k/2)*0x55)
			}
			g.p("\tVPSHUFB %s, Y13, Y10", g.k(fmt.Sprintf("giSignGrp<>+%d(SB)", 32*(k%2))))
			g.signs()
			if !g.signAct {
				g.p("\tVPSIGNB Y10, Y8, Y8")
			}
			g.p("\tVPSHUFB giScaleShuf<>+%d(SB), Y12, Y9", 32*k)
		},
	}
}

// auxSigns takes the eight sign/scale words of an IQ2_XXS or IQ3_XXS
// block in Y8 and computes their sign bytes (one per 8 values: the 7-bit
// ksigns_iq2xs index plus its parity bit), groups 0-3 into both lanes of
// Y12 and groups 4-7 into both lanes of Y13, and the group scales 2*s+1 as
// two int16 per dword, groups 0-3 into both lanes of Y14 and 4-7 into Y15.
// Clobbers Y9, Y10, Y11.
func (g *gen) auxSigns() {
	g.p("\tVPAND giAux0<>(SB), Y8, Y9")
	for i := 1; i < 4; i++ {
		g.p("\tVPSLLD $%d, Y8, Y10", i)
		g.p("\tVPAND giAux%d<>(SB), Y10, Y10", i)
		g.p("\tVPOR Y10, Y9, Y9")
	}
	g.p("\tVPSRLW $4, Y9, Y10")
	g.p("\tVPXOR Y9, Y10, Y10")
	g.p("\tVPAND giM4<>(SB), Y10, Y10")
	g.p("\tVMOVDQU giBitHelper<>(SB), Y11")
	g.p("\tVPSHUFB Y10, Y11, Y10")
	g.p("\tVPOR Y10, Y9, Y9")
	g.p("\tVPERMQ $0x44, Y9, Y12")
	g.p("\tVPERMQ $0xee, Y9, Y13")
	g.p("\tVPSRLD $28, Y8, Y9")
	g.p("\tVPADDD Y9, Y9, Y9")
	g.p("\tVPADDD giOnes32<>(SB), Y9, Y9")
	g.p("\tVPSLLD $16, Y9, Y10")
	g.p("\tVPOR Y10, Y9, Y9")
	g.p("\tVPERMQ $0x44, Y9, Y14")
	g.p("\tVPERMQ $0xee, Y9, Y15")
}

// auxGroup finishes group k of an IQ2_XXS/IQ3_XXS block whose grid bytes
// are in Y8: signs and scales from auxSigns' registers.
func (g *gen) auxGroup(k int) {
	sreg, screg := "Y12", "Y14"
	if k >= 4 {
		sreg, screg = "Y13", "Y15"
	}
	g.p("\tVPSHUFB %s, %s, Y10", g.k(fmt.Sprintf("giSignGrp<>+%d(SB)", 32*(k%4))), sreg)
	g.signs()
	if !g.signAct {
		g.p("\tVPSIGNB Y10, Y8, Y8")
	}
	g.p("\tVPSHUFD $0x%02x, %s, Y9", 0x55*(k%4), screg)
}

// signQword sets K1 to qword q (0..3) of the 32 sign bytes in reg (AX,
// X10 scratch).
func (g *gen) signQword(reg string, q int) {
	x := "X" + reg[1:]
	if q >= 2 {
		g.p("\tVEXTRACTI128 $1, %s, X10", reg)
		x = "X10"
	}
	if q%2 == 0 {
		g.p("\tVMOVQ %s, AX", x)
	} else {
		g.p("\tVPEXTRQ $1, %s, AX", x)
	}
	g.p("\tKMOVQ AX, K1")
}

// auxSignMask is signMask for auxSigns' registers: the low lane of Y12
// holds the sign bytes of groups 0-3 in order, Y13's those of 4-7.
func auxSignMask(g *gen, k int) {
	if k < 4 {
		g.signQword("Y12", k/2)
	} else {
		g.signQword("Y13", k/2-2)
	}
}

// auxScales512 is scales512 for auxSigns' registers: each group's scale
// in all 16 words of its 256-bit half.
func auxScales512(g *gen, k int) {
	screg := "Y14"
	if k >= 4 {
		screg = "Y15"
	}
	g.p("\tVPSHUFD $0x%02x, %s, Y9", 0x55*(k%4), screg)
	g.p("\tVPSHUFD $0x%02x, %s, Y10", 0x55*((k+1)%4), screg)
	g.p("\tVINSERTI64X4 $1, Y10, Z9, Z9")
}

func iq2xxs() typ {
	return typ{
		name: "IQ2XXS", size: 66, factor: 0.125, unsignedGrid: true, doc: "IQ2_XXS",
		hot: []string{"giBitSel<>(SB)", "gi7f<>(SB)", "giSignGrp<>+0(SB)", "giSignGrp<>+32(SB)",
			"giSignGrp<>+64(SB)", "giSignGrp<>+96(SB)"},
		setup: func(g *gen) { g.p("\tLEAQ ·iq2xxsGrid(SB), R8") },
		block: func(g *gen) {
			// The sign/scale words are dwords 1, 3, 5, 7 of each group pair.
			g.p("\tVMOVDQU 2(SI), Y8")
			g.p("\tVMOVDQU 34(SI), Y9")
			g.p("\tVSHUFPS $0xdd, Y9, Y8, Y8")
			g.p("\tVPERMQ $0xd8, Y8, Y8")
			g.auxSigns()
		},
		grid: func(g *gen, k int) {
			for i := 0; i < 4; i++ {
				g.p("\tMOVBLZX %d(SI), AX", 2+8*k+i)
				x := "X8"
				if i >= 2 {
					x = "X10"
				}
				if i%2 == 0 {
					g.p("\tVMOVQ (R8)(AX*8), %s", x)
				} else {
					g.p("\tVPINSRQ $1, (R8)(AX*8), %s, %s", x, x)
				}
			}
			g.p("\tVINSERTI128 $1, X10, Y8, Y8")
		},
		signMask:  auxSignMask,
		scales512: auxScales512,
		group: func(g *gen, k int) {
			iq2xxs().grid(g, k)
			g.auxGroup(k)
		},
	}
}

func iq3xxs() typ {
	return typ{
		name: "IQ3XXS", size: 98, factor: 0.25, unsignedGrid: true, doc: "IQ3_XXS",
		hot: []string{"giBitSel<>(SB)", "gi7f<>(SB)", "giSignGrp<>+0(SB)", "giSignGrp<>+32(SB)",
			"giSignGrp<>+64(SB)", "giSignGrp<>+96(SB)"},
		setup: func(g *gen) { g.p("\tLEAQ ·iq3xxsGrid(SB), R8") },
		block: func(g *gen) {
			g.p("\tVMOVDQU 66(SI), Y8")
			g.auxSigns()
		},
		grid: func(g *gen, k int) {
			for i := 0; i < 8; i++ {
				g.p("\tMOVBLZX %d(SI), AX", 2+8*k+i)
				x := "X8"
				if i >= 4 {
					x = "X10"
				}
				if i%4 == 0 {
					g.p("\tVMOVD (R8)(AX*4), %s", x)
				} else {
					g.p("\tVPINSRD $%d, (R8)(AX*4), %s, %s", i%4, x, x)
				}
			}
			g.p("\tVINSERTI128 $1, X10, Y8, Y8")
		},
		group: func(g *gen, k int) {
			iq3xxs().grid(g, k)
			g.auxGroup(k)
		},
	}
}

func iq4xs() typ {
	return typ{
		name: "IQ4XS", size: 136, factor: 1, doc: "IQ4_XS",
		hot: []string{"giM4<>(SB)"},
		setup: func(g *gen) {
			g.p("\tVBROADCASTI128 ·kvaluesIQ4NL(SB), Y15")
		},
		// Y12: scales ls-32 of groups 0-3, each as an int16 pair, in both
		// lanes; Y13 groups 4-7. Y15 holds kvalues_iq4nl (constant).
		block: func(g *gen) {
			g.p("\tVPBROADCASTD 4(SI), Y9")
			g.p("\tVPSRLVD giIQ4ShiftL<>(SB), Y9, Y9")
			g.p("\tVPAND giIQ4M0f<>(SB), Y9, Y9")
			g.p("\tVPBROADCASTD 2(SI), Y10")
			g.p("\tVPSRLVD giIQ4ShiftH<>(SB), Y10, Y10")
			g.p("\tVPSLLD $4, Y10, Y10")
			g.p("\tVPAND giIQ4M30<>(SB), Y10, Y10")
			g.p("\tVPOR Y10, Y9, Y9")
			g.p("\tVPSUBD giIQ4C20<>(SB), Y9, Y9")
			g.p("\tVPAND giIQ4Mffff<>(SB), Y9, Y10")
			g.p("\tVPSLLD $16, Y9, Y9")
			g.p("\tVPOR Y10, Y9, Y9")
			g.p("\tVPERMQ $0x44, Y9, Y12")
			g.p("\tVPERMQ $0xee, Y9, Y13")
		},
		group: func(g *gen, k int) {
			g.p("\tVMOVDQU %d(SI), X8", 8+16*k)
			g.p("\tVPSRLW $4, X8, X10")
			g.p("\tVINSERTI128 $1, X10, Y8, Y8")
			g.p("\tVPAND %s, Y8, Y8", g.k("giM4<>(SB)"))
			g.p("\tVPSHUFB Y8, Y15, Y8")
			screg := "Y12"
			if k >= 4 {
				screg = "Y13"
			}
			g.p("\tVPSHUFD $0x%02x, %s, Y9", 0x55*(k%4), screg)
		},
	}
}

// Unpacked weight rows: each super-block becomes a record of unpackedSize
// bytes with d times the type's final factor as a float32 at 512, and
// before it either (narrow, for AVX2) the 256 signed weight bytes (group k
// at 32k) and the int16 scale vector of each group (group k at 256+32k, as
// VPMADDWD takes it), or (wide, for AVX-512 VNNI) the 256 weights times
// their group scales as int16 (value j at 2j; at most 127*32 in
// magnitude), whose products with the activations sign-extended to int16
// are plain VPDPWSSD. Both are exact for every input.
const unpackedSize = 544

// unpack writes gemm<name>Unpack, which expands a weight row into records
// for the unpacked kernels.
func (g *gen) unpack(t typ) {
	name := fmt.Sprintf("gemm%sUnpack", t.name)
	g.p("// func %s(x *byte, nb int, buf *byte)", name)
	g.p("//")
	g.p("// Expands nb %s blocks at x into records at buf.", t.doc)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-24", name)
	g.p("\tMOVQ x+0(FP), SI")
	g.p("\tMOVQ nb+8(FP), CX")
	g.p("\tMOVQ buf+16(FP), DI")
	t.setup(g)
	g.bind([]string{"Y0", "Y1", "Y2", "Y3", "Y4", "Y5", "Y6", "Y7"}, t.hot)
	g.unpackLoop(t, name+"Block", false)
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// unpackLoop expands CX blocks at SI into records at DI (advancing all
// three), after setup and bind: narrow records if !wide, else wide ones.
func (g *gen) unpackLoop(t typ, loop string, wide bool) {
	g.p("")
	g.p("%s:", loop)
	t.block(g)
	for k := 0; k < 8; k++ {
		t.group(g, k)
		if !wide {
			g.p("\tVMOVDQU Y8, %d(DI)", 32*k)
			g.p("\tVMOVDQU Y9, %d(DI)", 256+32*k)
			continue
		}
		// Values 0-15 of the group times the scale of the low lane of Y9,
		// values 16-31 times that of its high lane, as int16 (at most
		// 127*32 in magnitude).
		g.p("\tVPMOVSXBW X8, Y10")
		g.p("\tVEXTRACTI128 $1, Y8, X11")
		g.p("\tVPMOVSXBW X11, Y11")
		g.p("\tVPERMQ $0x44, Y9, Y8")
		g.p("\tVPMULLW Y8, Y10, Y10")
		g.p("\tVPERMQ $0xee, Y9, Y8")
		g.p("\tVPMULLW Y8, Y11, Y11")
		g.p("\tVMOVDQU Y10, %d(DI)", 64*k)
		g.p("\tVMOVDQU Y11, %d(DI)", 64*k+32)
	}
	g.p("\tMOVWLZX (SI), AX")
	g.p("\tVMOVD AX, X8")
	g.p("\tVCVTPH2PS X8, X8")
	if t.factor != 1 {
		g.p("\tMOVL $0x%08x, AX", math.Float32bits(t.factor))
		g.p("\tVMOVD AX, X9")
		g.p("\tVMULSS X9, X8, X8")
	}
	g.p("\tVMOVSS X8, 512(DI)")
	g.p("\tADDQ $%d, SI", t.size)
	g.p("\tADDQ $%d, DI", unpackedSize)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s", loop)
}

// pairBlocks is the most blocks per row of the pair drivers, whose frame
// holds two unpacked rows.
const pairBlocks = 16

// pairs writes gemm<name>PairsAVX2 (n = 2, !vnni), gemm<name>PairsVNNI
// (n = 2, vnni) or gemm<name>QuadsVNNI (n = 4, vnni), which compute rows
// (a multiple of n, > 0) weight rows, xstride bytes apart, against cols
// activation rows: each n rows are unpacked into the frame (not zeroed,
// unlike a Go buffer) and multiplied with the columns two at a time.
func (g *gen) pairs(t typ, vnni bool, n int) {
	kind := map[int]string{2: "Pairs", 4: "Quads"}[n]
	isa := "AVX2"
	if vnni {
		isa = "VNNI"
	}
	name := fmt.Sprintf("gemm%s%s%s", t.name, kind, isa)
	const half = pairBlocks * unpackedSize
	g.p("// func %s(x *byte, xstride, rows, nb int, y *byte, ystride, cols int, out *float32, ostride int)", name)
	g.p("//")
	g.p("// rows (a multiple of %d) %s weight rows x cols activation rows; nb <= %d.", n, t.doc, pairBlocks)
	g.p("TEXT ·%s(SB), $%d-72", name, n*half)
	g.p("")
	g.p("%sRow:", name)
	for r := 0; r < n; r++ {
		g.p("\tMOVQ x+0(FP), SI")
		for i := 0; i < r; i++ {
			g.p("\tADDQ xstride+8(FP), SI")
		}
		g.p("\tLEAQ %d(SP), DI", r*half)
		g.p("\tMOVQ nb+24(FP), CX")
		t.setup(g)
		g.bind([]string{"Y0", "Y1", "Y2", "Y3", "Y4", "Y5", "Y6", "Y7"}, t.hot)
		g.unpackLoop(t, fmt.Sprintf("%sUnpack%d", name, r), vnni)
	}
	// Column loop: R13 the activation rows of the current pair of
	// columns, R9 their outputs, R11 the columns left.
	g.p("\tMOVQ y+32(FP), R13")
	g.p("\tMOVQ out+56(FP), R9")
	g.p("\tMOVQ cols+48(FP), R11")
	g.p("\tMOVQ ystride+40(FP), R12")
	g.p("\tMOVQ ostride+64(FP), BX")
	g.p("\tSHLQ $2, BX")
	loop := func(cols int, label string) {
		g.p("\tLEAQ 0(SP), SI")
		g.p("\tMOVQ $%d, R10", half)
		g.p("\tMOVQ $%d, AX", 3*half)
		g.p("\tMOVQ R13, DI")
		g.p("\tMOVQ nb+24(FP), CX")
		if n == 4 {
			g.r4LoopZ(cols, label)
		} else {
			g.r2Loop(cols, label, vnni)
		}
		g.rStore(n, cols, "R9", "BX")
	}
	g.p("")
	g.p("%sCols:", name)
	g.p("\tCMPQ R11, $2")
	g.p("\tJLT %sTail", name)
	loop(2, name+"C2")
	g.p("\tLEAQ (R13)(R12*2), R13")
	g.p("\tLEAQ (R9)(BX*2), R9")
	g.p("\tSUBQ $2, R11")
	g.p("\tJMP %sCols", name)
	g.p("")
	g.p("%sTail:", name)
	g.p("\tTESTQ R11, R11")
	g.p("\tJZ %sNext", name)
	loop(1, name+"C1")
	g.p("")
	g.p("%sNext:", name)
	g.p("\tMOVQ xstride+8(FP), AX")
	g.p("\tSHLQ $%d, AX", map[int]int{2: 1, 4: 2}[n])
	g.p("\tADDQ AX, x+0(FP)")
	g.p("\tADDQ $%d, out+56(FP)", 4*n)
	g.p("\tSUBQ $%d, rows+16(FP)", n)
	g.p("\tJNZ %sRow", name)
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// r4LoopZ is r2LoopZ for four unpacked wide rows (SI, SI+R10, SI+2*R10,
// SI+AX): Z16..Z23 are the int32 accumulators of the pairs (r, c) =
// r*cols+c, Z8/Z9 the columns' groups, Z12..Z15 the rows', and lane
// r*cols+c of Y0 the pair's float sum (blockEnd). Each activation group
// is sign-extended once for the four rows.
func (g *gen) r4LoopZ(cols int, loop string) {
	pairs := 4 * cols
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	// row returns the format of byte %d of row r.
	row := func(r int) string {
		return []string{"%d(SI)", "%d(SI)(R10*1)", "%d(SI)(R10*2)", "%d(SI)(AX*1)"}[r]
	}
	g.p("\tVXORPS Y0, Y0, Y0")
	g.p("")
	g.p("%s:", loop)
	for i := 0; i < pairs; i++ {
		g.p("\tVPXORD %s, %s, %s", z(16+i), z(16+i), z(16+i))
	}
	for k := 0; k < 8; k++ {
		for c := 0; c < cols; c++ {
			g.p("\tVPMOVSXBW %s, %s", col(q8KQs+32*k, c), z(8+c))
		}
		for r := 0; r < 4; r++ {
			g.p("\tVMOVDQU64 "+row(r)+", %s", 64*k, z(12+r))
			for c := 0; c < cols; c++ {
				g.p("\tVPDPWSSD %s, %s, %s", z(12+r), z(8+c), z(16+r*cols+c))
			}
		}
	}
	rows := []string{fmt.Sprintf(row(0), 512), fmt.Sprintf(row(1), 512), fmt.Sprintf(row(2), 512), fmt.Sprintf(row(3), 512)}
	g.blockEndZ(16, pairs, rows, cols, loop)
}

// blockEndZ folds the n 512-bit int32 accumulators Z(first).. to 256
// bits (Y8..), ends the block (blockEnd) and loops to the next.
func (g *gen) blockEndZ(first, n int, rows []string, cols int, loop string) {
	var parts []string
	for i := 0; i < n; i++ {
		y := fmt.Sprintf("Y%d", 8+i)
		g.p("\tVEXTRACTI64X4 $1, Z%d, %s", first+i, y)
		g.p("\tVPADDD Y%d, %s, %s", first+i, y, y)
		parts = append(parts, y)
	}
	g.blockEnd(parts, rows, cols)
	g.p("\tADDQ $%d, SI", unpackedSize)
	g.p("\tADDQ $%d, DI", q8KSize)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s", loop)
	g.p("")
}

// blockEnd finishes a block of the unpacked kernels in llama.cpp's
// order for prompts of these types (its iqp panels, ggml-cpu/iqp.cpp):
// each output's integer sum over the super-block is made exact first (the
// 8-lane partials in parts, output i = r*cols+c, are added across lanes),
// then acc = fma(float(sum), dfac*d_a, acc) per output, one float lane
// each (Y0; X0 for up to 4 outputs), with dfac the record's float at
// rows[r] and d_a the activation block's. Clobbers Y8..Y15.
func (g *gen) blockEnd(parts []string, rows []string, cols int) {
	n := len(parts)
	if n == 1 {
		parts = append(parts, parts[0])
	}
	// Pairwise horizontal adds: level 1 into Y8, Y10, Y12, Y14.
	var l1 []string
	for j := 0; j < len(parts); j += 2 {
		d := fmt.Sprintf("Y%d", 8+j)
		g.p("\tVPHADDD %s, %s, %s", parts[j+1], parts[j], d)
		l1 = append(l1, d)
	}
	switch len(l1) {
	case 1:
		g.p("\tVPHADDD Y8, Y8, Y8")
	case 2:
		g.p("\tVPHADDD Y10, Y8, Y8")
	case 4:
		g.p("\tVPHADDD Y10, Y8, Y8")
		g.p("\tVPHADDD Y14, Y12, Y12")
	}
	if n == 8 {
		g.p("\tVPERM2I128 $0x20, Y12, Y8, Y9")
		g.p("\tVPERM2I128 $0x31, Y12, Y8, Y10")
		g.p("\tVPADDD Y10, Y9, Y8")
	} else {
		g.p("\tVEXTRACTI128 $1, Y8, X9")
		g.p("\tVPADDD X9, X8, X8")
	}
	// Scales: lane i = dfac(r) * d_a(c). X10 the dfacs, X11 the d_as.
	nr := n / cols
	lane := func(dst, src string, i int) {
		if i == 0 {
			g.p("\tVMOVSS %s, %s", src, dst)
		} else {
			g.p("\tVINSERTPS $0x%02x, %s, %s, %s", i<<4, src, dst, dst)
		}
	}
	half := func(dst string, r0 int) { // dfacs of rows r0.. for up to 4 lanes
		i := 0
		for r := r0; r < nr && i < 4; r++ {
			for c := 0; c < cols; c++ {
				lane(dst, rows[r], i)
				i++
			}
		}
	}
	half("X10", 0)
	for c := 0; c < cols; c++ {
		lane("X11", col(0, c), c)
	}
	if cols == 1 {
		g.p("\tVSHUFPS $0x00, X11, X11, X11")
	} else {
		g.p("\tVMOVLHPS X11, X11, X11")
	}
	if n == 8 {
		half("X12", 4/cols)
		g.p("\tVINSERTF128 $1, X12, Y10, Y10")
		g.p("\tVINSERTF128 $1, X11, Y11, Y11")
		g.p("\tVMULPS Y11, Y10, Y10")
		g.p("\tVCVTDQ2PS Y8, Y8")
		g.p("\tVFMADD231PS Y8, Y10, Y0")
	} else {
		g.p("\tVMULPS X11, X10, X10")
		g.p("\tVCVTDQ2PS X8, X8")
		g.p("\tVFMADD231PS X8, X10, X0")
	}
}

// widen writes gemmIQWiden, which turns nb narrow records at src into
// wide ones at dst (the conversion of unpackLoop's wide branch), for types
// whose unpack only writes narrow records (IQ2_S, IQ3_S, Q3_K): each
// group's int16 scale vector holds one scale in lanes 0-7 (values 0-15)
// and one in lanes 8-15 (values 16-31), as the narrow kernels' VPMADDWD
// reads it.
func (g *gen) widen() {
	name := "gemmIQWiden"
	g.p("// func %s(src *byte, nb int, dst *byte)", name)
	g.p("//")
	g.p("// Narrow records to wide records.")
	g.p("TEXT ·%s(SB), NOSPLIT, $0-24", name)
	g.p("\tMOVQ src+0(FP), SI")
	g.p("\tMOVQ nb+8(FP), CX")
	g.p("\tMOVQ dst+16(FP), DI")
	g.p("")
	g.p("%sBlock:", name)
	for k := 0; k < 8; k++ {
		g.p("\tVPMOVSXBW %d(SI), Y10", 32*k)
		g.p("\tVPMOVSXBW %d(SI), Y11", 32*k+16)
		g.p("\tVBROADCASTI128 %d(SI), Y8", 256+32*k)
		g.p("\tVPMULLW Y8, Y10, Y10")
		g.p("\tVBROADCASTI128 %d(SI), Y8", 256+32*k+16)
		g.p("\tVPMULLW Y8, Y11, Y11")
		g.p("\tVMOVDQU Y10, %d(DI)", 64*k)
		g.p("\tVMOVDQU Y11, %d(DI)", 64*k+32)
	}
	g.p("\tMOVL 512(SI), AX")
	g.p("\tMOVL AX, 512(DI)")
	g.p("\tADDQ $%d, SI", unpackedSize)
	g.p("\tADDQ $%d, DI", unpackedSize)
	g.p("\tDECQ CX")
	g.p("\tJNZ %sBlock", name)
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// wideQuads writes gemmIQWideQuadsVNNI: four wide unpacked rows (nb
// records each, xstride bytes apart) against cols > 0 activation rows,
// two columns at a time (r4LoopZ), as the QuadsVNNI kernels multiply the
// rows they unpack into their frame.
func (g *gen) wideQuads() {
	name := "gemmIQWideQuadsVNNI"
	g.p("// func %s(x *byte, xstride int, y *byte, ystride, nb, cols int, out *float32, ostride int)", name)
	g.p("//")
	g.p("// Four wide unpacked weight rows x cols activation rows.")
	g.p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	g.p("\tMOVQ y+16(FP), R13")
	g.p("\tMOVQ out+48(FP), R9")
	g.p("\tMOVQ cols+40(FP), R11")
	g.p("\tMOVQ ystride+24(FP), R12")
	g.p("\tMOVQ ostride+56(FP), BX")
	g.p("\tSHLQ $2, BX")
	loop := func(cols int, label string) {
		g.p("\tMOVQ x+0(FP), SI")
		g.p("\tMOVQ xstride+8(FP), R10")
		g.p("\tLEAQ (R10)(R10*2), AX")
		g.p("\tMOVQ R13, DI")
		g.p("\tMOVQ nb+32(FP), CX")
		g.r4LoopZ(cols, label)
		g.rStore(4, cols, "R9", "BX")
	}
	g.p("")
	g.p("%sCols:", name)
	g.p("\tCMPQ R11, $2")
	g.p("\tJLT %sTail", name)
	loop(2, name+"C2")
	g.p("\tLEAQ (R13)(R12*2), R13")
	g.p("\tLEAQ (R9)(BX*2), R9")
	g.p("\tSUBQ $2, R11")
	g.p("\tJMP %sCols", name)
	g.p("")
	g.p("%sTail:", name)
	g.p("\tTESTQ R11, R11")
	g.p("\tJZ %sDone", name)
	loop(1, name+"C1")
	g.p("")
	g.p("%sDone:", name)
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// unpacked2 writes gemmIQUnpackedR2C<cols>: two unpacked weight rows (nb
// records each, the second xstride bytes after the first) against cols
// (1 or 2) activation rows.
func (g *gen) unpacked2(cols int) {
	name := fmt.Sprintf("gemmIQUnpackedR2C%d", cols)
	g.p("// func %s(x *byte, xstride int, y *byte, ystride, nb int, out *float32, ostride int)", name)
	g.p("//")
	g.p("// Two unpacked weight rows x %d activation column(s).", cols)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-56", name)
	g.p("\tMOVQ x+0(FP), SI")
	g.p("\tMOVQ xstride+8(FP), R10")
	g.p("\tMOVQ y+16(FP), DI")
	g.p("\tMOVQ ystride+24(FP), R12")
	g.p("\tMOVQ nb+32(FP), CX")
	g.r2Loop(cols, name+"Block", false)
	g.p("\tMOVQ out+40(FP), AX")
	g.p("\tMOVQ ostride+48(FP), BX")
	g.p("\tSHLQ $2, BX")
	g.rStore(2, cols, "AX", "BX")
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// r2Loop multiplies two unpacked rows (SI, SI+R10) with cols (1 or 2)
// activation rows (DI, DI+R12) over CX blocks, into lane r*cols+c of Y0
// for pair (r, c) (blockEnd: llama.cpp's order). Without vnni the
// rows are narrow records (AVX2); with vnni wide ones (see r2LoopZ).
// Clobbers SI, DI, CX.
func (g *gen) r2Loop(cols int, loop string, vnni bool) {
	pairs := 2 * cols
	if vnni {
		g.r2LoopZ(cols, loop)
		return
	}
	g.p("\tVXORPS Y0, Y0, Y0")
	g.p("")
	g.p("%s:", loop)
	for i := 0; i < pairs; i++ {
		g.p("\tVPXOR %s, %s, %s", iacc(i), iacc(i), iacc(i))
	}
	// Narrow records: each activation group is loaded and made absolute
	// once for both rows, and multiplied as in the one-column kernels.
	for k := 0; k < 8; k++ {
		g.p("\tVMOVDQU %d(SI), Y8", 32*k)
		g.p("\tVMOVDQU %d(SI)(R10*1), Y9", 32*k)
		g.p("\tVMOVDQU %d(SI), Y10", 256+32*k)
		g.p("\tVMOVDQU %d(SI)(R10*1), Y11", 256+32*k)
		for c := 0; c < cols; c++ {
			g.p("\tVMOVDQU %s, Y12", col(q8KQs+32*k, c))
			g.p("\tVPABSB Y12, Y13")
			for r := 0; r < 2; r++ {
				t := []string{"Y14", "Y15"}[r]
				i := r*cols + c
				g.p("\tVPSIGNB Y12, %s, %s", []string{"Y8", "Y9"}[r], t)
				g.p("\tVPMADDUBSW %s, Y13, %s", t, t)
				g.p("\tVPMADDWD %s, %s, %s", []string{"Y10", "Y11"}[r], t, t)
				g.p("\tVPADDD %s, %s, %s", t, iacc(i), iacc(i))
			}
		}
	}
	var parts []string
	for i := 0; i < pairs; i++ {
		parts = append(parts, iacc(i))
	}
	g.blockEnd(parts, []string{"512(SI)", "512(SI)(R10*1)"}, cols)
	g.p("\tADDQ $%d, SI", unpackedSize)
	g.p("\tADDQ $%d, DI", q8KSize)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s", loop)
	g.p("")
}

// r2LoopZ is r2Loop with vnni, on wide records: the registers are 512
// bits (a whole group of 32 as int16), each activation group is
// sign-extended once for both rows, and the products are summed by
// VPDPWSSD (AVX512F/BW/VNNI). Z4..Z7 are the int32 accumulators, Z8/Z9
// the columns' groups, Z12/Z13 the rows'; the float sums are Y0's lanes
// as in r2Loop.
func (g *gen) r2LoopZ(cols int, loop string) {
	pairs := 2 * cols
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	g.p("\tVXORPS Y0, Y0, Y0")
	g.p("")
	g.p("%s:", loop)
	for i := 0; i < pairs; i++ {
		g.p("\tVPXORD %s, %s, %s", z(4+i), z(4+i), z(4+i))
	}
	for k := 0; k < 8; k++ {
		for c := 0; c < cols; c++ {
			g.p("\tVPMOVSXBW %s, %s", col(q8KQs+32*k, c), z(8+c))
		}
		g.p("\tVMOVDQU64 %d(SI), Z12", 64*k)
		g.p("\tVMOVDQU64 %d(SI)(R10*1), Z13", 64*k)
		for r := 0; r < 2; r++ {
			for c := 0; c < cols; c++ {
				i := r*cols + c
				g.p("\tVPDPWSSD %s, %s, %s", z(12+r), z(8+c), z(4+i))
			}
		}
	}
	g.blockEndZ(4, pairs, []string{"512(SI)", "512(SI)(R10*1)"}, cols, loop)
}

// rStore stores the accumulators of n rows x cols (blockEnd's lanes of
// Y0: pair (r, c) in lane r*cols+c) at out + r*4 + c*stride (stride in
// bytes, in a register).
func (g *gen) rStore(n, cols int, out, stride string) {
	for r := 0; r < n; r++ {
		for c := 0; c < cols; c++ {
			i := r*cols + c
			x := "X0"
			if i >= 4 {
				if i == 4 {
					g.p("\tVEXTRACTF128 $1, Y0, X1")
				}
				x = "X1"
			}
			dst := fmt.Sprintf("%d(%s)", 4*r, out)
			if c > 0 {
				dst = fmt.Sprintf("%d(%s)(%s*1)", 4*r, out, stride)
			}
			if i%4 == 0 {
				g.p("\tVMOVSS %s, %s", x, dst)
			} else {
				g.p("\tVEXTRACTPS $%d, %s, %s", i%4, x, dst)
			}
		}
	}
}
