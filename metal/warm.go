package metal

import (
	"context"
	"fmt"
	"time"
)

// warmCommands is a short list of trivial dispatches on a buffer of its own.
func warmCommands(dev Device) (*Commands, error) {
	const n = 1 << 16
	x, err := dev.Alloc(4 * n)
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	c := &Commands{}
	for i := 0; i < 8; i++ {
		Add{N: n, X: BufRef{Buf: x}, Y: BufRef{Buf: x}}.Encode(c)
		c.Barrier()
	}
	return c, c.Err()
}

// Warm wakes dev before real work after an idle period: it runs short
// trivial dispatches for about d, so that the GPU's clocks have ramped up
// when the first prompt arrives. It returns the number of dispatches run.
func Warm(ctx context.Context, dev Device, d time.Duration) (int, error) {
	c, err := warmCommands(dev)
	if err != nil {
		return 0, err
	}
	runs := 0
	for start := time.Now(); runs == 0 || time.Since(start) < d; {
		if err := dev.Run(ctx, c); err != nil {
			return runs * c.Len(), fmt.Errorf("warm-up: %w", err)
		}
		runs++
	}
	return runs * c.Len(), nil
}

// WarmUp runs trivial dispatches until stop is closed: the engine calls it
// on a request after idle, while the prompt is tokenized (wake before
// work). Errors end it early; the next op reports them if they persist.
func (b *Backend) WarmUp(stop <-chan struct{}) {
	if b.warm == nil {
		c, err := warmCommands(b.dev)
		if err != nil {
			return
		}
		b.warm = c
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		if err := b.dev.Run(b.ctx, b.warm); err != nil {
			return
		}
	}
}
