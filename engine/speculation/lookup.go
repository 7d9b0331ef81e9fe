package speculation

import (
	"context"

	"github.com/strata-llm/strata/engine/speculation/gate"
)

// Prompt lookup's shape (llama.cpp's lookup decoding and colibri use the
// same: n-grams of 2 to 4 tokens; a 1-token match is right too rarely to
// pay for its verify row).
const (
	LookupMaxNgram = 4
	LookupMinNgram = 2
	LookupMaxDraft = 5
)

// Lookup drafts by prompt lookup: it finds the longest suffix of the
// context (LookupMaxNgram down to LookupMinNgram tokens) that also occurs
// earlier, takes its most recent earlier occurrence and proposes the
// tokens that followed it (at most LookupMaxDraft; where they run past the
// context's end, the ones it proposed already, so a repeating suffix is
// drafted in full). The zero value is ready to use.
//
// Its probability for the j-th proposed token is how often the earlier
// occurrences of the n-gram that agree with the proposal on tokens 1..j−1
// also continue with token j, Laplace-smoothed ((agree+1)/(seen+2)): a
// continuation seen once is 2/3, one seen four times out of four 5/6, one
// the other occurrences contradict less. SpecGate calibrates it with the
// measured acceptance. A token repeated past the context's end has the
// probability of the token it repeats.
type Lookup struct {
	occ []int // end positions (exclusive) of the n-gram's earlier occurrences
}

// Source implements Drafter.
func (l *Lookup) Source() gate.Source { return gate.Lookup }

// Draft implements Drafter.
func (l *Lookup) Draft(_ context.Context, ctx []int32, max int, d *Draft) error {
	max = min(max, LookupMaxDraft)
	n := len(ctx)
	if max <= 0 || n < LookupMinNgram+1 {
		return nil
	}
	for g := min(LookupMaxNgram, n-1); g >= LookupMinNgram; g-- {
		suffix := ctx[n-g:]
		// Earlier occurrences end at e < n (the suffix itself ends at n),
		// most recent first.
		l.occ = l.occ[:0]
		for e := n - 1; e >= g; e-- {
			if ctx[e-1] == suffix[g-1] && equal(ctx[e-g:e], suffix) {
				l.occ = append(l.occ, e)
			}
		}
		if len(l.occ) == 0 {
			continue
		}
		best := l.occ[0]
		alive := l.occ
		// Past the context's end the occurrence's continuation is the draft
		// itself: the suffix repeats with period n−best, and the draft
		// repeats it (llama.cpp's lookup decoding gets the same by searching
		// again after each drafted token). Without this a loop of period
		// 1 or 2 — greedy text that repeats a token, code's indentation —
		// was drafted one or two tokens at a time (seen in
		// BenchmarkSpeculation's lookup regime: 24 of 48 verifies drafted
		// a single token).
		st := len(d.Tokens)
		for j := 0; j < max; j++ {
			if best+j >= n { // a token of this draft, repeated with its probability
				i := st + best + j - n
				d.Add(d.Tokens[i], d.Probs[i])
				continue
			}
			tok := ctx[best+j]
			seen, agree := 0, 0
			keep := alive[:0]
			for _, e := range alive {
				if e+j >= n {
					continue
				}
				seen++
				if ctx[e+j] == tok {
					agree++
					keep = append(keep, e)
				}
			}
			alive = keep
			d.Add(tok, float64(agree+1)/float64(seen+2))
		}
		return nil
	}
	return nil
}

func equal(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
