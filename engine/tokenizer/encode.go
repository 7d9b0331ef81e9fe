package tokenizer

import "strings"

// fragment is a piece of the input: raw text [start,end) or a special token.
type fragment struct {
	tok        int32 // -1 for raw text
	start, end int
}

// partition splits text at special tokens, longest first, as
// llama_vocab::impl::tokenizer_st_partition does. Control and unknown tokens
// take part only when parseSpecial is set; user-defined tokens always do.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{tok: -1, start: 0, end: len(text)}}
	var next []fragment
	for _, id := range t.special {
		if !parseSpecial && t.attrs[id]&(attrControl|attrUnknown) != 0 {
			continue
		}
		st := t.texts[id]
		found := false
		for _, f := range frags {
			if f.tok < 0 && strings.Contains(text[f.start:f.end], st) {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.tok >= 0 {
				next = append(next, f)
				continue
			}
			s := f.start
			for {
				i := strings.Index(text[s:f.end], st)
				if i < 0 {
					break
				}
				if i > 0 {
					next = append(next, fragment{tok: -1, start: s, end: s + i})
				}
				next = append(next, fragment{tok: id})
				s += i + len(st)
			}
			if s < f.end {
				next = append(next, fragment{tok: -1, start: s, end: f.end})
			}
		}
		frags, next = next, frags
	}
	return frags
}

// Encode tokenizes text exactly like llama.cpp's llama_tokenize(vocab, text,
// addSpecial, parseSpecial): with addSpecial, BOS and EOS are added as the
// file's add_bos_token/add_eos_token say; with parseSpecial, control tokens
// written in the text become those tokens. Invalid UTF-8 is read as llama.cpp
// reads it (each byte that does not start a sequence becomes U+FFFD).
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	if text != "" {
		var st bpeState
		var sp splitter
		var word []byte
		for _, f := range t.partition(text, parseSpecial) {
			if f.tok >= 0 {
				out = append(out, f.tok)
				continue
			}
			sp.cpts = appendLlamaRunes(sp.cpts[:0], text[f.start:f.end])
			sp.split(t.pre)
			begin := 0
			for _, end := range sp.out {
				word = word[:0]
				for _, r := range sp.cpts[begin:end] {
					word = appendCpt(word, r)
				}
				out = t.bpeWord(&st, word, out)
				begin = end
			}
		}
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	return out
}
