//go:build linux

package emu

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	progOnce sync.Map // sanitize bool -> *progResult
)

type progResult struct {
	once sync.Once
	p    *Program
	err  error
}

func bugsProgram(t *testing.T, sanitize bool) *Program {
	t.Helper()
	v, _ := progOnce.LoadOrStore(sanitize, &progResult{})
	r := v.(*progResult)
	r.once.Do(func() {
		b, err := os.ReadFile("testdata/bugs.metal")
		if err != nil {
			r.err = err
			return
		}
		r.p, r.err = Compile(context.Background(), []Source{{Name: "bugs.metal", Text: b}}, BuildOptions{Sanitize: sanitize})
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.p
}

func machine(t *testing.T, sanitize bool) *Machine {
	t.Helper()
	m, err := NewMachine(bugsProgram(t, sanitize), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func floats(b []byte) []float32 {
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return f
}

func putFloats(b []byte, f []float32) {
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
}

func alloc(t *testing.T, m *Machine, n int) *Buffer {
	t.Helper()
	b, err := m.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A barrier between the threadgroup-memory write and the cross-lane read
// gives the right answer in every lane order; without it the answer is
// wrong.
func TestMissingBarrier(t *testing.T) {
	m := machine(t, false)
	const n = 64
	in, out := alloc(t, m, 4*n*2), alloc(t, m, 4*n*2)
	src := make([]float32, 2*n)
	for i := range src {
		src[i] = float32(i + 1)
	}
	putFloats(in.Bytes, src)
	for _, order := range []Order{Forward, Reverse, Shuffled} {
		for _, k := range []string{"k_reverse", "k_reverse_nobarrier"} {
			clear(out.Bytes)
			err := m.Run(Dispatch{Kernel: k, Grid: [3]uint32{2, 1, 1}, TG: [3]uint32{n, 1, 1},
				Args: map[int]Arg{0: {Buf: in}, 1: {Buf: out}}, TGMem: map[int]int{0: 4 * n}, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			ok := true
			for i, v := range floats(out.Bytes) {
				g, l := i/n, i%n
				if v != src[g*n+n-1-l] {
					ok = false
				}
			}
			if want := k == "k_reverse"; ok != want {
				t.Errorf("%s order %s: correct=%v, want %v", k, order, ok, want)
			}
		}
	}
}

func TestBadKernelsFail(t *testing.T) {
	m := machine(t, false)
	in, out := alloc(t, m, 4*64), alloc(t, m, 4*64)
	for _, tc := range []struct {
		kernel, want string
	}{
		{"k_early_return", "already returned"},
		{"k_divergent_simd", "divergent"},
	} {
		err := m.Run(Dispatch{Kernel: tc.kernel, Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{32, 1, 1},
			Args: map[int]Arg{0: {Buf: in}, 1: {Buf: out}}, TGMem: map[int]int{0: 4 * 32}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one containing %q", tc.kernel, err, tc.want)
		}
	}
	// The machine is still usable after a failed dispatch.
	if err := m.Run(Dispatch{Kernel: "k_fc", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{4, 1, 1},
		Args: map[int]Arg{0: {Buf: out}}}); err != nil {
		t.Fatal(err)
	}
	m.Timeout = 2 * time.Second
	if err := m.Run(Dispatch{Kernel: "k_forever", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{1, 1, 1},
		Args: map[int]Arg{0: {Buf: out}}}); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("endless kernel: err %v", err)
	}
	clear(out.Bytes)
	if err := m.Run(Dispatch{Kernel: "no_such", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{1, 1, 1}}); err == nil {
		t.Error("unknown kernel: no error")
	}
	if err := m.Run(Dispatch{Kernel: "k_fc", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{2048, 1, 1},
		Args: map[int]Arg{0: {Buf: out}}}); err == nil {
		t.Error("2048 threads per threadgroup: no error")
	}
}

func TestSimdAndFunctionConstants(t *testing.T) {
	m := machine(t, false)
	in, out := alloc(t, m, 4*64), alloc(t, m, 4*128)
	src := make([]float32, 64)
	for i := range src {
		src[i] = float32((i*37)%64) - 20
	}
	putFloats(in.Bytes, src)
	for _, order := range []Order{Forward, Reverse, Shuffled} {
		if err := m.Run(Dispatch{Kernel: "k_simd", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{64, 1, 1},
			Args: map[int]Arg{0: {Buf: in}, 1: {Buf: out}}, Order: order}); err != nil {
			t.Fatal(err)
		}
		got := floats(out.Bytes)
		for sg := 0; sg < 2; sg++ {
			var s, mx float32 = 0, -1e9
			for _, v := range src[32*sg : 32*sg+32] {
				s += v
				mx = max(mx, v)
			}
			if got[3*sg] != s || got[3*sg+1] != mx || got[3*sg+2] != src[32*sg+3] {
				t.Errorf("order %s simdgroup %d: sum,max,bcast = %v, want %v %v %v", order, sg, got[3*sg:3*sg+3], s, mx, src[32*sg+3])
			}
		}
		for i := 0; i < 64; i++ {
			if got[64+i] != src[i^1] {
				t.Fatalf("order %s: shuffle_xor lane %d = %v, want %v", order, i, got[64+i], src[i^1])
			}
		}
	}
	for _, tc := range []struct {
		fc   map[int]string
		want int32
	}{{nil, 2}, {map[int]string{7: "5"}, 5}} {
		if err := m.Run(Dispatch{Kernel: "k_fc", FC: tc.fc, Grid: [3]uint32{2, 1, 1}, TG: [3]uint32{8, 1, 1},
			Args: map[int]Arg{0: {Buf: out}}}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 16; i++ {
			if got := int32(binary.LittleEndian.Uint32(out.Bytes[4*i:])); got != tc.want*int32(i) {
				t.Fatalf("fc %v: out[%d] = %d, want %d", tc.fc, i, got, tc.want*int32(i))
			}
		}
	}
}

// The sanitized build reports a read one past a buffer's end and a
// misaligned vector load, with the .metal line.
func TestSanitizers(t *testing.T) {
	m := machine(t, true)
	in, out := alloc(t, m, 4*32), alloc(t, m, 4*32)
	err := m.Run(Dispatch{Kernel: "k_oob", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{32, 1, 1},
		Args: map[int]Arg{0: {Buf: in}, 1: {Buf: out}}})
	if err == nil || !strings.Contains(err.Error(), "AddressSanitizer") || !strings.Contains(err.Error(), "bugs.metal:") {
		t.Errorf("out-of-bounds read: err %v, want an AddressSanitizer report naming bugs.metal", err)
	}
	err = m.Run(Dispatch{Kernel: "k_misaligned", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{4, 1, 1},
		Args: map[int]Arg{0: {Buf: in}, 1: {Buf: out}}})
	if err == nil || !strings.Contains(err.Error(), "misaligned") {
		t.Errorf("misaligned load: err %v, want a UBSan report", err)
	}
	// A correct kernel still runs after the crashes (a new process).
	if err := m.Run(Dispatch{Kernel: "k_fc", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{32, 1, 1},
		Args: map[int]Arg{0: {Buf: out}}}); err != nil {
		t.Fatal(err)
	}
}

func TestLint(t *testing.T) {
	bad, err := os.ReadFile("testdata/lint_bad.metal")
	if err != nil {
		t.Fatal(err)
	}
	err = Lint("lint_bad.metal", string(bad))
	if err == nil {
		t.Fatal("no lint errors")
	}
	for _, want := range []string{
		`lint_bad.metal:2: #include "other.h"`,
		`lint_bad.metal:5: program-scope variable "device float * g_ptr"`,
		`lint_bad.metal:6: program-scope variable "float g_counter = 0"`,
		`lint_bad.metal:9: threadgroup variable declared inside a function`,
		`lint_bad.metal:10: static variable inside a function`,
		`lint_bad.metal:15: textures and samplers`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lint errors lack %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 6 {
		t.Errorf("%d lint errors, want 6:\n%v", n, err)
	}
	ok, err := os.ReadFile("testdata/lint_ok.metal")
	if err != nil {
		t.Fatal(err)
	}
	if err := Lint("lint_ok.metal", string(ok)); err != nil {
		t.Errorf("correct file flagged: %v", err)
	}
	if _, err := Compile(context.Background(), []Source{{Name: "lint_bad.metal", Text: bad}}, BuildOptions{}); err == nil || !strings.Contains(err.Error(), "lint") {
		t.Errorf("Compile of a file that fails lint: err %v", err)
	}
}

// The correct lint file also compiles and runs.
func TestLintOKRuns(t *testing.T) {
	src, err := os.ReadFile("testdata/lint_ok.metal")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(context.Background(), []Source{{Name: "lint_ok.metal", Text: src}}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMachine(p, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in, out := alloc(t, m, 16), alloc(t, m, 16)
	putFloats(in.Bytes, []float32{1, 2, 3, 4})
	if err := m.Run(Dispatch{Kernel: "k_ok", Grid: [3]uint32{1, 1, 1}, TG: [3]uint32{4, 1, 1},
		Args: map[int]Arg{0: {Buf: in}, 1: {Buf: out}}, TGMem: map[int]int{0: 16}, Order: Shuffled}); err != nil {
		t.Fatal(err)
	}
	// sh = 2*in + 1 + 2 = {5,7,9,11}; out[t] = sh[3-t] + sh[0]
	want := []float32{16, 14, 12, 10}
	for i, v := range floats(out.Bytes) {
		if v != want[i] {
			t.Errorf("out[%d] = %v, want %v", i, v, want[i])
		}
	}
}
