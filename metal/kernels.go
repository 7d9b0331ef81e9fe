package metal

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed kernels/*.metal
var kernelFS embed.FS

// Source is one kernel file: its name and the bytes compiled on the GPU.
type Source struct {
	Name string
	Text []byte
}

// Sources returns the kernel files, sorted by name.
func Sources() []Source {
	names, _ := fs.Glob(kernelFS, "kernels/*.metal")
	sort.Strings(names)
	out := make([]Source, 0, len(names))
	for _, n := range names {
		b, _ := kernelFS.ReadFile(n)
		out = append(out, Source{Name: n, Text: b})
	}
	return out
}
