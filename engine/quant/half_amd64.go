//go:build !purego

package quant

// float32sToFP16Arch converts the first len(src)&^7 values with F16C
// (round to nearest even, as Float32ToFP16) and returns how many it did.
func float32sToFP16Arch(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if n == 0 || !simdQ8HasAVX2 {
		return 0
	}
	_ = dst[n-1]
	float32sToFP16F16C(&dst[0], &src[0], n/8)
	return n
}

//go:noescape
func float32sToFP16F16C(dst *uint16, src *float32, groups int)

// dotF16RowsArch runs every row of DotF16Rows in one assembly call (the
// caller has checked the bounds).
func dotF16RowsArch(n int, w []byte, wStride, rows int, a, out []float32) int {
	if n == 0 || !simdQ8HasAVX2 {
		return 0
	}
	dotF16RowsAVX2(&w[0], wStride, rows, &a[0], n, &out[0])
	return rows
}

//go:noescape
func dotF16RowsAVX2(w *byte, wStride, rows int, a *float32, n int, out *float32)

// roundFP16Arch rounds the first len(src)&^7 values with F16C.
func roundFP16Arch(dst, src []float32) int {
	n := len(src) &^ 7
	if n == 0 || !simdQ8HasAVX2 {
		return 0
	}
	_ = dst[n-1]
	roundFP16F16C(&dst[0], &src[0], n/8)
	return n
}

//go:noescape
func roundFP16F16C(dst, src *float32, groups int)
