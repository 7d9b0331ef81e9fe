package metal

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/model"
)

// Arena is the GPU-visible expert cache: a buffer of fixed slots, each
// holding one expert's gate, up and down projections, and the residency
// map (layer, expert) → slot with least-recently-used eviction. At each
// layer's handshake Load makes the chosen experts resident (copying them
// from the model.ExpertProvider: the SSD-backed cache, or the file) and
// writes the slot map the expert mat-vecs read. What the model computes
// never depends on which experts were resident.
type Arena struct {
	src                     model.ExpertProvider
	buf                     Buffer
	slots                   int
	SlotBytes               int
	GateOff, UpOff, DownOff int
	GateT, UpT, DownT       ggml.Type

	where   map[[2]int]int // (layer, expert) → slot
	owner   [][2]int       // slot → (layer, expert); layer -1: free
	lastUse []uint64
	clock   uint64

	// Hits and Misses count Load's experts found resident or copied in.
	Hits, Misses int
}

// NewArena allocates slots expert slots on dev for experts of the given
// types and shapes (gate and up: ff rows × embd; down: embd rows × ff).
func NewArena(dev Device, src model.ExpertProvider, slots, embd, ff int, gateT, upT, downT ggml.Type) (*Arena, error) {
	a := &Arena{src: src, slots: slots, GateT: gateT, UpT: upT, DownT: downT, where: map[[2]int]int{}}
	off := 0
	for _, p := range []struct {
		dst        *int
		t          ggml.Type
		rows, cols int
	}{{&a.GateOff, gateT, ff, embd}, {&a.UpOff, upT, ff, embd}, {&a.DownOff, downT, embd, ff}} {
		wt, err := weightType(p.t)
		if err != nil {
			return nil, fmt.Errorf("expert arena: %w", err)
		}
		*p.dst = off
		off += (p.rows*wt.RowBytes(p.cols) + 255) / 256 * 256
	}
	a.SlotBytes = off
	if slots < 1 {
		return nil, fmt.Errorf("expert arena: %d slots", slots)
	}
	buf, err := dev.Alloc(slots * a.SlotBytes)
	if err != nil {
		return nil, fmt.Errorf("expert arena of %d × %d bytes: %w", slots, a.SlotBytes, err)
	}
	a.buf = buf
	a.owner = make([][2]int, slots)
	for i := range a.owner {
		a.owner[i] = [2]int{-1, -1}
	}
	a.lastUse = make([]uint64, slots)
	return a, nil
}

// Buffer is the arena's memory.
func (a *Arena) Buffer() Buffer { return a.buf }

// Load makes the experts ids of layer resident and writes each one's slot
// into slotMap (one int32 per expert of the layer).
func (a *Arena) Load(ctx context.Context, layer int, ids []int32, slotMap []byte) error {
	if len(ids) > a.slots {
		return fmt.Errorf("expert arena: %d experts needed at once, %d slots", len(ids), a.slots)
	}
	a.clock++
	now := a.clock
	var missing []int32
	for _, id := range ids {
		if id < 0 || 4*int(id) >= len(slotMap) {
			return fmt.Errorf("layer %d: expert id %d out of range", layer, id)
		}
		if s, ok := a.where[[2]int{layer, int(id)}]; ok {
			a.Hits++
			a.lastUse[s] = now // not evicted by this Load
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		a.Misses += len(missing)
		if err := a.fetch(ctx, layer, missing, now); err != nil {
			return err
		}
	}
	for _, id := range ids {
		binary.LittleEndian.PutUint32(slotMap[4*id:], uint32(a.where[[2]int{layer, int(id)}]))
	}
	return nil
}

// fetch copies the missing experts into slots as the provider delivers them.
func (a *Arena) fetch(ctx context.Context, layer int, missing []int32, now uint64) error {
	f, err := a.src.Fetch(ctx, layer, missing)
	if err != nil {
		return fmt.Errorf("layer %d: %w", layer, err)
	}
	defer f.Release()
	var ready []int
	for done := 0; done < len(missing); {
		if ready, err = f.Ready(ctx, ready[:0]); err != nil {
			return fmt.Errorf("layer %d: %w", layer, err)
		}
		for _, i := range ready {
			s := a.victim(now)
			if old := a.owner[s]; old[0] >= 0 {
				delete(a.where, old)
			}
			a.owner[s] = [2]int{-1, -1}
			if err := a.fill(s, layer, int(missing[i]), f.Weights(i)); err != nil {
				return err
			}
			key := [2]int{layer, int(missing[i])}
			a.owner[s], a.where[key], a.lastUse[s] = key, s, now
			done++
		}
		f.Done(ready) // copied: the provider may reuse their memory
	}
	return nil
}

// victim is a free slot, else the least recently used one not used by
// the current Load.
func (a *Arena) victim(now uint64) int {
	best := -1
	for s := range a.owner {
		if a.owner[s][0] < 0 {
			return s
		}
		if a.lastUse[s] != now && (best < 0 || a.lastUse[s] < a.lastUse[best]) {
			best = s
		}
	}
	return best
}

func (a *Arena) fill(s, layer, expert int, w model.ExpertWeights) error {
	if w.GateT != a.GateT || w.UpT != a.UpT || w.DownT != a.DownT {
		return fmt.Errorf("layer %d expert %d: types %s/%s/%s, the arena holds %s/%s/%s", layer, expert,
			w.GateT, w.UpT, w.DownT, a.GateT, a.UpT, a.DownT)
	}
	slot := a.buf.Bytes()[s*a.SlotBytes : (s+1)*a.SlotBytes]
	if a.GateOff+len(w.Gate) > a.UpOff || a.UpOff+len(w.Up) > a.DownOff || a.DownOff+len(w.Down) > len(slot) {
		return fmt.Errorf("layer %d expert %d: %d/%d/%d bytes do not fit the slot", layer, expert, len(w.Gate), len(w.Up), len(w.Down))
	}
	copy(slot[a.GateOff:], w.Gate)
	copy(slot[a.UpOff:], w.Up)
	copy(slot[a.DownOff:], w.Down)
	return nil
}

// Resident writes into mask (one int32 per expert of the layer) 1 for
// the layer's resident experts and 0 for the others: what the
// cache-aware router kernel reads.
func (a *Arena) Resident(layer int, mask []byte) {
	clear(mask)
	for key := range a.where {
		if key[0] == layer && 4*key[1] < len(mask) {
			binary.LittleEndian.PutUint32(mask[4*key[1]:], 1)
		}
	}
}
