//go:build unix && !linux && !darwin

package gguf

import "os"

// noCache does nothing where there is no known way to bypass the cache.
func noCache(*os.File) {}

// dropCache does nothing here.
func dropCache(*os.File, int64, int64) {}
