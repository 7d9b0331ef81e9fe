package resources

import (
	"bytes"
	"image/png"
	"testing"
)

func TestIcons(t *testing.T) {
	check := func(name string, data []byte, size int, mono bool) {
		t.Helper()
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() != size || b.Dy() != size {
			t.Fatalf("%s: %v, want %d×%d", name, b, size, size)
		}
		opaque := 0
		for y := 0; y < size; y++ {
			for x := 0; x < size; x++ {
				r, g, b, a := img.At(x, y).RGBA()
				if a > 0 {
					opaque++
				}
				if mono && (r != 0 || g != 0 || b != 0) {
					t.Fatalf("%s: template pixel (%d,%d) is not black: %v", name, x, y, img.At(x, y))
				}
			}
		}
		if opaque < size*size/10 || opaque == size*size && mono {
			t.Fatalf("%s: %d of %d pixels drawn", name, opaque, size*size)
		}
	}
	check("app", AppIcon(), 1024, false)
	for _, b := range []string{BadgeIdle, BadgeStopped, BadgeBusy, BadgeError} {
		check("tray "+b, TrayIcon(b, false), 64, false)
		check("template "+b, TrayIcon(b, true), 44, true)
	}
	if !bytes.Equal(TrayIcon("nonsense", false), TrayIcon(BadgeIdle, false)) {
		t.Fatal("unknown badge should give the idle icon")
	}
}
