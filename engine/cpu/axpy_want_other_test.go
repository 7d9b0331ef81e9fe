//go:build !arm64 || purego

package cpu

// wantVectorAxpy: on amd64 the kernels need AVX2, which CI may lack.
const wantVectorAxpy = false
