//go:build !purego

package cpu

// hasDeltaRowAsm reports whether deltaRowArch runs assembly here.
var hasDeltaRowAsm = hasExpAVX2

//go:noescape
func deltaRowAVX2(dst, src, k, q *float32, chunks int, eg, v, beta float32) float32

// deltaRowArch runs one row of the delta rule in assembly (see
// deltaRowAVX2) when the CPU has AVX2 and FMA and the row is whole chunks
// of 32; ok is false when it did nothing.
func deltaRowArch(dst, src, k, q []float32, eg, v, beta float32) (o float32, ok bool) {
	n := len(dst)
	if n == 0 || n%32 != 0 || !hasDeltaRowAsm {
		return 0, false
	}
	_, _, _ = src[n-1], k[n-1], q[n-1]
	return deltaRowAVX2(&dst[0], &src[0], &k[0], &q[0], n/32, eg, v, beta), true
}
