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
