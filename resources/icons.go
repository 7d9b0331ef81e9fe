package resources

import (
	"embed"
	"fmt"
)

//go:generate go run ./icons/gen -out icons

//go:embed icons/*.png
var iconFS embed.FS

// Tray badges, one icon each (see TrayIcon).
const (
	BadgeIdle    = "idle"    // a model is loaded (ready)
	BadgeStopped = "stopped" // no model loaded: the glyph is dimmed
	BadgeBusy    = "busy"    // loading, generating or downloading
	BadgeError   = "error"   // the last operation failed
)

// AppIcon returns Strata's application icon, a 1024×1024 PNG (the largest size of a macOS icon set).
func AppIcon() []byte { return mustIcon("icons/app.png") }

// TrayIcon returns the tray icon PNG for a badge (BadgeIdle, …). With
// template set it returns the monochrome macOS menu-bar variant (44×44,
// black on transparent: macOS tints it for light and dark menu bars);
// otherwise the colour variant (64×64) for Linux trays. An unknown badge
// gives the idle icon.
func TrayIcon(badge string, template bool) []byte {
	kind := "tray"
	if template {
		kind = "template"
	}
	switch badge {
	case BadgeIdle, BadgeStopped, BadgeBusy, BadgeError:
	default:
		badge = BadgeIdle
	}
	return mustIcon(fmt.Sprintf("icons/%s_%s.png", kind, badge))
}

func mustIcon(name string) []byte {
	b, err := iconFS.ReadFile(name)
	if err != nil {
		panic("resources: icon missing from the embedded files: " + name) // a build error, caught by tests
	}
	return b
}
