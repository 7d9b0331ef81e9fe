//go:build unix

package emu

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Order is the order in which the lanes of a threadgroup (and the
// dispatches between two barriers) are run: a kernel whose result depends
// on it has a race.
type Order int

// The lane orders.
const (
	Forward Order = iota
	Reverse
	Shuffled
)

func (o Order) String() string { return [...]string{"forward", "reverse", "shuffled"}[o] }

// Machine is an emulated GPU: buffers in a file that this process and the
// emulator processes map (shared memory, as on a Mac), and one emulator
// process per set of function-constant values (they are fixed when a
// process starts, as when Metal builds a pipeline). Its methods must not be
// called concurrently.
type Machine struct {
	prog    *Program
	f       *os.File
	size    int64
	bufs    []*Buffer
	procs   map[string]*proc
	Workers int           // OS threads per dispatch (0: one per CPU)
	Timeout time.Duration // per dispatch (0: DispatchTimeout)
}

// Buffer is a range of the shared file: Bytes is the memory the kernels
// see, readable and writable by the caller between dispatches.
type Buffer struct {
	id    int
	off   int64
	Bytes []byte
	m     []byte // whole mapping
}

// ID identifies the buffer in dispatches.
func (b *Buffer) ID() int { return b.id }

const page = 16384 // Apple silicon's page size (a multiple of Linux's)

// NewMachine starts an emulated GPU for the kernels of p, with its shared
// file in dir.
func NewMachine(p *Program, dir string) (*Machine, error) {
	f, err := os.CreateTemp(dir, "mslemu-mem-")
	if err != nil {
		return nil, fmt.Errorf("emulator memory: %w", err)
	}
	os.Remove(f.Name()) // the processes hold it open through /proc
	return &Machine{prog: p, f: f, procs: map[string]*proc{}}, nil
}

// Alloc returns a zeroed buffer of n bytes, page-aligned like a Metal
// buffer made with newBufferWithBytesNoCopy.
func (m *Machine) Alloc(n int) (*Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("buffer of %d bytes", n)
	}
	ln := (int64(n) + page - 1) / page * page
	if ln == 0 {
		ln = page
	}
	off := m.size
	if err := m.f.Truncate(off + ln); err != nil {
		return nil, fmt.Errorf("emulator memory: %w", err)
	}
	mm, err := syscall.Mmap(int(m.f.Fd()), off, int(ln), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("emulator memory: %w", err)
	}
	m.size += ln
	b := &Buffer{id: len(m.bufs), off: off, Bytes: mm[:n:n], m: mm}
	m.bufs = append(m.bufs, b)
	for _, p := range m.procs {
		if err := p.mapBuf(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Arg is one [[buffer(i)]] binding: a buffer at a byte offset, or (Bytes
// not nil) a small private copy as setBytes makes.
type Arg struct {
	Buf   *Buffer
	Off   int
	Bytes []byte
}

// Dispatch is one dispatchThreadgroups.
type Dispatch struct {
	Kernel   string
	FC       map[int]string // [[function_constant(i)]] values ("4", "true", "0.5")
	Grid, TG [3]uint32      // threadgroups per grid, threads per threadgroup
	Args     map[int]Arg
	TGMem    map[int]int // [[threadgroup(i)]] bytes
	Order    Order
}

// Run executes d and returns when it has finished. A kernel that fails
// (divergent barrier, deadlock) or crashes (a sanitizer report, an access
// past a buffer) returns an error naming the kernel; the machine stays
// usable.
func (m *Machine) Run(d Dispatch) error {
	if !m.prog.Has(d.Kernel) {
		return fmt.Errorf("emulator: no kernel %s", d.Kernel)
	}
	p, err := m.proc(d.FC)
	if err != nil {
		return err
	}
	var w strings.Builder
	fmt.Fprintf(&w, "run %s %d %d %d %d %d %d %d %d", d.Kernel, d.Grid[0], d.Grid[1], d.Grid[2],
		d.TG[0], d.TG[1], d.TG[2], d.Order, m.Workers)
	for _, i := range sortedKeys(d.Args) {
		a := d.Args[i]
		switch {
		case a.Bytes != nil:
			fmt.Fprintf(&w, " c:%d:%s", i, hex.EncodeToString(a.Bytes))
		case a.Buf != nil:
			fmt.Fprintf(&w, " b:%d:%d:%d", i, a.Buf.id, a.Off)
		default:
			return fmt.Errorf("%s: buffer(%d) bound to nothing", d.Kernel, i)
		}
	}
	for _, i := range sortedKeys(d.TGMem) {
		fmt.Fprintf(&w, " t:%d:%d", i, d.TGMem[i])
	}
	if err := p.call(w.String()); err != nil {
		if p.dead {
			delete(m.procs, p.key)
		}
		return fmt.Errorf("%s: %w", d.Kernel, err)
	}
	return nil
}

// Close stops the emulator processes and unmaps the buffers.
func (m *Machine) Close() error {
	for k, p := range m.procs {
		p.stop()
		delete(m.procs, k)
	}
	for _, b := range m.bufs {
		syscall.Munmap(b.m)
		b.Bytes, b.m = nil, nil
	}
	m.bufs = nil
	return m.f.Close()
}

func sortedKeys[V any](mp map[int]V) []int {
	ks := make([]int, 0, len(mp))
	for k := range mp {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

type proc struct {
	key     string
	cmd     *exec.Cmd
	in      io.WriteCloser
	replies chan string // lines from the process; closed at its end
	stderr  *lockedBuf
	dead    bool
	m       *Machine
}

// DispatchTimeout bounds one command to an emulator process: a kernel
// that never returns (an endless loop) fails its dispatch instead of
// hanging the caller.
const DispatchTimeout = 5 * time.Minute

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (m *Machine) proc(fc map[int]string) (*proc, error) {
	var parts []string
	for _, i := range sortedKeys(fc) {
		parts = append(parts, fmt.Sprintf("%d=%s", i, fc[i]))
	}
	key := strings.Join(parts, ",")
	if p := m.procs[key]; p != nil {
		return p, nil
	}
	cmd := exec.Command(m.prog.Bin, fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), m.f.Fd()))
	env := os.Environ()
	if sym, err := exec.LookPath(m.prog.symbolizer); err == nil {
		env = append(env, "ASAN_SYMBOLIZER_PATH="+sym)
	}
	cmd.Env = append(env, "MSLEMU_FC="+key,
		"ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0:abort_on_error=0",
		"UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{key: key, cmd: cmd, in: in, replies: make(chan string, 1), stderr: &lockedBuf{}, m: m}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start emulator: %w", err)
	}
	go func() {
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(p.replies)
				return
			}
			p.replies <- line
		}
	}()
	for _, b := range m.bufs {
		if err := p.mapBuf(b); err != nil {
			p.stop()
			return nil, err
		}
	}
	m.procs[key] = p
	return p, nil
}

func (p *proc) mapBuf(b *Buffer) error {
	return p.call(fmt.Sprintf("buf %d %d %d", b.id, b.off, len(b.Bytes)))
}

func (p *proc) call(line string) error {
	if p.dead {
		return fmt.Errorf("emulator process has exited")
	}
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		return p.died()
	}
	timeout := p.m.Timeout
	if timeout <= 0 {
		timeout = DispatchTimeout
	}
	var reply string
	select {
	case line, ok := <-p.replies:
		if !ok {
			return p.died()
		}
		reply = line
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		err := p.died()
		return fmt.Errorf("no answer after %v (a kernel that never ends?): %w", timeout, err)
	}
	reply = strings.TrimSpace(reply)
	if reply == "ok" {
		return nil
	}
	return fmt.Errorf("%s", strings.TrimPrefix(reply, "err "))
}

// died reaps a crashed emulator process and returns its report.
func (p *proc) died() error {
	p.dead = true
	p.in.Close()
	werr := p.cmd.Wait()
	p.stderr.mu.Lock()
	msg := strings.TrimSpace(p.stderr.b.String())
	p.stderr.mu.Unlock()
	return fmt.Errorf("emulator crashed (%v):\n%s", werr, msg)
}

func (p *proc) stop() {
	if p.dead {
		return
	}
	p.dead = true
	p.in.Close()
	p.cmd.Wait()
}
