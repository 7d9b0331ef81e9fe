package tokenizer

import "unicode"

// Codepoint flags of llama.cpp's src/unicode.h (unicode_cpt_flags).
const (
	fUndefined  uint16 = 0x0001
	fNumber     uint16 = 0x0002 // \p{N}
	fLetter     uint16 = 0x0004 // \p{L}
	fSeparator  uint16 = 0x0008 // \p{Z}
	fMark       uint16 = 0x0010 // \p{M}
	fPunct      uint16 = 0x0020 // \p{P}
	fSymbol     uint16 = 0x0040 // \p{S}
	fControl    uint16 = 0x0080 // \p{C}
	fWhitespace uint16 = 0x0100 // \s
)

// maxCodepoints bounds llama.cpp's flag table; codepoints at or above it
// (reachable through its lenient UTF-8 decoder) are "undefined".
const maxCodepoints = 0x110000

// unicode151 lists the codepoints that Unicode 15.1 assigned after Go's
// unicode tables (15.0.0); llama.cpp's unicode-data.cpp is generated from 15.1.
// With these, the categories below agree with llama.cpp's for every codepoint.
var unicode151 = []struct {
	lo, hi rune
	flags  uint16
}{
	{0x2FFC, 0x2FFF, fSymbol},   // ideographic description characters
	{0x31EF, 0x31EF, fSymbol},   // CJK stroke HXG
	{0x2EBF0, 0x2EE5D, fLetter}, // CJK Unified Ideographs Extension I
}

var asciiFlags = func() (t [128]uint16) {
	for r := range rune(128) {
		t[r] = categoryFlags(r)
	}
	return t
}()

// cptFlags returns llama.cpp's flags of a codepoint.
func cptFlags(r rune) uint16 {
	if r >= 0 && r < 128 {
		return asciiFlags[r]
	}
	return categoryFlags(r)
}

func categoryFlags(r rune) uint16 {
	if r < 0 || r >= maxCodepoints {
		return fUndefined
	}
	var f uint16
	switch {
	case unicode.IsLetter(r):
		f = fLetter
	case unicode.IsMark(r):
		f = fMark
	case unicode.IsNumber(r):
		f = fNumber
	case unicode.IsPunct(r):
		f = fPunct
	case unicode.IsSymbol(r):
		f = fSymbol
	case unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
		f = fSeparator
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs):
		f = fControl
	default:
		f = fUndefined
		for _, e := range unicode151 {
			if r >= e.lo && r <= e.hi {
				f = e.flags
			}
		}
	}
	if unicode.Is(unicode.White_Space, r) {
		f |= fWhitespace
	}
	return f
}

// llamaRunes decodes UTF-8 the way llama.cpp's unicode_cpts_from_utf8 does:
// lead and continuation bits are checked, but not overlong forms, surrogates
// or the upper bound; a byte that does not start a sequence becomes U+FFFD.
func llamaRunes(s string) []rune {
	out := make([]rune, 0, len(s))
	return appendLlamaRunes(out, s)
}

func appendLlamaRunes(out []rune, s string) []rune {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < 0x80:
			out = append(out, rune(c))
			i++
			continue
		case c&0x40 == 0:
		case c&0x20 == 0:
			if i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
				out = append(out, rune(c&0x1F)<<6|rune(s[i+1]&0x3F))
				i += 2
				continue
			}
		case c&0x10 == 0:
			if i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
				out = append(out, rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F))
				i += 3
				continue
			}
		case c&0x08 == 0:
			if i+3 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 && s[i+3]&0xC0 == 0x80 {
				out = append(out, rune(c&0x07)<<18|rune(s[i+1]&0x3F)<<12|rune(s[i+2]&0x3F)<<6|rune(s[i+3]&0x3F))
				i += 4
				continue
			}
		}
		out = append(out, 0xFFFD)
		i++
	}
	return out
}

// appendCpt encodes a codepoint like unicode_cpt_to_utf8 (surrogates
// included). llama.cpp throws for codepoints above U+10FFFF, which only
// its lenient decoder can produce; they are encoded as U+FFFD here.
func appendCpt(b []byte, r rune) []byte {
	switch {
	case r < 0:
		r = 0xFFFD
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r >= 0x110000:
		r = 0xFFFD
	}
	if r < 0x10000 {
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(b, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

const outOfRange = -1

// splitter walks the codepoints of one text fragment.
type splitter struct {
	cpts []rune
	out  []int // word ends (exclusive), in codepoints
}

func (s *splitter) cpt(pos int) rune {
	if pos < len(s.cpts) {
		return s.cpts[pos]
	}
	return outOfRange
}

func (s *splitter) flags(pos int) uint16 {
	if pos < len(s.cpts) {
		return cptFlags(s.cpts[pos])
	}
	return 0
}

func (s *splitter) add(end int) {
	if len(s.out) == 0 && end > 0 || len(s.out) > 0 && end > s.out[len(s.out)-1] {
		s.out = append(s.out, end)
	}
}

func isRN(r rune) bool { return r == '\r' || r == '\n' }

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at pos and returns its
// length, or 0.
func (s *splitter) contraction(pos int, fold bool) int {
	n := len(s.cpts)
	if s.cpt(pos) != '\'' || pos+1 >= n {
		return 0
	}
	lower := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	c1 := lower(s.cpt(pos + 1))
	if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
		return 2
	}
	if pos+2 < n {
		c2 := lower(s.cpt(pos + 2))
		if c1 == 'r' && c2 == 'e' || c1 == 'v' && c2 == 'e' || c1 == 'l' && c2 == 'l' {
			return 3
		}
	}
	return 0
}

// splitQwen follows unicode_regex_split_custom_qwen2 (variant preQwen2),
// _qwen35 (letters also take combining marks) and _llama3 (digits in runs of
// up to three) of llama.cpp's src/unicode.cpp, for the regex
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func (s *splitter) splitQwen(kind preKind) {
	n := len(s.cpts)
	word := fLetter
	if kind == preQwen35 {
		word = fLetter | fMark
	}
	for pos := 0; pos < n; {
		c := s.cpt(pos)
		f := s.flags(pos)
		if l := s.contraction(pos, true); l > 0 {
			pos += l
			s.add(pos)
			continue
		}
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if !isRN(c) && f&fNumber == 0 {
			if f&word != 0 || s.flags(pos+1)&word != 0 {
				pos++
				for s.flags(pos)&word != 0 {
					pos++
				}
				s.add(pos)
				continue
			}
		}
		// \p{N} (llama3: \p{N}{1,3})
		if f&fNumber != 0 {
			if kind == preLlama3 {
				ini := pos
				for s.flags(pos)&fNumber != 0 {
					pos++
					if pos-ini >= 3 {
						s.add(pos)
						ini = pos
					}
				}
			} else {
				pos++
			}
			s.add(pos)
			continue
		}
		//  ?[^\s\p{L}\p{N}]+[\r\n]*
		f2 := f
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		stop := fWhitespace | fLetter | fNumber
		if kind == preQwen35 {
			stop |= fMark
		}
		if f2&stop == 0 && f != 0 {
			if c == ' ' {
				pos++
			}
			for f2&stop == 0 && f2 != 0 {
				pos++
				f2 = s.flags(pos)
			}
			for isRN(s.cpt(pos)) {
				pos++
			}
			s.add(pos)
			continue
		}
		if s.whitespace(&pos, true) {
			continue
		}
		pos++
		s.add(pos)
	}
}

// whitespace handles \s*[\r\n]+ (when rn), \s+(?!\S) and \s+ at pos.
func (s *splitter) whitespace(pos *int, rn bool) bool {
	p := *pos
	num, lastRN := 0, 0
	for s.flags(p+num)&fWhitespace != 0 {
		if isRN(s.cpt(p + num)) {
			lastRN = p + num + 1
		}
		num++
	}
	switch {
	case rn && lastRN > 0:
		p = lastRN
	case num > 1 && s.cpt(p+num) != outOfRange:
		p += num - 1
	case num > 0:
		p += num
	default:
		return false
	}
	*pos = p
	s.add(p)
	return true
}

// splitGPT2 follows unicode_regex_split_custom_gpt2 for the regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
func (s *splitter) splitGPT2() {
	n := len(s.cpts)
	for pos := 0; pos < n; {
		c := s.cpt(pos)
		f := s.flags(pos)
		if l := s.contraction(pos, false); l > 0 {
			pos += l
			s.add(pos)
			continue
		}
		f2 := f
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		if f2&fLetter != 0 || f2&fNumber != 0 {
			class := f2 & (fLetter | fNumber)
			if class == fLetter|fNumber {
				class = fLetter
			}
			if c == ' ' {
				pos++
			}
			for f2&class != 0 {
				pos++
				f2 = s.flags(pos)
			}
			s.add(pos)
			continue
		}
		if f2&(fWhitespace|fLetter|fNumber) == 0 && f2 != 0 {
			if c == ' ' {
				pos++
			}
			for f2&(fWhitespace|fLetter|fNumber) == 0 && f2 != 0 {
				pos++
				f2 = s.flags(pos)
			}
			s.add(pos)
			continue
		}
		if s.whitespace(&pos, false) {
			continue
		}
		pos++
		s.add(pos)
	}
}

// split fills s.out with the word ends of s.cpts for the pre-tokenizer.
func (s *splitter) split(kind preKind) {
	s.out = s.out[:0]
	if kind == preGPT2 {
		s.splitGPT2()
		return
	}
	s.splitQwen(kind)
}
