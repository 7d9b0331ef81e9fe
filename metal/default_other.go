//go:build !darwin && !linux

package metal

import (
	"context"
	"fmt"
	"runtime"
)

// EmulatorOptions configure the emulator, which runs on Linux only.
type EmulatorOptions struct {
	Sanitize bool
}

// OpenDefault has no device to open on this system.
func OpenDefault(ctx context.Context, o EmulatorOptions) (Device, error) {
	return nil, fmt.Errorf("no Metal device on %s, and the Metal emulator runs on Linux only", runtime.GOOS)
}
