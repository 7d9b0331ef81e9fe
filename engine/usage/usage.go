// Package usage is the learned expert-usage history: per (layer, expert)
// decayed selection counts that survive restarts, so the expert cache of a
// streamed model starts warm with what this user's traffic needs. The
// counts are pure data (bumped once per token per selected expert, decayed
// per turn); the file is versioned, names the model it belongs to by a
// hash of its header and tensor table, and is written atomically.
package usage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sort"

	"github.com/strata-llm/strata/internal/atomicfile"
)

// Version is the file format's version.
const Version = 1

// DefaultDecay is the factor counts are multiplied by per turn: a
// half-life of ~69 turns. colibri found a history without decay froze
// (one turn moved its ranking by 0.2 %); 0.99 per save fixed it.
const DefaultDecay = 0.99

var magic = [8]byte{'S', 'T', 'R', 'A', 'T', 'A', 'U', 'H'}

// ErrMismatch is returned by Read for a history of another model or
// shape; ErrCorrupt for a damaged file.
var (
	ErrMismatch = errors.New("usage history is for another model")
	ErrCorrupt  = errors.New("usage history is damaged")
)

// Identity names a model file: the SHA-256 of its header and tensor table
// (everything before the tensor data), not its path.
type Identity [32]byte

// IdentityOf hashes the first headerBytes bytes of the file at path.
func IdentityOf(path string, headerBytes int64) (Identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return Identity{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, f, headerBytes); err != nil {
		return Identity{}, fmt.Errorf("usage: hash the header of %s: %w", path, err)
	}
	var id Identity
	copy(id[:], h.Sum(nil))
	return id, nil
}

// History holds the counts of one model. It is not safe for concurrent
// use; the engine bumps it from the forward pass and saves it between
// generations.
type History struct {
	ID      Identity
	Layers  int
	Experts int
	Tokens  float64 // decayed count of tokens recorded (the history's weight)
	Turns   uint64
	counts  []float32 // [layer][expert]
}

// New returns an empty history for a model of layers × experts.
func New(id Identity, layers, experts int) *History {
	return &History{ID: id, Layers: layers, Experts: experts, counts: make([]float32, layers*experts)}
}

// Add records that one token selected experts in layer (once per token
// per expert; a batch calls it per row).
func (h *History) Add(layer int, experts []int32) {
	if layer < 0 || layer >= h.Layers {
		return
	}
	row := h.counts[layer*h.Experts : (layer+1)*h.Experts]
	for _, e := range experts {
		if e >= 0 && int(e) < h.Experts {
			row[e]++
		}
	}
}

// Token records one token (for the history's weight).
func (h *History) Token() { h.Tokens++ }

// Count is expert e of layer l's decayed count.
func (h *History) Count(l, e int) float32 { return h.counts[l*h.Experts+e] }

// EndTurn decays every count by factor (DefaultDecay if 0).
func (h *History) EndTurn(factor float64) {
	if factor <= 0 || factor > 1 {
		factor = DefaultDecay
	}
	f := float32(factor)
	for i := range h.counts {
		h.counts[i] *= f
	}
	h.Tokens *= factor
	h.Turns++
}

// Expert is a (layer, expert) pair.
type Expert struct{ Layer, Expert int }

// Hottest returns every (layer, expert) with a count above zero, hottest
// first (ties by layer then expert, so the order is deterministic).
func (h *History) Hottest() []Expert {
	var out []Expert
	for l := 0; l < h.Layers; l++ {
		for e := 0; e < h.Experts; e++ {
			if h.Count(l, e) > 0 {
				out = append(out, Expert{l, e})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return h.Count(out[i].Layer, out[i].Expert) > h.Count(out[j].Layer, out[j].Expert)
	})
	return out
}

// header is the fixed part of the file.
type header struct {
	Magic   [8]byte
	Version uint32
	ID      Identity
	Layers  uint32
	Experts uint32
	Tokens  float64
	Turns   uint64
}

// MarshalBinary encodes the history: header, counts, CRC-32 of both.
func (h *History) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	hd := header{Magic: magic, Version: Version, ID: h.ID, Layers: uint32(h.Layers), Experts: uint32(h.Experts), Tokens: h.Tokens, Turns: h.Turns}
	if err := binary.Write(&b, binary.LittleEndian, &hd); err != nil {
		return nil, err
	}
	if err := binary.Write(&b, binary.LittleEndian, h.counts); err != nil {
		return nil, err
	}
	crc := crc32.ChecksumIEEE(b.Bytes())
	binary.Write(&b, binary.LittleEndian, crc)
	return b.Bytes(), nil
}

// Parse decodes a history, which must be for id with layers × experts;
// anything else is refused (ErrMismatch, ErrCorrupt), never trusted.
func Parse(data []byte, id Identity, layers, experts int) (*History, error) {
	var hd header
	hsize := binary.Size(hd)
	if len(data) < hsize+4 {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, len(data))
	}
	if err := binary.Read(bytes.NewReader(data[:hsize]), binary.LittleEndian, &hd); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	switch {
	case hd.Magic != magic:
		return nil, fmt.Errorf("%w: not a usage history", ErrCorrupt)
	case hd.Version != Version:
		return nil, fmt.Errorf("%w: format version %d (this build reads %d)", ErrMismatch, hd.Version, Version)
	case hd.ID != id:
		return nil, ErrMismatch
	case int(hd.Layers) != layers || int(hd.Experts) != experts:
		return nil, fmt.Errorf("%w: %d×%d experts, the model has %d×%d", ErrMismatch, hd.Layers, hd.Experts, layers, experts)
	}
	n := layers * experts
	if want := hsize + 4*n + 4; len(data) != want {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrCorrupt, len(data), want)
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	h := New(id, layers, experts)
	h.Tokens, h.Turns = hd.Tokens, hd.Turns
	if math.IsNaN(h.Tokens) || h.Tokens < 0 || math.IsInf(h.Tokens, 0) {
		return nil, fmt.Errorf("%w: token weight %g", ErrCorrupt, h.Tokens)
	}
	for i := range h.counts {
		v := math.Float32frombits(binary.LittleEndian.Uint32(body[hsize+4*i:]))
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 {
			return nil, fmt.Errorf("%w: count %g", ErrCorrupt, v)
		}
		h.counts[i] = v
	}
	return h, nil
}

// Load reads the history at path for the model id of layers × experts. A
// missing file is an empty history (nil error); a file of another model or
// a damaged one returns ErrMismatch or ErrCorrupt (the caller logs it and
// starts empty: a history is never trusted blindly).
func Load(path string, id Identity, layers, experts int) (*History, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return New(id, layers, experts), nil
	}
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	h, err := Parse(data, id, layers, experts)
	if err != nil {
		return nil, fmt.Errorf("usage %s: %w", path, err)
	}
	return h, nil
}

// Save writes the history to path atomically (a crash leaves the old file
// or the new one, never a part).
func (h *History) Save(path string) error {
	data, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o600)
}
