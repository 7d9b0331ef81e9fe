//go:build !purego

package quant

import "golang.org/x/sys/cpu"

// The arm64 versions of half_amd64.go's F16C routines, in half_arm64.s
// (written by internal/neongen, half.go: go generate in engine/quant).

// hasHalfNEON reports whether the NEON fp16 conversions run here (every
// arm64 chip Go supports has them).
var hasHalfNEON = cpu.ARM64.HasASIMD

//go:noescape
func float32sToFP16NEON(dst *uint16, src *float32, groups int) int

//go:noescape
func roundFP16NEON(dst, src *float32, groups int) int

//go:noescape
func dotF16RowsNEON(w *byte, wStride, rows int, a *float32, n int, out *float32)

// float32sToFP16Arch converts the first len(src)&^3 values with FCVTN
// (round to nearest even, as Float32ToFP16) and returns how many it did.
// The assembly leaves each group of four holding a NaN to Float32ToFP16,
// so NaN payloads do not depend on FPCR.DN (see internal/neongen/half.go).
func float32sToFP16Arch(dst []uint16, src []float32) int {
	n := len(src) &^ 3
	if n == 0 || !hasHalfNEON {
		return 0
	}
	_ = dst[n-1]
	for i := 0; i < n; {
		i += 4 * float32sToFP16NEON(&dst[i], &src[i], (n-i)/4)
		if i < n {
			for j := i; j < i+4; j++ {
				dst[j] = Float32ToFP16(src[j])
			}
			i += 4
		}
	}
	return n
}

// roundFP16Arch rounds the first len(src)&^3 values with FCVTN and widens
// them back with FCVTL; groups holding a NaN are done in Go as above.
func roundFP16Arch(dst, src []float32) int {
	n := len(src) &^ 3
	if n == 0 || !hasHalfNEON {
		return 0
	}
	_ = dst[n-1]
	for i := 0; i < n; {
		i += 4 * roundFP16NEON(&dst[i], &src[i], (n-i)/4)
		if i < n {
			for j := i; j < i+4; j++ {
				dst[j] = FP16ToFloat32(Float32ToFP16(src[j]))
			}
			i += 4
		}
	}
	return n
}

// dotF16RowsArch runs every row of DotF16Rows in one assembly call (the
// caller has checked the bounds).
func dotF16RowsArch(n int, w []byte, wStride, rows int, a, out []float32) int {
	if n == 0 || !hasHalfNEON {
		return 0
	}
	dotF16RowsNEON(&w[0], wStride, rows, &a[0], n, &out[0])
	return rows
}

// dotF16RowsMultiArch runs no vectors of DotF16RowsMulti in assembly on
// arm64 yet: DotF16RowsMulti falls back to dotF16RowsNEON per vector.
func dotF16RowsMultiArch(n int, w []byte, wStride, rows int, a []float32, aStride, m int, out []float32, outStride int) int {
	return 0
}
