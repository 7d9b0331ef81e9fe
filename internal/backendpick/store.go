package backendpick

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/strata-llm/strata/internal/atomicfile"
	"github.com/strata-llm/strata/internal/settings"
)

// FileName is the verdict file's name in the data folder.
const FileName = "metal-selftest.json"

// maxFile bounds the verdict file; real ones are under 1 KB.
const maxFile = 64 << 10

// Load reads the verdict kept at path: nil if there is none, or if the
// file is unreadable or damaged (the selftest then runs again, which is
// the safe answer; the error says why for the log).
func Load(path string) (*Verdict, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metal selftest verdict: %w", err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("metal selftest verdict %s: %d bytes, more than %d", path, len(data), maxFile)
	}
	var v Verdict
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("metal selftest verdict %s: %w", path, err)
	}
	if v.AppVersion == "" {
		return nil, fmt.Errorf("metal selftest verdict %s: no app version", path)
	}
	return &v, nil
}

// Save keeps v at path (temp file, fsync, rename).
func Save(path string, v *Verdict) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("metal selftest verdict: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("metal selftest verdict: %w", err)
	}
	return nil
}

// Resolve decides with the verdict kept at path and keeps a new one.
// Failing to read or write the file is logged, never fatal: the worst
// case is a selftest at every start.
func Resolve(ctx context.Context, path string, choice settings.Backend, p Platform, run Selftester, log *slog.Logger) Decision {
	if log == nil {
		log = slog.Default()
	}
	stored, err := Load(path)
	if err != nil {
		log.Warn("the Metal selftest runs again", "err", err)
	}
	d := Decide(ctx, choice, p, stored, run)
	if d.Ran {
		log.Info("metal selftest", "passed", d.Verdict.Passed, "device", d.Verdict.Device, "checks", d.Verdict.Checks,
			"took_ms", d.Verdict.TookMS, "app", p.AppVersion, "os", p.OSVersion)
		if err := Save(path, d.Verdict); err != nil {
			log.Warn("keeping the Metal selftest's verdict", "err", err)
		}
	}
	lvl := slog.LevelInfo
	if d.Fallback {
		lvl = slog.LevelWarn
	}
	log.Log(ctx, lvl, "backend", "choice", string(choice), "backend", d.Backend, "reason", d.Reason)
	return d
}
