package emu

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Lint reports what in an MSL source the emulator would run differently
// from a GPU without failing, or what Apple's compiler rejects while the
// C++ shim accepts it. Each problem names the file and line.
//
// The rules:
//   - threadgroup variables declared inside a function: in C++ they would be
//     private to each lane (declare them as [[threadgroup(n)]] kernel
//     parameters instead);
//   - static variables inside a function: shared by every lane and every
//     threadgroup here, not allowed in MSL;
//   - program-scope variables that are not `constant`: MSL allows none, C++
//     would share them between threadgroups;
//   - #include of anything but <metal_stdlib>: newLibraryWithSource has no
//     include path;
//   - features the shim does not have (textures, samplers, imageblocks,
//     packed_float3, template [[host_name]] instantiations, raster order
//     groups).
func Lint(name, src string) error {
	text := stripComments(src)
	var errs []error
	lineOf := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	report := func(off int, f string, a ...any) {
		for off < len(text) && (text[off] == ' ' || text[off] == '\t' || text[off] == '\n' || text[off] == '\r') {
			off++
		}
		errs = append(errs, fmt.Errorf("%s:%d: %s", name, lineOf(off), fmt.Sprintf(f, a...)))
	}
	for _, u := range unsupported {
		for _, m := range u.re.FindAllStringIndex(text, -1) {
			report(m[0], "%s", u.msg)
		}
	}
	for _, m := range reInclude.FindAllStringSubmatchIndex(text, -1) {
		if inc := text[m[2]:m[3]]; inc != "<metal_stdlib>" {
			report(m[0], "#include %s: only <metal_stdlib> can be included (newLibraryWithSource has no include path)", inc)
		}
	}
	// Walk the statements with their brace depth and whether they sit in a
	// function body (depth ≥ 1 inside a block opened after a ')').
	depth, fnDepth := 0, 0 // fnDepth: depth at which the current function body opened (0: none)
	paren := 0
	stmtStart := 0
	lastSig := byte(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case '#':
			if lastSig == 0 || lastSig == ';' || lastSig == '}' || lastSig == '{' || lastSig == '\n' {
				for i < len(text) && text[i] != '\n' {
					if text[i] == '\\' && i+1 < len(text) {
						i++
					}
					i++
				}
				stmtStart = i
				continue
			}
		case '(':
			paren++
		case ')':
			paren--
		case '{':
			if paren == 0 {
				stmt := strings.TrimSpace(text[stmtStart:i])
				if fnDepth == 0 && strings.HasSuffix(stmt, ")") || fnDepth == 0 && reFnTail.MatchString(stmt) {
					fnDepth = depth + 1
				} else if fnDepth == 0 {
					checkGlobal(stmt, stmtStart, report)
				}
				depth++
				stmtStart = i + 1
			}
		case '}':
			if paren == 0 {
				if fnDepth != 0 {
					checkLocal(strings.TrimSpace(text[stmtStart:i]), stmtStart, report)
				}
				if depth == fnDepth {
					fnDepth = 0
				}
				depth--
				stmtStart = i + 1
			}
		case ';':
			if paren == 0 {
				stmt := strings.TrimSpace(text[stmtStart:i])
				if fnDepth != 0 {
					checkLocal(stmt, stmtStart, report)
				} else if depth == 0 {
					checkGlobal(stmt, stmtStart, report)
				}
				stmtStart = i + 1
			}
		}
		if c != ' ' && c != '\t' && c != '\r' {
			lastSig = c
		}
	}
	return errors.Join(errs...)
}

var (
	reInclude   = regexp.MustCompile(`#\s*include\s*([<"][^>"]*[>"])`)
	reFnTail    = regexp.MustCompile(`\)\s*(const|->\s*[\w:<>]+)?\s*$`)
	reTGLocal   = regexp.MustCompile(`^(const\s+)?threadgroup\s+(const\s+)?[\w:<>]+\s+\w+\s*(\[.*)?(=.*)?$`)
	reStatic    = regexp.MustCompile(`^static\s`)
	reGlobal    = regexp.MustCompile(`^(const\s+)?(device|thread|threadgroup|volatile\s+)?\s*[\w:<>]+[\s\*&]+\w+\s*(\[[^\]]*\])*\s*(=.*)?$`)
	globalOK    = regexp.MustCompile(`^(constant|constexpr|static\s+constant|static\s+constexpr|typedef|using|struct|enum|union|template|namespace|static_assert|return|inline|static\s+inline)\b`)
	unsupported = []struct {
		re  *regexp.Regexp
		msg string
	}{
		{regexp.MustCompile(`\b(texture[123]d\w*|texturecube\w*|depth2d\w*|sampler)\b`), "textures and samplers are not emulated"},
		{regexp.MustCompile(`\bimageblock\b|\bthreadgroup_imageblock\b`), "imageblocks are not emulated"},
		{regexp.MustCompile(`\bpacked_(float|half|int|uint|short|ushort|char|uchar)3\b`), "packed 3-vectors are not emulated (their size differs from the shim's)"},
		{regexp.MustCompile(`\[\[\s*host_name`), "template [[host_name]] instantiations are not emulated: write a named kernel that calls the template"},
		{regexp.MustCompile(`\[\[\s*raster_order_group`), "raster order groups are not emulated"},
	}
)

func checkLocal(stmt string, off int, report func(int, string, ...any)) {
	s := lastStatement(stmt)
	switch {
	case reTGLocal.MatchString(s):
		report(off, "threadgroup variable declared inside a function (%q): the emulator would give each lane its own; pass it as a [[threadgroup(n)]] kernel parameter", short(s))
	case reStatic.MatchString(s) && !strings.HasPrefix(s, "static_assert"):
		report(off, "static variable inside a function (%q): not allowed in MSL, shared by all lanes here", short(s))
	}
}

func checkGlobal(stmt string, off int, report func(int, string, ...any)) {
	s := strings.TrimSpace(stmt)
	if s == "" || globalOK.MatchString(s) || strings.ContainsAny(s, "(") {
		return
	}
	if reGlobal.MatchString(s) {
		report(off, "program-scope variable %q is not constant: MSL allows only constant ones, the emulator would share it between threadgroups", short(s))
	}
}

// lastStatement drops labels and the controlling parts of for/if/while
// so that the declaration itself is seen.
func lastStatement(s string) string {
	s = strings.TrimSpace(s)
	for _, p := range []string{"else "} {
		s = strings.TrimPrefix(s, p)
	}
	return strings.TrimSpace(s)
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
