//go:build !amd64 || purego

package quant

// float32sToFP16Arch converts a prefix of src in assembly where there is
// an implementation, and returns its length.
func float32sToFP16Arch(dst []uint16, src []float32) int { return 0 }
