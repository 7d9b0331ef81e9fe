package blocks

import (
	"fmt"

	"github.com/strata-llm/strata/engine/gguf"
)

// Meta reads an architecture's integer metadata (<arch>.<key>), collecting
// the required keys that are missing so that one error names them all.
type Meta struct {
	File    *gguf.File
	Arch    string
	missing []string
}

// Uint sets *dst to the key's value, or to def when the key is absent;
// def < 0 makes the key required.
func (m *Meta) Uint(key string, dst *int, def int) {
	if v, ok := m.File.ArchUint(key); ok {
		*dst = int(v)
	} else if def >= 0 {
		*dst = def
	} else {
		m.missing = append(m.missing, m.Arch+"."+key)
	}
}

// Missing is the error naming the required keys not found so far, or nil.
func (m *Meta) Missing() error {
	if len(m.missing) > 0 {
		return fmt.Errorf("%s: missing metadata %v", m.Arch, m.missing)
	}
	return nil
}

// UintsOrScalar reads a key llama.cpp reads with get_key_or_arr: either one
// value for all n layers or an array of exactly n. ok is false when the
// key is absent.
func (m *Meta) UintsOrScalar(key string, n int) (vals []int, ok bool, err error) {
	full := m.Arch + "." + key
	v, found := m.File.Get(full)
	if !found {
		return nil, false, nil
	}
	if u, isU := v.Uint(); isU {
		vals = make([]int, n)
		for i := range vals {
			vals[i] = int(u)
		}
		return vals, true, nil
	}
	is, isArr := v.Ints()
	if !isArr {
		return nil, true, fmt.Errorf("%s: %s must be an integer or an array of integers", m.Arch, full)
	}
	if len(is) != n {
		return nil, true, fmt.Errorf("%s: %s has %d entries, want %d (one per layer)", m.Arch, full, len(is), n)
	}
	vals = make([]int, n)
	for i, x := range is {
		if x < 0 || x > 1<<30 {
			return nil, true, fmt.Errorf("%s: %s[%d] = %d is out of range", m.Arch, full, i, x)
		}
		vals[i] = int(x)
	}
	return vals, true, nil
}
