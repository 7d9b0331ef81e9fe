//go:build darwin

package metal

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"

	"github.com/strata-llm/strata/metal/internal/emu"
)

// Metal constants (MTLResourceOptions, MTLDataType, MTLDispatchType,
// MTLBarrierScope, MTLCommandBufferStatus).
const (
	mtlStorageModeShared   = 0
	mtlDataTypeInt         = 29
	mtlDispatchConcurrent  = 1
	mtlBarrierScopeBuffers = 1
	mtlStatusCompleted     = 4
	mtlStatusError         = 5
	mtlLanguageVersion3_0  = 3<<16 | 0
	handshakeSpinBeforeNap = 2 * time.Millisecond
)

type mtlSize struct{ W, H, D uint64 }

var (
	loadOnce     sync.Once
	loadErr      error
	createDevice func() objc.ID

	selAlloc, selInit, selRelease, selDrain                           objc.SEL
	selStringWithUTF8, selUTF8String, selLocalizedDescription         objc.SEL
	selName, selNewCommandQueue, selNewLibrary, selNewFunctionConsts  objc.SEL
	selSetConstant, selNewPipeline, selMaxThreads                     objc.SEL
	selNewBuffer, selNewBufferNoCopy, selContents                     objc.SEL
	selCommandBuffer, selComputeEncoderType, selSetPipeline           objc.SEL
	selSetBuffer, selSetBytes, selSetTGMem, selDispatch, selBarrier   objc.SEL
	selEndEncoding, selCommit, selWaitCompleted, selStatus, selError  objc.SEL
	selNewSharedEvent, selSignaledValue, selSetSignaledValue          objc.SEL
	selEncodeSignal, selEncodeWait, selSetLanguageVersion, selSetFast objc.SEL
	selMaxBufferLength                                                objc.SEL
)

func loadMetal() error {
	loadOnce.Do(func() {
		if _, err := purego.Dlopen("/System/Library/Frameworks/Foundation.framework/Foundation", purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
			loadErr = fmt.Errorf("load Foundation: %w", err)
			return
		}
		lib, err := purego.Dlopen("/System/Library/Frameworks/Metal.framework/Metal", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			loadErr = fmt.Errorf("load Metal: %w", err)
			return
		}
		purego.RegisterLibFunc(&createDevice, lib, "MTLCreateSystemDefaultDevice")
		for _, s := range []struct {
			dst  *objc.SEL
			name string
		}{
			{&selAlloc, "alloc"}, {&selInit, "init"}, {&selRelease, "release"}, {&selDrain, "drain"},
			{&selStringWithUTF8, "stringWithUTF8String:"}, {&selUTF8String, "UTF8String"},
			{&selLocalizedDescription, "localizedDescription"}, {&selName, "name"},
			{&selNewCommandQueue, "newCommandQueue"}, {&selNewLibrary, "newLibraryWithSource:options:error:"},
			{&selNewFunctionConsts, "newFunctionWithName:constantValues:error:"},
			{&selSetConstant, "setConstantValue:type:atIndex:"},
			{&selNewPipeline, "newComputePipelineStateWithFunction:error:"},
			{&selMaxThreads, "maxTotalThreadsPerThreadgroup"},
			{&selNewBuffer, "newBufferWithLength:options:"},
			{&selNewBufferNoCopy, "newBufferWithBytesNoCopy:length:options:deallocator:"},
			{&selContents, "contents"}, {&selCommandBuffer, "commandBuffer"},
			{&selComputeEncoderType, "computeCommandEncoderWithDispatchType:"},
			{&selSetPipeline, "setComputePipelineState:"}, {&selSetBuffer, "setBuffer:offset:atIndex:"},
			{&selSetBytes, "setBytes:length:atIndex:"}, {&selSetTGMem, "setThreadgroupMemoryLength:atIndex:"},
			{&selDispatch, "dispatchThreadgroups:threadsPerThreadgroup:"}, {&selBarrier, "memoryBarrierWithScope:"},
			{&selEndEncoding, "endEncoding"}, {&selCommit, "commit"}, {&selWaitCompleted, "waitUntilCompleted"},
			{&selStatus, "status"}, {&selError, "error"}, {&selNewSharedEvent, "newSharedEvent"},
			{&selSignaledValue, "signaledValue"}, {&selSetSignaledValue, "setSignaledValue:"},
			{&selEncodeSignal, "encodeSignalEvent:value:"}, {&selEncodeWait, "encodeWaitForEvent:value:"},
			{&selSetLanguageVersion, "setLanguageVersion:"}, {&selSetFast, "setFastMathEnabled:"},
			{&selMaxBufferLength, "maxBufferLength"},
		} {
			*s.dst = objc.RegisterName(s.name)
		}
	})
	return loadErr
}

func nsString(s string) objc.ID {
	return objc.ID(objc.GetClass("NSString")).Send(selStringWithUTF8, s)
}

func goString(ns objc.ID) string {
	if ns == 0 {
		return ""
	}
	return objc.Send[string](ns, selUTF8String)
}

func nsError(e objc.ID) error {
	if e == 0 {
		return fmt.Errorf("unknown Metal error")
	}
	return fmt.Errorf("%s", goString(e.Send(selLocalizedDescription)))
}

// EmulatorOptions are accepted for symmetry with Linux; a Mac uses its GPU.
type EmulatorOptions struct {
	Sanitize bool
}

// GPU is the Metal device (Apple silicon).
type GPU struct {
	dev, queue, event objc.ID
	name              string
	libs              []objc.ID
	where             map[string]int // kernel → library
	mu                sync.Mutex     // one Run at a time: one spinning waiter at most
	pipes             map[string]pipeline
	seq               uint64 // shared event value
	bufs              []objc.ID
	maxBuf            int // the device's maxBufferLength
}

type pipeline struct {
	state objc.ID
	max   int
}

type gpuBuffer struct {
	id   objc.ID
	mem  []byte
	base int // offset of mem in the wrapped pages (no-copy buffers)
}

func (b *gpuBuffer) Bytes() []byte { return b.mem }

func (b *gpuBuffer) baseOffset() int { return b.base }

// NewGPU opens the system's default Metal device and compiles the
// kernels from source (newLibraryWithSource, one library per file).
func NewGPU() (*GPU, error) {
	if err := loadMetal(); err != nil {
		return nil, err
	}
	dev := createDevice()
	if dev == 0 {
		return nil, fmt.Errorf("no Metal device")
	}
	g := &GPU{dev: dev, name: goString(dev.Send(selName)), where: map[string]int{}, pipes: map[string]pipeline{}}
	g.maxBuf = int(objc.Send[uint64](dev, selMaxBufferLength))
	g.queue = dev.Send(selNewCommandQueue)
	g.event = dev.Send(selNewSharedEvent)
	if g.queue == 0 || g.event == 0 {
		return nil, fmt.Errorf("%s: no command queue or shared event", g.name)
	}
	opts := objc.ID(objc.GetClass("MTLCompileOptions")).Send(selAlloc).Send(selInit)
	opts.Send(selSetLanguageVersion, uint64(mtlLanguageVersion3_0))
	opts.Send(selSetFast, true)
	defer opts.Send(selRelease)
	for _, s := range Sources() {
		var errID objc.ID
		lib := dev.Send(selNewLibrary, nsString(string(s.Text)), opts, unsafe.Pointer(&errID))
		if lib == 0 {
			return nil, fmt.Errorf("compile %s: %w", s.Name, nsError(errID))
		}
		for _, k := range emu.Kernels(string(s.Text)) {
			g.where[k] = len(g.libs)
		}
		g.libs = append(g.libs, lib)
	}
	return g, nil
}

// Name implements Device.
func (g *GPU) Name() string { return g.name }

// MaxBufferLength is the device's largest buffer: the Backend binds an
// expert arena through parts of this size (AllocHost).
func (g *GPU) MaxBufferLength() int { return g.maxBuf }

// Alloc implements Device: a shared-storage buffer.
func (g *GPU) Alloc(n int) (Buffer, error) {
	n = max(n, 16)
	id := g.dev.Send(selNewBuffer, uint64(n), uint64(mtlStorageModeShared))
	if id == 0 {
		return nil, fmt.Errorf("%s: no buffer of %d bytes", g.name, n)
	}
	p := objc.Send[unsafe.Pointer](id, selContents)
	g.bufs = append(g.bufs, id)
	return &gpuBuffer{id: id, mem: unsafe.Slice((*byte)(p), n)}, nil
}

// NoCopy implements NoCopier: the pages holding b (a file's mmap, memory
// from mmap) are wrapped with newBufferWithBytesNoCopy and b is bound at
// its offset in them. b must not be Go heap memory.
func (g *GPU) NoCopy(b []byte) (BufRef, error) {
	if len(b) == 0 {
		return BufRef{}, fmt.Errorf("no-copy buffer of 0 bytes")
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	base := p &^ (BufferAlignment - 1)
	end := (p + uintptr(len(b)) + BufferAlignment - 1) &^ (BufferAlignment - 1)
	id := g.dev.Send(selNewBufferNoCopy, unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), -int(p-base)), uint64(end-base), uint64(mtlStorageModeShared), objc.ID(0))
	if id == 0 {
		return BufRef{}, fmt.Errorf("%s: newBufferWithBytesNoCopy of %d bytes failed", g.name, end-base)
	}
	g.bufs = append(g.bufs, id)
	return BufRef{Buf: &gpuBuffer{id: id, mem: b, base: int(p - base)}, Off: int(p - base)}, nil
}

func (g *GPU) pipeline(kernel string, fc map[int]int32) (pipeline, error) {
	key := kernel
	for _, i := range sortedKeys(fc) {
		key += fmt.Sprintf(",%d=%d", i, fc[i])
	}
	if p, ok := g.pipes[key]; ok {
		return p, nil
	}
	li, ok := g.where[kernel]
	if !ok {
		return pipeline{}, fmt.Errorf("no kernel %s", kernel)
	}
	vals := objc.ID(objc.GetClass("MTLFunctionConstantValues")).Send(selAlloc).Send(selInit)
	defer vals.Send(selRelease)
	for _, i := range sortedKeys(fc) {
		v := fc[i]
		vals.Send(selSetConstant, unsafe.Pointer(&v), uint64(mtlDataTypeInt), uint64(i))
	}
	var errID objc.ID
	fn := g.libs[li].Send(selNewFunctionConsts, nsString(kernel), vals, unsafe.Pointer(&errID))
	if fn == 0 {
		return pipeline{}, fmt.Errorf("function %s: %w", kernel, nsError(errID))
	}
	defer fn.Send(selRelease)
	st := g.dev.Send(selNewPipeline, fn, unsafe.Pointer(&errID))
	if st == 0 {
		return pipeline{}, fmt.Errorf("pipeline %s: %w", kernel, nsError(errID))
	}
	p := pipeline{state: st, max: int(objc.Send[uint64](st, selMaxThreads))}
	g.pipes[key] = p
	return p, nil
}

// MaxThreads implements Device.
func (g *GPU) MaxThreads(kernel string, fc map[int]int32) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, err := g.pipeline(kernel, fc)
	return p.max, err
}

// Run implements Device: c is encoded into one command buffer (one
// concurrent compute encoder between handshakes, memory barriers where c
// has them), committed, and each handshake waited for by this goroutine
// spinning on the shared event (never more than one spinner: Runs are
// serialised). A Signal encodes the event's signal, its Resume the wait
// for the host's "go on": the dispatches between run while the host works.
func (g *GPU) Run(ctx context.Context, c *Commands) error {
	if c.err != nil {
		return c.err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	runtime.LockOSThread() // the autorelease pool is per thread
	defer runtime.UnlockOSThread()
	pool := objc.ID(objc.GetClass("NSAutoreleasePool")).Send(selAlloc).Send(selInit)
	defer pool.Send(selDrain)

	// Pipelines first: a failure leaves nothing half-encoded.
	pipes := make([]pipeline, len(c.items))
	for i, it := range c.items {
		if it.d == nil {
			continue
		}
		p, err := g.pipeline(it.d.Kernel, it.d.FC)
		if err != nil {
			return err
		}
		if n := int(it.d.TG[0] * it.d.TG[1] * it.d.TG[2]); n > p.max {
			return fmt.Errorf("%s: %d threads per threadgroup, the pipeline allows %d", it.d.Kernel, n, p.max)
		}
		pipes[i] = p
	}
	cb := g.queue.Send(selCommandBuffer)
	if cb == 0 {
		return fmt.Errorf("%s: no command buffer", g.name)
	}
	type wait struct {
		signal, resume uint64
		fn             func(context.Context) error
	}
	var waits []wait
	enc := cb.Send(selComputeEncoderType, uint64(mtlDispatchConcurrent))
	// resume makes the GPU wait for "go on" from the open Signal's host
	// function before the dispatches after it.
	open := false
	resume := func() {
		if !open {
			return
		}
		open = false
		enc.Send(selEndEncoding)
		cb.Send(selEncodeWait, g.event, waits[len(waits)-1].resume)
		enc = cb.Send(selComputeEncoderType, uint64(mtlDispatchConcurrent))
	}
	for i, it := range c.items {
		switch {
		case it.d != nil:
			d := it.d
			enc.Send(selSetPipeline, pipes[i].state)
			for _, k := range sortedKeys(d.Bufs) {
				b := d.Bufs[k]
				gb, ok := b.Buf.(*gpuBuffer)
				if !ok {
					enc.Send(selEndEncoding)
					return fmt.Errorf("%s: buffer(%d) is not a Metal buffer", d.Kernel, k)
				}
				enc.Send(selSetBuffer, gb.id, uint64(b.Off), uint64(k))
			}
			for _, k := range sortedKeys(d.Bytes) {
				b := d.Bytes[k]
				enc.Send(selSetBytes, unsafe.Pointer(unsafe.SliceData(b)), uint64(len(b)), uint64(k))
			}
			for _, k := range sortedKeys(d.TGMem) {
				enc.Send(selSetTGMem, uint64(d.TGMem[k]), uint64(k))
			}
			enc.Send(selDispatch, mtlSize{uint64(d.Grid[0]), uint64(d.Grid[1]), uint64(d.Grid[2])},
				mtlSize{uint64(d.TG[0]), uint64(d.TG[1]), uint64(d.TG[2])})
		case it.host != nil:
			// GPU: signal "reached" (outside an encoder); the dispatches
			// up to the Resume run while the host works.
			resume()
			enc.Send(selEndEncoding)
			g.seq += 2
			w := wait{signal: g.seq - 1, resume: g.seq, fn: it.host}
			cb.Send(selEncodeSignal, g.event, w.signal)
			waits = append(waits, w)
			open = true
			enc = cb.Send(selComputeEncoderType, uint64(mtlDispatchConcurrent))
		case it.resume:
			resume()
		case it.barrier:
			enc.Send(selBarrier, uint64(mtlBarrierScopeBuffers))
		}
	}
	resume()
	enc.Send(selEndEncoding)
	cb.Send(selCommit)
	var hostErr error
	for _, w := range waits {
		if hostErr == nil {
			hostErr = g.spin(ctx, w.signal)
		}
		if hostErr == nil {
			hostErr = w.fn(ctx)
		}
		// Always let the GPU go on, so the command buffer completes.
		g.event.Send(selSetSignaledValue, w.resume)
	}
	cb.Send(selWaitCompleted)
	if st := objc.Send[uint64](cb, selStatus); st != mtlStatusCompleted {
		return fmt.Errorf("%s: command buffer status %d: %w", g.name, st, nsError(cb.Send(selError)))
	}
	return hostErr
}

// spin waits for the shared event to reach v by spinning (a handshake
// costs ~60 µs this way against ~190 µs for a passive wait); after a
// while without progress it naps between polls, so a stalled GPU does not
// hold a core.
func (g *GPU) spin(ctx context.Context, v uint64) error {
	start := time.Now()
	for i := 0; ; i++ {
		if objc.Send[uint64](g.event, selSignaledValue) >= v {
			return nil
		}
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if time.Since(start) > handshakeSpinBeforeNap {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
}

// Close implements Device.
func (g *GPU) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.pipes {
		p.state.Send(selRelease)
	}
	for _, b := range g.bufs {
		b.Send(selRelease)
	}
	for _, l := range g.libs {
		l.Send(selRelease)
	}
	g.event.Send(selRelease)
	g.queue.Send(selRelease)
	g.pipes, g.bufs, g.libs = nil, nil, nil
	return nil
}
