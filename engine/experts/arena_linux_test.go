package experts

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestArenaOnHugePages: the arena starts on a 2 MiB boundary and the
// kernel counts its mapping as eligible for transparent huge pages
// (smaps' THPeligible), so its experts are read through 2 MiB pages where
// the kernel has them (decode of the 48-layer Qwen3-30B-A3B-shaped Q4_K_M
// file under an 8 GB limit: 7.7–9.5 tok/s on 4 KiB pages, 14.6–15.3 on
// huge pages). On a kernel whose THP setting is "never" there is nothing
// to check, and the test says so.
func TestArenaOnHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off here (%q, %v)", mode, err)
	}
	const n = 5<<20 + 4096 // not a multiple of 2 MiB
	b, free, err := allocArena(n)
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	if len(b) != n || cap(b) != n {
		t.Fatalf("arena of %d bytes (cap %d), want %d", len(b), cap(b), n)
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if start%hugePage != 0 {
		t.Fatalf("arena starts at %#x, not on a 2 MiB boundary", start)
	}
	for i := range b { // writable throughout
		b[i] = byte(i)
	}
	eligible, err := thpEligible(start)
	if err != nil {
		t.Fatal(err)
	}
	if !eligible {
		t.Fatal("the arena's mapping is not eligible for transparent huge pages (MADV_HUGEPAGE not applied)")
	}
}

// thpEligible reads /proc/self/smaps for the mapping holding addr.
func thpEligible(addr uintptr) (bool, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "THPeligible:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "THPeligible:")) == "1", nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return false, fmt.Errorf("no mapping at %#x in /proc/self/smaps", addr)
}
