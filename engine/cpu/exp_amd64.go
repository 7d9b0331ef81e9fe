//go:build !purego

package cpu

import "golang.org/x/sys/cpu"

// hasExpAVX2 reports whether the AVX2+FMA expf of ggml (ggml_v_expf) runs
// here; it is what llama.cpp's softmax and SwiGLU use on such CPUs.
var hasExpAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func expSumAVX2(dst, src *float32, groups int, max float32) float64

//go:noescape
func siluMulAVX2(dst, gate, up *float32, groups int)

// expSumArch writes exp(x[i]-mx) for a prefix of x into x and returns the
// prefix length and its sum as ggml_vec_soft_max_f32 forms it.
func expSumArch(x []float32, mx float32) (int, float64) {
	n := len(x) &^ 7
	if n == 0 || !hasExpAVX2 {
		return 0, 0
	}
	return n, expSumAVX2(&x[0], &x[0], n/8, mx)
}

// siluMulArch computes out = silu(gate)·up for a prefix and returns its
// length.
func siluMulArch(out, gate, up []float32) int {
	n := len(gate) &^ 7
	if n == 0 || !hasExpAVX2 {
		return 0
	}
	_, _ = out[n-1], up[n-1]
	siluMulAVX2(&out[0], &gate[0], &up[0], n/8)
	return n
}
