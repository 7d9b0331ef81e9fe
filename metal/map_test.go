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
