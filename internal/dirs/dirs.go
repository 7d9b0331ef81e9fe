// Package dirs resolves where Strata keeps its configuration, data, cache
// and logs on this platform.
package dirs

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dirs are the folders Strata uses. All are absolute.
type Dirs struct {
	Config string // settings.json, the API token
	Data   string // models, usage history
	Cache  string // the generated demo model, download scratch
	Logs   string // rotating log files
}

// Default returns the platform's places: on macOS all under
// ~/Library/Application Support/Strata (cache under ~/Library/Caches/Strata,
// logs under ~/Library/Logs/Strata); elsewhere the XDG config, data and
// cache homes.
func Default() (Dirs, error) {
	cfg, err := os.UserConfigDir()
	if err != nil {
		return Dirs{}, fmt.Errorf("config dir: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return Dirs{}, fmt.Errorf("cache dir: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return Dirs{}, fmt.Errorf("home dir: %w", err)
	}
	if isDarwin {
		base := filepath.Join(cfg, "Strata") // ~/Library/Application Support/Strata
		return Dirs{
			Config: base,
			Data:   base,
			Cache:  filepath.Join(cache, "Strata"),
			Logs:   filepath.Join(home, "Library", "Logs", "Strata"),
		}, nil
	}
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" || !filepath.IsAbs(data) {
		data = filepath.Join(home, ".local", "share")
	}
	return Dirs{
		Config: filepath.Join(cfg, "strata"),
		Data:   filepath.Join(data, "strata"),
		Cache:  filepath.Join(cache, "strata"),
		Logs:   filepath.Join(data, "strata", "logs"),
	}, nil
}

// Under returns Dirs all inside root (used by --home and tests).
func Under(root string) (Dirs, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return Dirs{}, fmt.Errorf("home %s: %w", root, err)
	}
	return Dirs{
		Config: filepath.Join(abs, "config"),
		Data:   filepath.Join(abs, "data"),
		Cache:  filepath.Join(abs, "cache"),
		Logs:   filepath.Join(abs, "logs"),
	}, nil
}

// Create makes every folder (0700) if missing.
func (d Dirs) Create() error {
	for _, p := range []string{d.Config, d.Data, d.Cache, d.Logs} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}
