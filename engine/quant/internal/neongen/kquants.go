package main

// K-quant dot products against Q8_K (292-byte blocks: float32 d, 256 int8
// qs at 4, 16 int16 bsums at 260). Every super-block's integer sum is exact
// and the float accumulation is done in the order of the Go reference
// (non-fused multiply then add, one super-block at a time), so these are
// bit-identical to Kernel.GoDot.

// superLoop emits the loop over nb super-blocks around body, advancing x by
// xsize and y by 292 bytes.
func (g *gen) superLoop(name string, xsize int, body func()) {
	g.op("CBZ R2, %sdone", name)
	g.label(name + "loop")
	body()
	g.op("ADD $%d, R0", xsize)
	g.op("ADD $292, R1")
	g.op("SUBS $1, R2")
	g.op("BNE %sloop", name)
	g.label(name + "done")
}

// unpackK4Scales unpacks the 12 scale bytes at 4(R0) of a Q4_K/Q5_K block
// (ggml's get_scale_min_k4, vectorised as in llama.cpp with utmp and
// kmask1..3): the 8 scales as two int32x4 in vsc, vsc+1 and the 8 mins as
// uint16x8 in vmin; vtmp is scratch.
func (g *gen) unpackK4Scales(vsc, vmin, vtmp int) {
	g.op("MOVWU 4(R0), R5")
	g.op("MOVWU 8(R0), R6")
	g.op("MOVWU 12(R0), R7")
	g.op("ANDW $0x3f3f3f3f, R6, R9")   // mins 0..3
	g.op("LSRW $4, R7, R10")           //
	g.op("ANDW $0x0f0f0f0f, R10, R10") //
	g.op("LSRW $6, R6, R11")           //
	g.op("ANDW $0x03030303, R11, R11") //
	g.op("ORRW R11<<4, R10, R10")      // mins 4..7
	g.op("ANDW $0x0f0f0f0f, R7, R11")  //
	g.op("LSRW $6, R5, R12")           //
	g.op("ANDW $0x03030303, R12, R12") //
	g.op("ORRW R12<<4, R11, R11")      // scales 4..7
	g.op("ANDW $0x3f3f3f3f, R5, R12")  // scales 0..3
	g.insS(vmin, 0, 9)
	g.insS(vmin, 1, 10)
	g.uxtl8h(vmin, vmin)
	g.insS(vtmp, 0, 12)
	g.insS(vtmp, 1, 11)
	g.uxtl8h(vtmp, vtmp)
	g.uxtl4s(vsc, vtmp)
	g.uxtl24s(vsc+1, vtmp)
}

// minsSum computes Σ bsums·mins of a Q4_K/Q5_K block into s(vout) as an
// int32: the 16 bsums of Q8_K at 260(R1) times the uint16x8 mins in vmin,
// each min used for two bsums. (llama.cpp first adds the bsums in pairs in
// int16, which cannot overflow for real activations; multiplying first
// keeps it exact for any bytes, as the Go reference is.) vb..vb+3 are
// scratch.
func (g *gen) minsSum(vout, vmin, vb int) {
	g.op("ADD $260, R1, R8")
	g.op("VLD1 (R8), [V%d.B16, V%d.B16]", vb, vb+1)
	g.zip18h(vb+2, vmin, vmin)
	g.zip28h(vb+3, vmin, vmin)
	g.smull(vout, vb, vb+2)
	g.smlal2(vout, vb, vb+2)
	g.smlal(vout, vb+1, vb+3)
	g.smlal2(vout, vb+1, vb+3)
	g.addv4s(vout, vout)
}

// kFloat4 finishes a Q4_K/Q5_K super-block: with the exact isum in s(visum)
// and summs in s(vsumms) (int32), it does sums += (xd*yd)*isum and
// sumf -= (xdmin*yd)*summs as dotQ4KQ8K does. f0..f2 are scratch.
func (g *gen) kFloat4(visum, vsumms, sums, sumf, f0, f1, f2 int) {
	g.op("FMOVS (R1), F%d", f2)
	g.fp16(f0, 0, 0, 5)
	g.fp16(f1, 2, 0, 6)
	g.fmulS(f0, f0, f2)
	g.fmulS(f1, f1, f2)
	g.scvtfS(visum, visum)
	g.scvtfS(vsumms, vsumms)
	g.fmulS(visum, f0, visum)
	g.faddS(sums, sums, visum)
	g.fmulS(vsumms, f1, vsumms)
	g.fsubS(sumf, sumf, vsumms)
}

// sum4 adds the int32x4 accumulators acc..acc+3 into acc.
func (g *gen) sum4(acc int) {
	g.add4s(acc, acc, acc+1)
	g.add4s(acc+2, acc+2, acc+3)
	g.add4s(acc, acc, acc+2)
}

// q4K is ggml_vec_dot_q4_K_q8_K (NEON path), with the per-32 scales
// applied by multiply-accumulate into four int32x4 accumulators instead of
// a horizontal add per sub-block.
func q4K(g *gen) {
	g.header("dotQ4KNEON", "// func dotQ4KNEON(x, y *byte, nb int) float32\n")
	const m4, sums, sumf = 31, 28, 27
	g.movi16b(m4, 0x0f)
	g.zero(sums)
	g.zero(sumf)
	g.superLoop("q4K", 144, func() {
		g.unpackK4Scales(24, 21, 20)
		g.minsSum(26, 21, 0)
		g.op("ADD $16, R0, R8")
		g.op("ADD $4, R1, R9")
		for j := 0; j < 4; j++ {
			g.op("VLD1.P 32(R8), [V0.B16, V1.B16]")
			g.op("VLD1.P 64(R9), [V2.B16, V3.B16, V4.B16, V5.B16]")
			g.and16b(6, 0, m4)
			g.and16b(7, 1, m4)
			g.ushr16b(8, 0, 4)
			g.ushr16b(9, 1, 4)
			pl, ph := 14+2*(j%2), 15+2*(j%2)
			al, ah := 10+2*(j%2), 11+2*(j%2)
			g.zero(pl)
			g.sdot(pl, 6, 2)
			g.sdot(pl, 7, 3)
			g.zero(ph)
			g.sdot(ph, 8, 4)
			g.sdot(ph, 9, 5)
			sc, lane := 24+j/2, (2*j)%4
			if j < 2 {
				g.mul4sElem(al, pl, sc, lane)
				g.mul4sElem(ah, ph, sc, lane+1)
			} else {
				g.mla4sElem(al, pl, sc, lane)
				g.mla4sElem(ah, ph, sc, lane+1)
			}
		}
		g.sum4(10)
		g.addv4s(10, 10)
		g.kFloat4(10, 26, sums, sumf, 0, 1, 2)
	})
	g.faddS(0, sumf, sums)
	g.ret(0, 0)
}

// q5K is ggml_vec_dot_q5_K_q8_K (NEON path): as q4K with the fifth bit of
// each quant taken from qh (bit 2j for the low nibbles of group j, 2j+1
// for the high ones).
func q5K(g *gen) {
	g.header("dotQ5KNEON", "// func dotQ5KNEON(x, y *byte, nb int) float32\n")
	const m4, mone, mtwo, sums, sumf = 31, 30, 29, 28, 27
	g.movi16b(m4, 0x0f)
	g.movi16b(mone, 0x01)
	g.movi16b(mtwo, 0x02)
	g.zero(sums)
	g.zero(sumf)
	g.superLoop("q5K", 176, func() {
		g.unpackK4Scales(24, 21, 20)
		g.minsSum(26, 21, 0)
		g.op("ADD $16, R0, R8")
		g.op("VLD1.P 32(R8), [V18.B16, V19.B16]") // qh; R8 now at qs
		g.op("ADD $4, R1, R9")
		for j := 0; j < 4; j++ {
			g.op("VLD1.P 32(R8), [V0.B16, V1.B16]")
			g.op("VLD1.P 64(R9), [V2.B16, V3.B16, V4.B16, V5.B16]")
			g.and16b(20, mone, 18)
			g.shl16b(20, 20, 4)
			g.and16b(21, mone, 19)
			g.shl16b(21, 21, 4)
			g.and16b(22, mtwo, 18)
			g.shl16b(22, 22, 3)
			g.and16b(23, mtwo, 19)
			g.shl16b(23, 23, 3)
			if j < 3 {
				g.ushr16b(18, 18, 2)
				g.ushr16b(19, 19, 2)
			}
			g.and16b(6, 0, m4)
			g.orr16b(6, 6, 20)
			g.and16b(7, 1, m4)
			g.orr16b(7, 7, 21)
			g.ushr16b(8, 0, 4)
			g.orr16b(8, 8, 22)
			g.ushr16b(9, 1, 4)
			g.orr16b(9, 9, 23)
			pl, ph := 14+2*(j%2), 15+2*(j%2)
			al, ah := 10+2*(j%2), 11+2*(j%2)
			g.zero(pl)
			g.sdot(pl, 6, 2)
			g.sdot(pl, 7, 3)
			g.zero(ph)
			g.sdot(ph, 8, 4)
			g.sdot(ph, 9, 5)
			sc, lane := 24+j/2, (2*j)%4
			if j < 2 {
				g.mul4sElem(al, pl, sc, lane)
				g.mul4sElem(ah, ph, sc, lane+1)
			} else {
				g.mla4sElem(al, pl, sc, lane)
				g.mla4sElem(ah, ph, sc, lane+1)
			}
		}
		g.sum4(10)
		g.addv4s(10, 10)
		g.kFloat4(10, 26, sums, sumf, 0, 1, 2)
	})
	g.faddS(0, sumf, sums)
	g.ret(0, 0)
}

// q6K is ggml_vec_dot_q6_K_q8_K (NEON path) in its form that subtracts 32
// from the quants before the dot (llama.cpp now uses the Q8_K bsums for
// that instead; the cost is the same, and this form does not trust bsums,
// like the Go reference): int8 quants dotted with q8, times the int8 scales
// by multiply-accumulate; then sum += (xd*yd)*isum as dotQ6KQ8K does.
func q6K(g *gen) {
	g.header("dotQ6KNEON", "// func dotQ6KNEON(x, y *byte, nb int) float32\n")
	const m4, m30, sum, c32 = 31, 30, 29, 28
	g.movi16b(m4, 0x0f)
	g.movi16b(m30, 0x30)
	g.movi16b(c32, 0x20)
	g.zero(sum)
	g.superLoop("q6K", 210, func() {
		g.q6KScales(24, 10)
		g.op("MOVD R0, R8")      // ql
		g.op("ADD $128, R0, R9") // qh
		g.op("ADD $4, R1, R10")  // q8
		first := true
		mac := func(sc int) {
			for k := 0; k < 4; k++ {
				g.sub16b(10+k, 10+k, c32)
			}
			for k := 0; k < 4; k++ {
				g.zero(14 + k)
				g.sdot(14+k, 10+k, 6+k)
			}
			for k := 0; k < 4; k++ {
				if first {
					g.mul4sElem(20+k, 14+k, sc, k)
				} else {
					g.mla4sElem(20+k, 14+k, sc, k)
				}
			}
			first = false
		}
		for n := 0; n < 2; n++ {
			g.op("VLD1.P 32(R9), [V0.B16, V1.B16]")
			g.op("VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]")
			g.op("VLD1.P 64(R10), [V6.B16, V7.B16, V8.B16, V9.B16]")
			g.q6KLow(10, 0, 2, 18, m4, m30)
			mac(24 + 2*n)
			g.op("VLD1.P 64(R10), [V6.B16, V7.B16, V8.B16, V9.B16]")
			g.q6KHigh(10, 0, 2, 18, m30)
			mac(25 + 2*n)
		}
		g.sum4(20)
		g.addv4s(20, 20)
		g.scvtfS(20, 20)
		g.op("FMOVS (R1), F1")
		g.fp16(0, 208, 0, 5)
		g.fmulS(0, 0, 1)
		g.fmulS(20, 0, 20)
		g.faddS(sum, sum, 20)
	})
	g.ret(sum, 0)
}

// q6KScales loads the 16 int8 scales at 192(R0) of a Q6_K block as four
// int32x4 in vsc..vsc+3; vtmp..vtmp+2 are scratch.
func (g *gen) q6KScales(vsc, vtmp int) {
	g.op("ADD $192, R0, R8")
	g.op("VLD1 (R8), [V%d.B16]", vtmp)
	g.sxtl8h(vtmp+1, vtmp)
	g.sxtl28h(vtmp+2, vtmp)
	g.sxtl4s(vsc, vtmp+1)
	g.sxtl24s(vsc+1, vtmp+1)
	g.sxtl4s(vsc+2, vtmp+2)
	g.sxtl24s(vsc+3, vtmp+2)
}

// q6KLow makes values 0..63 of a Q6_K half (low nibbles of the four ql
// vectors at vl..vl+3, with the qh bits 0-1 and 2-3 of the two vectors at
// vh, vh+1) into vq..vq+3, still offset by 32; vt, vt+1 are scratch.
func (g *gen) q6KLow(vq, vh, vl, vt, m4, m30 int) {
	g.shl16b(vt, vh, 4)
	g.shl16b(vt+1, vh+1, 4)
	g.and16b(vt, vt, m30)
	g.and16b(vt+1, vt+1, m30)
	g.and16b(vq, vl, m4)
	g.and16b(vq+1, vl+1, m4)
	g.orr16b(vq, vq, vt)
	g.orr16b(vq+1, vq+1, vt+1)
	g.shl16b(vt, vh, 2)
	g.shl16b(vt+1, vh+1, 2)
	g.and16b(vt, vt, m30)
	g.and16b(vt+1, vt+1, m30)
	g.and16b(vq+2, vl+2, m4)
	g.and16b(vq+3, vl+3, m4)
	g.orr16b(vq+2, vq+2, vt)
	g.orr16b(vq+3, vq+3, vt+1)
}

// q6KHigh makes values 64..127 of a Q6_K half (high nibbles, qh bits 4-5
// and 6-7) as q6KLow does.
func (g *gen) q6KHigh(vq, vh, vl, vt, m30 int) {
	g.and16b(vt, vh, m30)
	g.and16b(vt+1, vh+1, m30)
	g.ushr16b(vq, vl, 4)
	g.ushr16b(vq+1, vl+1, 4)
	g.orr16b(vq, vq, vt)
	g.orr16b(vq+1, vq+1, vt+1)
	g.ushr16b(vt, vh, 2)
	g.ushr16b(vt+1, vh+1, 2)
	g.and16b(vt, vt, m30)
	g.and16b(vt+1, vt+1, m30)
	g.ushr16b(vq+2, vl+2, 4)
	g.ushr16b(vq+3, vl+3, 4)
	g.orr16b(vq+2, vq+2, vt)
	g.orr16b(vq+3, vq+3, vt+1)
}

// q2K is ggml_vec_dot_q2_K_q8_K (NEON path): 2-bit quants dotted with q8,
// times the 4-bit scales by multiply-accumulate; Σ bsum·min exact in
// int32. Then sumf += (dall*isum - dmin*summs) as dotQ2KQ8K does.
func q2K(g *gen) {
	g.header("dotQ2KNEON", "// func dotQ2KNEON(x, y *byte, nb int) float32\n")
	const m3, m4, sum = 31, 30, 29
	g.movi16b(m3, 0x03)
	g.movi16b(m4, 0x0f)
	g.zero(sum)
	g.superLoop("q2K", 84, func() {
		g.op("VLD1 (R0), [V8.B16]")
		g.and16b(9, 8, m4)
		g.ushr16b(10, 8, 4)
		g.uxtl8h(11, 10)
		g.uxtl28h(12, 10)
		g.op("ADD $260, R1, R8")
		g.op("VLD1 (R8), [V13.B16, V14.B16]")
		g.smull(28, 13, 11)
		g.smlal2(28, 13, 11)
		g.smlal(28, 14, 12)
		g.smlal2(28, 14, 12)
		g.addv4s(28, 28)
		g.uxtl8h(15, 9)
		g.uxtl28h(16, 9)
		g.uxtl4s(24, 15)
		g.uxtl24s(25, 15)
		g.uxtl4s(26, 16)
		g.uxtl24s(27, 16)
		g.op("ADD $16, R0, R8")
		g.op("ADD $4, R1, R9")
		for k := 0; k < 2; k++ {
			g.op("VLD1.P 32(R8), [V0.B16, V1.B16]")
			for j := 0; j < 4; j++ {
				g.op("VLD1.P 32(R9), [V2.B16, V3.B16]")
				if j == 0 {
					g.and16b(4, 0, m3)
					g.and16b(5, 1, m3)
				} else {
					g.ushr16b(4, 0, 2*j)
					g.ushr16b(5, 1, 2*j)
					if j < 3 {
						g.and16b(4, 4, m3)
						g.and16b(5, 5, m3)
					}
				}
				for h := 0; h < 2; h++ {
					grp := 8*k + 2*j + h
					p := 16 + grp%4
					g.zero(p)
					g.sdot(p, 4+h, 2+h)
					if grp < 4 {
						g.mul4sElem(20+grp%4, p, 24+grp/4, grp%4)
					} else {
						g.mla4sElem(20+grp%4, p, 24+grp/4, grp%4)
					}
				}
			}
		}
		g.sum4(20)
		g.addv4s(20, 20)
		// sumf += dall*isum - dmin*summs.
		g.op("FMOVS (R1), F2")
		g.fp16(0, 80, 0, 5)
		g.fp16(1, 82, 0, 6)
		g.fmulS(0, 2, 0)
		g.fmulS(1, 2, 1)
		g.scvtfS(20, 20)
		g.scvtfS(28, 28)
		g.fmulS(20, 0, 20)
		g.fmulS(28, 1, 28)
		g.fsubS(20, 20, 28)
		g.faddS(sum, sum, 20)
	})
	g.ret(sum, 0)
}

// q3KScales unpacks the 12 scale bytes at 96(R0) of a Q3_K block (the
// aux/kmask code of ggml_vec_dot_q3_K_q8_K) into the 16 scales minus 32 as
// four int32x4 in vsc..vsc+3; vtmp is scratch and vc32 holds 32 in every
// byte.
func (g *gen) q3KScales(vsc, vtmp, vc32 int) {
	g.op("MOVWU 96(R0), R5")           // aux[0]
	g.op("MOVWU 100(R0), R6")          // aux[1]
	g.op("MOVWU 104(R0), R7")          // aux[2]
	g.op("ANDW $0x0f0f0f0f, R5, R10")  // utmp[0]
	g.op("ANDW $0x03030303, R7, R9")   //
	g.op("ORRW R9<<4, R10, R10")       //
	g.op("ANDW $0x0f0f0f0f, R6, R11")  // utmp[1]
	g.op("LSRW $2, R7, R9")            //
	g.op("ANDW $0x03030303, R9, R9")   //
	g.op("ORRW R9<<4, R11, R11")       //
	g.op("LSRW $4, R5, R12")           // utmp[2]
	g.op("ANDW $0x0f0f0f0f, R12, R12") //
	g.op("LSRW $4, R7, R9")            //
	g.op("ANDW $0x03030303, R9, R9")   //
	g.op("ORRW R9<<4, R12, R12")       //
	g.op("LSRW $4, R6, R13")           // utmp[3]
	g.op("ANDW $0x0f0f0f0f, R13, R13") //
	g.op("LSRW $6, R7, R9")            //
	g.op("ANDW $0x03030303, R9, R9")   //
	g.op("ORRW R9<<4, R13, R13")       //
	g.insS(vtmp, 0, 10)
	g.insS(vtmp, 1, 11)
	g.insS(vtmp, 2, 12)
	g.insS(vtmp, 3, 13)
	g.sub16b(vtmp, vtmp, vc32)
	g.sxtl8h(vsc+1, vtmp)
	g.sxtl28h(vsc+3, vtmp)
	g.sxtl4s(vsc, vsc+1)
	g.sxtl24s(vsc+1, vsc+1)
	g.sxtl4s(vsc+2, vsc+3)
	g.sxtl24s(vsc+3, vsc+3)
}

// q3KBits computes, for the 64 values of one pass (chunk j, shifts 2k and
// 2k+2, hmask bits 4j+2k and 4j+2k+1), the signed 3-bit quants into
// vq..vq+3 as ggml_vec_dot_q3_K_q8_K (NEON path) does: value m takes the
// low bits (qs byte >> shift) & 3 of qs vector m%2 and subtracts 4 where
// its hmask bit is clear (a BIC of the bit mask with the hmask bytes,
// shifted to 4). vqs: the two qs vectors of the chunk; vh: the two hmask
// vectors, already shifted right by 4 for j = 1; masks: vectors of 1, 2, 4,
// 8; vtmp..vtmp+3 scratch.
func (g *gen) q3KBits(k, vq, vqs, vh, m3 int, masks [4]int, vtmp int) {
	for m := 0; m < 4; m++ {
		b := 2*k + m/2 // hmask bit (of the shifted hmask) and 2-bit field
		t := vtmp + m
		g.bic16b(t, masks[b], vh+m%2)
		switch {
		case b < 2:
			g.shl16b(t, t, 2-b)
		case b == 3:
			g.ushr16b(t, t, 1)
		}
		q, s := vq+m, 2*b
		if s == 0 {
			g.and16b(q, vqs+m%2, m3)
		} else {
			g.ushr16b(q, vqs+m%2, s)
			if s < 6 {
				g.and16b(q, q, m3)
			}
		}
		g.sub16b(q, q, t)
	}
}

// q3K is ggml_vec_dot_q3_K_q8_K (NEON path), with the 16 scales applied by
// multiply-accumulate into four int32x4 accumulators instead of a
// horizontal add per 16 values. Then sum += (xd*yd)*isum as dotQ3KQ8K
// does, so the result is bit-identical to it.
func q3K(g *gen) {
	g.header("dotQ3KNEON", "// func dotQ3KNEON(x, y *byte, nb int) float32\n")
	const m3, c32, sum = 31, 26, 25
	masks := [4]int{30, 29, 28, 27}
	g.movi16b(m3, 0x03)
	for i, v := range masks {
		g.movi16b(v, 1<<i)
	}
	g.movi16b(c32, 0x20)
	g.zero(sum)
	g.superLoop("q3K", 110, func() {
		g.q3KScales(21, 14, c32)
		g.op("VLD1 (R0), [V15.B16, V16.B16]") // hmask
		g.op("ADD $32, R0, R8")               // qs
		g.op("ADD $4, R1, R9")                // q8
		for a := 17; a < 21; a++ {
			g.zero(a)
		}
		for j := 0; j < 2; j++ {
			g.op("VLD1.P 32(R8), [V0.B16, V1.B16]")
			for k := 0; k < 2; k++ {
				g.op("VLD1.P 64(R9), [V2.B16, V3.B16, V4.B16, V5.B16]")
				g.q3KBits(k, 6, 0, 15, m3, masks, 10)
				for m := 0; m < 4; m++ {
					g.zero(10 + m)
					g.sdot(10+m, 6+m, 2+m)
				}
				for m := 0; m < 4; m++ {
					g.mla4sElem(17+m, 10+m, 21+2*j+k, m)
				}
			}
			if j == 0 {
				g.ushr16b(15, 15, 4)
				g.ushr16b(16, 16, 4)
			}
		}
		g.sum4(17)
		g.addv4s(17, 17)
		g.scvtfS(17, 17)
		g.op("FMOVS (R1), F14")
		g.fp16(10, 108, 0, 5)
		g.fmulS(10, 10, 14)
		g.fmulS(17, 10, 17)
		g.faddS(sum, sum, 17)
	})
	g.ret(sum, 0)
}
