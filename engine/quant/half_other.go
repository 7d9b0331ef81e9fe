//go:build (!amd64 && !arm64) || purego

package quant

// float32sToFP16Arch converts a prefix of src in assembly where there is
// an implementation, and returns its length.
func float32sToFP16Arch(dst []uint16, src []float32) int { return 0 }

// dotF16RowsArch runs a prefix of DotF16Rows' rows in assembly where there
// is an implementation, and returns how many it did.
func dotF16RowsArch(n int, w []byte, wStride, rows int, a, out []float32) int { return 0 }

// roundFP16Arch rounds a prefix of src in assembly where there is an
// implementation, and returns its length.
func roundFP16Arch(dst, src []float32) int { return 0 }

// dotF16RowsMultiArch runs the first vectors of DotF16RowsMulti in
// assembly where there is an implementation, and returns how many it did.
func dotF16RowsMultiArch(n int, w []byte, wStride, rows int, a []float32, aStride, m int, out []float32, outStride int) int {
	return 0
}
