package quant

import "math"

// FP16ToFloat32 converts an IEEE 754 half-precision value to float32. The
// conversion is exact; NaN payloads are kept. It is small enough to inline.
func FP16ToFloat32(h uint16) float32 {
	u := uint32(h)
	sign := u & 0x8000 << 16
	switch u & 0x7c00 {
	case 0: // zero or subnormal: mant * 2^-24
		return math.Float32frombits(math.Float32bits(float32(u&0x3ff)*0x1p-24) | sign)
	case 0x7c00: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | (u&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (u&0x7fff<<13 + (127-15)<<23))
}

// Float32ToFP16 converts f to IEEE 754 half precision, rounding to nearest
// with ties to even as the F16C instruction VCVTPS2PH with rounding mode 0
// (_cvtss_sh(f, 0)) does: overflow gives ±Inf, tiny values give subnormals
// or ±0, and a NaN becomes a quiet NaN keeping the top payload bits.
func Float32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is correct, up to Inf
	}
	return sign | uint16(h)
}

// BF16ToFloat32 converts a bfloat16 value to float32 (exact).
func BF16ToFloat32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// Float32ToBF16 converts f to bfloat16 as ggml_compute_fp32_to_bf16 does:
// round to nearest with ties to even, and NaN forced to a quiet NaN.
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + ((u >> 16) & 1))) >> 16)
}

// Float32sToFP16 converts src to fp16 into dst (len(dst) ≥ len(src)), each
// value as Float32ToFP16 does; amd64 uses F16C (VCVTPS2PH, 8 at a time),
// arm64 FCVTN (4 at a time).
func Float32sToFP16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	i := float32sToFP16Arch(dst, src)
	for ; i < len(src); i++ {
		dst[i] = Float32ToFP16(src[i])
	}
}
