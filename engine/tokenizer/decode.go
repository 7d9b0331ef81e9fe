package tokenizer

import "unicode/utf8"

// TokenBytes returns the bytes a token stands for, as llama.cpp's
// token_to_piece with special=true: the byte-level decoded text of a normal
// token (which may be part of a UTF-8 character), the text itself of a
// control, user-defined or unknown token, nothing for unused ones and for ids
// outside the vocabulary. The slice must not be modified.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// Decode returns the concatenated bytes of ids (see TokenBytes). The result
// may hold invalid UTF-8 when ids split a character; use a StreamDecoder to
// produce valid text incrementally.
func (t *Tokenizer) Decode(ids []int32) string {
	n := 0
	for _, id := range ids {
		n += len(t.TokenBytes(id))
	}
	b := make([]byte, 0, n)
	for _, id := range ids {
		b = append(b, t.TokenBytes(id)...)
	}
	return string(b)
}

// StreamDecoder turns a stream of tokens into valid UTF-8 text: the bytes of
// a character split across tokens are held until it completes, and bytes that
// can never form a character are emitted as U+FFFD. It is not safe for
// concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder returns a decoder for a new stream of tokens.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return &StreamDecoder{t: t}
}

// Next adds a token and returns the text that is now complete.
func (d *StreamDecoder) Next(id int32) string {
	d.pending = append(d.pending, d.t.TokenBytes(id)...)
	return d.drain(false)
}

// Flush returns what is held, a partial character becoming U+FFFD, and
// resets the decoder.
func (d *StreamDecoder) Flush() string {
	return d.drain(true)
}

func (d *StreamDecoder) drain(final bool) string {
	p := d.pending
	out := make([]byte, 0, len(p))
	i := 0
	for i < len(p) {
		if p[i] < utf8.RuneSelf {
			out = append(out, p[i])
			i++
			continue
		}
		if !utf8.FullRune(p[i:]) {
			// A valid prefix of a character: wait for the rest.
			if !final {
				break
			}
			out = append(out, "\uFFFD"...)
			i = len(p)
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			// One U+FFFD for the maximal prefix of a character that
			// cannot complete (as WHATWG's and Python's decoders do).
			for size < 3 && i+size < len(p) && !utf8.FullRune(p[i:i+size+1]) {
				size++
			}
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	d.pending = append(d.pending[:0], p[i:]...)
	return string(out)
}
