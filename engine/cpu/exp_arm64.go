//go:build !purego

package cpu

import "golang.org/x/sys/cpu"

// exp_arm64.s holds ggml's NEON ggml_v_expf and ggml_v_silu (ggml-cpu/
// vec.h) in the loops of ggml_vec_soft_max_f32 and ggml_vec_swiglu_f32,
// what llama.cpp's softmax and SwiGLU run on Apple silicon. It is written
// by engine/quant/internal/neongen (exp.go; go generate in engine/quant),
// whose tests check every WORD encoding against binutils.

// hasExpNEON reports whether the NEON expf runs here (every arm64 chip Go
// supports has NEON).
var hasExpNEON = cpu.ARM64.HasASIMD

//go:noescape
func expSumNEON(dst, src *float32, groups int, max float32) float64

//go:noescape
func siluMulNEON(dst, gate, up *float32, groups int)

// expSumArch writes exp(x[i]-mx) for a prefix of x into x and returns the
// prefix length and its sum as ggml_vec_soft_max_f32 forms it.
func expSumArch(x []float32, mx float32) (int, float64) {
	n := len(x) &^ 3
	if n == 0 || !hasExpNEON {
		return 0, 0
	}
	return n, expSumNEON(&x[0], &x[0], n/4, mx)
}

// siluMulArch computes out = silu(gate)·up for a prefix and returns its
// length.
func siluMulArch(out, gate, up []float32) int {
	n := len(gate) &^ 3
	if n == 0 || !hasExpNEON {
		return 0
	}
	_, _ = out[n-1], up[n-1]
	siluMulNEON(&out[0], &gate[0], &up[0], n/4)
	return n
}
