//go:build !(amd64 || arm64) || purego

package cpu

// scaleArch: no vector kernel here.
func scaleArch(x []float32, s float32) int { return 0 }

// madArch: no vector kernel here.
func madArch(y, x []float32, n int, a float32) int { return 0 }
