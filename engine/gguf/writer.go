package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/strata-llm/strata/engine/ggml"
)

// Writer builds a GGUF file (version 3). Metadata and tensor infos are
// collected in order with the Add methods; tensor data is produced lazily
// by each tensor's callback while WriteTo streams the file, so a file of
// tens of GB never sits in memory.
//
// The Add methods record the first error (a duplicate key or tensor name,
// an invalid shape or value) and ignore later calls; WriteTo and WriteFile
// return it, and Err reports it early.
type Writer struct {
	kvs     []KV
	tensors []writerTensor
	keys    map[string]bool
	names   map[string]bool
	align   uint64
	err     error
}

type writerTensor struct {
	info TensorInfo
	data func(io.Writer) error
}

// NewWriter returns an empty Writer with the default alignment of 32.
func NewWriter() *Writer {
	return &Writer{keys: map[string]bool{}, names: map[string]bool{}, align: DefaultAlignment}
}

// Err returns the first error recorded by an Add method.
func (w *Writer) Err() error { return w.err }

func (w *Writer) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("gguf writer: "+format, args...)
	}
}

// AddKV appends a metadata pair. Setting general.alignment (a u32 power of
// two) changes the data alignment.
func (w *Writer) AddKV(key string, v Value) {
	if w.err != nil {
		return
	}
	switch {
	case key == "" || len(key) > MaxKeyLen:
		w.fail("key %q: length %d not in 1..%d", key, len(key), MaxKeyLen)
		return
	case w.keys[key]:
		w.fail("duplicate key %s", key)
		return
	}
	if err := checkValue(v, 0); err != nil {
		w.fail("key %s: %v", key, err)
		return
	}
	if key == KeyAlignment {
		a, _ := v.Uint()
		if v.Type() != TypeUint32 || a == 0 || a&(a-1) != 0 {
			w.fail("%s must be a u32 power of two, got %s %v", KeyAlignment, v.Type(), v)
			return
		}
		if len(w.tensors) > 0 {
			w.fail("%s must be set before the first tensor", KeyAlignment)
			return
		}
		w.align = a
	}
	w.keys[key] = true
	w.kvs = append(w.kvs, KV{Key: key, Value: v})
}

// Typed helpers for common metadata.

// AddString appends a string pair.
func (w *Writer) AddString(key, v string) { w.AddKV(key, String(v)) }

// AddUint8 appends a u8 pair.
func (w *Writer) AddUint8(key string, v uint8) { w.AddKV(key, Uint8(v)) }

// AddUint32 appends a u32 pair.
func (w *Writer) AddUint32(key string, v uint32) { w.AddKV(key, Uint32(v)) }

// AddInt32 appends an i32 pair.
func (w *Writer) AddInt32(key string, v int32) { w.AddKV(key, Int32(v)) }

// AddUint64 appends a u64 pair.
func (w *Writer) AddUint64(key string, v uint64) { w.AddKV(key, Uint64(v)) }

// AddInt64 appends an i64 pair.
func (w *Writer) AddInt64(key string, v int64) { w.AddKV(key, Int64(v)) }

// AddFloat32 appends an f32 pair.
func (w *Writer) AddFloat32(key string, v float32) { w.AddKV(key, Float32(v)) }

// AddFloat64 appends an f64 pair.
func (w *Writer) AddFloat64(key string, v float64) { w.AddKV(key, Float64(v)) }

// AddBool appends a bool pair.
func (w *Writer) AddBool(key string, v bool) { w.AddKV(key, Bool(v)) }

// AddStrings appends a string array.
func (w *Writer) AddStrings(key string, v []string) { w.AddKV(key, Strings(v)) }

// AddInt32s appends an i32 array.
func (w *Writer) AddInt32s(key string, v []int32) { w.AddKV(key, Int32s(v)) }

// AddUint32s appends a u32 array.
func (w *Writer) AddUint32s(key string, v []uint32) { w.AddKV(key, Uint32s(v)) }

// AddFloat32s appends an f32 array.
func (w *Writer) AddFloat32s(key string, v []float32) { w.AddKV(key, Float32s(v)) }

// AddBools appends a bool array.
func (w *Writer) AddBools(key string, v []bool) { w.AddKV(key, Bools(v)) }

// AddTensor appends a tensor of type typ and shape dims (ggml order:
// dims[0] is the row length). When the file is written, data is called once
// and must write exactly the tensor's byte size (see TensorSize).
func (w *Writer) AddTensor(name string, typ ggml.Type, dims []uint64, data func(io.Writer) error) {
	if w.err != nil {
		return
	}
	if name == "" || len(name) > MaxNameLen {
		w.fail("tensor %q: name length %d not in 1..%d", name, len(name), MaxNameLen)
		return
	}
	if w.names[name] {
		w.fail("duplicate tensor %s", name)
		return
	}
	if data == nil {
		w.fail("tensor %s: nil data callback", name)
		return
	}
	elems, size, err := TensorSize(typ, dims)
	if err != nil {
		w.fail("tensor %s: %v", name, err)
		return
	}
	if len(w.tensors) == MaxTensors {
		w.fail("more than %d tensors", MaxTensors)
		return
	}
	var off uint64
	if n := len(w.tensors); n > 0 {
		last := w.tensors[n-1].info
		off = pad(last.Offset+last.Size, w.align)
	}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{
		info: TensorInfo{Name: name, Type: typ, Dims: append([]uint64(nil), dims...), Offset: off, Size: size, Elements: elems},
		data: data,
	})
}

// TensorSize returns the element count and byte size of a tensor of type
// typ and shape dims, with the checks the reader applies: a known type,
// 1 to 4 non-zero dims, rows a whole number of blocks, no overflow.
func TensorSize(typ ggml.Type, dims []uint64) (elements, bytes uint64, err error) {
	if !typ.Known() {
		return 0, 0, fmt.Errorf("unknown ggml type %d", uint32(typ))
	}
	if len(dims) == 0 || len(dims) > MaxDims {
		return 0, 0, fmt.Errorf("%d dimensions, want 1 to %d", len(dims), MaxDims)
	}
	elements = 1
	for i, d := range dims {
		if d == 0 {
			return 0, 0, fmt.Errorf("dimension %d is zero", i)
		}
		if d > math.MaxInt64 || elements > math.MaxInt64/d {
			return 0, 0, fmt.Errorf("element count of shape %v overflows int64", dims)
		}
		elements *= d
	}
	if bs := uint64(typ.BlockSize()); dims[0]%bs != 0 {
		return 0, 0, fmt.Errorf("row length %d is not a multiple of the %s block size %d", dims[0], typ, bs)
	}
	bytes, err = typ.Bytes(elements)
	if err != nil {
		return 0, 0, err
	}
	if bytes > math.MaxInt64 {
		return 0, 0, fmt.Errorf("byte size of shape %v overflows int64", dims)
	}
	return elements, bytes, nil
}

func pad(n, align uint64) uint64 { return (n + align - 1) &^ (align - 1) }

// checkValue verifies v is well formed and within the reader's limits.
func checkValue(v Value, depth int) error {
	switch v.Type() {
	case TypeString:
		if len(v.str) > MaxStringLen {
			return fmt.Errorf("string of %d bytes exceeds %d", len(v.str), MaxStringLen)
		}
	case TypeArray:
		if depth+1 > MaxDepth {
			return fmt.Errorf("arrays nest deeper than %d", MaxDepth)
		}
		if n := v.Len(); n > MaxArrayLen {
			return fmt.Errorf("array of %d elements exceeds %d", n, MaxArrayLen)
		}
		switch s := v.arr.(type) {
		case []string:
			if v.elem != TypeString {
				return fmt.Errorf("array element type %s does not match []string", v.elem)
			}
			for i, e := range s {
				if len(e) > MaxStringLen {
					return fmt.Errorf("string %d of %d bytes exceeds %d", i, len(e), MaxStringLen)
				}
			}
		case []Value:
			if v.elem != TypeArray {
				return fmt.Errorf("array element type %s does not match []Value", v.elem)
			}
			for i, e := range s {
				if e.Type() != TypeArray {
					return fmt.Errorf("element %d of an array of arrays is a %s", i, e.Type())
				}
				if err := checkValue(e, depth+1); err != nil {
					return fmt.Errorf("element %d: %w", i, err)
				}
			}
		case nil:
			return errors.New("array without elements slice")
		}
	default:
		if !v.Type().valid() || v.Type().fixedSize() == 0 {
			return fmt.Errorf("invalid value (type %s)", v.Type())
		}
	}
	return nil
}

// WriteTo writes the file to dst: header, metadata, tensor infos, and each
// tensor's data (from its callback) padded to the alignment. It fails if a
// callback writes more or fewer bytes than its tensor's size.
func (w *Writer) WriteTo(dst io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	cw := &countWriter{w: dst}
	bw := bufio.NewWriterSize(cw, 64<<10)
	e := encoder{w: bw}

	e.bytes([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type()))
		e.value(kv.Value)
	}
	for _, t := range w.tensors {
		e.str(t.info.Name)
		e.u32(uint32(len(t.info.Dims)))
		for _, d := range t.info.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.info.Type))
		e.u64(t.info.Offset)
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("gguf writer: header: %w", e.err)
	}
	headerLen := cw.n + int64(bw.Buffered())
	if len(w.tensors) > 0 {
		e.zeros(pad(uint64(headerLen), w.align) - uint64(headerLen))
	}
	var pos uint64 // position in the data section
	for _, t := range w.tensors {
		e.zeros(t.info.Offset - pos)
		if e.err != nil {
			return cw.n, fmt.Errorf("gguf writer: %w", e.err)
		}
		lw := &limitWriter{w: bw, left: t.info.Size}
		if err := t.data(lw); err != nil {
			return cw.n, fmt.Errorf("gguf writer: tensor %s: %w", t.info.Name, err)
		}
		if lw.err != nil {
			return cw.n, fmt.Errorf("gguf writer: tensor %s: %w", t.info.Name, lw.err)
		}
		if lw.over {
			return cw.n, fmt.Errorf("gguf writer: tensor %s: data callback wrote more than %d bytes", t.info.Name, t.info.Size)
		}
		if lw.left != 0 {
			return cw.n, fmt.Errorf("gguf writer: tensor %s: data callback wrote %d bytes, want %d", t.info.Name, t.info.Size-lw.left, t.info.Size)
		}
		pos = t.info.Offset + t.info.Size
	}
	if len(w.tensors) > 0 {
		e.zeros(pad(pos, w.align) - pos)
	}
	if e.err == nil {
		e.err = bw.Flush()
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("gguf writer: %w", e.err)
	}
	return cw.n, nil
}

// WriteFile writes the file to path atomically: into a temporary file in
// the same folder, synced, then renamed over path. On failure the temporary
// file is removed and path is untouched.
func (w *Writer) WriteFile(path string) (err error) {
	if w.err != nil {
		return w.err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("gguf write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := w.WriteTo(tmp); err != nil {
		return fmt.Errorf("gguf write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("gguf write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("gguf write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("gguf write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gguf write %s: %w", path, err)
	}
	// Make the rename durable; a failure here leaves a complete file.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// limitWriter passes through at most left bytes and records overruns and
// write errors, so a callback that ignores errors is still caught.
type limitWriter struct {
	w    io.Writer
	left uint64
	over bool
	err  error
}

var errTooMuch = errors.New("tensor data exceeds the tensor's size")

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if uint64(len(p)) > l.left {
		l.over = true
		return 0, errTooMuch
	}
	n, err := l.w.Write(p)
	l.left -= uint64(n)
	if err != nil {
		l.err = err
	}
	return n, err
}

// encoder writes little-endian GGUF primitives, keeping the first error.
type encoder struct {
	w   io.Writer
	err error
	buf [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) u8(v uint8) { e.buf[0] = v; e.bytes(e.buf[:1]) }

func (e *encoder) u16(v uint16) { binary.LittleEndian.PutUint16(e.buf[:], v); e.bytes(e.buf[:2]) }

func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.bytes(e.buf[:4]) }

func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.bytes(e.buf[:8]) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
}

var zeroBlock [4096]byte

func (e *encoder) zeros(n uint64) {
	for n > 0 && e.err == nil {
		k := min(n, uint64(len(zeroBlock)))
		e.bytes(zeroBlock[:k])
		n -= k
	}
}

func (e *encoder) scalar(t ValueType, bits uint64) {
	switch t.fixedSize() {
	case 1:
		e.u8(uint8(bits))
	case 2:
		e.u16(uint16(bits))
	case 4:
		e.u32(uint32(bits))
	case 8:
		e.u64(bits)
	}
}

func (e *encoder) value(v Value) {
	switch v.Type() {
	case TypeString:
		e.str(v.str)
	case TypeArray:
		e.array(v)
	default:
		e.scalar(v.Type(), v.bits)
	}
}

func (e *encoder) array(v Value) {
	e.u32(uint32(v.elem))
	e.u64(uint64(v.Len()))
	switch s := v.arr.(type) {
	case []uint8:
		e.bytes(s)
	case []int8:
		each(s, func(x int8) { e.u8(uint8(x)) })
	case []bool:
		each(s, func(x bool) {
			if x {
				e.u8(1)
			} else {
				e.u8(0)
			}
		})
	case []uint16:
		each(s, e.u16)
	case []int16:
		each(s, func(x int16) { e.u16(uint16(x)) })
	case []uint32:
		each(s, e.u32)
	case []int32:
		each(s, func(x int32) { e.u32(uint32(x)) })
	case []float32:
		each(s, func(x float32) { e.u32(math.Float32bits(x)) })
	case []uint64:
		each(s, e.u64)
	case []int64:
		each(s, func(x int64) { e.u64(uint64(x)) })
	case []float64:
		each(s, func(x float64) { e.u64(math.Float64bits(x)) })
	case []string:
		each(s, e.str)
	case []Value:
		each(s, e.array)
	}
}

func each[T any](s []T, f func(T)) {
	for _, x := range s {
		f(x)
	}
}
