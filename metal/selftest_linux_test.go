package metal_test

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/metal"
)

func emulator(t *testing.T, o metal.EmulatorOptions) *metal.Emulator {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	e, err := metal.NewEmulator(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func report(t *testing.T, rs []metal.Result) {
	t.Helper()
	var b strings.Builder
	metal.PrintResults(&b, rs)
	if !metal.Passed(rs) {
		t.Errorf("selftest failed:\n%s", b.String())
	} else if testing.Verbose() {
		t.Logf("\n%s", b.String())
	}
}

// Every kernel against the CPU code, in the three lane orders.
func TestSelftestEmulator(t *testing.T) {
	for _, o := range []metal.EmulatorOptions{{Order: metal.Forward}, {Order: metal.Reverse}, {Order: metal.Shuffled}} {
		t.Run(o.Order.String(), func(t *testing.T) {
			dev := emulator(t, o)
			report(t, metal.Selftest(context.Background(), dev, metal.SelftestOptions{Quick: o.Order != metal.Forward}))
		})
	}
}

// The ASan/UBSan pass: every kernel once, on the quick shapes.
func TestSelftestSanitized(t *testing.T) {
	dev := emulator(t, metal.EmulatorOptions{Order: metal.Shuffled, Sanitize: true})
	report(t, metal.Selftest(context.Background(), dev, metal.SelftestOptions{Quick: true}))
}

// testDevice is the device the shared tests run on: here the emulator,
// in shuffled lane and dispatch order.
func testDevice(t *testing.T) metal.Device {
	return emulator(t, metal.EmulatorOptions{Order: metal.Shuffled})
}

func TestWarm(t *testing.T) {
	dev := emulator(t, metal.EmulatorOptions{})
	n, err := metal.Warm(context.Background(), dev, 0)
	if err != nil || n != 8 {
		t.Fatalf("Warm: %d dispatches, err %v", n, err)
	}
	be := metal.NewBackend(dev)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { be.WarmUp(stop); close(done) }()
	close(stop)
	<-done
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := metal.Warm(ctx, dev, 0); err == nil {
		t.Error("Warm with a cancelled context: no error")
	}
}

// One whole decode under ASan/UBSan: the kernels at the shapes a model uses.
func TestQwen3MoEStepSanitized(t *testing.T) {
	checkStep(t, emulator(t, metal.EmulatorOptions{Order: metal.Reverse, Sanitize: true}), ggml.Q4_K)
}
