package main

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/strata-llm/strata/app/autostart"
)

// Metadata is FyneApp.toml as the fyne tool reads it (the sections
// Strata uses).
type Metadata struct {
	Website string
	Details struct {
		Icon    string
		Name    string
		ID      string
		Version string
		Build   int
	}
	LinuxAndBSD struct {
		GenericName string
		Categories  []string
		Comment     string
		Keywords    []string
		ExecParams  string
	}
	Development map[string]string
	Release     map[string]string
}

// MinimumMacOS is the oldest macOS Strata runs on (LSMinimumSystemVersion).
const MinimumMacOS = "13.0"

// AppIconSize is the app icon's size: the largest of a macOS icon set
// (512 pt at 2×), from which fyne package makes icon.icns.
const AppIconSize = 1024

// TemplateIconSize is the menu-bar template icon's size (22 pt at 2×).
const TemplateIconSize = 44

var (
	versionRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)
	idRE      = regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$`)
)

// LoadMetadata reads FyneApp.toml strictly: valid TOML, no key Strata
// does not know, and the fields a bundle needs present and well formed.
func LoadMetadata(path string) (*Metadata, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ParseMetadata(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseMetadata parses and checks FyneApp.toml's content.
func ParseMetadata(b []byte) (*Metadata, error) {
	var m Metadata
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&m)
	if err != nil {
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("unknown keys: %s", strings.Join(keys, ", "))
	}
	d := m.Details
	var errs []error
	if d.Name == "" || strings.ContainsAny(d.Name, "/\\:\x00\n") {
		errs = append(errs, fmt.Errorf("Details.Name %q: want a plain name", d.Name))
	}
	if !idRE.MatchString(d.ID) {
		errs = append(errs, fmt.Errorf("Details.ID %q: want a reverse-DNS identifier such as dev.strata.app", d.ID))
	}
	if !versionRE.MatchString(d.Version) {
		errs = append(errs, fmt.Errorf("Details.Version %q: want MAJOR.MINOR.PATCH", d.Version))
	}
	if d.Build < 1 {
		errs = append(errs, fmt.Errorf("Details.Build %d: want 1 or more", d.Build))
	}
	if d.Icon == "" || filepath.IsAbs(d.Icon) || strings.Contains(d.Icon, "..") || !strings.HasSuffix(d.Icon, ".png") {
		errs = append(errs, fmt.Errorf("Details.Icon %q: want a PNG inside the repository", d.Icon))
	}
	if d.ID != autostart.Label {
		errs = append(errs, fmt.Errorf("Details.ID %q differs from the login item's label %q", d.ID, autostart.Label))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &m, nil
}

// CheckIcons checks the app icon (AppIconSize, square) and the menu-bar
// template icons (TemplateIconSize, black on transparent) under root.
func CheckIcons(root string, m *Metadata) error {
	if err := checkPNG(filepath.Join(root, m.Details.Icon), AppIconSize, false); err != nil {
		return err
	}
	tmpl, err := filepath.Glob(filepath.Join(root, "resources", "icons", "template_*.png"))
	if err != nil {
		return err
	}
	if len(tmpl) == 0 {
		return errors.New("no menu-bar template icons (resources/icons/template_*.png)")
	}
	for _, p := range tmpl {
		if err := checkPNG(p, TemplateIconSize, true); err != nil {
			return err
		}
	}
	return nil
}

func checkPNG(path string, size int, template bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("icon: %w", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("icon %s: %w", path, err)
	}
	if r := img.Bounds(); r.Dx() != size || r.Dy() != size {
		return fmt.Errorf("icon %s is %d×%d, want %d×%d", path, r.Dx(), r.Dy(), size, size)
	}
	if template {
		r := img.Bounds()
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				if cr, cg, cb, _ := img.At(x, y).RGBA(); cr|cg|cb != 0 {
					return fmt.Errorf("template icon %s: pixel (%d,%d) is not black (macOS tints template icons by their alpha)", path, x, y)
				}
			}
		}
	}
	return nil
}

// InfoPlist returns Strata.app's Info.plist for the executable exe (which
// must exist: the bundle's Contents/MacOS file).
func InfoPlist(m *Metadata, exe string) ([]byte, error) {
	fi, err := os.Stat(exe)
	if err != nil {
		return nil, fmt.Errorf("plist: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("plist: %s is not a file", exe)
	}
	d := m.Details
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
`)
	str := func(k, v string) {
		fmt.Fprintf(&b, "\t<key>%s</key>\n\t<string>%s</string>\n", k, html.EscapeString(v))
	}
	boolean := func(k string, v bool) {
		fmt.Fprintf(&b, "\t<key>%s</key>\n\t<%t/>\n", k, v)
	}
	str("CFBundleName", d.Name)
	str("CFBundleDisplayName", d.Name)
	str("CFBundleExecutable", filepath.Base(exe))
	str("CFBundleIdentifier", d.ID)
	str("CFBundleIconFile", "icon.icns")
	str("CFBundleShortVersionString", d.Version)
	str("CFBundleVersion", strconv.Itoa(d.Build))
	str("CFBundlePackageType", "APPL")
	str("CFBundleInfoDictionaryVersion", "6.0")
	str("CFBundleDevelopmentRegion", "en")
	str("LSMinimumSystemVersion", MinimumMacOS)
	str("LSApplicationCategoryType", "public.app-category.productivity")
	b.WriteString("\t<!-- A menu-bar app: no Dock icon, no app menu. -->\n")
	boolean("LSUIElement", true)
	boolean("NSHighResolutionCapable", true)
	boolean("NSSupportsAutomaticGraphicsSwitching", true)
	if m.Website != "" {
		str("NSHumanReadableCopyright", d.Name+" — "+m.Website)
	}
	b.WriteString("</dict>\n</plist>\n")
	return []byte(b.String()), nil
}

// DesktopEntry returns the Linux desktop entry for the program installed
// at exec (absolute), with the icon name the login item also uses.
func DesktopEntry(m *Metadata, exec string) ([]byte, error) {
	if !filepath.IsAbs(exec) || strings.ContainsAny(exec, "\x00\n\r") {
		return nil, fmt.Errorf("desktop: program path %q must be absolute, on one line", exec)
	}
	l := m.LinuxAndBSD
	list := func(v []string) string {
		if len(v) == 0 {
			return ""
		}
		return strings.Join(v, ";") + ";"
	}
	var b strings.Builder
	b.WriteString("[Desktop Entry]\nType=Application\n")
	fmt.Fprintf(&b, "Name=%s\n", m.Details.Name)
	if l.GenericName != "" {
		fmt.Fprintf(&b, "GenericName=%s\n", l.GenericName)
	}
	if l.Comment != "" {
		fmt.Fprintf(&b, "Comment=%s\n", l.Comment)
	}
	fmt.Fprintf(&b, "Exec=%s\n", autostart.DesktopExec(exec))
	fmt.Fprintf(&b, "Icon=%s\n", m.Details.ID)
	b.WriteString("Terminal=false\n")
	if c := list(l.Categories); c != "" {
		fmt.Fprintf(&b, "Categories=%s\n", c)
	}
	if k := list(l.Keywords); k != "" {
		fmt.Fprintf(&b, "Keywords=%s\n", k)
	}
	b.WriteString("StartupNotify=false\n")
	return []byte(b.String()), nil
}
