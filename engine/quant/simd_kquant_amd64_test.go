//go:build !purego

package quant

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestKQuantSIMDInstalled checks that the AVX2 K-quant dot products are
// installed exactly when the CPU can run them.
func TestKQuantSIMDInstalled(t *testing.T) {
	want := ""
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
		want = "avx2"
	}
	for _, typ := range kquantSIMDTypes {
		if got := mustKernel(t, typ).SIMD; got != want {
			t.Errorf("%s: SIMD = %q, want %q", typ, got, want)
		}
	}
}
