//go:build !(amd64 || arm64) || purego

package cpu

// cpuRelax is a no-op where there is no spin-wait hint in assembly.
func cpuRelax() {}
