// Package metal is Strata's Metal backend: hand-written compute kernels in
// kernels/*.metal (embedded, compiled on the Mac with newLibraryWithSource),
// the geometry that dispatches them (grids, threadgroup sizes, threadgroup
// memory, function constants, the grid-size guard), a decode step of
// qwen3moe encoded as one command list with a per-layer host handshake,
// and Selftest, which checks every kernel against the CPU code.
//
// A Device runs command lists: on macOS the GPU (device_darwin.go, through
// purego, no cgo); on Linux the emulator of metal/internal/emu, which
// executes the same .metal bytes on the CPU, so that everything but the
// Objective-C calls is tested without a Mac. README.md lists what only a
// Mac can show.
package metal
