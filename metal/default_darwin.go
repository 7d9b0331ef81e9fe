//go:build darwin

package metal

import "context"

// OpenDefault opens the device Selftest and the engine use here: the GPU.
func OpenDefault(ctx context.Context, o EmulatorOptions) (Device, error) { return NewGPU() }
