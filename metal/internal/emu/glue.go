package emu

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	reKernel = regexp.MustCompile(`\bkernel\s+void\s+(\w+)\s*\(`)
	reAttr   = regexp.MustCompile(`\[\[\s*(\w+)\s*(?:\(\s*([^)]*)\))?\s*\]\]`)
	reFC     = regexp.MustCompile(`constant\s+\w+\s+(\w+)\s*\[\[\s*function_constant\s*\((.*?)\)\s*\]\]`)
	reCmt    = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	builtins = map[string]string{
		"thread_position_in_threadgroup": "B.tpitg", "threadgroup_position_in_grid": "B.tgpig",
		"threads_per_threadgroup": "B.tptg", "threadgroups_per_grid": "B.tgpg", "thread_position_in_grid": "B.tpig",
		"thread_index_in_threadgroup": "B.tiitg", "thread_index_in_simdgroup": "B.tiisg",
		"simdgroup_index_in_threadgroup": "B.sgitg", "simdgroups_per_threadgroup": "B.sgptg",
	}
)

// stripComments blanks comments, keeping newlines so line numbers hold.
func stripComments(s string) string {
	return reCmt.ReplaceAllStringFunc(s, func(c string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, c)
	})
}

// Kernels returns the names of the kernel functions in an MSL source.
func Kernels(src string) []string {
	var names []string
	for _, m := range reKernel.FindAllStringSubmatch(stripComments(src), -1) {
		names = append(names, m[1])
	}
	return names
}

// glue returns the C++ that lets the runtime call the kernels of one MSL
// file, included as include: one thunk per `kernel void name(...)` mapping
// [[buffer(i)]], [[threadgroup(i)]] and builtin attributes to arguments, and
// the registration of the [[function_constant(i)]] globals.
func glue(name, include, src string) (string, error) {
	text := stripComments(src)
	macros := objectMacros(text)
	var w strings.Builder
	fmt.Fprintf(&w, "// GENERATED from %s by metal/internal/emu. DO NOT EDIT.\n#include %q\n\n", name, include)
	var regs []string
	for _, m := range reKernel.FindAllStringSubmatchIndex(text, -1) {
		kname := text[m[2]:m[3]]
		depth, i := 1, m[1]
		for ; depth > 0; i++ {
			if i >= len(text) {
				return "", fmt.Errorf("%s: kernel %s: unterminated parameter list", name, kname)
			}
			switch text[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
		}
		var args []string
		for _, p := range splitTop(expand(text[m[1]:i-1], macros)) {
			a := reAttr.FindStringSubmatch(p)
			if a == nil {
				return "", fmt.Errorf("%s: kernel %s: parameter without attribute: %q", name, kname, strings.TrimSpace(p))
			}
			switch {
			case a[1] == "buffer":
				args = append(args, "mslemu::buf(L, "+a[2]+")")
			case a[1] == "threadgroup":
				args = append(args, "mslemu::tgmem(tg, "+a[2]+")")
			case builtins[a[1]] != "":
				args = append(args, "mslemu::bi("+builtins[a[1]]+")")
			default:
				return "", fmt.Errorf("%s: kernel %s: unsupported attribute [[%s]]", name, kname, a[1])
			}
		}
		fmt.Fprintf(&w, "static void thunk_%s(const mslemu::Launch &L, const mslemu::Builtins &B, void *const *tg) {\n  (void)L; (void)B; (void)tg;\n  %s(%s);\n}\n",
			kname, kname, strings.Join(args, ", "))
		regs = append(regs, fmt.Sprintf("static mslemu::KernelReg reg_%s(%q, thunk_%s);", kname, kname, kname))
	}
	w.WriteString(strings.Join(regs, "\n") + "\n\n")
	w.WriteString("__attribute__((constructor(101))) static void mslemu_fc_init() {\n")
	for _, m := range reFC.FindAllStringSubmatch(text, -1) {
		fmt.Fprintf(&w, "  mslemu::fc_register(&%s, %s);\n", m[1], m[2])
	}
	w.WriteString("}\n")
	return w.String(), nil
}

// splitTop splits s at the commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(', '[', '<':
			depth++
		case ')', ']', '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

var reDefine = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]((?:[^\n]*\\\n)*[^\n]*)`)

// objectMacros returns the object-like macros of src (#define NAME body,
// continuation lines joined), so that a kernel's parameter list may be
// written as a macro shared by several kernels.
func objectMacros(src string) map[string]string {
	m := map[string]string{}
	for _, d := range reDefine.FindAllStringSubmatch(src, -1) {
		m[d[1]] = strings.ReplaceAll(d[2], "\\\n", " ")
	}
	return m
}

var reIdent = regexp.MustCompile(`\b\w+\b`)

// expand replaces the macros in s (repeatedly, for macros using macros).
func expand(s string, macros map[string]string) string {
	for range 8 {
		changed := false
		s = reIdent.ReplaceAllStringFunc(s, func(id string) string {
			if body, ok := macros[id]; ok {
				changed = true
				return body
			}
			return id
		})
		if !changed {
			break
		}
	}
	return s
}
