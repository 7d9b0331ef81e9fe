package download

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/10", "bytes 5-9/*", "bytes -1-2/3", "bytes 0-0/0", "bits 0-1/2", "bytes 99999999999999999999-1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, total, err := parseContentRange(s)
		if err == nil && (start < 0 || total < -1) {
			t.Fatalf("%q parsed to start %d total %d", s, start, total)
		}
	})
}

// FuzzLoadState: whatever is in a state file, loading it never panics and
// what loads is consistent (parts in order, inside the file).
func FuzzLoadState(f *testing.F) {
	f.Add([]byte(`{"version":1,"url":"https://x/y","size":10,"ranged":true,"parts":[{"start":0,"end":5,"next":3},{"start":5,"end":10,"next":10}]}`))
	f.Add([]byte(`{"version":1,"url":"https://x/y","size":-1,"parts":[{"start":0,"end":-1,"next":7}]}`))
	f.Add([]byte(`{"version":1,"size":10,"parts":[{"start":0,"end":11,"next":11}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "s.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := loadState(p)
		if err != nil {
			return
		}
		var at int64
		for _, part := range st.Parts {
			if part.Start != at || part.Next < part.Start || (st.Size >= 0 && part.Next > part.End) {
				t.Fatalf("inconsistent state accepted: %+v", st)
			}
			at = part.End
		}
	})
}
