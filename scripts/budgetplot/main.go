// Command budgetplot measures expert streaming as the expert cache grows
// from 10 % to 100 % of a model's experts — decode tok/s, hit % and SSD
// MB/s from `strata bench --stream always --cache-gb G` — and draws them
// into a PNG (docs/streaming-budget.png). Run by hand on a quiet machine:
//
//	go build -o bin/strata . && go run ./scripts/budgetplot -model FILE -out docs/streaming-budget.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"log"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

type point struct {
	frac, tokS, hit, mbps float64
}

func main() {
	model := flag.String("model", "", "GGUF model file")
	out := flag.String("out", "docs/streaming-budget.png", "PNG to write")
	strata := flag.String("strata", "bin/strata", "strata binary")
	expertGB := flag.Float64("expert-gb", 0, "the model's expert bytes in GB (0: from strata inspect)")
	threads := flag.Int("threads", 2, "threads")
	gen := flag.Int("gen", 32, "decoded tokens per run")
	flag.Parse()
	if *model == "" {
		log.Fatal("-model is required")
	}
	if *expertGB == 0 {
		raw, err := exec.Command(*strata, "inspect", "--json", *model).Output()
		if err != nil {
			log.Fatalf("inspect: %v", err)
		}
		var r struct {
			ExpertBytes float64 `json:"expert_bytes"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || r.ExpertBytes == 0 {
			log.Fatalf("inspect: no expert bytes (%v)", err)
		}
		*expertGB = r.ExpertBytes / 1e9
	}
	var pts []point
	for _, frac := range []float64{0.1, 0.2, 0.3, 0.5, 0.7, 1.0} {
		raw, err := exec.Command(*strata, "bench", "--model", *model, "--threads", strconv.Itoa(*threads),
			"--prompt-tokens", "16", "--gen", strconv.Itoa(*gen), "--reps", "1", "--stream", "always",
			"--cache-gb", fmt.Sprint(frac**expertGB*1.02), "--json").Output()
		if err != nil {
			log.Fatalf("bench at %.0f %%: %v", 100*frac, err)
		}
		var r struct {
			Decode  float64 `json:"decode_tokens_per_second"`
			Experts struct {
				HitRate float64 `json:"hit_rate"`
				MBps    float64 `json:"read_mb_per_second"`
			} `json:"experts"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			log.Fatal(err)
		}
		p := point{frac, r.Decode, 100 * r.Experts.HitRate, r.Experts.MBps}
		fmt.Printf("cache %3.0f %%: %6.2f tok/s, hit %5.1f %%, %6.0f MB/s\n", 100*p.frac, p.tokS, p.hit, p.mbps)
		pts = append(pts, p)
	}
	if err := plot(*out, pts); err != nil {
		log.Fatal(err)
	}
}

// plot draws three panels (tok/s, hit %, SSD MB/s against the cache size).
func plot(path string, pts []point) error {
	const w, h, ph = 720, 600, 180
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	series := []struct {
		name string
		get  func(point) float64
		col  color.RGBA
	}{
		{"decode tok/s", func(p point) float64 { return p.tokS }, color.RGBA{30, 90, 200, 255}},
		{"cache hit %", func(p point) float64 { return p.hit }, color.RGBA{20, 150, 60, 255}},
		{"SSD MB/s", func(p point) float64 { return p.mbps }, color.RGBA{200, 80, 30, 255}},
	}
	text(img, 10, 16, "Expert streaming vs cache size (% of the model's experts)", color.Black)
	for i, s := range series {
		top := 30 + i*(ph+10)
		x0, x1, y0, y1 := 70, w-20, top+ph-20, top+10
		maxv := 0.0
		for _, p := range pts {
			maxv = max(maxv, s.get(p))
		}
		if maxv == 0 {
			maxv = 1
		}
		line(img, x0, y0, x1, y0, color.Gray{120})
		line(img, x0, y0, x0, y1, color.Gray{120})
		text(img, 8, y1+10, fmt.Sprintf("%.0f", maxv), color.Black)
		text(img, 8, y0, "0", color.Black)
		text(img, x0+8, y1+4, s.name, s.col)
		px := func(p point) (int, int) {
			return x0 + int(float64(x1-x0)*p.frac), y0 - int(float64(y0-y1)*s.get(p)/maxv)
		}
		for j, p := range pts {
			x, y := px(p)
			for dx := -2; dx <= 2; dx++ {
				for dy := -2; dy <= 2; dy++ {
					img.Set(x+dx, y+dy, s.col)
				}
			}
			if j > 0 {
				xa, ya := px(pts[j-1])
				line(img, xa, ya, x, y, s.col)
			}
			if i == len(series)-1 {
				text(img, x-10, y0+16, fmt.Sprintf("%.0f%%", 100*p.frac), color.Black)
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= n; i++ {
		img.Set(x0+(x1-x0)*i/n, y0+(y1-y0)*i/n, c)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
