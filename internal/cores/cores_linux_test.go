package cores

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCountCores reads a made-up sysfs: 4 CPUs that are 2 cores with 2
// SMT siblings each, and one offline CPU without a topology file.
func TestCountCores(t *testing.T) {
	root := t.TempDir()
	for cpu, sib := range map[string]string{"cpu0": "0,2", "cpu1": "1,3", "cpu2": "0,2", "cpu3": "1,3"} {
		dir := filepath.Join(root, cpu, "topology")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "core_cpus_list"), []byte(sib+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "cpu4"), 0o755); err != nil {
		t.Fatal(err)
	}
	if n := countCores(root); n != 2 {
		t.Errorf("countCores = %d, want 2", n)
	}
	if n := countCores(filepath.Join(root, "missing")); n != 0 {
		t.Errorf("countCores of a missing sysfs = %d, want 0", n)
	}
}
