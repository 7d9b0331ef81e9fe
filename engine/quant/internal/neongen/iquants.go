package main

// I-quant dot products against Q8_K. As for the K quants, each
// super-block's integer sum is exact and the floats are accumulated in the
// Go reference's order, so the results are bit-identical to GoDot.
//
// The grids and sign masks are the Go tables (iq2xsGrid, ksigns64, ...),
// passed by pointer. A ksigns64 entry has byte 0xff where the value is
// negative, so a signed grid vector is (grid ^ mask) - mask.

// kFloat1 finishes a super-block with one scale: with the exact isum in
// s(visum) it does sum += (xd*yd)*isum. f0, f1 are scratch.
func (g *gen) kFloat1(visum, sum, f0, f1 int) {
	g.op("FMOVS (R1), F%d", f1)
	g.fp16(f0, 0, 0, 5)
	g.fmulS(f0, f0, f1)
	g.scvtfS(visum, visum)
	g.fmulS(visum, f0, visum)
	g.faddS(sum, sum, visum)
}

// scaleOut multiplies s(sum) by the constant c and returns it.
func (g *gen) scaleOut(sum int, c string) {
	g.op("FMOVS $%s, F1", c)
	g.fmulS(0, sum, 1)
	g.ret(0, 2)
}

// iq4XSScales computes the eight signed scales ls-32 of the IQ4_XS block at
// R0 as two int32x4 in vsc, vsc+1: ls = (scales_l nibble) | (scales_h 2
// bits)<<4, spread to one byte per group of 32 with scalar bit tricks.
// vtmp is scratch; vc32 holds 32 in every byte.
func (g *gen) iq4XSScales(vsc, vtmp, vc32 int) {
	g.op("MOVWU 4(R0), R6")
	g.op("ORR R6<<16, R6, R6")
	g.op("AND $0x0000ffff0000ffff, R6")
	g.op("ORR R6<<8, R6, R6")
	g.op("AND $0x00ff00ff00ff00ff, R6")
	g.op("ORR R6<<4, R6, R6")
	g.op("AND $0x0f0f0f0f0f0f0f0f, R6")
	g.op("MOVHU 2(R0), R5")
	g.op("AND $0xff00, R5, R7")
	g.op("AND $0xff, R5")
	g.op("ORR R7<<24, R5, R5")
	g.op("ORR R5<<12, R5, R5")
	g.op("AND $0x000f000f000f000f, R5")
	g.op("ORR R5<<6, R5, R5")
	g.op("AND $0x0303030303030303, R5")
	g.op("ORR R5<<4, R6, R6")
	g.op("FMOVD R6, F%d", vtmp)
	g.sub16b(vtmp, vtmp, vc32)
	g.sxtl8h(vtmp, vtmp)
	g.sxtl4s(vsc, vtmp)
	g.sxtl24s(vsc+1, vtmp)
}

// iq4XS is ggml_vec_dot_iq4_xs_q8_K (NEON path): nibbles mapped through
// kvalues_iq4nl by TBL; the 6-bit scales are spread to bytes with scalar
// bit tricks and applied by multiply-accumulate.
func iq4XS(g *gen) {
	g.header("dotIQ4XSNEON", "// func dotIQ4XSNEON(x, y *byte, nb int, values *int8) float32\n", "values")
	const vals, m4, c32, sum = 31, 30, 29, 28
	g.op("VLD1 (R3), [V%d.B16]", vals)
	g.movi16b(m4, 0x0f)
	g.movi16b(c32, 0x20)
	g.zero(sum)
	g.superLoop("iq4XS", 136, func() {
		g.iq4XSScales(24, 20, c32)
		g.op("ADD $8, R0, R8")
		g.op("ADD $4, R1, R9")
		for j := 0; j < 4; j++ {
			g.op("VLD1.P 32(R8), [V0.B16, V1.B16]")
			g.op("VLD1.P 64(R9), [V2.B16, V3.B16, V4.B16, V5.B16]")
			g.and16b(6, 0, m4)
			g.ushr16b(7, 0, 4)
			g.and16b(8, 1, m4)
			g.ushr16b(9, 1, 4)
			for k := 6; k <= 9; k++ {
				g.tbl1(k, vals, k)
			}
			pa, pb := 14+2*(j%2), 15+2*(j%2)
			aa, ab := 10+2*(j%2), 11+2*(j%2)
			g.zero(pa)
			g.sdot(pa, 6, 2)
			g.sdot(pa, 7, 3)
			g.zero(pb)
			g.sdot(pb, 8, 4)
			g.sdot(pb, 9, 5)
			sc, lane := 24+j/2, (2*j)%4
			if j < 2 {
				g.mul4sElem(aa, pa, sc, lane)
				g.mul4sElem(ab, pb, sc, lane+1)
			} else {
				g.mla4sElem(aa, pa, sc, lane)
				g.mla4sElem(ab, pb, sc, lane+1)
			}
		}
		g.sum4(10)
		g.addv4s(10, 10)
		g.kFloat1(10, sum, 0, 1)
	})
	g.ret(sum, 1)
}

// gridPair loads 16 bytes into vector v: the 8-byte table entries at
// table+8*ia (low half) and table+8*ib (high half); rt is scratch.
func (g *gen) gridPair(v, table, ia, ib, rt int) {
	g.op("FMOVD (R%d)(R%d<<3), F%d", table, ia, v)
	g.op("ADD R%d<<3, R%d, R%d", ib, table, rt)
	g.ld1D1(v, rt)
}

// signed applies the sign masks in vs to the grid bytes in v.
func (g *gen) signed(v, vs int) {
	g.eor16b(v, v, vs)
	g.sub16b(v, v, vs)
}

// reduceP sums each of the int32x4 p, p+1, p+2, p+3 into one lane of p.
func (g *gen) reduceP(p int) {
	g.addp4s(p, p, p+1)
	g.addp4s(p+2, p+2, p+3)
	g.addp4s(p, p, p+2)
}

// iq2XSScales makes the 16 scales 2*s+1 of the IQ2_XS block at R0 (s: low
// then high nibble of each byte) as int32x4 in vsc..vsc+3; vtmp..vtmp+3
// are scratch.
func (g *gen) iq2XSScales(vsc, vtmp, m4, one int) {
	g.op("MOVD 66(R0), R5")
	g.op("FMOVD R5, F%d", vtmp)
	g.and16b(vtmp+1, vtmp, m4)
	g.ushr16b(vtmp+2, vtmp, 4)
	g.zip116b(vtmp+1, vtmp+1, vtmp+2)
	g.shl16b(vtmp+1, vtmp+1, 1)
	g.orr16b(vtmp+1, vtmp+1, one)
	g.uxtl8h(vtmp+2, vtmp+1)
	g.uxtl28h(vtmp+3, vtmp+1)
	g.uxtl4s(vsc, vtmp+2)
	g.uxtl24s(vsc+1, vtmp+2)
	g.uxtl4s(vsc+2, vtmp+3)
	g.uxtl24s(vsc+3, vtmp+3)
}

// iq2XSGrid16 makes the 16 signed grid values k of the 64 whose four qs
// words are in R5 (k < 2) and R6 into v: the grid entries (table at
// R(grid)) and sign masks (R(signs)) of two uint16 qs; V(v+4) and R10..R15
// are scratch.
func (g *gen) iq2XSGrid16(k, v, grid, signs int) {
	r := 5 + k/2
	e0 := 2 * (k % 2)
	g.op("UBFX $%d, R%d, $9, R10", 16*e0, r)
	g.op("UBFX $%d, R%d, $7, R11", 16*e0+9, r)
	g.op("UBFX $%d, R%d, $9, R12", 16*e0+16, r)
	g.op("UBFX $%d, R%d, $7, R13", 16*e0+25, r)
	g.gridPair(v, grid, 10, 12, 14)
	g.gridPair(v+4, signs, 11, 13, 15)
	g.signed(v, v+4)
}

// iq2XSGrid64 loads the next four qs words at R8 (post-incremented) and
// makes the 64 signed grid values they index into v..v+3 (v+4..v+7 are
// scratch).
func (g *gen) iq2XSGrid64(v, grid, signs int) {
	g.op("MOVD.P 8(R8), R5")
	g.op("MOVD.P 8(R8), R6")
	for k := 0; k < 4; k++ {
		g.iq2XSGrid16(k, v+k, grid, signs)
	}
}

// iq2XS is ggml_vec_dot_iq2_xs_q8_K (NEON path).
func iq2XS(g *gen) {
	g.header("dotIQ2XSNEON", "// func dotIQ2XSNEON(x, y *byte, nb int, grid, signs *uint64) float32\n", "grid", "signs")
	const m4, one, sum = 30, 29, 28
	g.movi16b(m4, 0x0f)
	g.movi16b(one, 0x01)
	g.zero(sum)
	g.superLoop("iq2XS", 74, func() {
		g.iq2XSScales(24, 20, m4, one)
		g.op("ADD $2, R0, R8")
		g.op("ADD $4, R1, R9")
		for ib64 := 0; ib64 < 4; ib64++ {
			g.op("VLD1.P 64(R9), [V2.B16, V3.B16, V4.B16, V5.B16]")
			g.op("MOVD.P 8(R8), R5")
			g.op("MOVD.P 8(R8), R6")
			for k := 0; k < 4; k++ {
				g.iq2XSGrid16(k, 6+k, 3, 4)
				g.zero(14 + k)
				g.sdot(14+k, 6+k, 2+k)
			}
			g.reduceP(14)
			g.mul4s(20+ib64, 14, 24+ib64)
		}
		g.sum4(20)
		g.addv4s(20, 20)
		g.kFloat1(20, sum, 0, 1)
	})
	g.scaleOut(sum, "0.125")
}

// iqScales4 turns the four aux32 words in lanes of v into 2*(aux>>28)+1
// in place; ones holds 1 in every 32-bit lane.
func (g *gen) iqScales4(v, ones int) {
	g.ushr4s(v, v, 28)
	g.shl4s(v, v, 1)
	g.add4s(v, v, ones)
}

// iq2XXS is ggml_vec_dot_iq2_xxs_q8_K (NEON path).
func iq2XXS(g *gen) {
	g.header("dotIQ2XXSNEON", "// func dotIQ2XXSNEON(x, y *byte, nb int, grid, signs *uint64) float32\n", "grid", "signs")
	const ones, sum = 29, 28
	g.movi4s(ones, 1)
	g.zero(sum)
	g.superLoop("iq2XXS", 66, func() {
		g.op("ADD $2, R0, R8")
		// The odd 32-bit words of qs hold signs and scales.
		g.op("VLD1 (R8), [V20.B16, V21.B16, V22.B16, V23.B16]")
		g.uzp24s(24, 20, 21)
		g.uzp24s(25, 22, 23)
		g.iqScales4(24, ones)
		g.iqScales4(25, ones)
		g.op("ADD $4, R1, R9")
		for ib64 := 0; ib64 < 4; ib64++ {
			g.op("VLD1.P 64(R9), [V2.B16, V3.B16, V4.B16, V5.B16]")
			g.op("MOVD.P 8(R8), R5")
			g.op("MOVD.P 8(R8), R6")
			p0 := 14 + 2*(ib64%2)
			for k := 0; k < 4; k++ {
				g.iq2XXSGrid16(k, 6+k, 3, 4)
			}
			for h := 0; h < 2; h++ {
				p := p0 + h
				g.zero(p)
				g.sdot(p, 6+2*h, 2+2*h)
				g.sdot(p, 7+2*h, 3+2*h)
			}
			if ib64%2 == 1 {
				g.reduceP(14)
				g.mul4s(20+ib64/2, 14, 24+ib64/2)
			}
		}
		g.add4s(20, 20, 21)
		g.addv4s(20, 20)
		g.kFloat1(20, sum, 0, 1)
	})
	g.scaleOut(sum, "0.125")
}

// iq2XXSGrid16 makes the 16 signed grid values k of the 64 whose qs words
// (two uint32: four grid indices, then four 7-bit sign indices and the
// scale) are in R5 (k < 2) and R6 into v: the grid entries (table at
// R(grid)) and sign masks (R(signs)); V(v+4) and R10..R15 are scratch.
func (g *gen) iq2XXSGrid16(k, v, grid, signs int) {
	r := 5 + k/2
	e0 := 2 * (k % 2)
	g.op("UBFX $%d, R%d, $8, R10", 8*e0, r)
	g.op("UBFX $%d, R%d, $7, R11", 32+7*e0, r)
	g.op("UBFX $%d, R%d, $8, R12", 8*e0+8, r)
	g.op("UBFX $%d, R%d, $7, R13", 32+7*e0+7, r)
	g.gridPair(v, grid, 10, 12, 14)
	g.gridPair(v+4, signs, 11, 13, 15)
	g.signed(v, v+4)
}

// iq3XXSGrid32 makes the 32 signed values of one IQ3_XXS group into v,
// v+1: eight 4-byte grid entries (table at R(grid)) indexed by the bytes of
// R5, signs from the sign indices in R6 (table at R(signs)); V(v+4),
// V(v+5) and R11..R14 are scratch.
func (g *gen) iq3XXSGrid32(v, grid, signs int) {
	for h := 0; h < 2; h++ {
		vv, vs := v+h, v+4+h
		for l := 0; l < 4; l++ {
			g.op("UBFX $%d, R5, $8, R11", 8*(4*h+l))
			if l == 0 {
				g.op("FMOVS (R%d)(R11<<2), F%d", grid, vv)
			} else {
				g.op("ADD R11<<2, R%d, R12", grid)
				g.ld1S(vv, l, 12)
			}
		}
		g.op("UBFX $%d, R6, $7, R11", 14*h)
		g.op("UBFX $%d, R6, $7, R13", 14*h+7)
		g.gridPair(vs, signs, 11, 13, 14)
		g.signed(vv, vs)
	}
}

// iq3XXS is ggml_vec_dot_iq3_xxs_q8_K (NEON path): 4-byte grid entries
// gathered four to a vector.
func iq3XXS(g *gen) {
	g.header("dotIQ3XXSNEON", "// func dotIQ3XXSNEON(x, y *byte, nb int, grid *uint32, signs *uint64) float32\n", "grid", "signs")
	const ones, sum = 29, 28
	g.movi4s(ones, 1)
	g.zero(sum)
	g.superLoop("iq3XXS", 98, func() {
		g.op("ADD $66, R0, R10")
		g.op("VLD1 (R10), [V24.B16, V25.B16]")
		g.iqScales4(24, ones)
		g.iqScales4(25, ones)
		g.op("ADD $2, R0, R8")
		g.op("ADD $4, R1, R9")
		for ib32 := 0; ib32 < 8; ib32++ {
			g.op("VLD1.P 32(R9), [V2.B16, V3.B16]")
			g.op("MOVD.P 8(R8), R5")
			g.op("MOVWU.P 4(R10), R6")
			g.iq3XXSGrid32(6, 3, 4)
			p := 14 + ib32%4
			g.zero(p)
			g.sdot(p, 6, 2)
			g.sdot(p, 7, 3)
			if ib32%4 == 3 {
				g.reduceP(14)
				g.mul4s(20+ib32/4, 14, 24+ib32/4)
			}
		}
		g.add4s(20, 20, 21)
		g.addv4s(20, 20)
		g.kFloat1(20, sum, 0, 1)
	})
	g.scaleOut(sum, "0.25")
}

// iq4NL is ggml_vec_dot_iq4_nl_q8_0 (NEON path): nibbles mapped through
// kvalues_iq4nl by TBL, two SDOTs per block, and the block's exact sum
// accumulated in float32 block by block as GoDot does
// (sumf += (dy*dx)*sumi), so the result is bit-identical to it.
func iq4NL(g *gen) {
	g.header("dotIQ4NLNEON", "// func dotIQ4NLNEON(x, y *byte, nb int, values *int8) float32\n", "values")
	const vals, m4, sum = 31, 30, 28
	g.op("VLD1 (R3), [V%d.B16]", vals)
	g.movi16b(m4, 0x0f)
	g.zero(sum)
	g.label("iq4NLloop")
	g.op("MOVHU.P 2(R0), R5")
	g.op("VLD1.P 16(R0), [V0.B16]")
	g.op("MOVHU.P 2(R1), R6")
	g.op("VLD1.P 32(R1), [V2.B16, V3.B16]")
	g.and16b(6, 0, m4)
	g.ushr16b(7, 0, 4)
	g.tbl1(6, vals, 6)
	g.tbl1(7, vals, 7)
	g.zero(4)
	g.sdot(4, 6, 2)
	g.sdot(4, 7, 3)
	g.addv4s(4, 4)
	g.scvtfS(4, 4)
	g.fmovSW(20, 5)
	g.fcvtSH(20, 20)
	g.fmovSW(21, 6)
	g.fcvtSH(21, 21)
	g.fmulS(20, 21, 20) // dy*dx
	g.fmulS(4, 20, 4)
	g.faddS(sum, sum, 4)
	g.op("SUBS $1, R2")
	g.op("BNE iq4NLloop")
	g.ret(sum, 1)
}

// mxfp4 is ggml_vec_dot_mxfp4_q8_0 (NEON path): nibbles mapped through
// kvalues_fp4 by TBL, two SDOTs per block, the E8M0 scale 2^(e-128) built
// in a general register (ggml's denormal patterns for e < 2), and
// sumf += (dy*scale)*sumi block by block as GoDot does: bit-identical.
func mxfp4(g *gen) {
	g.header("dotMXFP4NEON", "// func dotMXFP4NEON(x, y *byte, nb int, values *int8) float32\n", "values")
	const vals, m4, sum = 31, 30, 28
	g.op("VLD1 (R3), [V%d.B16]", vals)
	g.movi16b(m4, 0x0f)
	g.zero(sum)
	g.op("MOVD $0x200000, R9")
	g.label("mxfp4loop")
	g.op("MOVBU.P 1(R0), R5")
	g.op("VLD1.P 16(R0), [V0.B16]")
	g.op("MOVHU.P 2(R1), R6")
	g.op("VLD1.P 32(R1), [V2.B16, V3.B16]")
	g.and16b(6, 0, m4)
	g.ushr16b(7, 0, 4)
	g.tbl1(6, vals, 6)
	g.tbl1(7, vals, 7)
	g.zero(4)
	g.sdot(4, 6, 2)
	g.sdot(4, 7, 3)
	g.addv4s(4, 4)
	g.scvtfS(4, 4)
	// scale bits: e < 2 ? 0x200000<<e : (e-1)<<23
	g.op("SUB $1, R5, R7")
	g.op("LSL $23, R7, R7")
	g.op("LSL R5, R9, R8")
	g.op("CMP $2, R5")
	g.op("CSEL LT, R8, R7, R7")
	g.fmovSW(20, 7)
	g.fmovSW(21, 6)
	g.fcvtSH(21, 21)
	g.fmulS(20, 21, 20) // dy*scale
	g.fmulS(4, 20, 4)
	g.faddS(sum, sum, 4)
	g.op("SUBS $1, R2")
	g.op("BNE mxfp4loop")
	g.ret(sum, 1)
}

// q5_0 is ggml_vec_dot_q5_0_q8_0 (NEON path): the fifth bits spread from
// qh to bytes with TBL (byte k of qh over 8 lanes), a bit-select AND and
// CMEQ, the quants q-16 as int8, two SDOTs per block, and
// sumf += sumi*(dx*dy) block by block as GoDot does: bit-identical. The
// table at R3 is the two TBL index vectors and the bit-select vector.
func q5_0(g *gen) {
	g.header("dotQ5_0NEON", "// func dotQ5_0NEON(x, y *byte, nb int, tab *byte) float32\n", "tab")
	const idxLo, idxHi, bitsel, c16, m4, sum = 24, 25, 26, 27, 30, 28
	g.op("VLD1 (R3), [V%d.B16, V%d.B16, V%d.B16]", idxLo, idxHi, bitsel)
	g.movi16b(m4, 0x0f)
	g.movi16b(c16, 0x10)
	g.zero(sum)
	g.label("q5_0loop")
	g.op("MOVHU.P 2(R0), R5")
	g.op("MOVWU.P 4(R0), R7")
	g.op("VLD1.P 16(R0), [V0.B16]")
	g.op("MOVHU.P 2(R1), R6")
	g.op("VLD1.P 32(R1), [V2.B16, V3.B16]")
	g.and16b(6, 0, m4)
	g.ushr16b(7, 0, 4)
	g.insS(8, 0, 7)
	for _, p := range [][2]int{{9, idxLo}, {10, idxHi}} {
		g.tbl1(p[0], 8, p[1])
		g.and16b(p[0], p[0], bitsel)
		g.cmeq16b(p[0], p[0], bitsel)
		g.and16b(p[0], p[0], c16)
	}
	g.orr16b(6, 6, 9)
	g.orr16b(7, 7, 10)
	g.sub16b(6, 6, c16)
	g.sub16b(7, 7, c16)
	g.zero(4)
	g.sdot(4, 6, 2)
	g.sdot(4, 7, 3)
	g.addv4s(4, 4)
	g.scvtfS(4, 4)
	g.fmovSW(20, 5)
	g.fcvtSH(20, 20)
	g.fmovSW(21, 6)
	g.fcvtSH(21, 21)
	g.fmulS(20, 20, 21) // dx*dy
	g.fmulS(4, 4, 20)
	g.faddS(sum, sum, 4)
	g.op("SUBS $1, R2")
	g.op("BNE q5_0loop")
	g.ret(sum, 1)
}

// q4_1 and q5_1 are ggml_vec_dot_q4_1_q8_1 and ggml_vec_dot_q5_1_q8_1
// (NEON path): the unsigned quants (plus, for Q5_1, the fifth bits as in
// q5_0) dotted with the Q8_1 quants by SDOT, and per block, in GoDot's
// order, sumf += sumi*(dx*dy) and summs += m*s; the result is
// sumf + summs, bit-identical to GoDot.
func q4_1(g *gen) { legacyMin(g, "q4_1", "dotQ4_1NEON", false) }
func q5_1(g *gen) { legacyMin(g, "q5_1", "dotQ5_1NEON", true) }

func legacyMin(g *gen, label, name string, q5 bool) {
	g.header(name, "// func "+name+"(x, y *byte, nb int, tab *byte) float32\n", "tab")
	const idxLo, idxHi, bitsel, c16, m4, sum, summs = 24, 25, 26, 27, 30, 28, 29
	if q5 {
		g.op("VLD1 (R3), [V%d.B16, V%d.B16, V%d.B16]", idxLo, idxHi, bitsel)
		g.movi16b(c16, 0x10)
	}
	g.movi16b(m4, 0x0f)
	g.zero(sum)
	g.zero(summs)
	g.label(label + "loop")
	g.op("MOVHU.P 2(R0), R5")
	g.op("MOVHU.P 2(R0), R8")
	if q5 {
		g.op("MOVWU.P 4(R0), R7")
	}
	g.op("VLD1.P 16(R0), [V0.B16]")
	g.op("MOVHU.P 2(R1), R6")
	g.op("MOVHU.P 2(R1), R9")
	g.op("VLD1.P 32(R1), [V2.B16, V3.B16]")
	g.and16b(6, 0, m4)
	g.ushr16b(7, 0, 4)
	if q5 {
		g.insS(8, 0, 7)
		for _, p := range [][2]int{{9, idxLo}, {10, idxHi}} {
			g.tbl1(p[0], 8, p[1])
			g.and16b(p[0], p[0], bitsel)
			g.cmeq16b(p[0], p[0], bitsel)
			g.and16b(p[0], p[0], c16)
		}
		g.orr16b(6, 6, 9)
		g.orr16b(7, 7, 10)
	}
	g.zero(4)
	g.sdot(4, 6, 2)
	g.sdot(4, 7, 3)
	g.addv4s(4, 4)
	g.scvtfS(4, 4)
	g.fmovSW(20, 5)
	g.fcvtSH(20, 20)
	g.fmovSW(21, 6)
	g.fcvtSH(21, 21)
	g.fmulS(20, 20, 21) // dx*dy
	g.fmulS(4, 4, 20)
	g.faddS(sum, sum, 4)
	g.fmovSW(22, 8)
	g.fcvtSH(22, 22)
	g.fmovSW(23, 9)
	g.fcvtSH(23, 23)
	g.fmulS(22, 22, 23) // m*s
	g.faddS(summs, summs, 22)
	g.op("SUBS $1, R2")
	g.op("BNE %sloop", label)
	g.faddS(sum, sum, summs)
	g.ret(sum, 1)
}

// iq3S is ggml_vec_dot_iq3_s_q8_K (NEON path): per group of 32, eight
// 4-byte grid entries with 9-bit indices (qs bytes plus one qh bit each)
// gathered four to a vector, the explicit sign bits spread to byte masks
// by TBL + CMEQ (tables at R4: q5NEONTable), SDOT, and the scales 1+2s
// multiplied into the exact integer super-block sum; the floats in GoDot's
// order, so the result is bit-identical to it.
func iq3S(g *gen) {
	g.header("dotIQ3SNEON", "// func dotIQ3SNEON(x, y *byte, nb int, grid *uint32, tab *byte) float32\n", "grid", "tab")
	const idxLo, idxHi, bitsel, sum = 26, 27, 23, 28
	g.op("VLD1 (R4), [V%d.B16, V%d.B16]", idxLo, idxHi)
	g.op("ADD $32, R4, R12")
	g.op("VLD1 (R12), [V%d.B16]", bitsel)
	g.zero(sum)
	g.superLoop("iq3S", 110, func() {
		// scales 1+2s of the 8 groups into V24 (groups 0-3), V25 (4-7).
		g.op("MOVWU 106(R0), R6")
		for j := 0; j < 8; j++ {
			g.op("UBFX $%d, R6, $4, R11", 4*j)
			g.op("LSL $1, R11, R11")
			g.op("ADD $1, R11, R11")
			g.insS(24+j/4, j%4, 11)
		}
		g.op("ADD $2, R0, R8")
		g.op("ADD $66, R0, R10")
		g.op("ADD $74, R0, R13")
		g.op("ADD $4, R1, R9")
		for ib32 := 0; ib32 < 8; ib32++ {
			g.op("VLD1.P 32(R9), [V2.B16, V3.B16]")
			g.op("MOVD.P 8(R8), R5")
			g.op("MOVBU.P 1(R10), R6")
			g.op("MOVWU.P 4(R13), R7")
			for k := 0; k < 8; k++ {
				v := 6 + k/4
				g.op("UBFX $%d, R5, $8, R11", 8*k)
				g.op("UBFX $%d, R6, $1, R12", k)
				g.op("ORR R12<<8, R11, R11")
				if k%4 == 0 {
					g.op("FMOVS (R3)(R11<<2), F%d", v)
				} else {
					g.op("ADD R11<<2, R3, R12")
					g.ld1S(v, k%4, 12)
				}
			}
			g.insS(8, 0, 7)
			for h, idx := range []int{idxLo, idxHi} {
				m := 9 + h
				g.tbl1(m, 8, idx)
				g.and16b(m, m, bitsel)
				g.cmeq16b(m, m, bitsel)
				g.signed(6+h, m)
			}
			p := 14 + ib32%4
			g.zero(p)
			g.sdot(p, 6, 2)
			g.sdot(p, 7, 3)
			if ib32%4 == 3 {
				g.reduceP(14)
				if ib32 == 3 {
					g.mul4s(20, 14, 24)
				} else {
					g.mla4s(20, 14, 25)
				}
			}
		}
		g.addv4s(20, 20)
		g.kFloat1(20, sum, 0, 1)
	})
	g.ret(sum, 2)
}
