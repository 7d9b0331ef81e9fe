//go:build !purego

package quant

import (
	"math"
	"testing"
)

// TestNEONHalfStopsAtNaN checks that the NEON fp16 conversions convert the
// groups of four before the first one holding a NaN, report how many, and
// leave that group to the Go code (whose NaN result does not depend on
// FPCR.DN); Float32sToFP16 and RoundFP16 then give Float32ToFP16's NaNs.
func TestNEONHalfStopsAtNaN(t *testing.T) {
	requireASIMD(t)
	nan := math.Float32frombits(0x7f812345) // signalling, with a payload
	for _, at := range []int{0, 3, 4, 9, 15} {
		src := make([]float32, 16)
		for i := range src {
			src[i] = float32(i) + 0.1
		}
		src[at] = nan
		h := make([]uint16, 16)
		f := make([]float32, 16)
		for i := range h {
			h[i], f[i] = 0xdead, -1
		}
		want := at / 4
		if got := float32sToFP16NEON(&h[0], &src[0], 4); got != want {
			t.Errorf("NaN at %d: float32sToFP16NEON did %d groups, want %d", at, got, want)
		}
		if got := roundFP16NEON(&f[0], &src[0], 4); got != want {
			t.Errorf("NaN at %d: roundFP16NEON did %d groups, want %d", at, got, want)
		}
		for i := range src {
			hw, fw := uint16(0xdead), float32(-1) // untouched
			if i < 4*want {
				hw = Float32ToFP16(src[i])
				fw = FP16ToFloat32(hw)
			}
			if h[i] != hw || f[i] != fw {
				t.Errorf("NaN at %d: value %d → %#04x and %v, want %#04x and %v", at, i, h[i], f[i], hw, fw)
			}
		}
		// Quiet, payload 0x12345>>13 kept.
		Float32sToFP16(h, src)
		RoundFP16(f, src)
		if h[at] != 0x7e09 {
			t.Errorf("Float32sToFP16(NaN %#08x) = %#04x, want 0x7e09", math.Float32bits(nan), h[at])
		}
		if got := math.Float32bits(f[at]); got != 0x7fc12000 {
			t.Errorf("RoundFP16(NaN %#08x) = %#08x, want 0x7fc12000", math.Float32bits(nan), got)
		}
	}
}
