// Command gen draws Strata's icons as PNG files: the application icon, the
// colour tray icons for Linux (one per state badge) and the monochrome
// template icons for the macOS menu bar (only their alpha channel counts;
// macOS tints them to match a light or dark menu bar).
//
// Run it from resources/icons with `go generate`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", ".", "folder to write the PNG files to")
	flag.Parse()
	files := map[string]image.Image{
		"app.png": appIcon(1024),
	}
	for _, st := range states {
		files["tray_"+st.name+".png"] = trayIcon(64, st.badge, false)
		files["template_"+st.name+".png"] = trayIcon(44, st.badge, true)
	}
	for name, img := range files {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			log.Fatalf("encode %s: %v", name, err)
		}
		if err := writeFile(filepath.Join(*out, name), buf.Bytes()); err != nil {
			log.Fatal(err)
		}
	}
}

// states are the tray badges: none when stopped or ready, a ring while
// busy (loading, generating, downloading), a filled dot on error.
var states = []struct {
	name  string
	badge badge
}{
	{"idle", badgeNone},
	{"stopped", badgeStopped},
	{"busy", badgeBusy},
	{"error", badgeError},
}

type badge int

const (
	badgeNone badge = iota
	badgeStopped
	badgeBusy
	badgeError
)

func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// shape reports whether point (x, y), in units of the icon's side, is inside.
type shape func(x, y float64) bool

// rrect is a rounded rectangle.
func rrect(x0, y0, x1, y1, r float64) shape {
	return func(x, y float64) bool {
		if x < x0 || x > x1 || y < y0 || y > y1 {
			return false
		}
		cx := math.Max(x0+r, math.Min(x, x1-r))
		cy := math.Max(y0+r, math.Min(y, y1-r))
		return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r
	}
}

// band is one stratum: a rounded bar that waves gently along its length.
func band(x0, x1, y, h, phase float64) shape {
	body := rrect(x0, y-h, x1, y+h, h*0.9)
	return func(x, yy float64) bool {
		wave := 0.018 * math.Sin((x-x0)/(x1-x0)*2*math.Pi+phase)
		return body(x, yy-wave)
	}
}

func circle(cx, cy, r float64) shape {
	return func(x, y float64) bool { return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r }
}

func ring(cx, cy, r, w float64) shape {
	return func(x, y float64) bool {
		d := math.Hypot(x-cx, y-cy)
		return d <= r && d >= r-w
	}
}

// coverage returns the fraction of a pixel inside s, from 4×4 samples.
func coverage(s shape, px, py, size int) float64 {
	const n = 4
	in := 0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			x := (float64(px) + (float64(i)+0.5)/n) / float64(size)
			y := (float64(py) + (float64(j)+0.5)/n) / float64(size)
			if s(x, y) {
				in++
			}
		}
	}
	return float64(in) / (n * n)
}

// layer paints c over img where s covers, with antialiasing.
func layer(img *image.NRGBA, s shape, c color.NRGBA) {
	size := img.Bounds().Dx()
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			a := coverage(s, px, py, size) * float64(c.A) / 255
			if a == 0 {
				continue
			}
			img.SetNRGBA(px, py, over(img.NRGBAAt(px, py), c, a))
		}
	}
}

// erase clears alpha where s covers (for cut-outs in template icons).
func erase(img *image.NRGBA, s shape) {
	size := img.Bounds().Dx()
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			if a := coverage(s, px, py, size); a > 0 {
				p := img.NRGBAAt(px, py)
				p.A = uint8(float64(p.A) * (1 - a))
				img.SetNRGBA(px, py, p)
			}
		}
	}
}

func over(dst, src color.NRGBA, a float64) color.NRGBA {
	da := float64(dst.A) / 255
	oa := a + da*(1-a)
	if oa == 0 {
		return color.NRGBA{}
	}
	mix := func(s, d uint8) uint8 {
		return uint8(math.Round((float64(s)*a + float64(d)*da*(1-a)) / oa))
	}
	return color.NRGBA{mix(src.R, dst.R), mix(src.G, dst.G), mix(src.B, dst.B), uint8(math.Round(oa * 255))}
}

var (
	strataColors = []color.NRGBA{
		{0xF2, 0xC1, 0x4E, 0xFF}, // top: sand
		{0xE0, 0x7A, 0x3F, 0xFF}, // middle: clay
		{0x3E, 0xB4, 0xA8, 0xFF}, // bottom: teal
	}
	grey  = color.NRGBA{0x9A, 0xA0, 0xA6, 0xFF}
	amber = color.NRGBA{0xFF, 0xB0, 0x20, 0xFF}
	red   = color.NRGBA{0xE5, 0x39, 0x35, 0xFF}
	black = color.NRGBA{0, 0, 0, 0xFF}
)

// bands returns the three strata, from top to bottom, inside [x0, x1].
func bands(x0, x1, top, gap, h float64) []shape {
	var s []shape
	for i := 0; i < 3; i++ {
		inset := float64(i) * 0.04
		s = append(s, band(x0+inset, x1-inset+0.0, top+float64(i)*gap, h, float64(i)*1.3))
	}
	return s
}

func appIcon(size int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	// Background: a rounded square with a vertical gradient, drawn as rows.
	bg := rrect(0.06, 0.06, 0.94, 0.94, 0.2)
	for py := 0; py < size; py++ {
		t := float64(py) / float64(size)
		c := color.NRGBA{uint8(0x1B + t*0x08), uint8(0x26 + t*0x18), uint8(0x4A + t*0x20), 0xFF}
		row := func(x, y float64) bool {
			return bg(x, y) && y >= float64(py)/float64(size) && y < float64(py+1)/float64(size)
		}
		layerRow(img, row, c, py)
	}
	for i, s := range bands(0.2, 0.8, 0.36, 0.17, 0.06) {
		layer(img, s, strataColors[i])
	}
	return img
}

// layerRow paints only row py (the gradient is one colour per row).
func layerRow(img *image.NRGBA, s shape, c color.NRGBA, py int) {
	size := img.Bounds().Dx()
	for px := 0; px < size; px++ {
		const n = 4
		in := 0
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				x := (float64(px) + (float64(i)+0.5)/n) / float64(size)
				y := (float64(py) + (float64(j)+0.5)/n) / float64(size)
				if bgIn := s(x, math.Min(y, (float64(py)+0.999)/float64(size))); bgIn {
					in++
				}
			}
		}
		if in > 0 {
			img.SetNRGBA(px, py, over(img.NRGBAAt(px, py), c, float64(in)/(n*n)))
		}
	}
}

// trayIcon draws the strata glyph for the tray. A template icon is black
// on transparent; the colour one uses the strata colours (grey when
// stopped). Badges sit in the lower right corner.
func trayIcon(size int, b badge, template bool) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for i, s := range bands(0.08, 0.92, 0.28, 0.24, 0.085) {
		c := strataColors[i]
		switch {
		case template:
			c = black
			if b == badgeStopped {
				c.A = 0x70 // dimmed: macOS keeps the alpha of template images
			}
		case b == badgeStopped:
			c = grey
		}
		layer(img, s, c)
	}
	const cx, cy, r = 0.78, 0.78, 0.2
	switch b {
	case badgeBusy, badgeError:
		erase(img, circle(cx, cy, r+0.06))
		if template {
			if b == badgeBusy {
				layer(img, ring(cx, cy, r, 0.08), black)
			} else {
				layer(img, circle(cx, cy, r), black)
			}
			break
		}
		c := amber
		if b == badgeError {
			c = red
		}
		layer(img, circle(cx, cy, r), c)
	}
	return img
}
