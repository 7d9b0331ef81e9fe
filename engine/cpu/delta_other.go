//go:build !amd64 || purego

package cpu

// hasDeltaRowAsm reports whether deltaRowArch runs assembly here.
const hasDeltaRowAsm = false

// deltaRowArch has no assembly here: deltaTask.Run takes its scalar
// steps.
func deltaRowArch(dst, src, k, q []float32, eg, v, beta float32) (float32, bool) { return 0, false }
