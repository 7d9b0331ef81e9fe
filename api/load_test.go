package api_test

import (
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/strata-llm/strata/api"
	"github.com/strata-llm/strata/api/client"
	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/internal/runner"
)

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	return len(ents)
}

// 100 clients at once, each asking for a generation: every one completes
// or gets busy (the queue holds 40), the queue wait is reported, and
// nothing leaks afterwards.
func TestLoad100Clients(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const clients, maxQueue = 100, 40
	ignore := goleak.IgnoreCurrent()
	fdsBefore := openFDs(t)
	goBefore := runtime.NumGoroutine()

	func() {
		h := startWith(t, func(c *runner.Config) { c.MaxQueue = maxQueue }, func(c *api.Config) {
			c.MaxConnections = clients
		})
		defer h.stop()
		ctx := ctxT(t, 5*time.Minute)
		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			waits     []float64
			busy, bad int
		)
		ready := make(chan struct{})
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := client.Dial(ctx, h.wsURL(), client.Options{Token: h.tok.String()})
				if err != nil {
					mu.Lock()
					bad++
					mu.Unlock()
					t.Errorf("client %d: %v", i, err)
					return
				}
				defer c.Close()
				<-ready
				g, err := c.Complete(ctx, greedy(4, "load"), nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case client.IsCode(err, protocol.CodeBusy):
					busy++
				case err != nil:
					bad++
					t.Errorf("client %d: %v", i, err)
				case len(g.Tokens) != 4:
					bad++
					t.Errorf("client %d: %d tokens", i, len(g.Tokens))
				default:
					waits = append(waits, g.Stats.QueueMS)
				}
			}()
		}
		close(ready)
		wg.Wait()
		if len(waits)+busy+bad != clients || bad > 0 {
			t.Fatalf("%d completed, %d busy, %d failed", len(waits), busy, bad)
		}
		if len(waits) < maxQueue+1 {
			t.Errorf("only %d completed; the queue holds %d plus the running one", len(waits), maxQueue)
		}
		slices.Sort(waits)
		p := func(q float64) float64 { return waits[int(q*float64(len(waits)-1))] }
		t.Logf("100 clients: %d completed, %d busy; queue wait p50 %.1f ms, p99 %.1f ms, max %.1f ms",
			len(waits), busy, p(0.5), p(0.99), waits[len(waits)-1])
	}()

	// Everything the server made is gone.
	deadline := time.Now().Add(10 * time.Second)
	for openFDs(t) > fdsBefore && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	fdsAfter := openFDs(t)
	t.Logf("goroutines before %d, after %d; file descriptors before %d, after %d", goBefore, runtime.NumGoroutine(), fdsBefore, fdsAfter)
	if fdsAfter > fdsBefore {
		t.Errorf("file descriptors leaked: %d before, %d after", fdsBefore, fdsAfter)
	}
	goleak.VerifyNone(t, ignore)
}
