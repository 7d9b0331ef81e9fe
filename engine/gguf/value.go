package gguf

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ValueType is the type tag of a GGUF metadata value, as stored in the file.
type ValueType uint32

// The GGUF metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12

	// TypeInvalid is the type of the zero Value; it never occurs in a file.
	TypeInvalid ValueType = 1<<32 - 1
)

var valueTypeNames = [...]string{
	TypeUint8: "u8", TypeInt8: "i8", TypeUint16: "u16", TypeInt16: "i16",
	TypeUint32: "u32", TypeInt32: "i32", TypeFloat32: "f32", TypeBool: "bool",
	TypeString: "string", TypeArray: "array", TypeUint64: "u64", TypeInt64: "i64",
	TypeFloat64: "f64",
}

// String returns the short name of t ("u32", "string"), or "type(N)".
func (t ValueType) String() string {
	if t.valid() {
		return valueTypeNames[t]
	}
	if t == TypeInvalid {
		return "invalid"
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

func (t ValueType) valid() bool { return t <= TypeFloat64 }

// fixedSize is the encoded size of a scalar of type t, or 0 for strings and
// arrays (variable size) and invalid types.
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

func (t ValueType) isInt() bool {
	switch t {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeUint64, TypeInt64:
		return true
	}
	return false
}

func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

// Value is one GGUF metadata value: a scalar, a string, or an array of any
// of these (arrays may nest). Arrays are kept as typed Go slices ([]uint32,
// []string, ...; []Value only for arrays of arrays), so a 150k-entry token
// list costs no per-element boxing. The zero Value is invalid: its type is
// TypeInvalid and every accessor reports ok == false.
//
// Values returned by a File share their slices with the File's parsed
// metadata; callers must not modify them.
type Value struct {
	tag  ValueType // type + 1; 0 in the zero Value
	elem ValueType // element type, for arrays
	bits uint64    // scalar payload: integers (sign-extended), float bits, bool
	str  string
	arr  any // typed slice, for arrays
}

// Scalar constructors.

// Uint8 returns a u8 value.
func Uint8(v uint8) Value { return Value{tag: TypeUint8 + 1, bits: uint64(v)} }

// Int8 returns an i8 value.
func Int8(v int8) Value { return Value{tag: TypeInt8 + 1, bits: uint64(int64(v))} }

// Uint16 returns a u16 value.
func Uint16(v uint16) Value { return Value{tag: TypeUint16 + 1, bits: uint64(v)} }

// Int16 returns an i16 value.
func Int16(v int16) Value { return Value{tag: TypeInt16 + 1, bits: uint64(int64(v))} }

// Uint32 returns a u32 value.
func Uint32(v uint32) Value { return Value{tag: TypeUint32 + 1, bits: uint64(v)} }

// Int32 returns an i32 value.
func Int32(v int32) Value { return Value{tag: TypeInt32 + 1, bits: uint64(int64(v))} }

// Uint64 returns a u64 value.
func Uint64(v uint64) Value { return Value{tag: TypeUint64 + 1, bits: v} }

// Int64 returns an i64 value.
func Int64(v int64) Value { return Value{tag: TypeInt64 + 1, bits: uint64(v)} }

// Float32 returns an f32 value.
func Float32(v float32) Value { return Value{tag: TypeFloat32 + 1, bits: uint64(math.Float32bits(v))} }

// Float64 returns an f64 value.
func Float64(v float64) Value { return Value{tag: TypeFloat64 + 1, bits: math.Float64bits(v)} }

// Bool returns a bool value.
func Bool(v bool) Value {
	var b uint64
	if v {
		b = 1
	}
	return Value{tag: TypeBool + 1, bits: b}
}

// String returns a string value.
func String(s string) Value { return Value{tag: TypeString + 1, str: s} }

// Array constructors. The Value keeps the slice; do not modify it afterwards.

// Uint8s returns an array of u8.
func Uint8s(v []uint8) Value { return array(TypeUint8, v) }

// Int8s returns an array of i8.
func Int8s(v []int8) Value { return array(TypeInt8, v) }

// Uint16s returns an array of u16.
func Uint16s(v []uint16) Value { return array(TypeUint16, v) }

// Int16s returns an array of i16.
func Int16s(v []int16) Value { return array(TypeInt16, v) }

// Uint32s returns an array of u32.
func Uint32s(v []uint32) Value { return array(TypeUint32, v) }

// Int32s returns an array of i32.
func Int32s(v []int32) Value { return array(TypeInt32, v) }

// Uint64s returns an array of u64.
func Uint64s(v []uint64) Value { return array(TypeUint64, v) }

// Int64s returns an array of i64.
func Int64s(v []int64) Value { return array(TypeInt64, v) }

// Float32s returns an array of f32.
func Float32s(v []float32) Value { return array(TypeFloat32, v) }

// Float64s returns an array of f64.
func Float64s(v []float64) Value { return array(TypeFloat64, v) }

// Bools returns an array of bool.
func Bools(v []bool) Value { return array(TypeBool, v) }

// Strings returns an array of strings.
func Strings(v []string) Value { return array(TypeString, v) }

// Arrays returns an array of arrays. Each element must itself be an array
// value; the writer rejects anything else.
func Arrays(v []Value) Value { return array(TypeArray, v) }

func array(elem ValueType, s any) Value { return Value{tag: TypeArray + 1, elem: elem, arr: s} }

// Type returns the type of v (TypeArray for arrays), TypeInvalid for the
// zero Value.
func (v Value) Type() ValueType {
	if v.tag == 0 {
		return TypeInvalid
	}
	return v.tag - 1
}

// ElemType returns the element type of an array value.
func (v Value) ElemType() ValueType { return v.elem }

// Len returns the element count of an array, the byte length of a string,
// and 1 for other scalars.
func (v Value) Len() int {
	switch v.Type() {
	case TypeString:
		return len(v.str)
	case TypeArray:
		return arrayLen(v.arr)
	}
	return 1
}

func arrayLen(a any) int {
	switch s := a.(type) {
	case []uint8:
		return len(s)
	case []int8:
		return len(s)
	case []uint16:
		return len(s)
	case []int16:
		return len(s)
	case []uint32:
		return len(s)
	case []int32:
		return len(s)
	case []uint64:
		return len(s)
	case []int64:
		return len(s)
	case []float32:
		return len(s)
	case []float64:
		return len(s)
	case []bool:
		return len(s)
	case []string:
		return len(s)
	case []Value:
		return len(s)
	}
	return 0
}

// Uint returns an integer scalar as uint64. ok is false for non-integers
// and negative values.
func (v Value) Uint() (uint64, bool) {
	if !v.Type().isInt() || (v.Type().isSigned() && int64(v.bits) < 0) {
		return 0, false
	}
	return v.bits, true
}

// Int returns an integer scalar as int64. ok is false for non-integers and
// u64 values above math.MaxInt64.
func (v Value) Int() (int64, bool) {
	if !v.Type().isInt() || (v.Type() == TypeUint64 && v.bits > math.MaxInt64) {
		return 0, false
	}
	return int64(v.bits), true
}

// Float returns a float or integer scalar as float64.
func (v Value) Float() (float64, bool) {
	switch {
	case v.Type() == TypeFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case v.Type() == TypeFloat64:
		return math.Float64frombits(v.bits), true
	case v.Type() == TypeUint64:
		return float64(v.bits), true
	case v.Type().isInt():
		return float64(int64(v.bits)), true
	}
	return 0, false
}

// Bool returns a bool scalar.
func (v Value) Bool() (bool, bool) {
	if v.Type() != TypeBool {
		return false, false
	}
	return v.bits != 0, true
}

// Str returns a string scalar.
func (v Value) Str() (string, bool) {
	if v.Type() != TypeString {
		return "", false
	}
	return v.str, true
}

// Array returns the typed slice of an array value ([]uint32, []string,
// []Value for arrays of arrays, ...), or nil. Do not modify it.
func (v Value) Array() any {
	if v.Type() != TypeArray {
		return nil
	}
	return v.arr
}

// Strings returns a string array.
func (v Value) Strings() ([]string, bool) {
	s, ok := v.Array().([]string)
	return s, ok
}

// Bools returns a bool array.
func (v Value) Bools() ([]bool, bool) {
	s, ok := v.Array().([]bool)
	return s, ok
}

// Ints returns an array of any integer type as int64s. ok is false for
// other arrays and for u64 elements above math.MaxInt64.
func (v Value) Ints() ([]int64, bool) {
	if v.Type() != TypeArray {
		return nil, false
	}
	switch s := v.arr.(type) {
	case []uint8:
		return convert(s, func(x uint8) (int64, bool) { return int64(x), true })
	case []int8:
		return convert(s, func(x int8) (int64, bool) { return int64(x), true })
	case []uint16:
		return convert(s, func(x uint16) (int64, bool) { return int64(x), true })
	case []int16:
		return convert(s, func(x int16) (int64, bool) { return int64(x), true })
	case []uint32:
		return convert(s, func(x uint32) (int64, bool) { return int64(x), true })
	case []int32:
		return convert(s, func(x int32) (int64, bool) { return int64(x), true })
	case []uint64:
		return convert(s, func(x uint64) (int64, bool) { return int64(x), x <= math.MaxInt64 })
	case []int64:
		return s, true
	}
	return nil, false
}

// Floats returns an array of any float or integer type as float64s.
func (v Value) Floats() ([]float64, bool) {
	if v.Type() != TypeArray {
		return nil, false
	}
	switch s := v.arr.(type) {
	case []float32:
		return convert(s, func(x float32) (float64, bool) { return float64(x), true })
	case []float64:
		return s, true
	case []uint64:
		return convert(s, func(x uint64) (float64, bool) { return float64(x), true })
	}
	ints, ok := v.Ints()
	if !ok {
		return nil, false
	}
	return convert(ints, func(x int64) (float64, bool) { return float64(x), true })
}

func convert[S, T any](s []S, f func(S) (T, bool)) ([]T, bool) {
	out := make([]T, len(s))
	for i, x := range s {
		y, ok := f(x)
		if !ok {
			return nil, false
		}
		out[i] = y
	}
	return out, true
}

// Interface returns v as a plain Go value: uint64/int64 for integers
// (by signedness), float64, bool, string, or the typed slice of an array.
func (v Value) Interface() any {
	switch {
	case v.Type() == TypeArray:
		return v.arr
	case v.Type() == TypeString:
		return v.str
	case v.Type() == TypeBool:
		return v.bits != 0
	case v.Type() == TypeFloat32 || v.Type() == TypeFloat64:
		f, _ := v.Float()
		return f
	case v.Type().isSigned():
		return int64(v.bits)
	case v.Type().isInt():
		return v.bits
	}
	return nil
}

// String formats v for people: scalars as themselves, arrays as
// "[u32 × 48]" with their first few elements.
func (v Value) String() string {
	switch v.Type() {
	case TypeString:
		return fmt.Sprintf("%q", v.str)
	case TypeArray:
		n := v.Len()
		var b strings.Builder
		fmt.Fprintf(&b, "[%s × %d]", v.elem, n)
		if n > 0 {
			b.WriteString(" ")
			b.WriteString(previewArray(v.arr, 8))
		}
		return b.String()
	}
	if !v.Type().valid() {
		return "<invalid>"
	}
	if f, ok := v.Float(); ok && (v.Type() == TypeFloat32 || v.Type() == TypeFloat64) {
		return formatFloat(f, v.Type())
	}
	return fmt.Sprint(v.Interface())
}

func previewArray(a any, max int) string {
	var parts []string
	n := arrayLen(a)
	for i := 0; i < n && i < max; i++ {
		parts = append(parts, elemString(a, i))
	}
	s := strings.Join(parts, " ")
	if n > max {
		s += " …"
	}
	return s
}

func elemString(a any, i int) string {
	switch s := a.(type) {
	case []string:
		return fmt.Sprintf("%q", s[i])
	case []Value:
		return s[i].String()
	case []uint8:
		return fmt.Sprint(s[i])
	case []int8:
		return fmt.Sprint(s[i])
	case []uint16:
		return fmt.Sprint(s[i])
	case []int16:
		return fmt.Sprint(s[i])
	case []uint32:
		return fmt.Sprint(s[i])
	case []int32:
		return fmt.Sprint(s[i])
	case []uint64:
		return fmt.Sprint(s[i])
	case []int64:
		return fmt.Sprint(s[i])
	case []float32:
		return formatFloat(float64(s[i]), TypeFloat32)
	case []float64:
		return fmt.Sprint(s[i])
	case []bool:
		return fmt.Sprint(s[i])
	}
	return "?"
}

// Equal reports whether v and u have the same type and encode to the same
// bytes (so NaNs with equal bits are equal, and an empty array equals a nil
// one of the same element type).
func (v Value) Equal(u Value) bool {
	if v.Type() != u.Type() || v.elem != u.elem {
		return false
	}
	var a, b bytes.Buffer
	ea, eb := encoder{w: &a}, encoder{w: &b}
	ea.value(v)
	eb.value(u)
	return bytes.Equal(a.Bytes(), b.Bytes())
}

// formatFloat formats f at the shortest decimal that reads back to the same
// value of type t (f32 or f64).
func formatFloat(f float64, t ValueType) string {
	bits := 64
	if t == TypeFloat32 {
		bits = 32
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}
