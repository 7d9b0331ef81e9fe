package main

// Activation quantizers: QuantizeQ8_0 and QuantizeQ8K of engine/quant
// (quantizeQ8_0Go, quantizeQ8KGo), byte for byte. Each routine quantizes up
// to nb blocks and returns how many it did: it stops before a block the Go
// code must do, one holding a NaN (whose bytes depend on NaN payloads) or
// one whose scale 127/amax overflows to infinity (amax below 127/MaxFloat32,
// where the Go code's nearestInt sees infinities). For every other block
// the scaled values are within ±127.00002, where nearestInt (ties to even)
// is FCVTNS.

// quantHeader starts a function (x *float32, dst *byte, nb int) int: x in
// R0, dst in R1, nb in R2, the count of blocks done in R3.
func (g *gen) quantHeader(name string) {
	g.b.WriteString("// func " + name + "(x *float32, dst *byte, nb int) int\n")
	g.b.WriteString("TEXT ·" + name + "(SB), NOSPLIT, $0-32\n")
	g.op("MOVD x+0(FP), R0")
	g.op("MOVD dst+8(FP), R1")
	g.op("MOVD nb+16(FP), R2")
	g.op("MOVD $0, R3")
}

// quantQ8_0 is quantizeQ8_0Go: d = amax/127 as fp16, quants
// nearestInt(x*(127/amax)), all zero for amax = 0.
func quantQ8_0(g *gen) {
	g.quantHeader("quantizeQ8_0NEONAsm")
	const c127, inf, zero = 30, 29, 26 // zero: V26, V27
	g.op("MOVW $0x42fe0000, R4")       // 127
	g.op("FMOVS R4, F%d", c127)
	g.op("MOVW $0x7f800000, R4") // +Inf
	g.op("FMOVS R4, F%d", inf)
	g.zero(zero)
	g.zero(zero + 1)
	g.op("CBZ R2, q8_0qdone")
	g.label("q8_0qloop")
	g.op("VLD1 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]")
	g.op("ADD $64, R0, R5")
	g.op("VLD1 (R5), [V4.S4, V5.S4, V6.S4, V7.S4]")
	for k := 0; k < 8; k++ {
		g.fabs4s(8+k, k)
	}
	for k := 0; k < 8; k += 2 {
		g.fmax4s(8+k, 8+k, 9+k)
	}
	g.fmax4s(8, 8, 10)
	g.fmax4s(12, 12, 14)
	g.fmax4s(8, 8, 12)
	g.fmaxvS(8, 8) // amax, NaN if any value is NaN
	g.op("FCMPS F8, F8")
	g.op("BVS q8_0qdone")
	g.op("FCMPS $(0.0), F8")
	g.op("BEQ q8_0qzero")
	g.fdivS(9, 8, c127)  // d = amax/127
	g.fdivS(10, c127, 8) // id = 127/amax
	g.op("FCMPS F%d, F10", inf)
	g.op("BEQ q8_0qdone")
	g.fcvtHS(9, 9)
	g.fmovWS(5, 9)
	g.op("MOVH R5, (R1)")
	for k := 0; k < 8; k++ {
		g.fmul4sElem(k, k, 10, 0)
		g.fcvtns4s(k, k)
	}
	for k := 0; k < 4; k++ {
		g.xtn4h(16+k, 2*k)
		g.xtn28h(16+k, 2*k+1)
	}
	g.xtn8b(20, 16)
	g.xtn216b(20, 17)
	g.xtn8b(21, 18)
	g.xtn216b(21, 19)
	g.op("ADD $2, R1, R5")
	g.op("VST1 [V20.B16, V21.B16], (R5)")
	g.label("q8_0qnext")
	g.op("ADD $128, R0")
	g.op("ADD $34, R1")
	g.op("ADD $1, R3")
	g.op("CMP R3, R2")
	g.op("BNE q8_0qloop")
	g.label("q8_0qdone")
	g.op("MOVD R3, ret+24(FP)")
	g.op("RET")
	// amax = 0: d = 0 and every quant 0.
	g.label("q8_0qzero")
	g.op("MOVH ZR, (R1)")
	g.op("ADD $2, R1, R5")
	g.op("VST1 [V%d.B16, V%d.B16], (R5)", zero, zero+1)
	g.op("B q8_0qnext")
}

// quantQ8K is quantizeQ8KGo: the value of largest magnitude (the first one
// on ties) is max, iscale = -127/max, quants min(nearestInt(iscale*x), 127)
// with sums of 16 (bsums) and d = 1/iscale; a block of zeros is all zero
// bytes.
func quantQ8K(g *gen) {
	g.quantHeader("quantizeQ8KNEONAsm")
	const cm127, inf, zero, c127, iscale = 26, 27, 28, 25, 24 // zero: V28, V29
	g.op("MOVW $0xc2fe0000, R4")                              // -127
	g.op("FMOVS R4, F%d", cm127)
	g.op("MOVW $0x7f800000, R4") // +Inf
	g.op("FMOVS R4, F%d", inf)
	g.zero(zero)
	g.zero(zero + 1)
	g.movi4s(c127, 0x7f)
	g.op("CBZ R2, q8Kqdone")
	g.label("q8Kqloop")
	// amax: FMAX over the absolute values, NaN if any value is NaN.
	g.op("MOVD R0, R5")
	for i := 0; i < 16; i++ {
		g.op("VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]")
		for k := 0; k < 4; k++ {
			if i == 0 {
				g.fabs4s(16+k, k)
			} else {
				g.fabs4s(k, k)
				g.fmax4s(16+k, 16+k, k)
			}
		}
	}
	g.fmax4s(16, 16, 17)
	g.fmax4s(18, 18, 19)
	g.fmax4s(16, 16, 18)
	g.fmaxvS(16, 16)
	g.op("FCMPS F16, F16")
	g.op("BVS q8Kqdone")
	g.op("FCMPS $(0.0), F16")
	g.op("BEQ q8Kqzero")
	// The first 16 values holding a magnitude amax, then the first such
	// value among them: max.
	g.dup4sElem(20, 16)
	g.op("MOVD R0, R5")
	g.label("q8Kqfind16")
	g.op("VLD1 (R5), [V0.S4, V1.S4, V2.S4, V3.S4]")
	for k := 0; k < 4; k++ {
		g.fabs4s(k, k)
		g.fcmeq4s(k, k, 20)
	}
	g.orr16b(0, 0, 1)
	g.orr16b(2, 2, 3)
	g.orr16b(0, 0, 2)
	g.umaxvS(0, 0)
	g.fmovWS(6, 0)
	g.op("CBNZ R6, q8Kqfind1")
	g.op("ADD $64, R5")
	g.op("B q8Kqfind16")
	g.label("q8Kqfind1")
	g.op("FMOVS.P 4(R5), F1")
	g.fabsS(2, 1)
	g.op("FCMPS F16, F2")
	g.op("BNE q8Kqfind1")
	g.fdivS(iscale, cm127, 1) // iscale = -127/max
	g.fabsS(2, iscale)
	g.op("FCMPS F%d, F2", inf)
	g.op("BEQ q8Kqdone")
	// Quants, 16 at a time, and their sums.
	g.op("MOVD R0, R5")
	g.op("ADD $4, R1, R6")
	for i := 0; i < 16; i++ {
		g.op("VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]")
		for k := 0; k < 4; k++ {
			g.fmul4sElem(k, k, iscale, 0)
			g.fcvtns4s(k, k)
			g.smin4s(k, k, c127)
		}
		g.xtn4h(4, 0)
		g.xtn28h(4, 1)
		g.xtn4h(5, 2)
		g.xtn28h(5, 3)
		g.xtn8b(6, 4)
		g.xtn216b(6, 5)
		g.op("VST1.P [V6.B16], 16(R6)")
		g.saddlp8h(8+i, 6)
	}
	// Pairwise adds: lane g of V8, V9 is the sum of quants 16g..16g+15.
	for w := 8; w >= 2; w /= 2 {
		for i := 0; i < w; i++ {
			g.addp8h(8+i, 8+2*i, 9+2*i)
		}
	}
	g.op("VST1 [V8.H8, V9.H8], (R6)")
	g.op("FMOVS $1.0, F2")
	g.fdivS(2, 2, iscale)
	g.op("FMOVS F2, (R1)")
	g.label("q8Kqnext")
	g.op("ADD $1024, R0")
	g.op("ADD $292, R1")
	g.op("ADD $1, R3")
	g.op("CMP R3, R2")
	g.op("BNE q8Kqloop")
	g.label("q8Kqdone")
	g.op("MOVD R3, ret+24(FP)")
	g.op("RET")
	// amax = 0: all 292 bytes zero.
	g.label("q8Kqzero")
	g.op("MOVD R1, R5")
	for i := 0; i < 9; i++ {
		g.op("VST1.P [V%d.B16, V%d.B16], 32(R5)", zero, zero+1)
	}
	g.op("MOVW ZR, (R5)")
	g.op("B q8Kqnext")
}
