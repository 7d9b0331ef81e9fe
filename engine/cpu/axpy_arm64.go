//go:build !purego

package cpu

//go:noescape
func scaleNEON(x *float32, groups int, s float32)

//go:noescape
func madNEON(y, x *float32, groups int, a float32)

// scaleArch multiplies a prefix of x by s and returns its length (NEON,
// 4 lanes: a plain multiply per value, so the bits are the scalar loop's
// whatever the split).
func scaleArch(x []float32, s float32) int {
	n := len(x) &^ 3
	if n == 0 {
		return 0
	}
	scaleNEON(&x[0], n/4, s)
	return n
}

// madArch adds x·a into y, fused (FMLA: one rounding, as fmaF32), over the
// first n values (n a multiple of 8, ≤ len(x), len(y)) and returns how
// many it did.
func madArch(y, x []float32, n int, a float32) int {
	if n == 0 {
		return 0
	}
	_, _ = y[n-1], x[n-1]
	madNEON(&y[0], &x[0], n/4, a)
	return n
}
