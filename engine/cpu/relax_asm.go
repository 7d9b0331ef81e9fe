//go:build (amd64 || arm64) && !purego

package cpu

// cpuRelax tells the core that the thread is in a spin-wait loop (PAUSE on
// amd64, YIELD on arm64), which saves power and frees the pipeline for a
// sibling hardware thread.
//
//go:noescape
func cpuRelax()
