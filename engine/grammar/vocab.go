package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode/utf8"
)

// Vocab is what the constraint needs from a tokenizer;
// *tokenizer.Tokenizer has it.
type Vocab interface {
	NVocab() int
	TokenBytes(id int32) []byte // the bytes a token stands for
	IsControl(id int32) bool    // control tokens are never part of JSON
}

// index is a vocabulary prepared for masking: a byte trie of every usable
// token, a second trie of the tokens that are not plain string content, and
// the plain ones by character count, so that inside a string (where almost
// every token fits) only the few others are walked.
type index struct {
	n       int
	maxTok  int // longest token, in bytes
	toks    [][]byte
	full    trie
	special trie       // tokens with a byte that is not plain string content
	plain   [][]int32  // plain[k]: plain tokens of k characters (k ≥ 1)
	upTo    [][]uint64 // upTo[k]: bitset of the plain tokens of 1..k characters
}

type trie struct {
	// node i: children edges[first[i]:first[i+1]], tokens ids[tokFirst[i]:tokFirst[i+1]]
	first    []int32
	edges    []edge
	tokFirst []int32
	ids      []int32
}

type edge struct {
	b     byte
	child int32
}

func plainByte(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' }

// chars counts the characters of valid UTF-8.
func chars(b []byte) int { return utf8.RuneCount(b) }

func buildIndex(v Vocab) (*index, error) {
	n := v.NVocab()
	if n <= 0 {
		return nil, errors.New("grammar: empty vocabulary")
	}
	ix := &index{n: n, toks: make([][]byte, n)}
	var all, spec []int32
	for id := int32(0); int(id) < n; id++ {
		b := v.TokenBytes(id)
		if len(b) == 0 || v.IsControl(id) {
			continue
		}
		ix.toks[id] = b
		ix.maxTok = max(ix.maxTok, len(b))
		all = append(all, id)
		if !utf8.Valid(b) || slices.ContainsFunc(b, func(c byte) bool { return !plainByte(c) }) {
			spec = append(spec, id)
			continue
		}
		k := chars(b)
		for len(ix.plain) <= k {
			ix.plain = append(ix.plain, nil)
		}
		ix.plain[k] = append(ix.plain[k], id)
	}
	words := (n + 63) / 64
	ix.upTo = make([][]uint64, len(ix.plain))
	for k := range ix.plain {
		b := make([]uint64, words)
		if k > 0 {
			copy(b, ix.upTo[k-1])
			for _, id := range ix.plain[k] {
				b[id>>6] |= 1 << (id & 63)
			}
		}
		ix.upTo[k] = b
	}
	ix.full = buildTrie(ix.toks, all)
	ix.special = buildTrie(ix.toks, spec)
	return ix, nil
}

// buildTrie builds a trie of ids' bytes (breadth-first, children sorted).
func buildTrie(toks [][]byte, ids []int32) trie {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b int32) int { return bytes.Compare(toks[a], toks[b]) })
	type span struct{ lo, hi, depth int } // ids[lo:hi] share the node's prefix of length depth
	var t trie
	queue := []span{{0, len(ids), 0}}
	for qi := 0; qi < len(queue); qi++ {
		s := queue[qi]
		t.first = append(t.first, int32(len(t.edges)))
		t.tokFirst = append(t.tokFirst, int32(len(t.ids)))
		i := s.lo
		for i < s.hi && len(toks[ids[i]]) == s.depth {
			t.ids = append(t.ids, ids[i])
			i++
		}
		for i < s.hi {
			c := toks[ids[i]][s.depth]
			j := i
			for j < s.hi && toks[ids[j]][s.depth] == c {
				j++
			}
			t.edges = append(t.edges, edge{b: c, child: int32(len(queue))})
			queue = append(queue, span{i, j, s.depth + 1})
			i = j
		}
	}
	t.first = append(t.first, int32(len(t.edges)))
	t.tokFirst = append(t.tokFirst, int32(len(t.ids)))
	return t
}

// The index of the last vocabulary used, kept because building it for a
// 152k-token vocabulary takes tens of milliseconds.
var cache struct {
	sync.Mutex
	v  Vocab
	ix *index
}

func indexFor(v Vocab) (*index, error) {
	cache.Lock()
	defer cache.Unlock()
	if cache.v == v && cache.ix != nil {
		return cache.ix, nil
	}
	ix, err := buildIndex(v)
	if err != nil {
		return nil, err
	}
	cache.v, cache.ix = v, ix
	return ix, nil
}

// Constraint applies a Schema to one generation: Mask before each draw,
// Accept after it, Done when the document is complete. Not safe for
// concurrent use.
type Constraint struct {
	ix      *index
	m       machine
	allowed []uint64 // bitset over the vocabulary
	levels  []machine
}

// NewConstraint returns a fresh constraint for s over v's tokens.
func (s *Schema) NewConstraint(v Vocab) (*Constraint, error) {
	ix, err := indexFor(v)
	if err != nil {
		return nil, err
	}
	c := &Constraint{ix: ix, allowed: make([]uint64, (ix.n+63)/64), levels: make([]machine, ix.maxTok+1)}
	c.m.start(s.root)
	return c, nil
}

// Done reports whether the document is complete: nothing more may follow.
func (c *Constraint) Done() bool { return c.m.done }

// Accept advances past token id; an id the document cannot take is an error
// (and leaves the state as it was).
func (c *Constraint) Accept(id int32) error {
	if id < 0 || int(id) >= c.ix.n || c.ix.toks[id] == nil {
		return fmt.Errorf("grammar: token %d is not allowed here", id)
	}
	var m machine
	m.copyFrom(&c.m)
	for _, b := range c.ix.toks[id] {
		if !m.feed(b) {
			return fmt.Errorf("grammar: token %d (%q) does not continue the document", id, c.ix.toks[id])
		}
	}
	c.m.copyFrom(&m)
	return nil
}

// Allowed reports whether token id may come next.
func (c *Constraint) Allowed(id int32) bool {
	if id < 0 || int(id) >= c.ix.n || c.ix.toks[id] == nil {
		return false
	}
	var m machine
	m.copyFrom(&c.m)
	for _, b := range c.ix.toks[id] {
		if !m.feed(b) {
			return false
		}
	}
	return true
}

// Mask sets the logit of every token that cannot come next to -Inf
// (logits has one entry per token of the vocabulary).
func (c *Constraint) Mask(logits []float32) {
	clear(c.allowed)
	t := &c.ix.full
	if top := &c.m.st[len(c.m.st)-1]; !c.m.done && top.phase == strContent && top.esc == 0 && top.sub == 0 {
		// Inside a string every plain token fits, up to the length limit.
		rem := len(c.ix.plain) - 1
		if top.n.maxLen >= 0 {
			rem = min(rem, top.n.maxLen-int(top.count))
		}
		if rem > 0 {
			copy(c.allowed, c.ix.upTo[rem])
		}
		t = &c.ix.special
	}
	if !c.m.done {
		c.walk(t, 0, &c.m, 0)
	}
	ninf := float32(math.Inf(-1))
	for i := range logits {
		if i >= c.ix.n || c.allowed[i>>6]&(1<<(i&63)) == 0 {
			logits[i] = ninf
		}
	}
}

// walk marks the tokens below trie node i reachable from state m.
func (c *Constraint) walk(t *trie, i int32, m *machine, depth int) {
	for _, id := range t.ids[t.tokFirst[i]:t.tokFirst[i+1]] {
		c.allowed[id>>6] |= 1 << (id & 63)
	}
	edges := t.edges[t.first[i]:t.first[i+1]]
	if len(edges) == 0 {
		return
	}
	for _, e := range edges {
		next := &c.levels[depth]
		next.copyFrom(m)
		if next.feed(e.b) {
			c.walk(t, e.child, next, depth+1)
		}
	}
}
