//go:build (!amd64 && !arm64) || purego

package cpu

// expSumArch: no vector expf here; Softmax uses math.Exp throughout.
func expSumArch(x []float32, mx float32) (int, float64) { return 0, 0 }

// siluMulArch: no vector expf here; SwiGLU uses math.Exp throughout.
func siluMulArch(out, gate, up []float32) int { return 0 }
