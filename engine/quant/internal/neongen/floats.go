package main

// Dot products of F32, F16 and BF16 weight rows with activations of the
// same type. They follow the Go references (dotF32, dotF16, dotBF16 in
// engine/quant), which mirror ggml_vec_dot_f32/f16/bf16 as llama.cpp builds
// them for AVX2: 32 float32 accumulators (here eight float32x4, V16..V23:
// accumulator 4v+l is lane l of V(16+v)) over chunks of 32 values, reduced
// in the references' order. The assembly covers the whole chunks; the Go
// wrappers add the leftover values as the references do.
//
// F16 values are widened with FCVTL and multiplied-added with FMLA, as
// llama.cpp's ARM path does without FP16 arithmetic; the product of two
// fp16 values is exact in float32, so this equals dotF16's multiply then
// add bit for bit. BF16 products can round (float32 under- or overflow), so
// BF16 multiplies and adds separately like dotBF16. F32 uses FMLA, a real
// fused multiply-add, where dotF32 emulates one in float64: they differ
// only on a double-rounding tie.

// floatHeader starts a function (x, y *byte, nb int) float32 over nb
// chunks of 32 values.
func (g *gen) floatHeader(name string) {
	g.header(name, "// func "+name+"(x, y *byte, nb int) float32\n")
	for v := 16; v < 24; v++ {
		g.zero(v)
	}
}

// reduceX8 leaves in v16 the four lanes of GGML_F32x8_REDUCE's v0+v1 step
// folded once more: lane l is (c[l] + c[l+4]) where c[l] is
// (acc[l]+acc[16+l]) + (acc[8+l]+acc[24+l]).
func (g *gen) reduceX8() {
	g.fadd4s(16, 16, 20) // acc[l] + acc[16+l], l < 4
	g.fadd4s(18, 18, 22) // acc[8+l] + acc[24+l]
	g.fadd4s(17, 17, 21) // l = 4..7
	g.fadd4s(19, 19, 23)
	g.fadd4s(16, 16, 18) // c[0..3]
	g.fadd4s(17, 17, 19) // c[4..7]
	g.fadd4s(16, 16, 17) // c[l] + c[l+4]
}

// f32Dot is dotF32's chunk loop and reduceF32x8x4.
func f32Dot(g *gen) {
	g.floatHeader("dotF32NEON")
	g.label("f32loop")
	g.op("VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]")
	g.op("VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]")
	g.op("VLD1.P 64(R1), [V8.S4, V9.S4, V10.S4, V11.S4]")
	g.op("VLD1.P 64(R1), [V12.S4, V13.S4, V14.S4, V15.S4]")
	for k := 0; k < 8; k++ {
		g.fmla4s(16+k, k, 8+k)
	}
	g.op("SUBS $1, R2")
	g.op("BNE f32loop")
	g.reduceX8()
	// (t0+t1) + (t2+t3)
	g.faddp4s(16, 16, 16)
	g.faddpS(16, 16)
	g.ret(16, 0)
}

// f16Dot is dotF16's chunk loop and reduceF32x8x4.
func f16Dot(g *gen) {
	g.floatHeader("dotF16NEON")
	g.label("f16loop")
	for h := 0; h < 2; h++ {
		g.op("VLD1.P 32(R0), [V0.H8, V1.H8]")
		g.op("VLD1.P 32(R1), [V2.H8, V3.H8]")
		for v := 0; v < 2; v++ {
			g.fcvtl4s(4+2*v, v)
			g.fcvtl24s(5+2*v, v)
			g.fcvtl4s(8+2*v, 2+v)
			g.fcvtl24s(9+2*v, 2+v)
		}
		for k := 0; k < 4; k++ {
			g.fmla4s(16+4*h+k, 4+k, 8+k)
		}
	}
	g.op("SUBS $1, R2")
	g.op("BNE f16loop")
	g.reduceX8()
	g.faddp4s(16, 16, 16)
	g.faddpS(16, 16)
	g.ret(16, 0)
}

// bf16Dot is dotBF16's chunk loop and reduction: (g0+g2) + (g1+g3) of
// g = c[4..7] + c[0..3].
func bf16Dot(g *gen) {
	g.floatHeader("dotBF16NEON")
	const zero = 31
	g.zero(zero)
	g.label("bf16loop")
	for h := 0; h < 2; h++ {
		g.op("VLD1.P 32(R0), [V0.H8, V1.H8]")
		g.op("VLD1.P 32(R1), [V2.H8, V3.H8]")
		// bf16 to float32: the 16 bits above 16 zero bits.
		for v := 0; v < 2; v++ {
			g.zip18h(4+2*v, zero, v)
			g.zip28h(5+2*v, zero, v)
			g.zip18h(8+2*v, zero, 2+v)
			g.zip28h(9+2*v, zero, 2+v)
		}
		for k := 0; k < 4; k++ {
			g.fmul4s(4+k, 4+k, 8+k)
			g.fadd4s(16+4*h+k, 16+4*h+k, 4+k)
		}
	}
	g.op("SUBS $1, R2")
	g.op("BNE bf16loop")
	g.reduceX8()
	g.ext16b(17, 16, 16, 8) // g2, g3, g0, g1
	g.fadd4s(16, 16, 17)
	g.faddpS(16, 16)
	g.ret(16, 0)
}
