package backend

import "math"

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
