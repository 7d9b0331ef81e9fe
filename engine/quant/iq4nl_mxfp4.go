package quant

import (
	"math"
	"math/rand/v2"

	"github.com/strata-llm/strata/engine/ggml"
)

// The two 32-value formats with a non-linear 4-bit codebook, both dotted
// with Q8_0 activations:
//
//	IQ4_NL: d fp16, qs [16]byte (18 bytes); value = d * kvalues_iq4nl[q]
//	MXFP4:  e uint8 (E8M0), qs [16]byte (17 bytes);
//	        value = 2^(e-128) * kvalues_fp4[q] (the doubled e2m1 values)
//
// Byte j of qs holds value j in its low nibble and value j+16 in its high.
const (
	qk4NL          = 32
	iq4NLBlockSize = 18
	mxfp4BlockSize = 17
)

func init() {
	register(ggml.IQ4_NL, Kernel{
		VecDotType: ggml.Q8_0,
		Dequantize: dequantizeIQ4NL,
		Dot:        dotIQ4NLQ8_0,
		Random:     randomIQ4NL,
		Quantize:   quantizeIQ4NL,
	})
	register(ggml.MXFP4, Kernel{
		VecDotType: ggml.Q8_0,
		Dequantize: dequantizeMXFP4,
		Dot:        dotMXFP4Q8_0,
		Random:     randomMXFP4,
		Quantize:   quantizeMXFP4Ref,
	})
}

// e8m0Half is ggml_e8m0_to_fp32_half: 2^(e-128), with ggml's denormal
// patterns for e < 2.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

func dequantizeIQ4NL(src []byte, dst []float32) {
	nb := len(dst) / qk4NL
	for i := 0; i < nb; i++ {
		b := (*[iq4NLBlockSize]byte)(src[i*iq4NLBlockSize:])
		y := (*[qk4NL]float32)(dst[i*qk4NL:])
		d := fp16At(b[:])
		for j := 0; j < 16; j++ {
			q := b[2+j]
			y[j] = d * float32(kvaluesIQ4NL[q&0xf])
			y[j+16] = d * float32(kvaluesIQ4NL[q>>4])
		}
	}
}

func dequantizeMXFP4(src []byte, dst []float32) {
	nb := len(dst) / qk4NL
	for i := 0; i < nb; i++ {
		b := (*[mxfp4BlockSize]byte)(src[i*mxfp4BlockSize:])
		y := (*[qk4NL]float32)(dst[i*qk4NL:])
		d := e8m0Half(b[0])
		for j := 0; j < 16; j++ {
			q := b[1+j]
			y[j] = float32(kvaluesFP4[q&0xf]) * d
			y[j+16] = float32(kvaluesFP4[q>>4]) * d
		}
	}
}

// nlBlockSum is Σ values[q]*y over the 32 values of a block's 16 bytes of
// nibbles qs and the 32 int8 activations y.
func nlBlockSum(values *[16]int8, qs *[16]byte, y *[32]byte) int32 {
	var s0, s1 int32
	for j := 0; j < 16; j++ {
		s0 += int32(values[qs[j]&0xf]) * int32(int8(y[j]))
		s1 += int32(values[qs[j]>>4]) * int32(int8(y[16+j]))
	}
	return s0 + s1
}

// dotIQ4NLQ8_0 is ggml_vec_dot_iq4_nl_q8_0: exact integer block sums, then
// sumf += (dy*dx)*sumi, block by block.
func dotIQ4NLQ8_0(n int, w, a []byte) float32 { return dotIQ4NLBlocks(w, a, 0, n/qk4NL, 0) }

// dotIQ4NLBlocks continues the sum of dotIQ4NLQ8_0 over blocks i..nb-1.
func dotIQ4NLBlocks(w, a []byte, i, nb int, sumf float32) float32 {
	for ; i < nb; i++ {
		x := (*[iq4NLBlockSize]byte)(w[i*iq4NLBlockSize:])
		y := (*[q8_0BlockSize]byte)(a[i*q8_0BlockSize:])
		sumi := nlBlockSum(&kvaluesIQ4NL, (*[16]byte)(x[2:]), (*[32]byte)(y[2:]))
		sumf += float32(float32(fp16At(y[:])*fp16At(x[:])) * float32(sumi))
	}
	return sumf
}

// dotMXFP4Q8_0 is ggml_vec_dot_mxfp4_q8_0: exact integer block sums, then
// sumf += (dy*2^(e-128))*sumi, block by block.
func dotMXFP4Q8_0(n int, w, a []byte) float32 { return dotMXFP4Blocks(w, a, 0, n/qk4NL, 0) }

// dotMXFP4Blocks continues the sum of dotMXFP4Q8_0 over blocks i..nb-1.
func dotMXFP4Blocks(w, a []byte, i, nb int, sumf float32) float32 {
	for ; i < nb; i++ {
		x := (*[mxfp4BlockSize]byte)(w[i*mxfp4BlockSize:])
		y := (*[q8_0BlockSize]byte)(a[i*q8_0BlockSize:])
		sumi := nlBlockSum(&kvaluesFP4, (*[16]byte)(x[1:]), (*[32]byte)(y[2:]))
		sumf += float32(float32(fp16At(y[:])*e8m0Half(x[0])) * float32(sumi))
	}
	return sumf
}

// quantizeIQ4NL is quantize_iq4_nl without an importance matrix, as
// llama-quantize runs it: quantize_row_iq4_nl_impl on one group of 32 with
// ntry = 7, every float32 operation rounded separately.
func quantizeIQ4NL(x []float32, dst []byte) {
	nb := len(x) / qk4NL
	_ = dst[nb*iq4NLBlockSize-1]
	var weight [32]float32
	for i := 0; i < nb; i++ {
		xb := x[i*qk4NL : (i+1)*qk4NL]
		yb := (*[iq4NLBlockSize]byte)(dst[i*iq4NLBlockSize:])
		for j, v := range xb {
			weight[j] = v * v
		}
		d := iq4GroupScale(xb, &weight, 7)
		putFP16(yb[:], d)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		for j := 0; j < 16; j++ {
			yb[2+j] = iq4BestIndex(id*xb[j]) | iq4BestIndex(id*xb[16+j])<<4
		}
	}
}

// iq4GroupScale is the search of quantize_row_iq4_nl_impl for the scale of
// one group of 32 values with the given weights: a least-squares scale for
// the starting guess and each of 2*ntry+1 trial scales, keeping the best.
// It returns 0 for a group of (nearly) zeros.
func iq4GroupScale(xb []float32, weight *[32]float32, ntry int) float32 {
	xb = xb[:32]
	var amax, mx float32
	for _, v := range xb {
		if ax := abs32(v); ax > amax {
			amax, mx = ax, v
		}
	}
	if amax < 1e-15 { // GROUP_MAX_EPS
		return 0
	}
	v0 := float32(kvaluesIQ4NL[0])
	d := -mx / v0
	if ntry <= 0 {
		d = mx / v0
	}
	id := 1 / d
	var sumqx, sumq2 float32
	for j, v := range xb {
		q := float32(kvaluesIQ4NL[iq4BestIndex(id*v)])
		wq := weight[j] * q
		sumqx += float32(wq * v)
		sumq2 += float32(wq * q)
	}
	d = 0
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	best := d * sumqx
	for itry := -ntry; itry <= ntry; itry++ {
		id := float32(itry+int(kvaluesIQ4NL[0])) / mx
		sumqx, sumq2 = 0, 0
		for j, v := range xb {
			q := float32(kvaluesIQ4NL[iq4BestIndex(id*v)])
			wq := weight[j] * q
			sumqx += float32(wq * v)
			sumq2 += float32(wq * q)
		}
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			d = sumqx / sumq2
			best = d * sumqx
		}
	}
	return d
}

// quantizeMXFP4Ref is ggml's quantize_row_mxfp4_ref: e = floor(log2(amax))
// - 2 + 127, and each value the nearest codebook entry (the first on ties).
func quantizeMXFP4Ref(x []float32, dst []byte) {
	nb := len(x) / qk4NL
	_ = dst[nb*mxfp4BlockSize-1]
	for i := 0; i < nb; i++ {
		xb := x[i*qk4NL : (i+1)*qk4NL]
		yb := (*[mxfp4BlockSize]byte)(dst[i*mxfp4BlockSize:])
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		var e uint8
		if amax > 0 {
			l := float32(math.Log2(float64(amax))) // log2f
			e = uint8(int32(float32(math.Floor(float64(l))) - 2 + 127))
		}
		yb[0] = e
		d := e8m0Half(e)
		for j := 0; j < 16; j++ {
			yb[1+j] = mxfp4BestIndex(xb[j], d) | mxfp4BestIndex(xb[16+j], d)<<4
		}
	}
}

// mxfp4BestIndex is best_index_mxfp4.
func mxfp4BestIndex(x, e float32) uint8 {
	best := 0
	bestErr := abs32(float32(kvaluesFP4[0])*e - x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(kvaluesFP4[i])*e - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}

// randomIQ4NL fills whole blocks with uniform indices and d ≈ scale/56
// (the mean |kvalues_iq4nl| is 56), varied by ±25% per block.
func randomIQ4NL(dst []byte, rng *rand.Rand, scale float32) {
	for i := 0; i+iq4NLBlockSize <= len(dst); i += iq4NLBlockSize {
		b := dst[i : i+iq4NLBlockSize]
		putFP16(b, scale/56*(0.75+0.5*rng.Float32()))
		for j := 2; j < iq4NLBlockSize; j++ {
			b[j] = byte(rng.Uint32())
		}
	}
}

// randomMXFP4 fills whole blocks with uniform indices and a power-of-two
// scale 2^(e-128) within a factor 2 of scale/4.5 (the mean |kvalues_fp4|).
func randomMXFP4(dst []byte, rng *rand.Rand, scale float32) {
	base := math.Log2(float64(scale) / 4.5)
	for i := 0; i+mxfp4BlockSize <= len(dst); i += mxfp4BlockSize {
		b := dst[i : i+mxfp4BlockSize]
		e := math.Floor(base+rng.Float64()) + 128
		b[0] = uint8(min(254, max(2, e)))
		for j := 1; j < mxfp4BlockSize; j++ {
			b[j] = byte(rng.Uint32())
		}
	}
}
