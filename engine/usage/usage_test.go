package usage

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

var testID = Identity{1, 2, 3}

func sample() *History {
	h := New(testID, 3, 8)
	for i := 0; i < 50; i++ {
		h.Token()
		h.Add(0, []int32{1, 2})
		h.Add(1, []int32{int32(i % 8), 7})
		h.Add(2, []int32{5})
	}
	h.EndTurn(0)
	return h
}

func TestRoundTrip(t *testing.T) {
	h := sample()
	path := filepath.Join(t.TempDir(), "u.bin")
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path, testID, 3, 8)
	if err != nil {
		t.Fatal(err)
	}
	if back.Turns != 1 || back.Tokens != 50*DefaultDecay || back.Count(1, 7) != h.Count(1, 7) {
		t.Fatalf("round trip: %+v", back)
	}
	if got := back.Hottest(); !slices.Equal(got[:3], []Expert{{1, 7}, {0, 1}, {0, 2}}) {
		t.Fatalf("hottest %v", got[:3])
	}
	if _, err := os.Stat(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("unexpected file")
	}
	empty, err := Load(filepath.Join(t.TempDir(), "missing"), testID, 3, 8)
	if err != nil || empty.Tokens != 0 {
		t.Fatalf("missing file: %v %+v", err, empty)
	}
}

func TestDecayHalfLife(t *testing.T) {
	h := New(testID, 1, 2)
	h.Add(0, []int32{0})
	for i := 0; i < 69; i++ {
		h.EndTurn(0)
	}
	if c := h.Count(0, 0); c < 0.49 || c > 0.51 {
		t.Fatalf("after 69 turns a count is %g of what it was", c)
	}
}

func TestRefusesOtherModelsAndDamage(t *testing.T) {
	good, _ := sample().MarshalBinary()
	flip := func(i int) []byte {
		b := slices.Clone(good)
		b[i] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		id      Identity
		l, e    int
		wantErr error
	}{
		{"other model", good, Identity{9}, 3, 8, ErrMismatch},
		{"other shape", good, testID, 4, 8, ErrMismatch},
		{"truncated", good[:len(good)-7], testID, 3, 8, ErrCorrupt},
		{"empty", nil, testID, 3, 8, ErrCorrupt},
		{"bad magic", flip(0), testID, 3, 8, ErrCorrupt},
		{"flipped count", flip(len(good) - 12), testID, 3, 8, ErrCorrupt},
		{"flipped crc", flip(len(good) - 1), testID, 3, 8, ErrCorrupt},
		{"extra bytes", append(slices.Clone(good), 0), testID, 3, 8, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(tc.data, tc.id, tc.l, tc.e); !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	good, _ := sample().MarshalBinary()
	f.Add(good)
	f.Add(good[:40])
	f.Add([]byte("STRATAUH"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Parse(data, testID, 3, 8)
		if err != nil {
			return
		}
		// Whatever parses is a valid history that encodes back the same.
		back, err := h.MarshalBinary()
		if err != nil || !slices.Equal(back, data) {
			t.Fatalf("parsed history does not encode back: %v", err)
		}
	})
}

const killChild = "STRATA_TEST_USAGE_KILL_CHILD"

// TestKilledMidSave: a process killed with SIGKILL while it saves again and
// again always leaves a file that loads (the old or the new history).
func TestKilledMidSave(t *testing.T) {
	if path := os.Getenv(killChild); path != "" {
		h := sample()
		for i := 0; ; i++ {
			h.Add(0, []int32{int32(i % 8)})
			h.EndTurn(0)
			if err := h.Save(path); err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "u.bin")
	if err := sample().Save(path); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	for round := 0; round < 5; round++ {
		cmd := exec.Command(exe, "-test.run=^TestKilledMidSave$")
		cmd.Env = append(os.Environ(), killChild+"="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+round*15) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		h, err := Load(path, testID, 3, 8)
		if err != nil {
			t.Fatalf("round %d: after SIGKILL: %v", round, err)
		}
		t.Logf("round %d: %s turns saved", round, strconv.FormatUint(h.Turns, 10))
		leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".u.bin.tmp*"))
		for _, l := range leftovers {
			os.Remove(l) // a temporary file of the killed writer is never read as the history
		}
	}
}
