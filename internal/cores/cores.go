// Package cores tells how many threads the engine runs on by default: one
// per physical core that suits its work (the performance cores on Apple
// silicon), never more than the process may use.
package cores

import "runtime"

// Default is the default thread count: the performance cores (Apple
// silicon) or physical cores (one per core, not per SMT sibling), capped
// by runtime.NumCPU, which honours the process's CPU affinity. Decoding is
// bound by memory bandwidth and the work is split evenly, so an SMT
// sibling or an efficiency core adds little and can hold the others back.
func Default() int {
	n := runtime.NumCPU()
	if p := physical(); p > 0 && p < n {
		return p
	}
	return n
}
