package metal_test

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-llm/strata/metal"
)

// testDevice is the device the shared tests run on: on a Mac, the GPU.
func testDevice(t *testing.T) metal.Device {
	t.Helper()
	g, err := metal.NewGPU()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// Every kernel against the CPU code on the real GPU.
func TestSelftestGPU(t *testing.T) {
	dev := testDevice(t)
	rs := metal.Selftest(context.Background(), dev, metal.SelftestOptions{})
	var b strings.Builder
	metal.PrintResults(&b, rs)
	if !metal.Passed(rs) {
		t.Errorf("selftest on %s failed:\n%s", dev.Name(), b.String())
	} else {
		t.Logf("%s\n%s", dev.Name(), b.String())
	}
}
