package metal

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/strata-llm/strata/metal/internal/emu"
)

// EmulatorOptions configure NewEmulator.
type EmulatorOptions struct {
	// Order is the lane order in every threadgroup; Reverse and Shuffled
	// also run the dispatches between two barriers in reverse or shuffled
	// order, so a missing barrier changes the result.
	Order emu.Order
	// Sanitize runs the ASan/UBSan build.
	Sanitize bool
	// Dir holds the shared memory file (default os.TempDir()).
	Dir string
	// Workers is the number of OS threads per dispatch (0: one per CPU).
	Workers int
}

// Lane orders for EmulatorOptions.
const (
	Forward  = emu.Forward
	Reverse  = emu.Reverse
	Shuffled = emu.Shuffled
)

// Emulator is a Device that runs the kernels on the CPU (metal/internal/emu).
// Its throughput says nothing about a GPU's.
type Emulator struct {
	m    *emu.Machine
	o    EmulatorOptions
	rng  *rand.Rand
	name string
}

type emuBuffer struct{ b *emu.Buffer }

func (b emuBuffer) Bytes() []byte { return b.b.Bytes }

// NewEmulator compiles the kernels (or takes them from the cache) and
// starts an emulated device. It needs clang 16.
func NewEmulator(ctx context.Context, o EmulatorOptions) (*Emulator, error) {
	var srcs []emu.Source
	for _, s := range Sources() {
		srcs = append(srcs, emu.Source{Name: s.Name, Text: s.Text})
	}
	p, err := emu.Compile(ctx, srcs, emu.BuildOptions{Sanitize: o.Sanitize})
	if err != nil {
		return nil, fmt.Errorf("metal emulator: %w", err)
	}
	dir := o.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	m, err := emu.NewMachine(p, dir)
	if err != nil {
		return nil, err
	}
	m.Workers = o.Workers
	name := "emulator (" + o.Order.String()
	if o.Sanitize {
		name += ", ASan+UBSan"
	}
	return &Emulator{m: m, o: o, rng: rand.New(rand.NewPCG(1, 2)), name: name + ")"}, nil
}

// Name implements Device.
func (e *Emulator) Name() string { return e.name }

// Alloc implements Device.
func (e *Emulator) Alloc(n int) (Buffer, error) {
	b, err := e.m.Alloc(n)
	if err != nil {
		return nil, err
	}
	return emuBuffer{b}, nil
}

// MaxThreads implements Device: the emulator allows what the hardware
// allows at most.
func (e *Emulator) MaxThreads(string, map[int]int32) (int, error) { return MaxThreadsPerTG, nil }

// Run implements Device. A Signal's host function runs on its own
// goroutine while the dispatches up to its Resume run, as on a GPU.
func (e *Emulator) Run(ctx context.Context, c *Commands) error {
	if c.err != nil {
		return c.err
	}
	var seg []*Dispatch
	flush := func() error {
		switch e.o.Order {
		case Reverse:
			for i, j := 0, len(seg)-1; i < j; i, j = i+1, j-1 {
				seg[i], seg[j] = seg[j], seg[i]
			}
		case Shuffled:
			e.rng.Shuffle(len(seg), func(i, j int) { seg[i], seg[j] = seg[j], seg[i] })
		}
		for _, d := range seg {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := e.run(d); err != nil {
				return err
			}
		}
		seg = seg[:0]
		return nil
	}
	var host chan error // the open Signal's result
	resume := func() error {
		if host == nil {
			return nil
		}
		err := <-host
		host = nil
		return err
	}
	defer func() { _ = resume() }() // never leave a host function running
	for _, it := range c.items {
		switch {
		case it.d != nil:
			seg = append(seg, it.d)
		case it.host != nil:
			if err := flush(); err != nil {
				return err
			}
			if err := resume(); err != nil {
				return err
			}
			host = make(chan error, 1)
			go func(fn func(context.Context) error) { host <- fn(ctx) }(it.host)
		case it.resume:
			if err := flush(); err != nil {
				return err
			}
			if err := resume(); err != nil {
				return err
			}
		case it.barrier:
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return resume()
}

func (e *Emulator) run(d *Dispatch) error {
	ed := emu.Dispatch{Kernel: d.Kernel, Grid: d.Grid, TG: d.TG, TGMem: d.TGMem, Order: e.o.Order, Args: map[int]emu.Arg{}}
	if len(d.FC) > 0 {
		ed.FC = map[int]string{}
		for k, v := range d.FC {
			ed.FC[k] = strconv.Itoa(int(v))
		}
	}
	for i, b := range d.Bufs {
		eb, ok := b.Buf.(emuBuffer)
		if !ok {
			return fmt.Errorf("%s: buffer(%d) is not an emulator buffer", d.Kernel, i)
		}
		ed.Args[i] = emu.Arg{Buf: eb.b, Off: b.Off}
	}
	for i, b := range d.Bytes {
		ed.Args[i] = emu.Arg{Bytes: b}
	}
	return e.m.Run(ed)
}

// Close implements Device.
func (e *Emulator) Close() error { return e.m.Close() }

// OpenDefault opens the device Selftest uses here: the emulator (which
// needs clang 16; the error says so when it is missing).
func OpenDefault(ctx context.Context, o EmulatorOptions) (Device, error) {
	if _, err := emu.Compiler(""); err != nil {
		return nil, fmt.Errorf("no Metal GPU on Linux, and the emulator cannot run: %w", err)
	}
	return NewEmulator(ctx, o)
}
