// Package grammar constrains generation to JSON: it compiles a JSON schema
// (or "any JSON object") into a byte-level pushdown recognizer and, for a
// model's vocabulary, masks the logits of every token that cannot continue a
// valid document, so the reply always parses and matches the schema. It is
// Strata's counterpart of llama.cpp's grammar sampler with
// json-schema-to-grammar, for the subset of JSON Schema that structured
// output uses.
package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Limits that keep every document finite and the recognizer small.
const (
	MaxDepth      = 32 // nesting of objects and arrays
	MaxOptions    = 64 // enum values, properties per object
	MaxWhitespace = 8  // whitespace bytes between two tokens of the document (a newline and indentation)
	maxIntDigits  = 16
	maxFracDigits = 16
	maxExpDigits  = 2 // exponents up to 99, so every number fits a float64
)

type kind uint8

const (
	kAny kind = iota // any JSON value (restricted by node.types)
	kObject
	kArray
	kString
	kNumber
	kInteger
	kLiteral // one of node.lits (enum, const, true/false/null)
)

// type bits for kAny.
const (
	tObject = 1 << iota
	tArray
	tString
	tNumber
	tInteger
	tBool
	tNull
	tAll = tObject | tArray | tString | tNumber | tBool | tNull
)

type node struct {
	kind     kind
	types    uint8    // kAny: the allowed types
	alts     []*node  // kAny from a union: one node per type, in type-bit order
	props    []prop   // kObject with declared properties
	required uint64   // bits of props
	free     bool     // kObject: any keys, values of node values
	values   *node    // kObject free: the value schema
	items    *node    // kArray
	minItems int      // kArray
	maxItems int      // kArray; -1: unbounded
	minLen   int      // kString, in characters
	maxLen   int      // kString; -1: unbounded
	lits     [][]byte // kLiteral: the JSON encodings of the allowed values
}

type prop struct {
	key  []byte // JSON-encoded, with its quotes
	node *node
}

var anyNode = &node{kind: kAny, types: tAll}

// Schema is a compiled JSON schema, safe for concurrent use.
type Schema struct {
	root *node
}

// AnyObject is response_format {"type": "json_object"}: any JSON object.
func AnyObject() *Schema {
	return &Schema{root: &node{kind: kObject, free: true, values: anyNode}}
}

// Compile compiles a JSON schema. Supported: type (one or a list), enum,
// const, properties, required, additionalProperties (false or a schema;
// with properties only those are generated), items, minItems, maxItems,
// minLength, maxLength, and the annotations title, description, default,
// examples, $schema, $id, format (not enforced), strict. Other keywords are
// refused by name rather than silently ignored.
func Compile(schema []byte) (*Schema, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	n, err := compile(v, "$", 0)
	if err != nil {
		return nil, err
	}
	return &Schema{root: n}, nil
}

var ignored = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "format": true, "strict": true, "$comment": true}

func compile(v any, path string, depth int) (*node, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("schema %s: nested deeper than %d", path, MaxDepth)
	}
	switch s := v.(type) {
	case bool:
		if s {
			return anyNode, nil
		}
		return nil, fmt.Errorf("schema %s: false allows nothing", path)
	case map[string]any:
		return compileObj(s, path, depth)
	}
	return nil, fmt.Errorf("schema %s: want an object", path)
}

func compileObj(s map[string]any, path string, depth int) (*node, error) {
	for k := range s {
		switch k {
		case "type", "enum", "const", "properties", "required", "additionalProperties", "items",
			"minItems", "maxItems", "minLength", "maxLength":
		default:
			if !ignored[k] {
				return nil, fmt.Errorf("schema %s: keyword %q is not supported", path, k)
			}
		}
	}
	if c, ok := s["const"]; ok {
		return literals(path, []any{c})
	}
	if e, ok := s["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("schema %s: enum must be a non-empty array", path)
		}
		return literals(path, list)
	}
	types := uint8(0)
	switch t := s["type"].(type) {
	case nil:
		types = tAll
	case string:
		b, err := typeBit(path, t)
		if err != nil {
			return nil, err
		}
		types = b
	case []any:
		for _, x := range t {
			str, _ := x.(string)
			b, err := typeBit(path, str)
			if err != nil {
				return nil, err
			}
			types |= b
		}
	default:
		return nil, fmt.Errorf("schema %s: type must be a string or a list", path)
	}
	if types&tInteger != 0 && types&tNumber != 0 {
		types &^= tInteger
	}
	single := types&(types-1) == 0
	if !single {
		// A union: each type with the keywords that apply to it.
		n := &node{kind: kAny, types: types}
		for bit := uint8(1); bit <= tNull; bit <<= 1 {
			if types&bit == 0 {
				continue
			}
			one := make(map[string]any, len(s))
			for k, v := range s {
				one[k] = v
			}
			one["type"] = typeName(bit)
			if bit != tObject {
				delete(one, "properties")
				delete(one, "required")
				delete(one, "additionalProperties")
			}
			c, err := compileObj(one, path, depth)
			if err != nil {
				return nil, err
			}
			n.alts = append(n.alts, c)
		}
		return n, nil
	}
	switch types {
	case tBool:
		return literals(path, []any{true, false})
	case tNull:
		return literals(path, []any{nil})
	case tNumber:
		return &node{kind: kNumber}, nil
	case tInteger:
		return &node{kind: kInteger}, nil
	case tString:
		n := &node{kind: kString, maxLen: -1}
		var err error
		if n.minLen, err = intKw(s, "minLength", path, 0); err != nil {
			return nil, err
		}
		if n.maxLen, err = intKw(s, "maxLength", path, -1); err != nil {
			return nil, err
		}
		if n.maxLen >= 0 && n.maxLen < n.minLen {
			return nil, fmt.Errorf("schema %s: maxLength below minLength", path)
		}
		return n, nil
	case tArray:
		n := &node{kind: kArray, items: anyNode}
		if it, ok := s["items"]; ok {
			c, err := compile(it, path+".items", depth+1)
			if err != nil {
				return nil, err
			}
			n.items = c
		}
		var err error
		if n.minItems, err = intKw(s, "minItems", path, 0); err != nil {
			return nil, err
		}
		if n.maxItems, err = intKw(s, "maxItems", path, -1); err != nil {
			return nil, err
		}
		if n.maxItems >= 0 && n.maxItems < n.minItems {
			return nil, fmt.Errorf("schema %s: maxItems below minItems", path)
		}
		return n, nil
	default: // object
		return compileObject(s, path, depth)
	}
}

func compileObject(s map[string]any, path string, depth int) (*node, error) {
	n := &node{kind: kObject}
	props, hasProps := s["properties"].(map[string]any)
	if _, ok := s["properties"]; ok && !hasProps {
		return nil, fmt.Errorf("schema %s: properties must be an object", path)
	}
	if !hasProps || len(props) == 0 {
		n.free, n.values = true, anyNode
		switch ap := s["additionalProperties"].(type) {
		case nil:
		case bool:
			if !ap {
				n.free = false // only {}
			}
		default:
			c, err := compile(ap, path+".additionalProperties", depth+1)
			if err != nil {
				return nil, err
			}
			n.values = c
		}
		return n, nil
	}
	if len(props) > MaxOptions {
		return nil, fmt.Errorf("schema %s: more than %d properties", path, MaxOptions)
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	index := map[string]int{}
	for i, k := range names {
		c, err := compile(props[k], path+"."+k, depth+1)
		if err != nil {
			return nil, err
		}
		key, _ := json.Marshal(k)
		n.props = append(n.props, prop{key: key, node: c})
		index[k] = i
	}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("schema %s: required must be a list", path)
		}
		for _, x := range list {
			k, _ := x.(string)
			i, ok := index[k]
			if !ok {
				return nil, fmt.Errorf("schema %s: required property %q is not in properties", path, k)
			}
			n.required |= 1 << i
		}
	}
	return n, nil
}

func typeName(bit uint8) string {
	return map[uint8]string{tObject: "object", tArray: "array", tString: "string", tNumber: "number",
		tInteger: "integer", tBool: "boolean", tNull: "null"}[bit]
}

func typeBit(path, t string) (uint8, error) {
	switch t {
	case "object":
		return tObject, nil
	case "array":
		return tArray, nil
	case "string":
		return tString, nil
	case "number":
		return tNumber, nil
	case "integer":
		return tInteger, nil
	case "boolean":
		return tBool, nil
	case "null":
		return tNull, nil
	}
	return 0, fmt.Errorf("schema %s: unknown type %q", path, t)
}

func intKw(s map[string]any, k, path string, def int) (int, error) {
	v, ok := s[k]
	if !ok {
		return def, nil
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("schema %s: %s must be a number", path, k)
	}
	f, err := num.Float64()
	if err != nil || f < 0 || f != math.Trunc(f) || f > 1<<20 {
		return 0, fmt.Errorf("schema %s: %s must be a whole number from 0 to %d", path, k, 1<<20)
	}
	return int(f), nil
}

func literals(path string, vals []any) (*node, error) {
	if len(vals) > MaxOptions {
		return nil, fmt.Errorf("schema %s: more than %d enum values", path, MaxOptions)
	}
	n := &node{kind: kLiteral}
	for _, v := range vals {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("schema %s: enum value: %w", path, err)
		}
		if !slices.ContainsFunc(n.lits, func(x []byte) bool { return bytes.Equal(x, b) }) {
			n.lits = append(n.lits, b)
		}
	}
	if len(n.lits) == 0 {
		return nil, errors.New("schema " + path + ": empty enum")
	}
	return n, nil
}
