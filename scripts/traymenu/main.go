// Command traymenu drives Strata's tray menu over D-Bus and saves window
// screenshots, for scripts/screenshots.sh.
//
//	traymenu list  --pid PID            print the menu's items (id, label, enabled)
//	traymenu click --pid PID LABEL      click the item with LABEL (com.canonical.dbusmenu Event)
//	traymenu xwd2png IN.xwd OUT.png     convert an xwd window dump to PNG
//
// fyne.io/systray exports the menu at /StatusNotifierItem/menu under the
// bus name org.kde.StatusNotifierItem-PID-1, whether or not a tray host
// (StatusNotifierWatcher) is running, so no watcher is needed. Items are
// found by label: the menu is renumbered whenever the app refreshes it.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/bits"
	"os"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "list", "click":
		fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
		pid := fs.Int("pid", 0, "the Strata process")
		wait := fs.Duration("wait", 30*time.Second, "how long to wait for the menu to appear")
		fs.Parse(os.Args[2:])
		if *pid == 0 || (os.Args[1] == "click" && fs.NArg() != 1) {
			usage()
		}
		err = menu(os.Args[1], *pid, fs.Arg(0), *wait)
	case "xwd2png":
		if len(os.Args) != 4 {
			usage()
		}
		err = xwd2png(os.Args[2], os.Args[3])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "traymenu:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: traymenu list --pid PID | click --pid PID LABEL | xwd2png IN OUT")
	os.Exit(2)
}

type item struct {
	id      int32
	label   string
	enabled bool
}

// layout is dbusmenu's (ia{sv}av) node.
type layout struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []dbus.Variant
}

func flatten(l layout, out *[]item) {
	it := item{id: l.ID, enabled: true}
	if v, ok := l.Props["label"]; ok {
		it.label, _ = v.Value().(string)
		it.label = strings.ReplaceAll(it.label, "_", "") // mnemonics
	}
	if v, ok := l.Props["enabled"]; ok {
		it.enabled, _ = v.Value().(bool)
	}
	if l.ID != 0 {
		*out = append(*out, it)
	}
	for _, c := range l.Children {
		var sub layout
		if err := dbus.Store([]any{c.Value()}, &sub); err == nil {
			flatten(sub, out)
		}
	}
}

func menu(cmd string, pid int, label string, wait time.Duration) error {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return fmt.Errorf("session bus: %w", err)
	}
	defer conn.Close()
	obj := conn.Object(fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", pid), "/StatusNotifierItem/menu")
	deadline := time.Now().Add(wait)
	for {
		var items []item
		var rev uint32
		var l layout
		err := obj.Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &l)
		if err == nil {
			flatten(l, &items)
			switch cmd {
			case "list":
				if len(items) > 0 {
					for _, it := range items {
						fmt.Printf("%d\t%q\tenabled=%v\n", it.id, it.label, it.enabled)
					}
					return nil
				}
			case "click":
				for _, it := range items {
					if it.label == label && it.enabled {
						return obj.Call("com.canonical.dbusmenu.Event", 0, it.id, "clicked",
							dbus.MakeVariant(""), uint32(time.Now().Unix())).Err
					}
				}
				err = fmt.Errorf("no enabled item %q among %d items", label, len(items))
			}
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("the menu is empty")
			}
			return fmt.Errorf("tray menu of process %d: %w", pid, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// xwd2png converts an X window dump (ZPixmap, 24 or 32 bits per pixel,
// true colour), as written by `xwd`, to PNG.
func xwd2png(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var h [25]uint32
	if err := binary.Read(r, binary.BigEndian, &h); err != nil {
		return fmt.Errorf("%s: header: %w", in, err)
	}
	headerSize, version, format := h[0], h[1], h[2]
	width, height, byteOrder := h[4], h[5], h[7]
	bpp, bytesPerLine := h[11], h[12]
	rmask, gmask, bmask := h[14], h[15], h[16]
	ncolors := h[19]
	if version != 7 || format != 2 || (bpp != 32 && bpp != 24) || width == 0 || height == 0 ||
		width > 16384 || height > 16384 || bytesPerLine < width*bpp/8 || headerSize < 100 || headerSize > 4096 {
		return fmt.Errorf("%s: unsupported xwd (version %d, format %d, %d bpp, %d×%d)", in, version, format, bpp, width, height)
	}
	if _, err := io.CopyN(io.Discard, r, int64(headerSize-100)+int64(ncolors)*12); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	img := image.NewNRGBA(image.Rect(0, 0, int(width), int(height)))
	line := make([]byte, bytesPerLine)
	chan8 := func(p, mask uint32) uint8 {
		if mask == 0 {
			return 0
		}
		v := (p & mask) >> bits.TrailingZeros32(mask)
		max := mask >> bits.TrailingZeros32(mask)
		return uint8(v * 255 / max)
	}
	for y := 0; y < int(height); y++ {
		if _, err := io.ReadFull(r, line); err != nil {
			return fmt.Errorf("%s: pixels: %w", in, err)
		}
		for x := 0; x < int(width); x++ {
			var p uint32
			b := line[x*int(bpp/8):]
			if bpp == 32 {
				if byteOrder == 0 {
					p = binary.LittleEndian.Uint32(b)
				} else {
					p = binary.BigEndian.Uint32(b)
				}
			} else if byteOrder == 0 {
				p = uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
			} else {
				p = uint32(b[2]) | uint32(b[1])<<8 | uint32(b[0])<<16
			}
			img.SetNRGBA(x, y, color.NRGBA{chan8(p, rmask), chan8(p, gmask), chan8(p, bmask), 255})
		}
	}
	tmp := out + ".tmp"
	o, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := png.Encode(o, img); err != nil {
		o.Close()
		os.Remove(tmp)
		return err
	}
	if err := o.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}
