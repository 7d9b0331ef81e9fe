package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Usable returns the memory this process may still take, in bytes (0 if
// unknown): the smaller of the kernel's MemAvailable and, under a cgroup
// memory limit (v1 or v2), the limit minus what the cgroup holds now that
// the kernel could not simply drop (its usage less its inactive file
// pages). A cgroup limit charges page cache too, the way a laptop with
// other apps open feels; installed RAM is the wrong number.
func Usable() uint64 {
	avail := memAvailable()
	if lim, used, ok := cgroupMemory("/proc/self/cgroup", "/sys/fs/cgroup"); ok {
		free := uint64(0)
		if lim > used {
			free = lim - used
		}
		if avail == 0 || free < avail {
			avail = free
		}
	}
	return avail
}

func memAvailable() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// cgroupMemory reads the memory limit and the non-reclaimable usage of the
// process's cgroup (from the cgroup file selfCgroup, under the hierarchy
// root) for cgroup v1 and v2; ok is false when there is no limit.
func cgroupMemory(selfCgroup, root string) (limit, used uint64, ok bool) {
	b, err := os.ReadFile(selfCgroup)
	if err != nil {
		return 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case strings.Split(parts[1], ",")[0] == "memory" || containsField(parts[1], "memory"): // v1
			dir := filepath.Join(root, "memory", parts[2])
			lim, err1 := readUint(filepath.Join(dir, "memory.limit_in_bytes"))
			use, err2 := readUint(filepath.Join(dir, "memory.usage_in_bytes"))
			if err1 != nil || err2 != nil || lim >= 1<<62 {
				continue
			}
			inactive := statField(filepath.Join(dir, "memory.stat"), "total_inactive_file")
			return lim, sub(use, inactive), true
		case parts[0] == "0" && parts[1] == "": // v2
			dir := filepath.Join(root, parts[2])
			if _, err := os.Stat(filepath.Join(dir, "memory.max")); err != nil {
				dir = filepath.Join(root, "unified", parts[2])
			}
			raw, err := os.ReadFile(filepath.Join(dir, "memory.max"))
			if err != nil || strings.TrimSpace(string(raw)) == "max" {
				continue
			}
			lim, err1 := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
			use, err2 := readUint(filepath.Join(dir, "memory.current"))
			if err1 != nil || err2 != nil {
				continue
			}
			inactive := statField(filepath.Join(dir, "memory.stat"), "inactive_file")
			return lim, sub(use, inactive), true
		}
	}
	return 0, 0, false
}

func containsField(list, name string) bool {
	for _, f := range strings.Split(list, ",") {
		if f == name {
			return true
		}
	}
	return false
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

func statField(path, key string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			return v
		}
	}
	return 0
}
