package synth

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
)

// hotValue is the router-skew constant of every token embedding on hidden
// dimension 0, in units of the embeddings' standard deviation (1).
const hotValue = 8

// chunkBytes bounds the buffer a tensor is generated in.
const chunkBytes = 1 << 20

func sqrtf(n int) float64 { return math.Sqrt(float64(n)) }

// newRNG returns the random source of one tensor: it depends on the seed and
// the tensor's name only, so tensors do not depend on each other's order.
func newRNG(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func hasQuantizer(t ggml.Type) bool {
	k, err := quant.For(t)
	return err == nil && k.Quantize != nil
}

// zipfLogits returns, for n experts, log p_e of a Zipf distribution with
// exponent s over a random order of the experts (drawn from rng), so that
// different layers have different hot experts.
func zipfLogits(n int, s float64, rng *rand.Rand) []float64 {
	order := rng.Perm(n)
	out := make([]float64, n)
	var z float64
	for r := range n {
		z += math.Pow(float64(r+1), -s)
	}
	for r, e := range order {
		out[e] = -s*math.Log(float64(r+1)) - math.Log(z)
	}
	return out
}

// expectedHot is the value of hidden dimension 0 after the RMS norm of an
// embedding row: hotValue over the row's RMS.
func expectedHot(embd int) float64 {
	return hotValue / math.Sqrt((hotValue*hotValue+float64(embd-1))/float64(embd))
}

// data returns the callback that generates t's bytes.
func (t tensorSpec) data(ctx context.Context, c *Config) func(io.Writer) error {
	return func(w io.Writer) error {
		if err := t.generate(ctx, c, w); err != nil {
			return fmt.Errorf("tensor %s: %w", t.name, err)
		}
		return nil
	}
}

func (t tensorSpec) generate(ctx context.Context, c *Config, w io.Writer) error {
	rng := newRNG(c.Seed, t.name)
	rowLen := int(t.dims[0])
	rows := 1
	for _, d := range t.dims[1:] {
		rows *= int(d)
	}
	rowBytes64, err := t.typ.RowSize(int64(rowLen))
	if err != nil {
		return err
	}
	rowBytes := int(rowBytes64)
	chunkRows := max(1, chunkBytes/rowBytes)
	k, err := quant.For(t.typ)
	if err != nil {
		return err
	}

	// Per-tensor state for float-built tensors.
	var skew []float64
	if t.kind == kindRouter && c.RouterSkew > 0 {
		skew = zipfLogits(rows, c.RouterSkew, rng)
	}
	buf := make([]byte, min(chunkRows, rows)*rowBytes)
	var fl []float32
	for r0 := 0; r0 < rows; r0 += chunkRows {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(chunkRows, rows-r0)
		out := buf[:n*rowBytes]
		switch t.kind {
		case kindMatrix:
			std := t.std
			if std == 0 {
				std = 1 / sqrtf(rowLen)
			}
			k.Random(out, rng, float32(std))
		case kindOutput:
			// Log-normal row norms (sigma 1, mean square 1): the best token
			// then usually wins by a wide margin, unlike with equal norms,
			// where the top two logits are often close.
			for r := range n {
				k.Random(out[r*rowBytes:(r+1)*rowBytes], rng, float32(t.std*math.Exp(rng.NormFloat64()-1)))
			}
		case kindEmbd:
			if c.RouterSkew == 0 {
				k.Random(out, rng, 1)
				break
			}
			fl = slices.Grow(fl[:0], n*rowLen)[:n*rowLen]
			for i := range fl {
				fl[i] = float32(rng.NormFloat64())
			}
			for r := range n {
				fl[r*rowLen] = hotValue
			}
			k.Quantize(fl, out)
		case kindNorm, kindF32, kindRouter, kindSSMA:
			for r := range n {
				for i := range rowLen {
					var x float64
					switch t.kind {
					case kindNorm:
						x = 1 + 0.05*rng.NormFloat64()
					case kindF32:
						x = t.std * rng.NormFloat64()
					case kindRouter:
						x = rng.NormFloat64() / sqrtf(rowLen)
						if skew != nil && i == 0 {
							x = skew[r0+r] / expectedHot(rowLen)
						}
					case kindSSMA:
						x = -math.Exp(rng.Float64() * math.Log(16))
					}
					binary.LittleEndian.PutUint32(out[(r*rowLen+i)*4:], math.Float32bits(float32(x)))
				}
			}
		default:
			return fmt.Errorf("unknown tensor kind %d", t.kind)
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}
