package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupMemory(t *testing.T) {
	for _, tc := range []struct {
		name      string
		files     map[string]string
		lim, used uint64
		limited   bool
	}{
		{"v1", map[string]string{
			"self":                                 "4:memory:/app\n1:cpu:/\n",
			"sys/memory/app/memory.limit_in_bytes": "1000000\n",
			"sys/memory/app/memory.usage_in_bytes": "600000\n",
			"sys/memory/app/memory.stat":           "cache 5\ntotal_inactive_file 100000\n",
		}, 1000000, 500000, true},
		{"v1 unlimited", map[string]string{
			"self":                                 "4:memory:/app\n",
			"sys/memory/app/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/memory/app/memory.usage_in_bytes": "600000\n",
		}, 0, 0, false},
		{"v2", map[string]string{
			"self":                              "0::/user.slice/app\n",
			"sys/user.slice/app/memory.max":     "2000000\n",
			"sys/user.slice/app/memory.current": "300000\n",
			"sys/user.slice/app/memory.stat":    "anon 1\ninactive_file 50000\n",
		}, 2000000, 250000, true},
		{"v2 max", map[string]string{
			"self":                   "0::/app\n",
			"sys/app/memory.max":     "max\n",
			"sys/app/memory.current": "300000\n",
		}, 0, 0, false},
		{"missing files", map[string]string{"self": "4:memory:/gone\n"}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeFiles(t, tc.files)
			lim, used, ok := cgroupMemory(filepath.Join(root, "self"), filepath.Join(root, "sys"))
			if ok != tc.limited || lim != tc.lim || used != tc.used {
				t.Fatalf("got %d, %d, %v; want %d, %d, %v", lim, used, ok, tc.lim, tc.used, tc.limited)
			}
		})
	}
	if Usable() == 0 {
		t.Fatal("Usable() = 0 on Linux")
	}
}
