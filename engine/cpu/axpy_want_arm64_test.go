//go:build arm64 && !purego

package cpu

// wantVectorAxpy: NEON is always there, so the vector kernels must run.
const wantVectorAxpy = true
