package cpu

import (
	"math"
)

// RMSNorm writes x·w/sqrt(mean(x²)+eps) to out, summing squares in float64
// as ggml does. out may alias x.
func RMSNorm(out, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// Softmax replaces x by its softmax as ggml_soft_max computes it: the
// maximum subtracted, exponentials summed in float64, then scaled by the
// inverse of the sum. Where ggml has a vector expf (amd64 with AVX2+FMA,
// 8 values at a time; arm64 NEON, 4 at a time) the same one is used, in
// ggml's sum order, and the rest with expf (math.Exp rounded to float32).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		if v > mx {
			mx = v
		}
	}
	i, sum := expSumArch(x, mx)
	for ; i < len(x); i++ {
		e := float32(math.Exp(float64(x[i] - mx)))
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// SwiGLU writes silu(gate)·up to out (out may alias gate or up), as
// ggml_vec_swiglu_f32: silu(x) = x/(1+expf(-x)), with ggml's vector expf
// where it has one (see Softmax).
func SwiGLU(out, gate, up []float32) {
	up = up[:len(gate)]
	out = out[:len(gate)]
	for i := siluMulArch(out, gate, up); i < len(gate); i++ {
		g := gate[i]
		out[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
	}
}

// Add adds b into a.
func Add(a, b []float32) {
	b = b[:len(a)]
	for i := range a {
		a[i] += b[i]
	}
}

// Rope holds the parameters of rotary position embeddings in ggml's
// rope_ext (NEOX layout: element i pairs with i+dims/2), YaRN included.
type Rope struct {
	Dims       int     // rotated dimensions per head (n_rot)
	FreqBase   float32 // theta base
	FreqScale  float32 // 1/scaling factor; 1 for none
	ExtFactor  float32 // YaRN extrapolation mix; 0 unless YaRN
	AttnFactor float32 // magnitude scale; 1 normally
	CtxOrig    int     // original training context (YaRN)
	BetaFast   float32 // YaRN; default 32
	BetaSlow   float32 // YaRN; default 1
}

// Cache fills cs (len Dims) with interleaved cos, sin for position pos,
// exactly as ggml_rope_cache_init.
func (r *Rope) Cache(pos int, cs []float32) {
	thetaScale := float32(math.Pow(float64(r.FreqBase), -2.0/float64(r.Dims)))
	var corr [2]float32
	if r.ExtFactor != 0 {
		corr = yarnCorrDims(r.Dims, r.CtxOrig, r.FreqBase, r.BetaFast, r.BetaSlow)
	}
	theta := float32(pos)
	for i0 := 0; i0 < r.Dims; i0 += 2 {
		thetaInterp := r.FreqScale * theta
		t := thetaInterp
		mscale := r.AttnFactor
		if r.ExtFactor != 0 {
			rampMix := yarnRamp(corr[0], corr[1], i0) * r.ExtFactor
			t = float32(thetaInterp*(1-rampMix)) + float32(theta*rampMix)
			mscale *= 1 + 0.1*float32(math.Log(float64(1/r.FreqScale)))
		}
		cs[i0] = float32(math.Cos(float64(t))) * mscale
		cs[i0+1] = float32(math.Sin(float64(t))) * mscale
		theta *= thetaScale
	}
}

func yarnRamp(low, high float32, i0 int) float32 {
	y := (float32(i0/2) - low) / max(0.001, high-low)
	return 1 - min(1, max(0, y))
}

func yarnCorrDim(nDims, nCtxOrig int, nRot, base float32) float32 {
	return float32(nDims) * float32(math.Log(float64(float32(nCtxOrig)/(nRot*2*math.Pi)))) / (2 * float32(math.Log(float64(base))))
}

func yarnCorrDims(nDims, nCtxOrig int, base, betaFast, betaSlow float32) [2]float32 {
	start := float32(math.Floor(float64(yarnCorrDim(nDims, nCtxOrig, betaFast, base))))
	end := float32(math.Ceil(float64(yarnCorrDim(nDims, nCtxOrig, betaSlow, base))))
	return [2]float32{max(0, start), min(float32(nDims-1), end)}
}

// ApplyNeox rotates one head x (len ≥ Dims) in place with the cos/sin
// cache cs from Cache: pairs (x[i], x[i+Dims/2]).
func ApplyNeox(x, cs []float32, dims int) {
	half := dims / 2
	for i := 0; i < half; i++ {
		c, s := cs[2*i], cs[2*i+1]
		x0, x1 := x[i], x[i+half]
		// Explicit conversions keep Go from fusing these into FMAs on
		// arm64, so every platform rounds as llama.cpp's x86 build does.
		x[i] = float32(x0*c) - float32(x1*s)
		x[i+half] = float32(x0*s) + float32(x1*c)
	}
}
