package tokenizer

import (
	"fmt"
	"strings"
)

// byteChars is GPT-2's byte-to-unicode table: printable Latin-1 bytes stand
// for themselves, the others are shifted to U+0100 and up
// (unicode_byte_to_utf8_map in llama.cpp's src/unicode.cpp).
var byteChars, charBytes = func() ([256]string, map[rune]byte) {
	var enc [256]string
	dec := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= 0x21 && b <= 0x7E || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF) {
			r = rune(256 + n)
			n++
		}
		enc[b] = string(r)
		dec[r] = byte(b)
	}
	return enc, dec
}()

// buildMerges interns the strings of the merge list and indexes each pair.
func (t *Tokenizer) buildMerges(merges []string) error {
	intern := make(map[string]int32, 2*len(merges)+256)
	id := func(s string) int32 {
		if v, ok := intern[s]; ok {
			return v
		}
		v := int32(len(t.internText))
		intern[s] = v
		t.internText = append(t.internText, s)
		return v
	}
	for b := range 256 {
		t.byteSym[b] = id(byteChars[b])
		t.byteTok[b] = -1
		if tok, ok := t.toID[string([]byte{byte(b)})]; ok {
			t.byteTok[b] = tok
		}
	}
	t.pairs = make(map[uint64]merge, len(merges))
	for i, m := range merges {
		// llama.cpp splits at the first space after the first byte.
		sp := -1
		if len(m) > 1 {
			if j := strings.IndexByte(m[1:], ' '); j >= 0 {
				sp = j + 1
			}
		}
		if sp < 0 || sp == len(m)-1 {
			return fmt.Errorf("tokenizer: merge %d %q is not two space-separated parts", i, m)
		}
		left, right := m[:sp], m[sp+1:]
		l, r := id(left), id(right)
		key := uint64(uint32(l))<<32 | uint64(uint32(r))
		if _, dup := t.pairs[key]; dup {
			continue // the first (highest priority) occurrence wins, as in llama.cpp
		}
		t.pairs[key] = merge{rank: int32(i), result: id(left + right)}
	}
	t.internTok = make([]int32, len(t.internText))
	for i, s := range t.internText {
		t.internTok[i] = -1
		if tok, ok := t.toID[s]; ok {
			t.internTok[i] = tok
		}
	}
	return nil
}

// symbol is a run of bytes of a word during BPE.
type symbol struct {
	id         int32 // interned string
	n          int32 // length in bytes; 0 once merged into its left neighbour
	prev, next int32
}

// bigram is a candidate merge of two adjacent symbols.
type bigram struct {
	rank, left, right, size int32
}

// bpeState is the scratch space of one Encode call.
type bpeState struct {
	syms  []symbol
	queue []bigram
	enc   []byte
}

func (q *bpeState) less(i, j int) bool {
	a, b := q.queue[i], q.queue[j]
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}

func (q *bpeState) push(b bigram) {
	q.queue = append(q.queue, b)
	i := len(q.queue) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.queue[i], q.queue[p] = q.queue[p], q.queue[i]
		i = p
	}
}

func (q *bpeState) pop() bigram {
	top := q.queue[0]
	last := len(q.queue) - 1
	q.queue[0] = q.queue[last]
	q.queue = q.queue[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.less(l, m) {
			m = l
		}
		if r < last && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.queue[i], q.queue[m] = q.queue[m], q.queue[i]
		i = m
	}
	return top
}

func (t *Tokenizer) addBigram(st *bpeState, left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := st.syms[left], st.syms[right]
	m, ok := t.pairs[uint64(uint32(l.id))<<32|uint64(uint32(r.id))]
	if !ok {
		return
	}
	st.push(bigram{rank: m.rank, left: left, right: right, size: l.n + r.n})
}

// bpeWord appends the tokens of one pre-tokenized word (raw UTF-8 bytes)
// to out, following llm_tokenizer_bpe_session::tokenize.
func (t *Tokenizer) bpeWord(st *bpeState, word []byte, out []int32) []int32 {
	if t.ignoreMrg {
		st.enc = st.enc[:0]
		for _, b := range word {
			st.enc = append(st.enc, byteChars[b]...)
		}
		if tok, ok := t.toID[string(st.enc)]; ok {
			return append(out, tok)
		}
	}
	st.syms = st.syms[:0]
	st.queue = st.queue[:0]
	for i, b := range word {
		next := int32(i + 1)
		if i == len(word)-1 {
			next = -1
		}
		st.syms = append(st.syms, symbol{id: t.byteSym[b], n: 1, prev: int32(i - 1), next: next})
	}
	for i := 1; i < len(st.syms); i++ {
		t.addBigram(st, int32(i-1), int32(i))
	}
	for len(st.queue) > 0 {
		bg := st.pop()
		left, right := &st.syms[bg.left], &st.syms[bg.right]
		// Skip outdated bigrams: symbols only grow, so the pair is intact
		// exactly when both are alive and their lengths still add up.
		if left.n == 0 || right.n == 0 || left.n+right.n != bg.size {
			continue
		}
		m := t.pairs[uint64(uint32(left.id))<<32|uint64(uint32(right.id))]
		left.id = m.result
		left.n += right.n
		right.n = 0
		left.next = right.next
		if right.next >= 0 {
			st.syms[right.next].prev = bg.left
		}
		t.addBigram(st, left.prev, bg.left)
		t.addBigram(st, bg.left, left.next)
	}
	for i := int32(0); i >= 0 && len(st.syms) > 0; i = st.syms[i].next {
		s := st.syms[i]
		if tok := t.internTok[s.id]; tok >= 0 {
			out = append(out, tok)
			continue
		}
		// Not a token: llama.cpp looks up each byte of the encoded text
		// as a one-byte token and drops those it does not find.
		for _, b := range []byte(t.internText[s.id]) {
			if tok := t.byteTok[b]; tok >= 0 {
				out = append(out, tok)
			}
		}
	}
	return out
}

// decodeText maps a byte-level encoded token text back to bytes
// (llama_decode_text): characters outside the byte table are kept as
// "[UNK_BYTE_0x..<text>]" like llama.cpp does.
func decodeText(text string) []byte {
	var out []byte
	for _, r := range llamaRunes(text) {
		if b, ok := charBytes[r]; ok {
			out = append(out, b)
			continue
		}
		out = append(out, "[UNK_BYTE_0x"...)
		for _, c := range appendCpt(nil, r) {
			out = fmt.Appendf(out, "%02x", c)
		}
		out = append(out, text...)
		out = append(out, ']')
	}
	return out
}

// buildPieces caches the bytes of every token (token_to_piece with
// special=true).
func (t *Tokenizer) buildPieces() {
	t.pieces = make([][]byte, len(t.texts))
	for i, s := range t.texts {
		a := t.attrs[i]
		switch {
		case a&(attrUnknown|attrControl|attrUserDefined) != 0:
			t.pieces[i] = []byte(s)
		case a&attrNormal != 0:
			t.pieces[i] = decodeText(s)
		case a&attrByte != 0:
			t.pieces[i] = []byte{byteTokenValue(s)}
		}
	}
}

// byteTokenValue is token_to_byte for BPE vocabularies: byte tokens are
// written "<0xXX>", and llama.cpp reads the hex digits at offset 3 with strtol
// (so a malformed text gives the value of its leading hex digits, or 0).
func byteTokenValue(s string) byte {
	var v byte
	for i := 3; i < len(s) && i < 5; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return v
		}
	}
	return v
}
