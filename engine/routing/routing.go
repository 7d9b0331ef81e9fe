// Package routing is the MoE routing step as a pure function: from a
// token's router probabilities to the experts it uses and their weights.
// It has no engine inside, so policies (cache-aware routing later) are
// unit-tested alone and every backend applies the same rule.
package routing

// TopK appends to dst the indices of the k largest values of p, largest
// first; ties go to the lower index (as ggml's argsort-based top-k picks
// them for distinct values).
func TopK(p []float32, k int, dst []int) []int {
	for len(dst) < k {
		best := -1
		for i, v := range p {
			if best >= 0 && v <= p[best] {
				continue
			}
			taken := false
			for _, j := range dst {
				if j == i {
					taken = true
					break
				}
			}
			if !taken {
				best = i
			}
		}
		dst = append(dst, best)
	}
	return dst
}

// Exact routes one token as llama.cpp's softmax → top-k → renormalise
// gating does: p are the router's softmax probabilities; sel and wts (len
// k) receive the chosen experts, best first, and their probabilities
// divided by their sum (clamped below at 2^-14, as ggml does) and scaled
// by scale (0 or 1: none). idx is scratch of capacity ≥ k.
func Exact(p []float32, k int, scale float32, idx []int, sel []int32, wts []float32) {
	idx = TopK(p, k, idx[:0])
	var sum float32
	for j := 0; j < k; j++ {
		sel[j] = int32(idx[j])
		wts[j] = p[idx[j]]
		sum += p[idx[j]]
	}
	sum = max(sum, 6.103515625e-5)
	for j := 0; j < k; j++ {
		wts[j] /= sum
		if scale != 0 && scale != 1 {
			wts[j] *= scale
		}
	}
}
