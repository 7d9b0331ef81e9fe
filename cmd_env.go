package main

import (
	"io"
	"log/slog"

	"github.com/strata-llm/strata/internal/dirs"
)

// cmdEnv is what every subcommand gets: where Strata keeps its files,
// where to print, and the logger.
type cmdEnv struct {
	Dirs           dirs.Dirs
	Stdout, Stderr io.Writer
	Log            *slog.Logger
}
