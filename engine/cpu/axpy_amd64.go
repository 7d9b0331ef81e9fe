//go:build !purego

package cpu

//go:noescape
func scaleAVX2(x *float32, groups int, s float32)

//go:noescape
func madAVX2(y, x *float32, groups int, a float32)

// scaleArch multiplies a prefix of x by s and returns its length.
func scaleArch(x []float32, s float32) int {
	n := len(x) &^ 7
	if n == 0 || !hasExpAVX2 {
		return 0
	}
	scaleAVX2(&x[0], n/8, s)
	return n
}

// madArch adds x·a into y, fused, over the first n values (n a multiple
// of 8, ≤ len(x), len(y)) and returns how many it did.
func madArch(y, x []float32, n int, a float32) int {
	if n == 0 || !hasExpAVX2 {
		return 0
	}
	_, _ = y[n-1], x[n-1]
	madAVX2(&y[0], &x[0], n/8, a)
	return n
}
