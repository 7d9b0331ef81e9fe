package cores

import (
	"runtime"
	"testing"
)

func TestDefault(t *testing.T) {
	n := Default()
	if n < 1 || n > runtime.NumCPU() {
		t.Fatalf("Default() = %d with %d CPUs", n, runtime.NumCPU())
	}
	t.Logf("%d threads by default (%d CPUs, %d physical)", n, runtime.NumCPU(), physical())
}
