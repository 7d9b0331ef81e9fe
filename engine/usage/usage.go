// Package usage is the learned expert-usage history: per (layer, expert)
// decayed selection counts that survive restarts, so the expert cache of a
// streamed model starts warm with what this user's traffic needs. The
// counts are pure data (bumped once per token per selected expert, decayed
// per turn); the file is versioned, names the model it belongs to by a
// hash of its header and tensor table, and is written atomically. A static
// profile (the same format, counted over a corpus by strata dev profile)
// is blended in by Blend: history count + 512 × the profile's per-token
// rate, so the history's share of the ranking grows as T/(T+512) with its
// decayed token count T.
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
func (h *History) Hottest() []Expert { return hottest(h.Layers, h.Experts, h.Count) }

// hottest lists the (layer, expert) pairs scoring above zero, highest
// first, ties by layer then expert.
func hottest(layers, experts int, score func(l, e int) float32) []Expert {
	var out []Expert
	for l := 0; l < layers; l++ {
		for e := 0; e < experts; e++ {
			if score(l, e) > 0 {
				out = append(out, Expert{l, e})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return score(out[i].Layer, out[i].Expert) > score(out[j].Layer, out[j].Expert)
	})
	return out
}

// PriorTokens is how many tokens of the user's own history a static
// profile weighs as in a Blend. The blend's history weight is T/(T+512)
// for a history of T (decayed) tokens: half at 512 tokens, 0.9 at 4,600;
// with the default decay a user's history settles near 100 × the tokens
// of a turn (the geometric sum of 0.99 per turn), so a few hundred-token
// turns a day leave the profile a few per cent of the ranking, while a
// fresh install ranks by the profile alone.
const PriorTokens = 512

// Blend ranks experts by a usage history blended with a static profile
// (a per-(layer, expert) usage file in the history's format, made by
// running a corpus through the model: strata dev profile). A profile's
// counts are turned into per-token selection rates and weighed as Prior
// tokens of history, so the score of (l, e) is
//
//	history count(l, e) + Prior × profile count(l, e) / profile tokens
//
// which, divided by T + Prior, is the history's rate weighted T/(T+Prior)
// plus the profile's weighted Prior/(T+Prior). The score is in the
// history's units (decayed selections), so the between-turn rule
// hot > 1.25·cold + 4 applies to it unchanged. Either side may be nil.
type Blend struct {
	History *History
	Profile *History
	Prior   float64 // 0: PriorTokens
}

func (b Blend) prior() float64 {
	if b.Prior > 0 {
		return b.Prior
	}
	return PriorTokens
}

// profileScale turns a profile count into history units.
func (b Blend) profileScale() float32 {
	p := b.Profile
	if p == nil {
		return 0
	}
	tokens := p.Tokens
	if tokens <= 0 { // a profile that did not record its tokens: rates per selection
		var sum float64
		for _, c := range p.counts {
			sum += float64(c)
		}
		if p.Layers > 0 {
			tokens = sum / float64(p.Layers)
		}
	}
	if tokens <= 0 {
		return 0
	}
	return float32(b.prior() / tokens)
}

// Score is (l, e)'s blended count.
func (b Blend) Score(l, e int) float32 {
	var s float32
	if b.History != nil {
		s = b.History.Count(l, e)
	}
	if b.Profile != nil {
		s += b.profileScale() * b.Profile.Count(l, e)
	}
	return s
}

// HistoryWeight is the share of the ranking the history holds:
// T/(T+Prior), 1 without a profile, 0 without a history.
func (b Blend) HistoryWeight() float64 {
	switch {
	case b.Profile == nil || b.profileScale() == 0:
		if b.History == nil {
			return 0
		}
		return 1
	case b.History == nil:
		return 0
	}
	return b.History.Tokens / (b.History.Tokens + b.prior())
}

// scorer returns Score with the profile's scale worked out once.
func (b Blend) scorer() func(l, e int) float32 {
	k := b.profileScale()
	h, p := b.History, b.Profile
	return func(l, e int) float32 {
		var s float32
		if h != nil {
			s = h.Count(l, e)
		}
		if p != nil && k != 0 {
			s += k * p.Count(l, e)
		}
		return s
	}
}

// Scorer returns Score as a function, its profile scale computed once (for
// the expert cache's between-turn rebalancing).
func (b Blend) Scorer() func(l, e int) float32 { return b.scorer() }

// Hottest lists every (layer, expert) with a blended score above zero,
// hottest first.
func (b Blend) Hottest() []Expert {
	layers, experts := 0, 0
	for _, h := range []*History{b.History, b.Profile} {
		if h != nil {
			layers, experts = h.Layers, h.Experts
		}
	}
	return hottest(layers, experts, b.scorer())
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
