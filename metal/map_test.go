package metal

import "testing"

// arenaParts covers host memory with parts of at most partLen bytes (whole
// pages), consecutive ones overlapping so that every slice of at most the
// overlap lies whole in one part; with the default length (the device
// does not say its largest buffer) that is 1.25 GiB every 1 GiB, as
// llama.cpp's Metal backend splits its mmap.
func TestArenaParts(t *testing.T) {
	for _, tc := range []struct{ n, part int }{
		{1, 1 << 30}, {100 << 10, 256 << 10}, {256 << 10, 256 << 10}, {900 << 10, 256 << 10},
		{900<<10 + 5, 256<<10 + 3}, {1 << 20, 1}, {20 << 30, 12 << 30}, {50 << 30, 1 << 30},
		{50 << 30, mapChunk + mapOverlap}, {mapChunk + mapOverlap + 1, mapChunk + mapOverlap},
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

func TestArenaPartsDefault(t *testing.T) {
	ps := arenaParts(5*mapChunk+7, mapChunk+mapOverlap)
	for i, p := range ps {
		if p[0] != i*mapChunk || p[1] != min(5*mapChunk+7, i*mapChunk+mapChunk+mapOverlap) {
			t.Fatalf("part %d = %v, want 1.25 GiB from %d GiB", i, p, i)
		}
	}
	if len(ps) != 5 {
		t.Fatalf("%d parts", len(ps))
	}
}
