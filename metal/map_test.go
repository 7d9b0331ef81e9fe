package metal

import "testing"

// mapChunks covers every byte, and every slice of at most mapOverlap bytes
// lies whole in the chunk find picks (the last one starting at or before it).
func TestMapChunks(t *testing.T) {
	for _, n := range []int{1, mapChunk - 1, mapChunk, mapChunk + mapOverlap, mapChunk + mapOverlap + 1, 5*mapChunk + 7, 50 << 30} {
		cs := mapChunks(n)
		if cs[0][0] != 0 || cs[len(cs)-1][1] != n {
			t.Fatalf("n=%d: chunks %v do not span it", n, cs)
		}
		for i, c := range cs {
			if c[1]-c[0] > mapChunk+mapOverlap || c[0] != i*mapChunk {
				t.Fatalf("n=%d: chunk %d = %v", n, i, c)
			}
		}
		for _, p := range []int{0, n / 2, n - 1, max(0, n-mapOverlap), mapChunk - 1} {
			if p >= n {
				continue
			}
			l := min(mapOverlap, n-p)
			k := min(p/mapChunk, len(cs)-1)
			if c := cs[k]; p < c[0] || p+l > c[1] {
				t.Fatalf("n=%d: slice [%d,+%d) not inside chunk %d %v", n, p, l, k, c)
			}
		}
	}
}

// arenaParts covers an arena with parts of at most partLen bytes (whole
// pages), consecutive ones overlapping so that every slice of at most the
// overlap lies whole in one part.
func TestArenaParts(t *testing.T) {
	for _, tc := range []struct{ n, part int }{
		{1, 1 << 30}, {100 << 10, 256 << 10}, {256 << 10, 256 << 10}, {900 << 10, 256 << 10},
		{900<<10 + 5, 256<<10 + 3}, {1 << 20, 1}, {20 << 30, 12 << 30}, {50 << 30, 1 << 30},
	} {
		ps := arenaParts(tc.n, tc.part)
		pl := max(tc.part&^(BufferAlignment-1), 4*BufferAlignment)
		overlap := min(mapOverlap, pl/4) &^ (BufferAlignment - 1)
		if ps[0][0] != 0 || ps[len(ps)-1][1] != tc.n {
			t.Fatalf("%+v: parts %v do not span it", tc, ps)
		}
		for i, p := range ps {
			if p[1]-p[0] > pl || p[0]%BufferAlignment != 0 || p[1] <= p[0] {
				t.Fatalf("%+v: part %d = %v (at most %d bytes, page-aligned)", tc, i, p, pl)
			}
			if i > 0 && (p[0] >= ps[i-1][1] || ps[i-1][1]-p[0] < overlap && ps[i-1][1] != tc.n) {
				t.Fatalf("%+v: parts %v and %v overlap by less than %d", tc, ps[i-1], p, overlap)
			}
		}
		if len(ps) > 1 && overlap == 0 {
			t.Fatalf("%+v: no overlap between parts", tc)
		}
		for _, s := range []int{0, 1, tc.n / 3, tc.n / 2, tc.n - overlap, tc.n - 1} {
			if s < 0 || s+min(overlap, tc.n-s) > tc.n {
				continue
			}
			e, in := s+min(overlap, tc.n-s), false
			for _, p := range ps {
				in = in || (s >= p[0] && e <= p[1])
			}
			if !in {
				t.Fatalf("%+v: slice [%d, %d) lies in no part of %v", tc, s, e, ps)
			}
		}
	}
}
