package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/bits"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-llm/strata/internal/llamasrc"
)

// iqTableBytes returns each i-quant table as its little-endian bytes (the
// memory image ggml reads), by ggml's name.
func iqTableBytes() map[string][]byte {
	le := func(vals []uint64, size int) []byte {
		var b []byte
		for _, v := range vals {
			for i := range size {
				b = append(b, byte(v>>(8*i)))
			}
		}
		return b
	}
	u8 := func(t []uint8) []uint64 {
		var v []uint64
		for _, x := range t {
			v = append(v, uint64(x))
		}
		return v
	}
	var ksigns, grid3, kvals []uint64
	ksigns = u8(ksignsIQ2XS[:])
	for _, x := range iq3xxsGrid {
		grid3 = append(grid3, uint64(x))
	}
	for _, x := range kvaluesIQ4NL {
		kvals = append(kvals, uint64(uint8(x)))
	}
	var grid3s, fp4 []uint64
	for _, x := range iq3sGrid {
		grid3s = append(grid3s, uint64(x))
	}
	for _, x := range kvaluesFP4 {
		fp4 = append(fp4, uint64(uint8(x)))
	}
	return map[string][]byte{
		"kmask_iq2xs":   le(u8(kmaskIQ2XS[:]), 1),
		"ksigns_iq2xs":  le(ksigns, 1),
		"ksigns64":      le(ksigns64[:], 8),
		"iq2xxs_grid":   le(iq2xxsGrid[:], 8),
		"iq2xs_grid":    le(iq2xsGrid[:], 8),
		"iq3xxs_grid":   le(grid3, 4),
		"kvalues_iq4nl": le(kvals, 1),
		"iq2s_grid":     le(iq2sGrid[:], 8),
		"iq3s_grid":     le(grid3s, 4),
		"iq1s_grid":     le(iq1sGrid[:], 8),
		"kvalues_fp4":   le(fp4, 1),
	}
}

// TestIQTablesChecksum pins the tables to SHA-256 sums of their
// little-endian bytes, computed independently (with Python's struct and
// hashlib) from llama.cpp's ggml/src/ggml-common.h.
func TestIQTablesChecksum(t *testing.T) {
	want := map[string]string{
		"kmask_iq2xs":   "5ac9831b2e30eb285ef34f8501620f878432d5c04331ad1ae47f977a83ba41a5",
		"ksigns_iq2xs":  "a76742a603f8beca5212ecce0f1f02f11a4887fd2f7c8b15aca0ea3eb3380c31",
		"ksigns64":      "6ca8598509cc63406eaece40cff6b60198f6fa1e0dff261de7bd8d73bfed770c",
		"iq2xxs_grid":   "05826b5d3e472a3a78f196be62ac78acf81df0f909626e12ab9fa2a5d490dd54",
		"iq2xs_grid":    "06e47aaca60b4dc1d9b5a3f34540437058a6b142b4d7a59d5ded769b4d1bf1de",
		"iq3xxs_grid":   "46e35f5a997efdee6c99ce57854c8a0d4f0ff8ca57e5e8a60c0793ea580acf5d",
		"kvalues_iq4nl": "61aa47540aa024b5d6ddaa839b84ffe59f3d5a349af5c6c7ffcb5e0474b46163",
		"iq2s_grid":     "e1aa1473412b0552c2174c30ef22ab4073f6a181b85a17056e8249bd2932fd88",
		"iq3s_grid":     "bd1af4945a1717c65610b0284e4628b9a1ba3b306fae3a06f6e5f597356e349f",
		"iq1s_grid":     "07540ffc1aeaf6ad4d97e96b0fcc765aae39671d4ae4a27bbd0e796fde167c6a",
		"kvalues_fp4":   "adf76b672d47eb7fc0afd4db132d548d59d3190aa0ad118fdbf569d5fd478f97",
	}
	for name, b := range iqTableBytes() {
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want[name] {
			t.Errorf("%s: sha256 %s, want %s", name, got, want[name])
		}
	}
}

// TestIQTablesStructure checks the properties the kernels rely on.
func TestIQTablesStructure(t *testing.T) {
	for j, m := range kmaskIQ2XS {
		if m != 1<<j {
			t.Errorf("kmask_iq2xs[%d] = %d", j, m)
		}
	}
	// ksigns_iq2xs[i] is i with an eighth bit that makes the popcount even.
	for i, s := range ksignsIQ2XS {
		if int(s&127) != i || bits.OnesCount8(s)%2 != 0 {
			t.Errorf("ksigns_iq2xs[%d] = %#x", i, s)
		}
		// ksigns64[i] has byte j 0xff where bit j of ksigns_iq2xs[i] is set.
		for j := range 8 {
			if want := uint8(0xff * (s >> j & 1)); uint8(ksigns64[i]>>(8*j)) != want {
				t.Errorf("ksigns64[%d] byte %d = %#x, want %#x", i, j, uint8(ksigns64[i]>>(8*j)), want)
			}
		}
	}
	checkGrid := func(name string, entries []uint64, width int, allowed string) {
		seen := map[uint64]bool{}
		for i, e := range entries {
			if seen[e] {
				t.Errorf("%s[%d] = %#x repeats", name, i, e)
			}
			seen[e] = true
			for j := range width {
				if v := byte(e >> (8 * j)); !strings.ContainsRune(allowed, rune(v)) {
					t.Errorf("%s[%d] byte %d = %d", name, i, j, v)
				}
			}
		}
	}
	checkGrid("iq2xxs_grid", iq2xxsGrid[:], 8, "\x08\x19\x2b")
	checkGrid("iq2xs_grid", iq2xsGrid[:], 8, "\x08\x19\x2b")
	var g3 []uint64
	for _, e := range iq3xxsGrid {
		g3 = append(g3, uint64(e))
	}
	checkGrid("iq3xxs_grid", g3, 4, "\x04\x0c\x14\x1c\x24\x2c\x34\x3e")
	for i := 1; i < len(kvaluesIQ4NL); i++ {
		if kvaluesIQ4NL[i] <= kvaluesIQ4NL[i-1] {
			t.Errorf("kvalues_iq4nl not increasing at %d", i)
		}
	}
}

// TestIQTablesMatchHeader compares the tables with llama.cpp's
// ggml-common.h from the oracle's source bundle (internal/llamasrc). Without
// the bundle it skips, except in CI (CI=true), where it fails.
func TestIQTablesMatchHeader(t *testing.T) {
	if _, err := llamasrc.Bundle("."); errors.Is(err, llamasrc.ErrNoBundle) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	src, err := llamasrc.ReadFile(t.Context(), "ggml/src/ggml-common.h")
	if err != nil {
		t.Fatalf("llama.cpp header: %v", err)
	}
	widths := map[string]int{"kmask_iq2xs": 1, "ksigns_iq2xs": 1, "ksigns64": 8, "iq2xxs_grid": 8, "iq2xs_grid": 8, "iq3xxs_grid": 4, "kvalues_iq4nl": 1,
		"iq2s_grid": 8, "iq3s_grid": 4, "iq1s_grid": 8, "kvalues_fp4": 1}
	for name, b := range iqTableBytes() {
		re := regexp.MustCompile(`GGML_TABLE_BEGIN\(\w+, ` + name + `, \w+\)([^G]*)GGML_TABLE_END`)
		m := re.FindSubmatch(src)
		if m == nil {
			t.Errorf("%s not found in header", name)
			continue
		}
		var hb []byte
		for _, f := range strings.Split(string(m[1]), ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			v, err := strconv.ParseInt(f, 0, 64)
			if err != nil {
				u, uerr := strconv.ParseUint(f, 0, 64)
				if uerr != nil {
					t.Fatalf("%s: %v", name, err)
				}
				v = int64(u)
			}
			hb = binary.LittleEndian.AppendUint64(hb, uint64(v))[:len(hb)+widths[name]]
		}
		if string(hb) != string(b) {
			t.Errorf("%s differs from the header (%d vs %d bytes)", name, len(b), len(hb))
		}
	}
}
