package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var wordLine = regexp.MustCompile(`^\s*WORD \$0x([0-9a-f]{8}) // (.*)$`)

// TestEncodings assembles the GNU-syntax comment of every WORD in the
// generated files with binutils' aarch64 assembler and checks that it
// encodes to the same word. It is skipped where that assembler is missing
// (Debian: apt-get install binutils-aarch64-linux-gnu).
func TestEncodings(t *testing.T) {
	as, err := exec.LookPath("aarch64-linux-gnu-as")
	if err != nil {
		t.Skip("aarch64-linux-gnu-as not installed")
	}
	objdump, err := exec.LookPath("aarch64-linux-gnu-objdump")
	if err != nil {
		t.Skip("aarch64-linux-gnu-objdump not installed")
	}
	src := append(append(append(generate(), generateGemm()...), generateHalf()...), generateExp()...)
	var words []uint32
	var text strings.Builder
	text.WriteString(".arch armv8.2-a+dotprod\n")
	for _, line := range strings.Split(string(src), "\n") {
		m := wordLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		w, err := strconv.ParseUint(m[1], 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		words = append(words, uint32(w))
		fmt.Fprintf(&text, "\t%s\n", m[2])
	}
	if len(words) == 0 {
		t.Fatal("no WORD lines generated")
	}
	dir := t.TempDir()
	s, o := filepath.Join(dir, "x.s"), filepath.Join(dir, "x.o")
	if err := os.WriteFile(s, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	out, err := exec.Command(objdump, "-d", o).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	// Lines look like "   4:	4e809400 	sdot	v0.4s, v0.16b, v0.16b".
	dis := regexp.MustCompile(`^\s*[0-9a-f]+:\s+([0-9a-f]{8})\s+(.*)$`)
	var got []uint32
	var asm []string
	for _, line := range bytes.Split(out, []byte("\n")) {
		m := dis.FindSubmatch(line)
		if m == nil {
			continue
		}
		w, _ := strconv.ParseUint(string(m[1]), 16, 32)
		got = append(got, uint32(w))
		asm = append(asm, string(m[2]))
	}
	if len(got) != len(words) {
		t.Fatalf("assembled %d instructions, want %d", len(got), len(words))
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")[1:]
	bad := 0
	for i := range words {
		if got[i] != words[i] {
			bad++
			if bad <= 20 {
				t.Errorf("%q: WORD $0x%08x, binutils says 0x%08x (%s)", strings.TrimSpace(lines[i]), words[i], got[i], asm[i])
			}
		}
	}
	t.Logf("%d encodings checked", len(words))
}

// TestGeneratedFiles checks that the assembly files in engine/quant and
// engine/cpu are what this generator writes now (go generate was run after
// the last change here, and regenerating changes nothing).
func TestGeneratedFiles(t *testing.T) {
	for name, want := range map[string][]byte{
		"simd_neon_arm64.s":      generate(),
		"simd_neon_gemm_arm64.s": generateGemm(),
		"half_arm64.s":           generateHalf(),
		"../cpu/exp_arm64.s":     generateExp(),
	} {
		got, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output: in engine/quant run go generate (go run ./internal/neongen)", name)
		}
	}
}
