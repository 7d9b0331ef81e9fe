package gguf

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// Split GGUF models, as llama.cpp's gguf-split writes them: a model is
// stored in N files named <prefix>-00001-of-0000N.gguf and on. The first
// holds all the metadata; every part holds the three keys below and a share
// of the tensors, whose data lies in the part that lists them.
const (
	KeySplitNo      = "split.no"            // u16: this part's index, from 0
	KeySplitCount   = "split.count"         // u16: the number of parts (0 or 1: not split)
	KeySplitTensors = "split.tensors.count" // i32: the tensors of all parts together
)

// MaxSplitParts bounds the parts of a split model (the names have five
// digits).
const MaxSplitParts = 99999

// SplitPath returns the file name of part no (from 0) of count, as
// llama.cpp's llama_split_path writes it: "<prefix>-%05d-of-%05d.gguf".
func SplitPath(prefix string, no, count int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, no+1, count)
}

// splitPrefix returns the prefix of path if it is the name of part no of
// count (llama_split_prefix).
func splitPrefix(path string, no, count int) (string, bool) {
	suffix := fmt.Sprintf("-%05d-of-%05d.gguf", no+1, count)
	if len(path) <= len(suffix) || !strings.HasSuffix(path, suffix) {
		return "", false
	}
	return strings.TrimSuffix(path, suffix), true
}

// splitMeta is a file's split keys.
type splitMeta struct {
	no, count, tensors int
}

// checkSplit validates the split keys of f as llama.cpp's loader reads
// them (split.count u16; when above 1, split.no u16 below it and
// split.tensors.count i32 no less than this part's tensors) and returns
// them. Without split.count, or with 0 or 1 (gguf-split --merge writes 0),
// the file is not split and the other keys are ignored.
func (p *parser) checkSplit(f *File) (splitMeta, error) {
	m := splitMeta{count: 1}
	get := func(key string, want ValueType) (int, error) {
		p.field = "kv " + key
		v, ok := f.Get(key)
		if !ok {
			return 0, p.errf("missing (the file has %s)", KeySplitCount)
		}
		if v.Type() != want {
			return 0, p.errf("type %s, want %s", v.Type(), want)
		}
		n, _ := v.Int()
		return int(n), nil
	}
	if _, ok := f.Get(KeySplitCount); !ok {
		return m, nil
	}
	count, err := get(KeySplitCount, TypeUint16)
	if err != nil || count <= 1 {
		return m, err
	}
	m.count = count
	if m.no, err = get(KeySplitNo, TypeUint16); err != nil {
		return m, err
	}
	if m.no >= m.count {
		return m, p.errf("part %d of %d", m.no, m.count)
	}
	if m.tensors, err = get(KeySplitTensors, TypeInt32); err != nil {
		return m, err
	}
	if m.tensors < len(f.Tensors) {
		return m, p.errf("%d tensors in all parts, but this part alone has %d", m.tensors, len(f.Tensors))
	}
	return m, nil
}

// Location returns where t's data lies on disk: the file (the part of a
// split model that holds it), the byte offset in that file, and the
// file's size. t must come from f.
func (f *File) Location(t *TensorInfo) (path string, offset, fileSize int64) {
	src := f
	if t.Part > 0 && t.Part <= len(f.parts) {
		src = f.parts[t.Part-1]
	}
	size := src.Size
	if src == f {
		size -= f.partsSize()
	}
	return src.Name, src.DataOffset + int64(t.Offset), size
}

// partsSize is the bytes of parts 2..N.
func (f *File) partsSize() int64 {
	var n int64
	for _, p := range f.parts {
		n += p.Size
	}
	return n
}

// SplitParts returns the paths of all parts of f (one, its own, for a file
// that is not split).
func (f *File) SplitParts() []string {
	out := []string{f.Name}
	for _, p := range f.parts {
		out = append(out, p.Name)
	}
	return out
}

// openSplit completes f, part 0 of a split model, with its other parts,
// opened by open; on error it closes what it opened (not f).
func openSplit(ctx context.Context, f *File, open func(context.Context, string) (*File, error)) error {
	m := f.split
	if m.count == 1 {
		return nil
	}
	if m.no != 0 {
		first := "the first part"
		if pre, ok := splitPrefix(f.Name, m.no, m.count); ok {
			first = SplitPath(pre, 0, m.count)
		}
		return &FormatError{File: f.Name, Field: "kv " + KeySplitNo,
			Msg: fmt.Sprintf("this is part %d of %d of a split model; open %s", m.no+1, m.count, first)}
	}
	prefix, ok := splitPrefix(f.Name, 0, m.count)
	if !ok {
		return &FormatError{File: f.Name, Field: "kv " + KeySplitCount,
			Msg: fmt.Sprintf("part 1 of %d of a split model, but the name does not end in %s", m.count, SplitPath("", 0, m.count))}
	}
	bad := func(part *File, format string, args ...any) error {
		return &FormatError{File: part.Name, Field: "split part", Msg: fmt.Sprintf(format, args...)}
	}
	total := len(f.Tensors)
	for i := 1; i < m.count; i++ {
		if err := ctx.Err(); err != nil {
			f.closeParts()
			return err
		}
		part, err := open(ctx, SplitPath(prefix, i, m.count))
		if err != nil {
			f.closeParts()
			return fmt.Errorf("gguf %s: part %d of %d: %w", f.Name, i+1, m.count, err)
		}
		f.parts = append(f.parts, part)
		f.Size += part.Size
		switch pm := part.split; {
		case pm.count != m.count || pm.no != i:
			err = bad(part, "says it is part %d of %d, want part %d of %d", pm.no+1, pm.count, i+1, m.count)
		case pm.tensors != m.tensors:
			err = bad(part, "says the model has %d tensors, part 1 says %d", pm.tensors, m.tensors)
		}
		if err != nil {
			f.closeParts()
			return err
		}
		for _, t := range part.Tensors {
			if _, dup := f.tensorIndex[t.Name]; dup {
				f.closeParts()
				return bad(part, "tensor %s is also in an earlier part", t.Name)
			}
			t.Part = i
			f.tensorIndex[t.Name] = len(f.Tensors)
			f.Tensors = append(f.Tensors, t)
		}
		total += len(part.Tensors)
	}
	if total != m.tensors {
		f.closeParts()
		return &FormatError{File: f.Name, Field: "kv " + KeySplitTensors,
			Msg: fmt.Sprintf("%d tensors expected, the %d parts hold %d", m.tensors, m.count, total)}
	}
	return nil
}

// closeParts closes and forgets the other parts of f, restoring f to its
// own tensors.
func (f *File) closeParts() error {
	var first error
	for _, p := range f.parts {
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
		f.Size -= p.Size
	}
	f.parts = nil
	own := f.Tensors[:0]
	for _, t := range f.Tensors {
		if t.Part == 0 {
			own = append(own, t)
		} else {
			delete(f.tensorIndex, t.Name)
		}
	}
	f.Tensors = own
	return first
}

// SplitOptions say where WriteSplit cuts: after every MaxTensors tensors,
// or before a tensor that would take a part's tensor data (each tensor
// padded to the alignment) over MaxBytes — gguf-split's --split-max-tensors
// and --split-max-size. Exactly one must be set.
type SplitOptions struct {
	MaxTensors int
	MaxBytes   int64
}

// WriteSplit writes src as a split model, the way gguf-split does: part 1
// carries all of src's metadata, every part the split keys and its tensors
// in src's order. It returns the paths of the parts, <prefix>-00001-of-
// 0000N.gguf and on; each is written atomically, and on failure the parts
// already written are removed. src may itself be split.
func WriteSplit(ctx context.Context, src *File, prefix string, opts SplitOptions) ([]string, error) {
	if (opts.MaxTensors > 0) == (opts.MaxBytes > 0) {
		return nil, fmt.Errorf("gguf split: set exactly one of MaxTensors and MaxBytes")
	}
	if len(src.Tensors) == 0 {
		return nil, fmt.Errorf("gguf split %s: no tensors", src.Name)
	}
	// Group the tensors (gguf-split's should_split).
	var groups [][]*TensorInfo
	var cur []*TensorInfo
	var bytes int64
	for i := range src.Tensors {
		t := &src.Tensors[i]
		n := int64(pad(t.Size, DefaultAlignment))
		cut := false
		if opts.MaxTensors > 0 {
			cut = i > 0 && i%opts.MaxTensors == 0
		} else {
			cut = len(cur) > 0 && bytes+n > opts.MaxBytes
		}
		if cut {
			groups = append(groups, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, t)
		bytes += n
	}
	groups = append(groups, cur)
	if len(groups) > MaxSplitParts {
		return nil, fmt.Errorf("gguf split %s: %d parts, more than %d", src.Name, len(groups), MaxSplitParts)
	}
	var written []string
	for i, g := range groups {
		if err := ctx.Err(); err != nil {
			removeAll(written)
			return nil, err
		}
		w := NewWriter()
		if i == 0 {
			for _, kv := range src.KV {
				switch kv.Key {
				case KeySplitNo, KeySplitCount, KeySplitTensors:
					continue
				}
				w.AddKV(kv.Key, kv.Value)
			}
		}
		// gguf-split's order: it sets split.count last (a placeholder
		// first, replaced once the number of parts is known).
		w.AddKV(KeySplitNo, Uint16(uint16(i)))
		w.AddKV(KeySplitTensors, Int32(int32(len(src.Tensors))))
		w.AddKV(KeySplitCount, Uint16(uint16(len(groups))))
		for _, t := range g {
			data := src.Data(t)
			if data == nil {
				removeAll(written)
				return nil, fmt.Errorf("gguf split %s: file is closed", src.Name)
			}
			w.AddTensor(t.Name, t.Type, t.Dims, func(wr io.Writer) error {
				_, err := wr.Write(data)
				return err
			})
		}
		path := SplitPath(prefix, i, len(groups))
		if err := w.WriteFile(path); err != nil {
			removeAll(written)
			return nil, err
		}
		written = append(written, path)
	}
	return written, nil
}

func removeAll(paths []string) {
	for _, p := range paths {
		os.Remove(p)
	}
}
