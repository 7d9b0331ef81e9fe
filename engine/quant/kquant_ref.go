package quant

import (
	"math"
)

// Ports of ggml's reference K-quant quantizers (ggml-quants.c). Every
// float32 product that feeds an addition is converted explicitly so the Go
// compiler does not fuse it into an FMA (it may on arm64): the results then
// match ggml's generic x86-64 build bit for bit.

const groupMaxEps = 1e-15

// mul rounds a*b to float32; it keeps a product from being fused.
func mul(a, b float32) float32 { return float32(a * b) }

// makeQxQuants is make_qx_quants with rmse_type 1 and no importance
// weights, for len(x) values: L gets quants in [0, 2*nmax) and the
// returned scale s gives values s*(L-nmax).
func makeQxQuants(x []float32, nmax int, L []int8) float32 {
	n := len(x)
	L = L[:n]
	var max, amax float32
	for _, v := range x {
		if ax := abs32(v); ax > amax {
			amax, max = ax, v
		}
	}
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fnmax := float32(nmax)
	clampL := func(l int32) int32 { return max32(-int32(nmax), min32(int32(nmax)-1, l)) }
	iscale := -fnmax / max
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampL(nearestInt(mul(iscale, v)))
		L[i] = int8(l + int32(nmax))
		w := mul(v, v)
		fl := float32(l)
		sumlx += mul(mul(w, v), fl)
		suml2 += mul(mul(w, fl), fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + mul(0.1, float32(is))) / max
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := clampL(nearestInt(mul(iscale, v)))
			w := mul(v, v)
			fl := float32(l)
			sumlx += mul(mul(w, v), fl)
			suml2 += mul(mul(w, fl), fl)
		}
		if suml2 > 0 && mul(sumlx, sumlx) > mul(best, suml2) {
			for i, v := range x {
				L[i] = int8(int32(nmax) + clampL(nearestInt(mul(iscale, v))))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQkx2Quants is make_qkx2_quants with use_mad false: it fits
// x ≈ scale*L - theMin with L in [0, nmax] by weighted least squares over
// nstep+1 candidate scales. laux is scratch of len(x).
func makeQkx2Quants(x, weights []float32, nmax int, L, laux []uint8, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	n := len(x)
	weights, L, laux = weights[:n], L[:n], laux[:n]
	min, max := x[0], x[0]
	sumW := weights[0]
	sumX := mul(sumW, x[0])
	for i := 1; i < n; i++ {
		if x[i] < min {
			min = x[i]
		}
		if x[i] > max {
			max = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += mul(w, x[i])
	}
	if min > 0 {
		min = 0
	}
	if max == min {
		clear(L)
		return 0, -min
	}
	fnmax := float32(nmax)
	clampL := func(l int32) int32 { return max32(0, min32(int32(nmax), l)) }
	iscale := fnmax / (max - min)
	scale = 1 / iscale
	var bestError float32
	for i, v := range x {
		l := clampL(nearestInt(mul(iscale, v-min)))
		L[i] = uint8(l)
		diff := float32(mul(scale, float32(l))+min) - v
		bestError += mul(weights[i], mul(diff, diff))
	}
	if nstep < 1 {
		return scale, -min
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+mul(rdelta, float32(is))) + fnmax) / (max - min)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clampL(nearestInt(mul(iscale, v-min)))
			laux[i] = uint8(l)
			w, fl := weights[i], float32(l)
			sumL += mul(w, fl)
			sumL2 += mul(mul(w, fl), fl)
			sumXL += mul(mul(w, fl), v)
		}
		D := mul(sumW, sumL2) - mul(sumL, sumL)
		if D > 0 {
			thisScale := (mul(sumW, sumXL) - mul(sumX, sumL)) / D
			thisMin := (mul(sumL2, sumX) - mul(sumL, sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i, v := range x {
				diff := float32(mul(thisScale, float32(laux[i]))+thisMin) - v
				curError += mul(weights[i], mul(diff, diff))
			}
			if curError < bestError {
				copy(L, laux)
				bestError = curError
				scale = thisScale
				min = thisMin
			}
		}
	}
	return scale, -min
}

func min32(a, b int32) int32 {
	if a < b {
		return a
	}
	return b
}

func max32(a, b int32) int32 {
	if a > b {
		return a
	}
	return b
}

// quantizeKx2Block quantizes one super-block of Q4_K (nmax 15) or Q5_K
// (nmax 31) as quantize_row_q4_K_ref/q5_K_ref do, writing d, dmin and the
// packed scales into hdr (16 bytes) and the quants into L.
func quantizeKx2Block(x *[qkK]float32, nmax int, rmin float32, nstep int, hdr *[16]byte, L *[qkK]uint8) {
	var weights [32]float32
	var laux [32]uint8
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += mul(v, v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQkx2Quants(xs, weights[:], nmax, L[32*j:32*j+32], laux[:], rmin, 0.1, nstep)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	clear(hdr[:])
	s := (*[12]byte)(hdr[4:])
	for j := 0; j < 8; j++ {
		ls := min(63, uint8(nearestInt(mul(invScale, scales[j]))))
		lm := min(63, uint8(nearestInt(mul(invMin, mins[j]))))
		if j < 4 {
			s[j] = ls
			s[j+4] = lm
		} else {
			s[j+4] = ls&0xf | (lm&0xf)<<4
			s[j-4] |= (ls >> 4) << 6
			s[j] |= (lm >> 4) << 6
		}
	}
	putFP16(hdr[0:], maxScale/63)
	putFP16(hdr[2:], maxMin/63)
	d0, m0 := fp16At(hdr[0:]), fp16At(hdr[2:])
	for j := 0; j < 8; j++ {
		sc, m := scaleMinK4(j, s)
		d := d0 * float32(sc)
		if d == 0 {
			continue
		}
		dm := m0 * float32(m)
		for ii := 0; ii < 32; ii++ {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(max32(0, min32(int32(nmax), l)))
		}
	}
}

// quantizeQ4KRef is quantize_row_q4_K_ref.
func quantizeQ4KRef(x []float32, dst []byte) {
	nb := len(x) / qkK
	var L [qkK]uint8
	for i := 0; i < nb; i++ {
		b := (*[q4KBlockSize]byte)(dst[i*q4KBlockSize:])
		quantizeKx2Block((*[qkK]float32)(x[i*qkK:]), 15, -1, 20, (*[16]byte)(b[:16]), &L)
		q := b[16:]
		for j := 0; j < qkK; j += 64 {
			for l := 0; l < 32; l++ {
				q[l] = L[j+l] | L[j+l+32]<<4
			}
			q = q[32:]
		}
	}
}

// quantizeQ5KRef is quantize_row_q5_K_ref.
func quantizeQ5KRef(x []float32, dst []byte) {
	nb := len(x) / qkK
	var L [qkK]uint8
	for i := 0; i < nb; i++ {
		b := (*[q5KBlockSize]byte)(dst[i*q5KBlockSize:])
		quantizeKx2Block((*[qkK]float32)(x[i*qkK:]), 31, -0.5, 15, (*[16]byte)(b[:16]), &L)
		qh := (*[32]byte)(b[16:])
		clear(qh[:])
		ql := b[48:]
		m1, m2 := uint8(1), uint8(2)
		for n := 0; n < qkK; n += 64 {
			for j := 0; j < 32; j++ {
				l1, l2 := L[n+j], L[n+j+32]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
			ql = ql[32:]
		}
	}
}

// quantizeQ6KRef is quantize_row_q6_K_ref.
func quantizeQ6KRef(x []float32, dst []byte) {
	nb := len(x) / qkK
	var L [qkK]int8
	var scales [16]float32
	for i := 0; i < nb; i++ {
		xb := (*[qkK]float32)(x[i*qkK:])
		b := (*[q6KBlockSize]byte)(dst[i*q6KBlockSize:])
		var maxScale, maxAbsScale float32
		for ib := 0; ib < 16; ib++ {
			s := makeQxQuants(xb[16*ib:16*ib+16], 32, L[16*ib:16*ib+16])
			scales[ib] = s
			if as := abs32(s); as > maxAbsScale {
				maxAbsScale, maxScale = as, s
			}
		}
		if maxAbsScale < groupMaxEps {
			clear(b[:])
			continue
		}
		iscale := -128 / maxScale
		putFP16(b[208:], 1/iscale)
		sc := (*[16]byte)(b[192:])
		for ib := 0; ib < 16; ib++ {
			sc[ib] = byte(int8(min32(127, nearestInt(mul(iscale, scales[ib])))))
		}
		d0 := fp16At(b[208:])
		for j := 0; j < 16; j++ {
			d := d0 * float32(int8(sc[j]))
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				l := nearestInt(xb[16*j+ii] / d)
				L[16*j+ii] = int8(max32(-32, min32(31, l)) + 32)
			}
		}
		ql := (*[128]byte)(b[0:])
		qh := (*[64]byte)(b[128:])
		for j := 0; j < qkK; j += 128 {
			o, h := j/2, j/4
			for l := 0; l < 32; l++ {
				q1, q2 := uint8(L[j+l]), uint8(L[j+l+32])
				q3, q4 := uint8(L[j+l+64]), uint8(L[j+l+96])
				ql[o+l] = q1&0xf | (q3&0xf)<<4
				ql[o+l+32] = q2&0xf | (q4&0xf)<<4
				qh[h+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	}
}
