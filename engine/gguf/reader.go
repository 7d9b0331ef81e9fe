// Package gguf reads, validates and writes GGUF files, the model format of
// llama.cpp (versions 2 and 3, little-endian).
//
// Open memory-maps a file read-only and validates all of it before
// returning: header, every metadata value, every tensor info, and that each
// tensor's bytes lie inside the file. Tensor data is handed out as byte
// views into the map, never copied. Writer produces files in the same format
// by streaming, so files of tens of GB never sit in memory.
//
// Limits the reader enforces (beyond those of the format itself):
//
//   - a metadata string is at most MaxStringLen bytes (chat templates run to
//     ~20 KB; 16 MiB leaves room), a key at most MaxKeyLen bytes, a tensor
//     name at most MaxNameLen bytes (ggml's own limit);
//   - an array has at most MaxArrayLen elements, arrays nest at most
//     MaxDepth deep;
//   - at most MaxKVs metadata pairs and MaxTensors tensors;
//   - every count is also checked against the bytes left in the file before
//     anything is allocated.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/strata-llm/strata/engine/ggml"
)

// Limits enforced by the reader. See the package documentation.
const (
	MaxStringLen = 16 << 20
	MaxKeyLen    = 64 << 10
	MaxNameLen   = 63 // GGML_MAX_NAME - 1
	MaxArrayLen  = 1 << 24
	MaxDepth     = 8
	MaxKVs       = 1 << 20
	MaxTensors   = 1 << 20
	MaxDims      = 4
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that sets the data alignment.
const KeyAlignment = "general.alignment"

// ErrInvalid is matched (with errors.Is) by every error that reports a
// malformed file, as opposed to an I/O failure.
var ErrInvalid = errors.New("invalid GGUF")

// FormatError reports a malformed GGUF file: which file, which part of it
// (a header field, a metadata key, a tensor) and what limit it broke.
type FormatError struct {
	File   string // path or name given to Open or Parse
	Offset int64  // byte offset where the problem was found
	Field  string // "header", "kv tokenizer.ggml.tokens", "tensor blk.0.ffn_up_exps.weight"
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf %s: %s (at byte %d): %s", e.File, e.Field, e.Offset, e.Msg)
}

// Is reports whether target is ErrInvalid.
func (e *FormatError) Is(target error) bool { return target == ErrInvalid }

// KV is one metadata key and its value.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name     string
	Type     ggml.Type
	Dims     []uint64 // ggml order: Dims[0] is the row length (fastest varying)
	Offset   uint64   // relative to the start of its part's data section
	Size     uint64   // bytes
	Elements uint64
	Part     int // the split part holding the data (0 unless the model is split)
}

// File is a parsed and validated GGUF file. Its methods are safe for
// concurrent use, except Close, which must not run concurrently with them.
//
// A File from Open or Load of the first part of a split model
// (…-00001-of-0000N.gguf) is the whole model: the metadata of the first
// part, the tensors of all parts (TensorInfo.Part says which holds the
// data) and, in Size, the bytes of all parts.
type File struct {
	Name       string // path or name given to Open or Parse
	Version    uint32
	Alignment  uint64
	DataOffset int64 // file offset of the data section (of the first part)
	Size       int64 // file size in bytes (of all parts)
	KV         []KV
	Tensors    []TensorInfo

	kvIndex     map[string]int
	tensorIndex map[string]int
	data        []byte
	unmap       func([]byte) error
	pinned      bool // data is the process's own memory (Load, or Pin ran)
	split       splitMeta
	parts       []*File // parts 2..N of a split model
}

// Parse validates data as a GGUF file and returns its description. name is
// used in error messages. Tensor data returned by the File aliases data.
func Parse(data []byte, name string) (*File, error) {
	p := &parser{data: data, name: name}
	f, err := p.parse()
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Close releases the memory map of a File from Open. Views returned by Data
// must not be used afterwards. Close on a File from Parse does nothing.
func (f *File) Close() error {
	perr := f.closeParts()
	if f.unmap == nil {
		f.data = nil
		return nil
	}
	data, unmap := f.data, f.unmap
	f.data, f.unmap = nil, nil
	if err := unmap(data); err != nil {
		return fmt.Errorf("gguf %s: unmap: %w", f.Name, err)
	}
	return perr
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Arch returns general.architecture ("qwen3moe"), or "" if absent.
func (f *File) Arch() string {
	s, _ := f.String("general.architecture")
	return s
}

// String returns a string value.
func (f *File) String(key string) (string, bool) { v, _ := f.Get(key); return v.Str() }

// Uint returns a non-negative value of any integer type.
func (f *File) Uint(key string) (uint64, bool) { v, _ := f.Get(key); return v.Uint() }

// Int returns a value of any integer type that fits in int64.
func (f *File) Int(key string) (int64, bool) { v, _ := f.Get(key); return v.Int() }

// Float returns a value of any float or integer type.
func (f *File) Float(key string) (float64, bool) { v, _ := f.Get(key); return v.Float() }

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) { v, _ := f.Get(key); return v.Bool() }

// Strings returns a string array. The slice is shared; do not modify it.
func (f *File) Strings(key string) ([]string, bool) { v, _ := f.Get(key); return v.Strings() }

// Ints returns an array of any integer type.
func (f *File) Ints(key string) ([]int64, bool) { v, _ := f.Get(key); return v.Ints() }

// Floats returns an array of any float or integer type.
func (f *File) Floats(key string) ([]float64, bool) { v, _ := f.Get(key); return v.Floats() }

// Bools returns a bool array. The slice is shared; do not modify it.
func (f *File) Bools(key string) ([]bool, bool) { v, _ := f.Get(key); return v.Bools() }

// ArchKey returns "<arch>.<suffix>", the key of an architecture parameter.
func (f *File) ArchKey(suffix string) string { return f.Arch() + "." + suffix }

// ArchUint reads "<arch>.<suffix>" with Uint, e.g. ArchUint("block_count").
func (f *File) ArchUint(suffix string) (uint64, bool) { return f.Uint(f.ArchKey(suffix)) }

// ArchInt reads "<arch>.<suffix>" with Int.
func (f *File) ArchInt(suffix string) (int64, bool) { return f.Int(f.ArchKey(suffix)) }

// ArchFloat reads "<arch>.<suffix>" with Float.
func (f *File) ArchFloat(suffix string) (float64, bool) { return f.Float(f.ArchKey(suffix)) }

// ArchBool reads "<arch>.<suffix>" with Bool.
func (f *File) ArchBool(suffix string) (bool, bool) { return f.Bool(f.ArchKey(suffix)) }

// ArchString reads "<arch>.<suffix>" with String.
func (f *File) ArchString(suffix string) (string, bool) { return f.String(f.ArchKey(suffix)) }

// ArchInts reads "<arch>.<suffix>" with Ints.
func (f *File) ArchInts(suffix string) ([]int64, bool) { return f.Ints(f.ArchKey(suffix)) }

// ArchFloats reads "<arch>.<suffix>" with Floats.
func (f *File) ArchFloats(suffix string) ([]float64, bool) { return f.Floats(f.ArchKey(suffix)) }

// Tensor returns the tensor named name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Mappings returns the memory maps of the file and its parts (the memory
// Data's views point into), for a GPU backend to wrap once; nil for a File
// from Parse, whose memory is the caller's, and after Close.
func (f *File) Mappings() [][]byte {
	var out [][]byte
	for _, p := range append([]*File{f}, f.parts...) {
		if p.unmap != nil && p.data != nil {
			out = append(out, p.data)
		}
	}
	return out
}

// Data returns the bytes of t, a view into the file (no copy). It returns
// nil after Close. t must come from f.
func (f *File) Data(t *TensorInfo) []byte {
	src := f
	if t.Part > 0 {
		if t.Part > len(f.parts) {
			return nil
		}
		src = f.parts[t.Part-1]
	}
	if src.data == nil {
		return nil
	}
	start := uint64(src.DataOffset) + t.Offset
	end := start + t.Size
	return src.data[start:end:end]
}

// Expect returns the tensor name, which must exist with exactly dims (ggml
// order). Errors name the tensor and the expected and actual shapes.
func (f *File) Expect(name string, dims ...uint64) (*TensorInfo, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gguf %s: missing tensor %s", f.Name, name)
	}
	if !slices.Equal(t.Dims, dims) {
		return nil, fmt.Errorf("gguf %s: tensor %s has shape %v, want %v", f.Name, name, t.Dims, dims)
	}
	return t, nil
}

// parser reads a GGUF image with bounds checks on every access.
type parser struct {
	data []byte
	name string
	off  int
	last int // offset where the latest read began, for errors
	// field names the part being parsed, for errors.
	field string
}

func (p *parser) errf(format string, args ...any) error {
	return &FormatError{File: p.name, Offset: int64(p.last), Field: p.field, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) remaining() int { return len(p.data) - p.off }

func (p *parser) need(n uint64, what string) error {
	if n > uint64(p.remaining()) {
		return p.errf("%s needs %d bytes, only %d left in the file", what, n, p.remaining())
	}
	return nil
}

func (p *parser) u32(what string) (uint32, error) {
	p.last = p.off
	if err := p.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(p.data[p.off:])
	p.off += 4
	return v, nil
}

func (p *parser) u64(what string) (uint64, error) {
	p.last = p.off
	if err := p.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(p.data[p.off:])
	p.off += 8
	return v, nil
}

// str reads a length-prefixed string of at most max bytes.
func (p *parser) str(what string, max uint64) (string, error) {
	start := p.off
	n, err := p.u64(what + " length")
	if err != nil {
		return "", err
	}
	defer func() { p.last = start }()
	if n > max {
		return "", p.errf("%s length %d exceeds the limit of %d bytes", what, n, max)
	}
	if err := p.need(n, what); err != nil {
		return "", err
	}
	s := string(p.data[p.off : p.off+int(n)])
	p.off += int(n)
	return s, nil
}

func (p *parser) parse() (*File, error) {
	p.field = "header"
	if len(p.data) < 4 || string(p.data[:4]) != Magic {
		n := min(len(p.data), 4)
		return nil, p.errf("bad magic %q, want %q", p.data[:n], Magic)
	}
	p.off = 4
	version, err := p.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return nil, p.errf("version 1 is not supported (only 2 and 3)")
	case version&0xFFFF == 0 && bits.ReverseBytes32(version) <= 3:
		return nil, p.errf("big-endian GGUF (version %d byte-swapped) is not supported", bits.ReverseBytes32(version))
	default:
		return nil, p.errf("unsupported version %d (only 2 and 3)", version)
	}
	nTensors, err := p.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := p.u64("metadata count")
	if err != nil {
		return nil, err
	}
	if nTensors > MaxTensors {
		return nil, p.errf("tensor count %d exceeds the limit of %d", nTensors, MaxTensors)
	}
	if nKV > MaxKVs {
		return nil, p.errf("metadata count %d exceeds the limit of %d", nKV, MaxKVs)
	}
	// Smallest encodings: a KV is key length (8) + 1 key byte + type (4) +
	// 1 value byte; a tensor info is name length (8) + 1 name byte +
	// dim count (4) + one dim (8) + type (4) + offset (8).
	if err := p.need(nKV*14+nTensors*33, fmt.Sprintf("%d metadata pairs and %d tensor infos", nKV, nTensors)); err != nil {
		return nil, err
	}

	f := &File{
		Name:        p.name,
		Version:     version,
		Alignment:   DefaultAlignment,
		Size:        int64(len(p.data)),
		KV:          make([]KV, 0, nKV),
		Tensors:     make([]TensorInfo, 0, nTensors),
		kvIndex:     make(map[string]int, nKV),
		tensorIndex: make(map[string]int, nTensors),
		data:        p.data,
	}

	for i := uint64(0); i < nKV; i++ {
		p.field = fmt.Sprintf("kv #%d", i)
		key, err := p.str("key", MaxKeyLen)
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, p.errf("empty key")
		}
		p.field = "kv " + key
		if _, dup := f.kvIndex[key]; dup {
			return nil, p.errf("duplicate key")
		}
		t, err := p.u32("value type")
		if err != nil {
			return nil, err
		}
		v, err := p.value(ValueType(t), 0)
		if err != nil {
			return nil, err
		}
		if key == KeyAlignment {
			if v.Type() != TypeUint32 {
				return nil, p.errf("type %s, want u32", v.Type())
			}
			a, _ := v.Uint()
			if a == 0 || a&(a-1) != 0 {
				return nil, p.errf("alignment %d is not a power of two", a)
			}
			f.Alignment = a
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}

	for i := uint64(0); i < nTensors; i++ {
		p.field = fmt.Sprintf("tensor #%d", i)
		t, err := p.tensorInfo(f)
		if err != nil {
			return nil, err
		}
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}

	split, err := p.checkSplit(f)
	if err != nil {
		return nil, err
	}
	f.split = split

	p.field = "data section"
	dataOff := (uint64(p.off) + f.Alignment - 1) &^ (f.Alignment - 1)
	f.DataOffset = int64(dataOff)
	if len(f.Tensors) == 0 {
		return f, nil
	}
	if dataOff > uint64(len(p.data)) {
		return nil, p.errf("data section starts at %d, past the end of the file (%d bytes)", dataOff, len(p.data))
	}
	dataLen := uint64(len(p.data)) - dataOff
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset > dataLen || t.Size > dataLen-t.Offset {
			return nil, &FormatError{File: p.name, Offset: int64(dataOff), Field: "tensor " + t.Name,
				Msg: fmt.Sprintf("data [%d, +%d) runs past the end of the data section (%d bytes)", t.Offset, t.Size, dataLen)}
		}
	}
	// No two tensors may share bytes.
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := f.Tensors[a].Offset, f.Tensors[b].Offset
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
		return a - b
	})
	for k := 1; k < len(order); k++ {
		a, b := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if a.Offset+a.Size > b.Offset && a.Size > 0 && b.Size > 0 {
			return nil, &FormatError{File: p.name, Offset: int64(dataOff), Field: "tensor " + b.Name,
				Msg: fmt.Sprintf("data at %d overlaps tensor %s [%d, +%d)", b.Offset, a.Name, a.Offset, a.Size)}
		}
	}
	return f, nil
}

func (p *parser) tensorInfo(f *File) (TensorInfo, error) {
	var t TensorInfo
	name, err := p.str("tensor name", MaxNameLen)
	if err != nil {
		return t, err
	}
	if name == "" {
		return t, p.errf("empty tensor name")
	}
	t.Name = name
	p.field = "tensor " + name
	if _, dup := f.tensorIndex[name]; dup {
		return t, p.errf("duplicate tensor name")
	}
	nd, err := p.u32("dimension count")
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > MaxDims {
		return t, p.errf("%d dimensions, want 1 to %d", nd, MaxDims)
	}
	t.Dims = make([]uint64, nd)
	t.Elements = 1
	for i := range t.Dims {
		d, err := p.u64("dimension")
		if err != nil {
			return t, err
		}
		if d == 0 {
			return t, p.errf("dimension %d is zero", i)
		}
		if d > math.MaxInt64 {
			return t, p.errf("dimension %d is %d, above the int64 limit", i, d)
		}
		t.Dims[i] = d
		hi, lo := bits.Mul64(t.Elements, d)
		if hi != 0 || lo > math.MaxInt64 {
			return t, p.errf("element count of shape %v overflows int64", t.Dims[:i+1])
		}
		t.Elements = lo
	}
	typ, err := p.u32("type")
	if err != nil {
		return t, err
	}
	t.Type = ggml.Type(typ)
	if !t.Type.Known() {
		return t, p.errf("unknown ggml type %d", typ)
	}
	if bs := uint64(t.Type.BlockSize()); t.Dims[0]%bs != 0 {
		return t, p.errf("row length %d is not a multiple of the %s block size %d", t.Dims[0], t.Type, bs)
	}
	t.Size, err = t.Type.Bytes(t.Elements)
	if err != nil {
		return t, p.errf("%v", err)
	}
	if t.Size > math.MaxInt64 {
		return t, p.errf("byte size %d overflows int64", t.Size)
	}
	t.Offset, err = p.u64("offset")
	if err != nil {
		return t, err
	}
	if t.Offset%f.Alignment != 0 {
		return t, p.errf("offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment)
	}
	return t, nil
}

// value reads a value of type t; depth counts enclosing arrays.
func (p *parser) value(t ValueType, depth int) (Value, error) {
	if !t.valid() {
		return Value{}, p.errf("unknown value type %d", uint32(t))
	}
	if t == TypeArray {
		return p.array(depth + 1)
	}
	if t == TypeString {
		s, err := p.str("string", MaxStringLen)
		return String(s), err
	}
	size := t.fixedSize()
	p.last = p.off
	if err := p.need(uint64(size), t.String()+" value"); err != nil {
		return Value{}, err
	}
	b := p.data[p.off:]
	p.off += size
	switch t {
	case TypeUint8:
		return Uint8(b[0]), nil
	case TypeInt8:
		return Int8(int8(b[0])), nil
	case TypeBool:
		if b[0] > 1 {
			return Value{}, p.errf("bool value %d is neither 0 nor 1", b[0])
		}
		return Bool(b[0] == 1), nil
	case TypeUint16:
		return Uint16(binary.LittleEndian.Uint16(b)), nil
	case TypeInt16:
		return Int16(int16(binary.LittleEndian.Uint16(b))), nil
	case TypeUint32:
		return Uint32(binary.LittleEndian.Uint32(b)), nil
	case TypeInt32:
		return Int32(int32(binary.LittleEndian.Uint32(b))), nil
	case TypeFloat32:
		return Float32(math.Float32frombits(binary.LittleEndian.Uint32(b))), nil
	case TypeUint64:
		return Uint64(binary.LittleEndian.Uint64(b)), nil
	case TypeInt64:
		return Int64(int64(binary.LittleEndian.Uint64(b))), nil
	default: // TypeFloat64
		return Float64(math.Float64frombits(binary.LittleEndian.Uint64(b))), nil
	}
}

func (p *parser) array(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.errf("arrays nest deeper than %d", MaxDepth)
	}
	et, err := p.u32("array element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Value{}, p.errf("unknown array element type %d", et)
	}
	n, err := p.u64("array length")
	if err != nil {
		return Value{}, err
	}
	if n > MaxArrayLen {
		return Value{}, p.errf("array length %d exceeds the limit of %d", n, MaxArrayLen)
	}
	// Smallest element encodings: a string is its 8-byte length, a nested
	// array its 4-byte type and 8-byte length.
	minSize := uint64(elem.fixedSize())
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if err := p.need(n*minSize, fmt.Sprintf("array of %d %s", n, elem)); err != nil {
		return Value{}, err
	}
	count := int(n)
	size := count * elem.fixedSize()
	b := p.data[p.off:]
	switch elem {
	case TypeString:
		return p.stringArray(count)
	case TypeArray:
		vs := make([]Value, count)
		for i := range vs {
			v, err := p.array(depth + 1)
			if err != nil {
				return Value{}, err
			}
			vs[i] = v
		}
		return Arrays(vs), nil
	case TypeBool:
		vs := make([]bool, count)
		for i := range vs {
			if b[i] > 1 {
				p.last = p.off + i
				return Value{}, p.errf("bool array element %d is %d, neither 0 nor 1", i, b[i])
			}
			vs[i] = b[i] == 1
		}
		p.off += size
		return Bools(vs), nil
	}
	p.off += size
	switch elem {
	case TypeUint8:
		return Uint8s(slices.Clone(b[:count])), nil
	case TypeInt8:
		return Int8s(decode(b, count, 1, func(b []byte) int8 { return int8(b[0]) })), nil
	case TypeUint16:
		return Uint16s(decode(b, count, 2, binary.LittleEndian.Uint16)), nil
	case TypeInt16:
		return Int16s(decode(b, count, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })), nil
	case TypeUint32:
		return Uint32s(decode(b, count, 4, binary.LittleEndian.Uint32)), nil
	case TypeInt32:
		return Int32s(decode(b, count, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })), nil
	case TypeFloat32:
		return Float32s(decode(b, count, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })), nil
	case TypeUint64:
		return Uint64s(decode(b, count, 8, binary.LittleEndian.Uint64)), nil
	case TypeInt64:
		return Int64s(decode(b, count, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })), nil
	default: // TypeFloat64
		return Float64s(decode(b, count, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })), nil
	}
}

func decode[T any](b []byte, n, size int, f func([]byte) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = f(b[i*size : i*size+size])
	}
	return out
}

// stringArray reads n strings. It copies the whole encoded region once into
// a single Go string and slices the elements out of it, so a 150k-token
// vocabulary costs one large allocation instead of 150k small ones.
func (p *parser) stringArray(n int) (Value, error) {
	start := p.off
	for i := 0; i < n; i++ {
		p.last = p.off
		if p.remaining() < 8 {
			return Value{}, p.errf("string %d length needs 8 bytes, only %d left in the file", i, p.remaining())
		}
		l := binary.LittleEndian.Uint64(p.data[p.off:])
		if l > MaxStringLen {
			return Value{}, p.errf("string %d length %d exceeds the limit of %d bytes", i, l, MaxStringLen)
		}
		if l > uint64(p.remaining()-8) {
			return Value{}, p.errf("string %d needs %d bytes, only %d left in the file", i, l, p.remaining()-8)
		}
		p.off += 8 + int(l)
	}
	all := string(p.data[start:p.off])
	out := make([]string, n)
	o := 0
	for i := range out {
		l := int(binary.LittleEndian.Uint64([]byte(all[o : o+8])))
		o += 8
		out[i] = all[o : o+l]
		o += l
	}
	return Strings(out), nil
}
