// Package experts holds the expert providers MoE layers receive their
// weights from: File serves them straight from the model file's mapping
// (or its copy in memory).
package experts

import (
	"context"
	"fmt"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
)

// File serves experts from the GGUF file's data: every expert is always
// available, so a fetch is ready at once. It is used by one forward pass
// at a time (its fetch is reused).
type File struct {
	layers []fileLayer
	fetch  fileFetch
}

type fileLayer struct {
	ok             bool
	gate, up, down []byte
	ref            model.LayerExperts
}

// NewFile serves the experts layout describes from f, which must stay
// open while the provider is used.
func NewFile(f *gguf.File, layout *model.ExpertLayout) (*File, error) {
	p := &File{layers: make([]fileLayer, len(layout.Layers))}
	for il, le := range layout.Layers {
		if le == nil {
			continue
		}
		l := &p.layers[il]
		l.ok, l.ref = true, *le
		for _, x := range []struct {
			dst *[]byte
			ref model.TensorRef
		}{{&l.gate, le.Gate}, {&l.up, le.Up}, {&l.down, le.Down}} {
			t, ok := f.Tensor(x.ref.Name)
			if !ok {
				return nil, fmt.Errorf("experts: missing tensor %s", x.ref.Name)
			}
			if want := x.ref.PerExpert * int64(layout.Experts); int64(t.Size) != want {
				return nil, fmt.Errorf("experts: tensor %s holds %d bytes, want %d", x.ref.Name, t.Size, want)
			}
			*x.dst = f.Data(t)
		}
	}
	p.fetch.p = p
	return p, nil
}

// Fetch implements model.ExpertProvider.
func (p *File) Fetch(_ context.Context, layer int, experts []int32) (model.Fetch, error) {
	if layer < 0 || layer >= len(p.layers) || !p.layers[layer].ok {
		return nil, fmt.Errorf("experts: layer %d has no experts", layer)
	}
	n := int32(len(p.layers[layer].gate) / int(p.layers[layer].ref.Gate.PerExpert))
	for _, e := range experts {
		if e < 0 || e >= n {
			return nil, fmt.Errorf("experts: layer %d has no expert %d", layer, e)
		}
	}
	p.fetch.layer, p.fetch.experts, p.fetch.given = layer, experts, false
	return &p.fetch, nil
}

// Prefetch implements model.ExpertProvider: everything is resident.
func (p *File) Prefetch(int, []int32) {}

// Streaming implements model.ExpertProvider.
func (p *File) Streaming() bool { return false }

// Resident implements model.ExpertProvider: every expert always is.
func (p *File) Resident(int, []bool) []bool { return nil }

// Weights returns expert e of layer il.
func (p *File) Weights(il, e int) model.ExpertWeights {
	l := &p.layers[il]
	g, u, d := l.ref.Gate.PerExpert, l.ref.Up.PerExpert, l.ref.Down.PerExpert
	return model.ExpertWeights{
		Gate: l.gate[int64(e)*g : int64(e+1)*g], GateT: l.ref.Gate.Type,
		Up: l.up[int64(e)*u : int64(e+1)*u], UpT: l.ref.Up.Type,
		Down: l.down[int64(e)*d : int64(e+1)*d], DownT: l.ref.Down.Type,
	}
}

type fileFetch struct {
	p       *File
	layer   int
	experts []int32
	given   bool
}

func (f *fileFetch) Ready(ctx context.Context, dst []int) ([]int, error) {
	if f.given {
		return dst, fmt.Errorf("experts: every requested expert was already returned")
	}
	f.given = true
	for i := range f.experts {
		dst = append(dst, i)
	}
	return dst, nil
}

func (f *fileFetch) Weights(i int) model.ExpertWeights {
	return f.p.Weights(f.layer, int(f.experts[i]))
}

func (f *fileFetch) Done([]int) {}

// Placed implements model.Placer: the weights are the file's.
func (f *fileFetch) Placed() bool { return true }

func (f *fileFetch) Release() { f.experts = nil }
