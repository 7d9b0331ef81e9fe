package main

// IQ2_S, IQ1_S, IQ1_M, TQ1_0 and TQ2_0 dot products against Q8_K. As for
// the other i-quants, each super-block's integer sums are exact (SDOT,
// then the group scales by multiply-accumulate) and the floats follow the
// Go reference's order, so the results are bit-identical to GoDot.

// uhadd16b is UHADD (unsigned halving add) on bytes.
func (g *gen) uhadd16b(d, n, m int) {
	g.word(rrr(0x6e200400, d, n, m), "uhadd v%d.16b, v%d.16b, v%d.16b", d, n, m)
}

// kFloatAt finishes a super-block whose fp16 d is at off(R0): with the
// exact isum in s(visum) it does sum += (d*yd)*isum. f0, f1 are scratch.
func (g *gen) kFloatAt(visum, sum, off, f0, f1 int) {
	g.op("FMOVS (R1), F%d", f1)
	g.fp16(f0, off, 0, 5)
	g.fmulS(f0, f0, f1)
	g.scvtfS(visum, visum)
	g.fmulS(visum, f0, visum)
	g.faddS(sum, sum, visum)
}

// scales16 puts 1+2*nibble k of the 64-bit R(src) (k = 0..15) into lane k%4
// of int32x4 V(vsc+k/4); R11 is scratch.
func (g *gen) scales16(vsc, src int) {
	for k := 0; k < 16; k++ {
		g.op("UBFX $%d, R%d, $4, R11", 4*k, src)
		g.op("LSL $1, R11, R11")
		g.op("ADD $1, R11, R11")
		g.insS(vsc+k/4, k%4, 11)
	}
}

// iq2S is ggml_vec_dot_iq2_s_q8_K (NEON path): per group of 32, four
// 8-byte grid entries with 10-bit indices (qs bytes plus two qh bits
// each), the explicit sign bits spread to byte masks by TBL + CMEQ (tables
// at R4: q5NEONTable), SDOT per half group of 16, each half's scale 1+2s
// multiplied into the exact integer super-block sum; then GoDot's floats
// and the final 1/8.
func iq2S(g *gen) {
	g.header("dotIQ2SNEON", "// func dotIQ2SNEON(x, y *byte, nb int, grid *uint64, tab *byte) float32\n", "grid", "tab")
	const idxLo, idxHi, bitsel, sum = 26, 27, 23, 28
	g.op("VLD1 (R4), [V%d.B16, V%d.B16]", idxLo, idxHi)
	g.op("ADD $32, R4, R12")
	g.op("VLD1 (R12), [V%d.B16]", bitsel)
	g.zero(sum)
	g.superLoop("iq2S", 82, func() {
		// scales 1+2s of the 16 half groups into V16..V19.
		g.op("MOVD 74(R0), R6")
		g.scales16(16, 6)
		g.op("ADD $2, R0, R8")
		g.op("ADD $66, R0, R10")
		g.op("ADD $34, R0, R13")
		g.op("ADD $4, R1, R9")
		g.zero(20)
		for ib32 := 0; ib32 < 8; ib32++ {
			g.op("VLD1.P 32(R9), [V2.B16, V3.B16]")
			g.op("MOVWU.P 4(R8), R5")
			g.op("MOVBU.P 1(R10), R6")
			g.op("MOVWU.P 4(R13), R7")
			for l := 0; l < 4; l++ {
				v := 6 + l/2
				g.op("UBFX $%d, R5, $8, R11", 8*l)
				g.op("UBFX $%d, R6, $2, R12", 2*l)
				g.op("ORR R12<<8, R11, R11")
				if l%2 == 0 {
					g.op("FMOVD (R3)(R11<<3), F%d", v)
				} else {
					g.op("ADD R11<<3, R3, R12")
					g.ld1D1(v, 12)
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
			g.zero(14)
			g.sdot(14, 6, 2)
			g.zero(15)
			g.sdot(15, 7, 3)
			k := 2 * ib32
			g.mla4sElem(20, 14, 16+k/4, k%4)
			g.mla4sElem(20, 15, 16+(k+1)/4, (k+1)%4)
		}
		g.addv4s(20, 20)
		g.kFloat1(20, sum, 0, 1)
	})
	g.scaleOut(sum, "0.125")
}

// iq1Grid16 loads the iq1s_grid entries (table at R3) of the 11-bit
// indices of groups l0, l0+1 into V(v): low bytes from R5 (one per group),
// high bits UBFX'd from R6 at hi(l) with width 3.
func (g *gen) iq1Grid16(v, l0 int, hi func(l int) int) { g.iq1Grid16T(v, l0, hi, 3) }

// iq1Grid16T is iq1Grid16 with the table at R(table).
func (g *gen) iq1Grid16T(v, l0 int, hi func(l int) int, table int) {
	for l := l0; l < l0+2; l++ {
		g.op("UBFX $%d, R5, $8, R11", 8*l)
		g.op("UBFX $%d, R6, $3, R12", hi(l))
		g.op("ORR R12<<8, R11, R11")
		if l == l0 {
			g.op("FMOVD (R%d)(R11<<3), F%d", table, v)
		} else {
			g.op("ADD R11<<3, R%d, R12", table)
			g.ld1D1(v, 12)
		}
	}
}

// iq1S is ggml_vec_dot_iq1_s_q8_K with the float steps of its x86 SIMD
// version (see dotIQ1S): the grid part by SDOT and the group scales 2s+1
// by multiply-accumulate, the shift part from the Q8_K block sums in
// general registers, both exact; each times d accumulated on its own, and
// sum + 1/8*shift at the end.
func iq1S(g *gen) {
	g.header("dotIQ1SNEON", "// func dotIQ1SNEON(x, y *byte, nb int, grid *uint64) float32\n", "grid")
	const sum, sum1 = 28, 29
	g.zero(sum)
	g.zero(sum1)
	g.superLoop("iq1S", 50, func() {
		g.op("ADD $2, R0, R8")
		g.op("ADD $34, R0, R10")
		g.op("ADD $4, R1, R9")
		g.op("ADD $260, R1, R13")
		g.op("MOVD ZR, R15")
		for ib := 0; ib < 8; ib++ {
			g.op("VLD1.P 32(R9), [V2.B16, V3.B16]")
			g.op("MOVWU.P 4(R8), R5")
			g.op("MOVHU.P 2(R10), R6")
			hi := func(l int) int { return 3 * l }
			g.iq1Grid16(6, 0, hi)
			g.iq1Grid16(7, 2, hi)
			// ls = 2s+1 into lane ib%4 of V16/V17 and R7.
			g.op("UBFX $12, R6, $3, R7")
			g.op("LSL $1, R7, R7")
			g.op("ADD $1, R7, R7")
			g.insS(16+ib/4, ib%4, 7)
			// shift: ±(bsums[2ib]+bsums[2ib+1]) * ls, sign from qh bit 15.
			g.op("MOVH.P 2(R13), R11")
			g.op("MOVH.P 2(R13), R12")
			g.op("ADD R12, R11, R11")
			g.op("LSL $48, R6, R12")
			g.op("ASR $63, R12, R12")
			g.op("EOR R12, R11, R11")
			g.op("SUB R12, R11, R11")
			g.op("MUL R7, R11, R11")
			g.op("ADD R11, R15, R15")
			p := 10 + ib%4
			g.zero(p)
			g.sdot(p, 6, 2)
			g.sdot(p, 7, 3)
			if ib%4 == 3 {
				g.reduceP(10)
				if ib == 3 {
					g.mul4s(20, 10, 16)
				} else {
					g.mla4s(20, 10, 17)
				}
			}
		}
		g.addv4s(20, 20)
		g.kFloat1(20, sum, 0, 1)
		g.fmovSW(21, 15)
		g.kFloat1(21, sum1, 0, 1)
	})
	g.op("FMOVS $0.125, F1")
	g.fmulS(1, sum1, 1)
	g.faddS(0, sum, 1)
	g.ret(0, 1)
}

// iq1M is ggml_vec_dot_iq1_m_q8_K with the float steps of its x86 SIMD
// version (see dotIQ1M): the grid part and the shift part (SDOT of the
// activations with ±1 bytes, one sign per 8 values) by SDOT, each half
// group's scale 2s+1 by multiply-accumulate, both exact; each times d (the
// fp16 made of the scale words' top nibbles) accumulated on its own, and
// sum + 1/8*shift at the end.
func iq1M(g *gen) {
	g.header("dotIQ1MNEON", "// func dotIQ1MNEON(x, y *byte, nb int, grid *uint64) float32\n", "grid")
	const sum, sum2 = 28, 29
	g.zero(sum)
	g.zero(sum2)
	g.op("MOVD $0x0101010101010101, R14")
	g.superLoop("iq1M", 56, func() {
		// The scale words: 3-bit scales at 16*(ib/2)+6*(ib%2) (+3), into
		// V16..V19 as 2s+1 (lane k%4 of V16+k/4 for half group k).
		g.op("MOVD 48(R0), R15")
		for k := 0; k < 16; k++ {
			ib, h := k/2, k%2
			g.op("UBFX $%d, R15, $3, R11", 16*(ib/2)+6*(ib%2)+3*h)
			g.op("LSL $1, R11, R11")
			g.op("ADD $1, R11, R11")
			g.insS(16+k/4, k%4, 11)
		}
		g.op("MOVD R0, R8")
		g.op("ADD $32, R0, R10")
		g.op("ADD $4, R1, R9")
		g.zero(20)
		g.zero(21)
		for ib := 0; ib < 8; ib++ {
			g.op("VLD1.P 32(R9), [V2.B16, V3.B16]")
			g.op("MOVWU.P 4(R8), R5")
			g.op("MOVHU.P 2(R10), R6")
			hi := func(l int) int { return 4 * l }
			g.iq1Grid16(6, 0, hi)
			g.iq1Grid16(7, 2, hi)
			// ±1 bytes per group of 8: 0x01 or, with the shift-sign bit
			// 4l+3 set, 0xff.
			for l := 0; l < 4; l++ {
				g.op("UBFX $%d, R6, $1, R12", 4*l+3)
				g.op("NEG R12, R12")
				g.op("ORR R14, R12, R12")
				if l%2 == 0 {
					g.op("FMOVD R12, F%d", 8+l/2)
				} else {
					g.insD(8+l/2, 1, 12)
				}
			}
			for h := 0; h < 2; h++ {
				k := 2*ib + h
				pg, ps := 10+h, 12+h
				g.zero(pg)
				g.sdot(pg, 6+h, 2+h)
				g.zero(ps)
				g.sdot(ps, 8+h, 2+h)
				g.mla4sElem(20, pg, 16+k/4, k%4)
				g.mla4sElem(21, ps, 16+k/4, k%4)
			}
		}
		g.addv4s(20, 20)
		g.addv4s(21, 21)
		// d: the top nibbles of the four scale words.
		g.op("UBFX $12, R15, $4, R6")
		g.op("UBFX $28, R15, $4, R7")
		g.op("ORR R7<<4, R6, R6")
		g.op("UBFX $44, R15, $4, R7")
		g.op("ORR R7<<8, R6, R6")
		g.op("UBFX $60, R15, $4, R7")
		g.op("ORR R7<<12, R6, R6")
		g.fmovSW(0, 6)
		g.fcvtSH(0, 0)
		g.op("FMOVS (R1), F1")
		g.fmulS(0, 0, 1)
		g.scvtfS(20, 20)
		g.fmulS(20, 0, 20)
		g.faddS(sum, sum, 20)
		g.scvtfS(21, 21)
		g.fmulS(21, 0, 21)
		g.faddS(sum2, sum2, 21)
	})
	g.op("FMOVS $0.125, F1")
	g.fmulS(1, sum2, 1)
	g.faddS(0, sum, 1)
	g.ret(0, 1)
}

// tq2 is ggml_vec_dot_tq2_0_q8_K (NEON path): the 2-bit values shifted out
// of each 32 bytes, minus 1, SDOT with the activations in order; one exact
// integer sum per super-block and GoDot's floats.
func tq2(g *gen) {
	g.header("dotTQ2NEON", "// func dotTQ2NEON(x, y *byte, nb int) float32\n")
	const m3, c1, sum = 24, 25, 28
	g.movi16b(m3, 3)
	g.movi16b(c1, 1)
	g.zero(sum)
	g.superLoop("tq2", 66, func() {
		g.op("MOVD R0, R8")
		g.op("ADD $4, R1, R9")
		g.zero(20)
		for j := 0; j < 2; j++ {
			g.op("VLD1.P 32(R8), [V0.B16, V1.B16]")
			for l := 0; l < 4; l++ {
				g.op("VLD1.P 32(R9), [V2.B16, V3.B16]")
				for h := 0; h < 2; h++ {
					if l == 0 {
						g.and16b(4+h, h, m3)
					} else {
						g.ushr16b(4+h, h, 2*l)
						g.and16b(4+h, 4+h, m3)
					}
					g.sub16b(4+h, 4+h, c1)
					g.sdot(20, 4+h, 2+h)
				}
			}
		}
		g.addv4s(20, 20)
		g.kFloatAt(20, sum, 64, 0, 1)
	})
	g.ret(sum, 0)
}

// tq1 is ggml_vec_dot_tq1_0_q8_K (NEON path): trit n of a byte b is
// ((b*3^n mod 256)*3) >> 8, computed as llama.cpp does with a byte
// multiply and UHADD(x, x>>1) >> 6 (equal for every byte); minus 1, SDOT
// with the activations in order (qs[0..31] as values 32n+m, qs[32..47] as
// 160+16n+m, the qh word repeated 4 times with multipliers 1, 3, 9, 27 as
// 240+4n+j); one exact integer sum per super-block and GoDot's floats.
func tq1(g *gen) {
	g.header("dotTQ1NEON", "// func dotTQ1NEON(x, y *byte, nb int) float32\n")
	const c1, c3, c9, c27, c81, cqh, sum = 24, 25, 26, 27, 29, 30, 28
	g.movi16b(c1, 1)
	g.movi16b(c3, 3)
	g.movi16b(c9, 9)
	g.movi16b(c27, 27)
	g.movi16b(c81, 81)
	g.op("MOVD $0x0303030301010101, R6")
	g.op("MOVD $0x1b1b1b1b09090909, R7")
	g.op("FMOVD R6, F%d", cqh)
	g.insD(cqh, 1, 7)
	pow := []int{-1, c3, c9, c27, c81}
	g.zero(sum)
	// trit turns the bytes of V(src) times V(mul) (mul < 0: times 1) into
	// trits minus 1 in V(d); V(t) is scratch.
	trit := func(d, src, mul, t int) {
		if mul >= 0 {
			g.mul16b(d, src, mul)
			src = d
		}
		g.ushr16b(t, src, 1)
		g.uhadd16b(d, src, t)
		g.ushr16b(d, d, 6)
		g.sub16b(d, d, c1)
	}
	g.superLoop("tq1", 54, func() {
		g.op("VLD1 (R0), [V0.B16, V1.B16]")
		g.op("ADD $32, R0, R8")
		g.op("VLD1 (R8), [V4.B16]")
		g.op("MOVWU 48(R0), R5")
		g.dup4s(5, 5)
		g.op("ADD $4, R1, R9")
		g.zero(20)
		for n := 0; n < 5; n++ {
			g.op("VLD1.P 32(R9), [V2.B16, V3.B16]")
			trit(6, 0, pow[n], 8)
			trit(7, 1, pow[n], 9)
			g.sdot(20, 6, 2)
			g.sdot(20, 7, 3)
		}
		for n := 0; n < 5; n++ {
			g.op("VLD1.P 16(R9), [V2.B16]")
			trit(6, 4, pow[n], 8)
			g.sdot(20, 6, 2)
		}
		g.op("VLD1.P 16(R9), [V2.B16]")
		trit(6, 5, cqh, 8)
		g.sdot(20, 6, 2)
		g.addv4s(20, 20)
		g.kFloatAt(20, sum, 52, 0, 1)
	})
	g.ret(sum, 0)
}

// iqSSigns signs the weight bytes V6 (values 0..15) and V7 (16..31) of a
// group of 32 by the 4 sign bytes in R14 (bit j = value j): TBL spreads
// them with the index vectors idxLo, idxHi, and AND + CMEQ with bitsel
// make byte masks. V8..V10 are scratch.
func (g *gen) iqSSigns(idxLo, idxHi, bitsel int) {
	g.insS(8, 0, 14)
	for h, idx := range []int{idxLo, idxHi} {
		m := 9 + h
		g.tbl1(m, 8, idx)
		g.and16b(m, m, bitsel)
		g.cmeq16b(m, m, bitsel)
		g.signed(6+h, m)
	}
}

// iqSGemmSetup loads q5NEONTable (at R9) into idxLo, idxHi and bitsel.
func (g *gen) iqSGemmSetup(idxLo, idxHi, bitsel int) {
	g.op("VLD1 (R9), [V%d.B16, V%d.B16]", idxLo, idxHi)
	g.op("ADD $32, R9, R12")
	g.op("VLD1 (R12), [V%d.B16]", bitsel)
}

// gemmIQ3S: iq3S's integer sums (grid R7, q5NEONTable R9), dotIQ3S's
// float order.
func gemmIQ3S() gemmSpec {
	const idxLo, idxHi, bitsel, sum = 26, 27, 29, 28
	return gemmSpec{
		name:  "IQ3S",
		doc:   "// IQ3_S weights (ggml_vec_dot_iq3_s_q8_K's integer sums), GoDot's float order.\n",
		xsize: 110, ysize: 292,
		tables:    [][2]string{{"grid", "*uint32"}, {"tab", "*byte"}},
		tableRegs: []int{7, 9},
		setup:     func(g *gen) { g.iqSGemmSetup(idxLo, idxHi, bitsel) },
		rowInit:   func(g *gen) { g.zero(sum) },
		block: func(g *gen, cols int) {
			g.op("MOVWU 106(R0), R6")
			for j := 0; j < 8; j++ {
				g.op("UBFX $%d, R6, $4, R11", 4*j)
				g.op("LSL $1, R11, R11")
				g.op("ADD $1, R11, R11")
				g.insS(24+j/4, j%4, 11)
			}
			for c := 0; c < cols; c++ {
				g.zero(20 + c)
			}
			g.op("ADD $2, R0, R8")
			g.op("ADD $66, R0, R10")
			g.op("ADD $74, R0, R13")
			for ib32 := 0; ib32 < 8; ib32++ {
				g.op("MOVD.P 8(R8), R5")
				g.op("MOVBU.P 1(R10), R6")
				g.op("MOVWU.P 4(R13), R14")
				for k := 0; k < 8; k++ {
					v := 6 + k/4
					g.op("UBFX $%d, R5, $8, R11", 8*k)
					g.op("UBFX $%d, R6, $1, R12", k)
					g.op("ORR R12<<8, R11, R11")
					if k%4 == 0 {
						g.op("FMOVS (R7)(R11<<2), F%d", v)
					} else {
						g.op("ADD R11<<2, R7, R12")
						g.ld1S(v, k%4, 12)
					}
				}
				g.iqSSigns(idxLo, idxHi, bitsel)
				for c := 0; c < cols; c++ {
					yb, p := 2*(c%2), 14+(c%2)
					g.op("ADD $%d, R%d, R16", 4+32*ib32, 1+c)
					g.op("VLD1 (R16), [V%d.B16, V%d.B16]", yb, yb+1)
					g.zero(p)
					g.sdot(p, 6, yb)
					g.sdot(p, 7, yb+1)
					g.mla4sElem(20+c, p, 24+ib32/4, ib32%4)
				}
			}
			g.reduceCols(20, cols)
			g.kFloat1Cols(cols, 20, sum, 0)
		},
		result: func(g *gen) int { return sum },
	}
}

// gemmIQ2S: iq2S's integer sums (grid R7, q5NEONTable R9), dotIQ2S's
// float order, 0.125·sum at the end.
func gemmIQ2S() gemmSpec {
	const idxLo, idxHi, bitsel, sum = 26, 27, 29, 28
	return gemmSpec{
		name:  "IQ2S",
		doc:   "// IQ2_S weights (ggml_vec_dot_iq2_s_q8_K's integer sums), GoDot's float order.\n",
		xsize: 82, ysize: 292,
		tables:    [][2]string{{"grid", "*uint64"}, {"tab", "*byte"}},
		tableRegs: []int{7, 9},
		setup:     func(g *gen) { g.iqSGemmSetup(idxLo, idxHi, bitsel) },
		rowInit:   func(g *gen) { g.zero(sum) },
		block: func(g *gen, cols int) {
			g.op("MOVD 74(R0), R6")
			g.scales16(16, 6)
			for c := 0; c < cols; c++ {
				g.zero(20 + c)
			}
			g.op("ADD $2, R0, R8")
			g.op("ADD $66, R0, R10")
			g.op("ADD $34, R0, R13")
			for ib32 := 0; ib32 < 8; ib32++ {
				g.op("MOVWU.P 4(R8), R5")
				g.op("MOVBU.P 1(R10), R6")
				g.op("MOVWU.P 4(R13), R14")
				for l := 0; l < 4; l++ {
					v := 6 + l/2
					g.op("UBFX $%d, R5, $8, R11", 8*l)
					g.op("UBFX $%d, R6, $2, R12", 2*l)
					g.op("ORR R12<<8, R11, R11")
					if l%2 == 0 {
						g.op("FMOVD (R7)(R11<<3), F%d", v)
					} else {
						g.op("ADD R11<<3, R7, R12")
						g.ld1D1(v, 12)
					}
				}
				g.iqSSigns(idxLo, idxHi, bitsel)
				k := 2 * ib32
				for c := 0; c < cols; c++ {
					yb, pa := 2*(c%2), 12+2*(c%2)
					g.op("ADD $%d, R%d, R16", 4+32*ib32, 1+c)
					g.op("VLD1 (R16), [V%d.B16, V%d.B16]", yb, yb+1)
					g.zero(pa)
					g.sdot(pa, 6, yb)
					g.zero(pa + 1)
					g.sdot(pa+1, 7, yb+1)
					g.mla4sElem(20+c, pa, 16+k/4, k%4)
					g.mla4sElem(20+c, pa+1, 16+(k+1)/4, (k+1)%4)
				}
			}
			g.reduceCols(20, cols)
			g.kFloat1Cols(cols, 20, sum, 0)
		},
		result: func(g *gen) int {
			g.op("FMOVS $0.125, F1")
			g.fmul4sElem(sum, sum, 1, 0)
			return sum
		},
	}
}

// colQ8 loads the 32 (n = 2) or 16 (n = 1) activation bytes at off of
// column c's Q8_K block into V(v), V(v+1), with R16 as scratch.
func (g *gen) colQ8(c, off, v, n int) { g.colQ8R(c, off, v, n, 16) }

// colQ8R is colQ8 with R(r) as scratch.
func (g *gen) colQ8R(c, off, v, n, r int) {
	g.op("ADD $%d, R%d, R%d", off, 1+c, r)
	if n == 2 {
		g.op("VLD1 (R%d), [V%d.B16, V%d.B16]", r, v, v+1)
	} else {
		g.op("VLD1 (R%d), [V%d.B16]", r, v)
	}
}

// gemmTQ2: tq2's integer sums, dotTQ2's float order.
func gemmTQ2() gemmSpec {
	const m3, c1, sum = 24, 25, 28
	return gemmSpec{
		name:  "TQ2",
		doc:   "// TQ2_0 weights (ggml_vec_dot_tq2_0_q8_K's integer sums), GoDot's float order.\n",
		xsize: 66, ysize: 292,
		setup: func(g *gen) {
			g.movi16b(m3, 3)
			g.movi16b(c1, 1)
		},
		rowInit: func(g *gen) { g.zero(sum) },
		block: func(g *gen, cols int) {
			for c := 0; c < cols; c++ {
				g.zero(20 + c)
			}
			g.op("VLD1 (R0), [V0.B16, V1.B16]")
			g.op("ADD $32, R0, R8")
			g.op("VLD1 (R8), [V2.B16, V3.B16]")
			for j := 0; j < 2; j++ {
				for l := 0; l < 4; l++ {
					for h := 0; h < 2; h++ {
						if l == 0 {
							g.and16b(4+h, 2*j+h, m3)
						} else {
							g.ushr16b(4+h, 2*j+h, 2*l)
							g.and16b(4+h, 4+h, m3)
						}
						g.sub16b(4+h, 4+h, c1)
					}
					for c := 0; c < cols; c++ {
						yb := 8 + 2*(c%2)
						g.colQ8(c, 4+128*j+32*l, yb, 2)
						g.sdot(20+c, 4, yb)
						g.sdot(20+c, 5, yb+1)
					}
				}
			}
			g.reduceCols(20, cols)
			g.kFloat1Cols(cols, 20, sum, 64)
		},
		result: func(g *gen) int { return sum },
	}
}

// gemmTQ1: tq1's integer sums, dotTQ1's float order.
func gemmTQ1() gemmSpec {
	const c1, c3, c9, c27, c81, cqh, sum = 24, 25, 26, 27, 29, 30, 28
	pow := []int{-1, c3, c9, c27, c81}
	trit := func(g *gen, d, src, mul, t int) {
		if mul >= 0 {
			g.mul16b(d, src, mul)
			src = d
		}
		g.ushr16b(t, src, 1)
		g.uhadd16b(d, src, t)
		g.ushr16b(d, d, 6)
		g.sub16b(d, d, c1)
	}
	return gemmSpec{
		name:  "TQ1",
		doc:   "// TQ1_0 weights (ggml_vec_dot_tq1_0_q8_K's integer sums), GoDot's float order.\n",
		xsize: 54, ysize: 292,
		setup: func(g *gen) {
			g.movi16b(c1, 1)
			g.movi16b(c3, 3)
			g.movi16b(c9, 9)
			g.movi16b(c27, 27)
			g.movi16b(c81, 81)
			g.op("MOVD $0x0303030301010101, R6")
			g.op("MOVD $0x1b1b1b1b09090909, R7")
			g.op("FMOVD R6, F%d", cqh)
			g.insD(cqh, 1, 7)
		},
		rowInit: func(g *gen) { g.zero(sum) },
		block: func(g *gen, cols int) {
			for c := 0; c < cols; c++ {
				g.zero(20 + c)
			}
			g.op("VLD1 (R0), [V0.B16, V1.B16]")
			g.op("ADD $32, R0, R8")
			g.op("VLD1 (R8), [V2.B16]")
			g.op("MOVWU 48(R0), R5")
			g.dup4s(3, 5)
			for n := 0; n < 5; n++ {
				trit(g, 6, 0, pow[n], 8)
				trit(g, 7, 1, pow[n], 9)
				for c := 0; c < cols; c++ {
					yb := 10 + 2*(c%2)
					g.colQ8(c, 4+32*n, yb, 2)
					g.sdot(20+c, 6, yb)
					g.sdot(20+c, 7, yb+1)
				}
			}
			for n := 0; n < 5; n++ {
				trit(g, 6, 2, pow[n], 8)
				for c := 0; c < cols; c++ {
					g.colQ8(c, 4+160+16*n, 10+c%2, 1)
					g.sdot(20+c, 6, 10+c%2)
				}
			}
			trit(g, 6, 3, cqh, 8)
			for c := 0; c < cols; c++ {
				g.colQ8(c, 4+240, 10+c%2, 1)
				g.sdot(20+c, 6, 10+c%2)
			}
			g.reduceCols(20, cols)
			g.kFloat1Cols(cols, 20, sum, 52)
		},
		result: func(g *gen) int { return sum },
	}
}

// gemmIQ1S: iq1S's integer sums (grid at R7; the shift sums of the
// columns in R13..R16, from their bsums; R17 addresses the quants),
// dotIQ1S's float order.
func gemmIQ1S() gemmSpec {
	const sum, sum1 = 28, 29
	return gemmSpec{
		name:  "IQ1S",
		doc:   "// IQ1_S weights (ggml_vec_dot_iq1_s_q8_K's integer sums), dotIQ1S's float order.\n",
		xsize: 50, ysize: 292,
		tables:    [][2]string{{"grid", "*uint64"}},
		tableRegs: []int{7},
		setup:     func(g *gen) {},
		rowInit: func(g *gen) {
			g.zero(sum)
			g.zero(sum1)
		},
		block: func(g *gen, cols int) {
			for c := 0; c < cols; c++ {
				g.zero(20 + c)
				g.op("MOVD ZR, R%d", 13+c)
			}
			g.op("ADD $2, R0, R8")
			g.op("ADD $34, R0, R10")
			hi := func(l int) int { return 3 * l }
			for ib := 0; ib < 8; ib++ {
				g.op("MOVWU.P 4(R8), R5")
				g.op("MOVHU.P 2(R10), R6")
				g.iq1Grid16T(6, 0, hi, 7)
				g.iq1Grid16T(7, 2, hi, 7)
				g.op("UBFX $12, R6, $3, R9")
				g.op("LSL $1, R9, R9")
				g.op("ADD $1, R9, R9")
				g.insS(16+ib/4, ib%4, 9)
				g.op("LSL $48, R6, R12")
				g.op("ASR $63, R12, R12")
				for c := 0; c < cols; c++ {
					g.op("MOVH %d(R%d), R11", 260+4*ib, 1+c)
					g.op("MOVH %d(R%d), R6", 262+4*ib, 1+c)
					g.op("ADD R6, R11, R11")
					g.op("EOR R12, R11, R11")
					g.op("SUB R12, R11, R11")
					g.op("MUL R9, R11, R11")
					g.op("ADD R11, R%d, R%d", 13+c, 13+c)
					yb := 2 * (c % 2)
					g.colQ8R(c, 4+32*ib, yb, 2, 17)
					g.zero(14)
					g.sdot(14, 6, yb)
					g.sdot(14, 7, yb+1)
					g.mla4sElem(20+c, 14, 16+ib/4, ib%4)
				}
			}
			g.reduceCols(20, cols)
			g.kFloat1Cols(cols, 20, sum, 0)
			for c := 0; c < cols; c++ {
				g.insS(24, c, 13+c)
			}
			g.kFloat1Cols(cols, 24, sum1, 0)
		},
		result: func(g *gen) int {
			g.op("FMOVS $0.125, F1")
			g.fmul4sElem(sum1, sum1, 1, 0)
			g.fadd4s(sum, sum, sum1)
			return sum
		},
	}
}

// gemmIQ1M: iq1M's integer sums (grid at R7), dotIQ1M's float order.
func gemmIQ1M() gemmSpec {
	const sum, sum2 = 28, 29
	return gemmSpec{
		name:  "IQ1M",
		doc:   "// IQ1_M weights (ggml_vec_dot_iq1_m_q8_K's integer sums), dotIQ1M's float order.\n",
		xsize: 56, ysize: 292,
		tables:    [][2]string{{"grid", "*uint64"}},
		tableRegs: []int{7},
		setup:     func(g *gen) {},
		rowInit: func(g *gen) {
			g.zero(sum)
			g.zero(sum2)
		},
		block: func(g *gen, cols int) {
			g.op("MOVD $0x0101010101010101, R14")
			g.op("MOVD 48(R0), R15")
			for k := 0; k < 16; k++ {
				ib, h := k/2, k%2
				g.op("UBFX $%d, R15, $3, R11", 16*(ib/2)+6*(ib%2)+3*h)
				g.op("LSL $1, R11, R11")
				g.op("ADD $1, R11, R11")
				g.insS(16+k/4, k%4, 11)
			}
			for c := 0; c < cols; c++ {
				g.zero(20 + c)
				g.zero(24 + c)
			}
			g.op("MOVD R0, R8")
			g.op("ADD $32, R0, R10")
			hi := func(l int) int { return 4 * l }
			for ib := 0; ib < 8; ib++ {
				g.op("MOVWU.P 4(R8), R5")
				g.op("MOVHU.P 2(R10), R6")
				g.iq1Grid16T(6, 0, hi, 7)
				g.iq1Grid16T(7, 2, hi, 7)
				for l := 0; l < 4; l++ {
					g.op("UBFX $%d, R6, $1, R12", 4*l+3)
					g.op("NEG R12, R12")
					g.op("ORR R14, R12, R12")
					if l%2 == 0 {
						g.op("FMOVD R12, F%d", 8+l/2)
					} else {
						g.insD(8+l/2, 1, 12)
					}
				}
				for c := 0; c < cols; c++ {
					yb := 10 + 2*(c%2)
					g.colQ8(c, 4+32*ib, yb, 2)
					for h := 0; h < 2; h++ {
						k := 2*ib + h
						g.zero(14)
						g.sdot(14, 6+h, yb+h)
						g.mla4sElem(20+c, 14, 16+k/4, k%4)
						g.zero(15)
						g.sdot(15, 8+h, yb+h)
						g.mla4sElem(24+c, 15, 16+k/4, k%4)
					}
				}
			}
			g.reduceCols(20, cols)
			g.reduceCols(24, cols)
			// d: the top nibbles of the four scale words, times each
			// column's Q8_K d.
			g.op("UBFX $12, R15, $4, R6")
			g.op("UBFX $28, R15, $4, R9")
			g.op("ORR R9<<4, R6, R6")
			g.op("UBFX $44, R15, $4, R9")
			g.op("ORR R9<<8, R6, R6")
			g.op("UBFX $60, R15, $4, R9")
			g.op("ORR R9<<12, R6, R6")
			g.fmovSW(1, 6)
			g.fcvtSH(1, 1)
			g.gatherQ8KD(0, cols)
			g.fmul4sElem(0, 0, 1, 0)
			g.scvtf4s(20, 20)
			g.fmul4s(20, 0, 20)
			g.fadd4s(sum, sum, 20)
			g.scvtf4s(24, 24)
			g.fmul4s(24, 0, 24)
			g.fadd4s(sum2, sum2, 24)
		},
		result: func(g *gen) int {
			g.op("FMOVS $0.125, F1")
			g.fmul4sElem(sum2, sum2, 1, 0)
			g.fadd4s(sum, sum, sum2)
			return sum
		},
	}
}

// Gemm tiles of the other 32-value formats: IQ4_NL, MXFP4, Q5_0 (Q8_0
// activations), Q4_1 and Q5_1 (Q8_1). Per block the weight quants are
// unpacked once into V0 (values 0..15) and V1 (16..31) and dotted with
// each column's block (q8_0Cols, q8_1Cols), then every column's float sums
// are updated in its Go reference's order in one lane per column; the
// products of two factors are commutative, so each result is bit-identical
// to GoDot.

// legacyFloat finishes a block for every column: with the exact sums in
// the int32 lanes of V12 and each column's fp16 dy in halfword lane c of
// V2, sumf += isum * (dy*x), x the weight block's scale in s(vx).
func (g *gen) legacyFloat(cols, vx, sumf int) {
	g.fcvtl4s(2, 2)
	g.reduceCols(12, cols)
	g.scvtf4s(12, 12)
	g.fmul4sElem(2, 2, vx, 0)
	g.fmul4s(12, 12, 2)
	g.fadd4s(sumf, sumf, 12)
}

// nlCols unpacks the 16 nibble bytes at off(R0) through the value table
// V(vals) into V0, V1 (m4: bytes 0x0f).
func (g *gen) nlUnpack(off, vals, m4 int) {
	g.op("ADD $%d, R0, R8", off)
	g.op("VLD1 (R8), [V0.B16]")
	g.ushr16b(1, 0, 4)
	g.and16b(0, 0, m4)
	g.tbl1(0, vals, 0)
	g.tbl1(1, vals, 1)
}

// gemmIQ4NL: iq4NL's integer sums, dotIQ4NLQ8_0's float order.
func gemmIQ4NL() gemmSpec {
	const sumf, vals, m4 = 16, 31, 30
	return gemmSpec{
		name:  "IQ4NL",
		doc:   "// IQ4_NL weights (ggml_vec_dot_iq4_nl_q8_0's integer sums), GoDot's float order.\n",
		xsize: 18, ysize: 34,
		tables:    [][2]string{{"values", "*int8"}},
		tableRegs: []int{7},
		setup: func(g *gen) {
			g.op("VLD1 (R7), [V%d.B16]", vals)
			g.movi16b(m4, 0x0f)
		},
		rowInit: func(g *gen) { g.zero(sumf) },
		block: func(g *gen, cols int) {
			g.fp16(3, 0, 0, 5)
			g.nlUnpack(2, vals, m4)
			g.q8_0Cols(cols, 2, 4, 0, 12)
			g.legacyFloat(cols, 3, sumf)
		},
		result: func(g *gen) int { return sumf },
	}
}

// gemmMXFP4: mxfp4's integer sums and E8M0 scale, dotMXFP4Q8_0's float
// order.
func gemmMXFP4() gemmSpec {
	const sumf, vals, m4 = 16, 31, 30
	return gemmSpec{
		name:  "MXFP4",
		doc:   "// MXFP4 weights (ggml_vec_dot_mxfp4_q8_0's integer sums), GoDot's float order.\n",
		xsize: 17, ysize: 34,
		tables:    [][2]string{{"values", "*int8"}},
		tableRegs: []int{7},
		setup: func(g *gen) {
			g.op("VLD1 (R7), [V%d.B16]", vals)
			g.movi16b(m4, 0x0f)
			g.op("MOVD $0x200000, R9")
		},
		rowInit: func(g *gen) { g.zero(sumf) },
		block: func(g *gen, cols int) {
			// scale bits: e < 2 ? 0x200000<<e : (e-1)<<23
			g.op("MOVBU (R0), R5")
			g.op("SUB $1, R5, R10")
			g.op("LSL $23, R10, R10")
			g.op("LSL R5, R9, R11")
			g.op("CMP $2, R5")
			g.op("CSEL LT, R11, R10, R10")
			g.fmovSW(3, 10)
			g.nlUnpack(1, vals, m4)
			g.q8_0Cols(cols, 2, 4, 0, 12)
			g.legacyFloat(cols, 3, sumf)
		},
		result: func(g *gen) int { return sumf },
	}
}

// q5High ORs the fifth bits (the uint32 at off(R0), spread by the TBL
// indices idxLo, idxHi and bitsel) times 0x10 (V(c16)) into V0, V1.
func (g *gen) q5High(off, idxLo, idxHi, bitsel, c16 int) {
	g.op("MOVWU %d(R0), R10", off)
	g.insS(18, 0, 10)
	for _, p := range [][2]int{{19, idxLo}, {20, idxHi}} {
		g.tbl1(p[0], 18, p[1])
		g.and16b(p[0], p[0], bitsel)
		g.cmeq16b(p[0], p[0], bitsel)
		g.and16b(p[0], p[0], c16)
	}
	g.orr16b(0, 0, 19)
	g.orr16b(1, 1, 20)
}

// nibbles unpacks the 16 bytes at off(R0) into V0 (low nibbles), V1 (high).
func (g *gen) nibbles(off, m4 int) {
	g.op("ADD $%d, R0, R8", off)
	g.op("VLD1 (R8), [V0.B16]")
	g.ushr16b(1, 0, 4)
	g.and16b(0, 0, m4)
}

// gemmQ5_0: q5_0's integer sums (table q5NEONTable at R7), dotQ5_0Q8_0's
// float order.
func gemmQ5_0() gemmSpec {
	const sumf, idxLo, idxHi, bitsel, c16, m4 = 16, 24, 25, 26, 27, 30
	return gemmSpec{
		name:  "Q5_0",
		doc:   "// Q5_0 weights (ggml_vec_dot_q5_0_q8_0's integer sums), GoDot's float order.\n",
		xsize: 22, ysize: 34,
		tables:    [][2]string{{"tab", "*byte"}},
		tableRegs: []int{7},
		setup: func(g *gen) {
			g.op("VLD1 (R7), [V%d.B16, V%d.B16, V%d.B16]", idxLo, idxHi, bitsel)
			g.movi16b(m4, 0x0f)
			g.movi16b(c16, 0x10)
		},
		rowInit: func(g *gen) { g.zero(sumf) },
		block: func(g *gen, cols int) {
			g.fp16(3, 0, 0, 5)
			g.nibbles(6, m4)
			g.q5High(2, idxLo, idxHi, bitsel, c16)
			g.sub16b(0, 0, c16)
			g.sub16b(1, 1, c16)
			g.q8_0Cols(cols, 2, 4, 0, 12)
			g.legacyFloat(cols, 3, sumf)
		},
		result: func(g *gen) int { return sumf },
	}
}

// q8_1Cols is q8_0Cols for Q8_1 blocks: also each column's fp16 s into
// halfword lane c of vs.
func (g *gen) q8_1Cols(cols, vd, vs, vq, wx, p int) {
	for c := 0; c < cols; c++ {
		g.op("MOVHU (R%d), R6", 1+c)
		g.insH(vd, c, 6)
		g.op("MOVHU 2(R%d), R6", 1+c)
		g.insH(vs, c, 6)
		g.op("ADD $4, R%d, R8", 1+c)
		g.op("VLD1 (R8), [V%d.B16, V%d.B16]", vq+2*c, vq+2*c+1)
		g.zero(p + c)
		g.sdot(p+c, wx, vq+2*c)
		g.sdot(p+c, wx+1, vq+2*c+1)
	}
}

// gemmMin is gemmQ4_1 (q5 false) or gemmQ5_1: legacyMin's integer sums,
// dotQ4_1Q8_1's float order (sumf += isum*(dx*dy), summs += m*s per block;
// sumf + summs at the end).
func gemmMin(q5 bool) gemmSpec {
	const sumf, summs, idxLo, idxHi, bitsel, c16, m4 = 16, 21, 24, 25, 26, 27, 30
	s := gemmSpec{
		name:  "Q4_1",
		doc:   "// Q4_1 weights (ggml_vec_dot_q4_1_q8_1's integer sums), GoDot's float order.\n",
		xsize: 20, ysize: 36,
		setup: func(g *gen) {
			g.movi16b(m4, 0x0f)
		},
		rowInit: func(g *gen) {
			g.zero(sumf)
			g.zero(summs)
		},
		result: func(g *gen) int {
			g.fadd4s(sumf, sumf, summs)
			return sumf
		},
	}
	qs := 4
	if q5 {
		s.name, s.xsize = "Q5_1", 24
		s.doc = "// Q5_1 weights (ggml_vec_dot_q5_1_q8_1's integer sums), GoDot's float order.\n"
		s.tables, s.tableRegs = [][2]string{{"tab", "*byte"}}, []int{7}
		s.setup = func(g *gen) {
			g.op("VLD1 (R7), [V%d.B16, V%d.B16, V%d.B16]", idxLo, idxHi, bitsel)
			g.movi16b(m4, 0x0f)
			g.movi16b(c16, 0x10)
		}
		qs = 8
	}
	s.block = func(g *gen, cols int) {
		g.fp16(17, 0, 0, 5) // dx
		g.fp16(22, 2, 0, 5) // m
		g.nibbles(qs, m4)
		if q5 {
			g.q5High(4, idxLo, idxHi, bitsel, c16)
		}
		g.q8_1Cols(cols, 2, 3, 4, 0, 12)
		g.legacyFloat(cols, 17, sumf)
		g.fcvtl4s(3, 3)
		g.fmul4sElem(3, 3, 22, 0)
		g.fadd4s(summs, summs, 3)
	}
	return s
}

func gemmQ4_1() gemmSpec { return gemmMin(false) }
func gemmQ5_1() gemmSpec { return gemmMin(true) }
