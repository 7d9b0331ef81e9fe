package grammar

// The recognizer: a stack of frames, one per open value, fed one byte at a
// time. feed never allocates once the stack has grown to its depth, so the
// vocabulary walk can copy and extend states cheaply.

// Frame phases.
const (
	// kObject
	objOpen    = iota // after '{': whitespace, a key or '}'
	objKey            // a key is being read by the child frame
	objColon          // after the key: whitespace, ':'
	objValue          // after ':': whitespace, then the value
	objAfter          // after a value: whitespace, ',' or '}'
	objComma          // after ',': whitespace, a key
	arrOpen           // after '[': whitespace, a value or ']'
	arrAfter          // after a value: whitespace, ',' or ']'
	arrComma          // after ',': whitespace, a value
	strContent        // inside a string
	numIn             // inside a number (frame.sub is the number state)
	litIn             // inside a literal (frame.mask holds the candidates)
	keyIn             // inside a free object key (a string)
)

type frame struct {
	n     *node
	phase uint8
	ws    uint8 // whitespace bytes in the current gap
	esc   uint8 // strings: 0, 1 after '\', 2..5 hex digits to come + 1
	sub   uint8 // numbers: the number state; strings: UTF-8 continuation bytes to come
	ulo   byte  // strings: the range of the next continuation byte
	uhi   byte
	count int32  // array items, string characters, number digits in the part
	pos   int32  // literal: bytes matched
	mask  uint64 // literal candidates
	seen  uint64 // object: properties present
	prop  int32  // object: the property whose value comes next (-1: free)
}

// machine is the recognizer state.
type machine struct {
	st   []frame
	done bool // the root value is complete
}

func (m *machine) copyFrom(o *machine) {
	m.st = append(m.st[:0], o.st...)
	m.done = o.done
}

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// start begins a document whose root is n.
func (m *machine) start(n *node) {
	m.st = m.st[:0]
	m.done = false
	m.st = append(m.st, frame{n: n, phase: arrComma, prop: -1}) // pseudo-frame: expects one value
}

// feed consumes one byte and reports whether the document can still be
// completed.
func (m *machine) feed(c byte) bool {
	for {
		if m.done || len(m.st) == 0 {
			return false
		}
		f := &m.st[len(m.st)-1]
		switch f.phase {
		case strContent, keyIn:
			return m.str(f, c)
		case numIn:
			ok, refeed := m.num(f, c)
			if !refeed {
				return ok
			}
			continue // the number ended; c belongs to the parent
		case litIn:
			ok, refeed := m.lit(f, c)
			if !refeed {
				return ok
			}
			continue
		}
		// Container phases.
		if isWS(c) && len(m.st) > 1 { // the document starts at once
			if f.ws >= MaxWhitespace {
				return false
			}
			f.ws++
			return true
		}
		if isWS(c) {
			return false
		}
		f.ws = 0
		if len(m.st) == 1 { // the root pseudo-frame: one value, nothing after
			return m.value(f.n, c)
		}
		n := f.n
		switch f.phase {
		case objOpen, objComma:
			if c == '}' && f.phase == objOpen && f.seen&n.required == n.required {
				return m.pop()
			}
			if c != '"' {
				return false
			}
			if n.free {
				f.phase = objKey
				return m.push(frame{n: anyString, phase: keyIn})
			}
			cand := uint64(0)
			for i := range n.props {
				if f.seen&(1<<i) == 0 {
					cand |= 1 << i
				}
			}
			if cand == 0 {
				return false
			}
			f.phase = objKey
			return m.push(frame{n: n, phase: litIn, mask: cand, pos: 1, prop: -2}) // keys: props[i].key
		case objColon:
			if c != ':' {
				return false
			}
			f.phase = objValue
			return true
		case objValue:
			f.phase = objAfter
			if f.prop >= 0 {
				return m.value(n.props[f.prop].node, c)
			}
			return m.value(n.values, c)
		case objAfter:
			switch c {
			case ',':
				if !n.free && f.seen == (uint64(1)<<len(n.props))-1 {
					return false // nothing left to say
				}
				f.phase = objComma
				return true
			case '}':
				if f.seen&n.required != n.required {
					return false
				}
				return m.pop()
			}
			return false
		case arrOpen, arrComma:
			if c == ']' && f.phase == arrOpen && n.minItems == 0 {
				return m.pop()
			}
			if n.maxItems >= 0 && int(f.count) >= n.maxItems {
				return false
			}
			f.count++
			f.phase = arrAfter
			return m.value(n.items, c)
		case arrAfter:
			switch c {
			case ',':
				if n.maxItems >= 0 && int(f.count) >= n.maxItems {
					return false
				}
				f.phase = arrComma
				return true
			case ']':
				if int(f.count) < n.minItems {
					return false
				}
				return m.pop()
			}
			return false
		}
		return false
	}
}

func (m *machine) push(f frame) bool {
	if len(m.st) > MaxDepth+1 {
		return false
	}
	m.st = append(m.st, f)
	return true
}

// pop ends the top frame; ending the root value ends the document.
func (m *machine) pop() bool {
	m.st = m.st[:len(m.st)-1]
	if len(m.st) == 1 {
		m.done = true
	}
	return true
}

// value starts a value of n with its first byte c.
func (m *machine) value(n *node, c byte) bool {
	switch n.kind {
	case kObject:
		if c != '{' {
			return false
		}
		return m.push(frame{n: n, phase: objOpen, prop: -1})
	case kArray:
		if c != '[' {
			return false
		}
		return m.push(frame{n: n, phase: arrOpen})
	case kString:
		if c != '"' {
			return false
		}
		return m.push(frame{n: n, phase: strContent})
	case kNumber, kInteger:
		if !m.push(frame{n: n, phase: numIn}) {
			return false
		}
		ok, _ := m.num(&m.st[len(m.st)-1], c)
		return ok
	case kLiteral:
		cand := uint64(0)
		for i, l := range n.lits {
			if l[0] == c {
				cand |= 1 << i
			}
		}
		if cand == 0 {
			return false
		}
		if !m.push(frame{n: n, phase: litIn, mask: cand, pos: 1, prop: -1}) {
			return false
		}
		return m.litComplete(&m.st[len(m.st)-1])
	default: // kAny
		t := n.types
		if n.alts != nil {
			for _, a := range n.alts {
				if startsWith(a, c) {
					return m.value(a, c)
				}
			}
			return false
		}
		switch {
		case c == '{' && t&tObject != 0:
			return m.push(frame{n: anyObject, phase: objOpen, prop: -1})
		case c == '[' && t&tArray != 0:
			return m.push(frame{n: anyArray, phase: arrOpen})
		case c == '"' && t&tString != 0:
			return m.push(frame{n: anyString, phase: strContent})
		case (c == '-' || c >= '0' && c <= '9') && t&(tNumber|tInteger) != 0:
			nn := numberNode
			if t&tNumber == 0 {
				nn = integerNode
			}
			return m.value(nn, c)
		case (c == 't' || c == 'f') && t&tBool != 0:
			return m.value(boolNode, c)
		case c == 'n' && t&tNull != 0:
			return m.value(nullNode, c)
		}
		return false
	}
}

// startsWith reports whether a value of n (not kAny) can start with c.
func startsWith(n *node, c byte) bool {
	switch n.kind {
	case kObject:
		return c == '{'
	case kArray:
		return c == '['
	case kString:
		return c == '"'
	case kNumber, kInteger:
		return c == '-' || c >= '0' && c <= '9'
	case kLiteral:
		for _, l := range n.lits {
			if l[0] == c {
				return true
			}
		}
	}
	return false
}

var (
	anyString   = &node{kind: kString, maxLen: -1}
	anyObject   = &node{kind: kObject, free: true, values: anyNode}
	anyArray    = &node{kind: kArray, items: anyNode, maxItems: -1}
	numberNode  = &node{kind: kNumber}
	integerNode = &node{kind: kInteger}
	boolNode    = &node{kind: kLiteral, lits: [][]byte{[]byte("true"), []byte("false")}}
	nullNode    = &node{kind: kLiteral, lits: [][]byte{[]byte("null")}}
)

// str reads string content (values and free keys).
func (m *machine) str(f *frame, c byte) bool {
	n := f.n
	switch {
	case f.sub > 0: // inside a multi-byte character
		if c < f.ulo || c > f.uhi {
			return false
		}
		f.sub--
		f.ulo, f.uhi = 0x80, 0xBF
		return true
	case f.esc == 1:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.esc = 0
			return m.char(f)
		case 'u':
			f.esc = 5
			return true
		}
		return false
	case f.esc > 1:
		if !isHex(c) {
			return false
		}
		if f.esc--; f.esc == 1 {
			f.esc = 0
			return m.char(f)
		}
		return true
	case c == '"':
		if int(f.count) < n.minLen {
			return false
		}
		key := f.phase == keyIn
		m.st = m.st[:len(m.st)-1]
		if key {
			m.st[len(m.st)-1].phase = objColon
			return true
		}
		if len(m.st) == 1 {
			m.done = true
		}
		return true
	case c == '\\':
		if n.maxLen >= 0 && int(f.count) >= n.maxLen {
			return false
		}
		f.esc = 1
		return true
	case c < 0x20:
		return false
	case c >= 0x80:
		// The lead byte of a UTF-8 character (RFC 3629's table: no
		// overlong forms, no surrogates, nothing above U+10FFFF).
		f.ulo, f.uhi = 0x80, 0xBF
		switch {
		case c >= 0xC2 && c <= 0xDF:
			f.sub = 1
		case c == 0xE0:
			f.sub, f.ulo = 2, 0xA0
		case c == 0xED:
			f.sub, f.uhi = 2, 0x9F
		case c >= 0xE1 && c <= 0xEF:
			f.sub = 2
		case c == 0xF0:
			f.sub, f.ulo = 3, 0x90
		case c >= 0xF1 && c <= 0xF3:
			f.sub = 3
		case c == 0xF4:
			f.sub, f.uhi = 3, 0x8F
		default:
			return false
		}
	}
	return m.char(f)
}

func (m *machine) char(f *frame) bool {
	f.count++
	return f.n.maxLen < 0 || int(f.count) <= f.n.maxLen
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Number states (JSON's number grammar).
const (
	nStart = iota // nothing yet
	nMinus        // after '-'
	nZero         // a leading 0
	nInt          // integer digits
	nDot          // after '.'
	nFrac         // fraction digits
	nE            // after 'e'
	nESign        // after the exponent's sign
	nExp          // exponent digits
)

// num reads a number byte; refeed says the number ended before c.
func (m *machine) num(f *frame, c byte) (ok, refeed bool) {
	digit := c >= '0' && c <= '9'
	integer := f.n.kind == kInteger
	adv := func(s uint8, resetCount bool) (bool, bool) {
		f.sub = s
		if resetCount {
			f.count = 0
		}
		return true, false
	}
	switch f.sub {
	case nStart:
		switch {
		case c == '-':
			return adv(nMinus, false)
		case c == '0':
			return adv(nZero, false)
		case digit:
			f.count = 1
			return adv(nInt, false)
		}
		return false, false
	case nMinus:
		switch {
		case c == '0':
			return adv(nZero, false)
		case digit:
			f.count = 1
			return adv(nInt, false)
		}
		return false, false
	case nZero, nInt:
		switch {
		case digit && f.sub == nInt:
			if f.count >= maxIntDigits {
				return false, false
			}
			f.count++
			return true, false
		case c == '.' && !integer:
			return adv(nDot, true)
		case (c == 'e' || c == 'E') && !integer:
			return adv(nE, true)
		case digit: // after a leading zero
			return false, false
		}
	case nDot:
		if digit {
			f.count = 1
			return adv(nFrac, false)
		}
		return false, false
	case nFrac:
		switch {
		case digit:
			if f.count >= maxFracDigits {
				return false, false
			}
			f.count++
			return true, false
		case c == 'e' || c == 'E':
			return adv(nE, true)
		}
	case nE:
		switch {
		case c == '+' || c == '-':
			return adv(nESign, false)
		case digit:
			f.count = 1
			return adv(nExp, false)
		}
		return false, false
	case nESign:
		if digit {
			f.count = 1
			return adv(nExp, false)
		}
		return false, false
	case nExp:
		if digit {
			if f.count >= maxExpDigits {
				return false, false
			}
			f.count++
			return true, false
		}
	}
	// c does not continue a complete number: the number ends before it.
	if len(m.st) == 2 {
		return false, false // a root number would need a terminator; nothing follows the root
	}
	m.st = m.st[:len(m.st)-1]
	return true, true
}

// lits returns the literal options of f (enum values or object keys).
func lits(f *frame, i int) []byte {
	if f.prop == -2 {
		return f.n.props[i].key
	}
	return f.n.lits[i]
}

func (m *machine) lit(f *frame, c byte) (ok, refeed bool) {
	cand := uint64(0)
	complete := false
	for mask := f.mask; mask != 0; mask &= mask - 1 {
		i := trailing(mask)
		l := lits(f, i)
		switch {
		case int(f.pos) < len(l) && l[f.pos] == c:
			cand |= 1 << i
		case int(f.pos) == len(l):
			complete = true
		}
	}
	if cand != 0 {
		f.mask, f.pos = cand, f.pos+1
		return m.litComplete(f), false
	}
	if !complete || len(m.st) == 2 {
		return false, false
	}
	m.endLit(f)
	return true, true
}

// litComplete pops the literal when every candidate has been read in full
// (so the byte that follows belongs to the parent).
func (m *machine) litComplete(f *frame) bool {
	for mask := f.mask; mask != 0; mask &= mask - 1 {
		if int(f.pos) < len(lits(f, trailing(mask))) {
			return true
		}
	}
	m.endLit(f)
	return true
}

// endLit pops a finished literal; a finished key tells its object which
// property comes next.
func (m *machine) endLit(f *frame) {
	key := f.prop == -2
	which := -1
	for mask := f.mask; mask != 0; mask &= mask - 1 {
		if i := trailing(mask); int(f.pos) == len(lits(f, i)) {
			which = i
		}
	}
	m.st = m.st[:len(m.st)-1]
	p := &m.st[len(m.st)-1]
	if key {
		p.prop = int32(which)
		p.seen |= 1 << which
		p.phase = objColon
		return
	}
	if len(m.st) == 1 {
		m.done = true
	}
}

func trailing(x uint64) int {
	n := 0
	for x&1 == 0 {
		x >>= 1
		n++
	}
	return n
}
