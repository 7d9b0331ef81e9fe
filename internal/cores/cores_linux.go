package cores

import (
	"os"
	"path/filepath"
	"strings"
)

// physical counts the distinct cores of the online CPUs from sysfs: CPUs
// that list the same core_cpus (SMT siblings) are one core. 0 if sysfs
// cannot tell.
func physical() int { return countCores("/sys/devices/system/cpu") }

func countCores(root string) int {
	cpus, err := filepath.Glob(filepath.Join(root, "cpu[0-9]*", "topology", "core_cpus_list"))
	if err != nil || len(cpus) == 0 {
		cpus, _ = filepath.Glob(filepath.Join(root, "cpu[0-9]*", "topology", "thread_siblings_list"))
	}
	seen := map[string]bool{}
	for _, p := range cpus {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // offline CPU
		}
		seen[strings.TrimSpace(string(b))] = true
	}
	return len(seen)
}
