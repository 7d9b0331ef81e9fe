//go:build !darwin && !linux

package cores

// physical is unknown here: Default uses runtime.NumCPU.
func physical() int { return 0 }
