//go:build !darwin && !linux

package backendpick

// osVersion is unknown here.
func osVersion() string { return "" }
