package metal

import (
	"fmt"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/routing"
)

// WeightType describes how the kernels read one ggml weight type.
type WeightType struct {
	Type      ggml.Type
	BlockVals int // values per block
	BlockSize int // bytes per block
	suffix    string
	mv, mvl   string // its mat-vec kernels' names (dense or slots; located)
}

var weightTypes = []WeightType{
	newWeightType(ggml.F32, 1, 4, "f32"), newWeightType(ggml.F16, 1, 2, "f16"), newWeightType(ggml.BF16, 1, 2, "bf16"),
	newWeightType(ggml.Q8_0, 32, 34, "q8_0"), newWeightType(ggml.Q4_0, 32, 18, "q4_0"),
	newWeightType(ggml.Q2_K, 256, 84, "q2_K"), newWeightType(ggml.Q3_K, 256, 110, "q3_K"), newWeightType(ggml.Q4_K, 256, 144, "q4_K"),
	newWeightType(ggml.Q5_K, 256, 176, "q5_K"), newWeightType(ggml.Q6_K, 256, 210, "q6_K"),
	newWeightType(ggml.IQ2_XXS, 256, 66, "iq2_xxs"), newWeightType(ggml.IQ2_XS, 256, 74, "iq2_xs"), newWeightType(ggml.IQ3_XXS, 256, 98, "iq3_xxs"),
	newWeightType(ggml.IQ4_XS, 256, 136, "iq4_xs"),
	newWeightType(ggml.Q4_1, 32, 20, "q4_1"), newWeightType(ggml.Q5_0, 32, 22, "q5_0"), newWeightType(ggml.Q5_1, 32, 24, "q5_1"),
	newWeightType(ggml.IQ4_NL, 32, 18, "iq4_nl"), newWeightType(ggml.MXFP4, 32, 17, "mxfp4"),
	newWeightType(ggml.TQ1_0, 256, 54, "tq1_0"), newWeightType(ggml.TQ2_0, 256, 66, "tq2_0"),
	newWeightType(ggml.IQ3_S, 256, 110, "iq3_s"), newWeightType(ggml.IQ2_S, 256, 82, "iq2_s"), newWeightType(ggml.IQ1_S, 256, 50, "iq1_s"), newWeightType(ggml.IQ1_M, 256, 56, "iq1_m"),
}

// newWeightType makes a table entry with its kernels' names, made once (a
// decode step encodes thousands of mat-vecs).
func newWeightType(t ggml.Type, vals, size int, suffix string) WeightType {
	return WeightType{Type: t, BlockVals: vals, BlockSize: size, suffix: suffix, mv: "kernel_mv_" + suffix, mvl: "kernel_mvl_" + suffix}
}

// WeightTypes lists the weight types the kernels support.
func WeightTypes() []WeightType { return append([]WeightType(nil), weightTypes...) }

func weightType(t ggml.Type) (WeightType, error) {
	for _, w := range weightTypes {
		if w.Type == t {
			return w, nil
		}
	}
	return WeightType{}, fmt.Errorf("weight type %s has no Metal kernel", t)
}

// RowBytes is the size of a row of n values.
func (w WeightType) RowBytes(n int) int { return n / w.BlockVals * w.BlockSize }

// MatVecKernel is the mat-vec kernel's name for t.
func MatVecKernel(t ggml.Type) string {
	w, err := weightType(t)
	if err != nil {
		return ""
	}
	return w.mv
}

// Geometry of the mat-vec kernels (their function constants 0 and 1).
type MatVecGeometry struct {
	NSG int // simdgroups per threadgroup (1..32)
	NR  int // rows per simdgroup (1..4)
}

// DefaultMatVec is the geometry used when none is given.
var DefaultMatVec = MatVecGeometry{NSG: 4, NR: 2}

func (g MatVecGeometry) check() error {
	if g.NSG < 1 || g.NSG > MaxThreadsPerTG/SimdWidth || g.NR < 1 || g.NR > 4 {
		return fmt.Errorf("mat-vec geometry %+v: NSG 1..32, NR 1..4", g)
	}
	return nil
}

// MatVec is y = W·x for one matrix of rows×cols values of type T, or (N >
// 1) for N matrices at once, selected either densely (matrix i at byte
// i·MatBytes of W), through a slot map (matrix i at
// W + Slots[IDs[i]]·SlotBytes + WOff: experts in the arena) or through a
// location table (Locs: matrix i where the uint64 loc =
// Locs[IDs[i]·LocStride + LocIndex] says, base loc>>56 (0: W, 1..4:
// Bases[0..3]) at byte loc & (2⁵⁶−1): experts where their provider's arena
// holds them, in one of several buffers, or copied into W).
type MatVec struct {
	T          ggml.Type
	Rows, Cols int
	N          int // matrices (grid.y); 0 means 1
	W, X, Y    BufRef
	XStride    int // floats between the inputs of the matrices (0: one shared input)
	YStride    int // floats between their outputs (0: Rows)
	MatBytes   int
	IDs, Slots *BufRef // slot mode when both are set
	SlotBytes  int
	WOff       int
	// Location-table mode, when Locs and IDs are set.
	Locs                *BufRef
	LocStride, LocIndex int
	Bases               []BufRef       // at most MaxBases
	Geometry            MatVecGeometry // zero: DefaultMatVec
}

// MaxBases is how many buffers besides W a location table can point into.
const MaxBases = 4

// Encode appends the dispatch to c.
func (m MatVec) Encode(c *Commands) {
	wt, err := weightType(m.T)
	if err != nil {
		c.fail(err)
		return
	}
	g := m.Geometry
	if g == (MatVecGeometry{}) {
		g = DefaultMatVec
	}
	if err := g.check(); err != nil {
		c.fail(err)
		return
	}
	if m.Cols%32 != 0 || m.Cols%wt.BlockVals != 0 || m.Rows <= 0 {
		c.fail(fmt.Errorf("mat-vec %s: %d×%d: columns must be a multiple of 32 and of the block size %d", m.T, m.Rows, m.Cols, wt.BlockVals))
		return
	}
	n := max(m.N, 1)
	ys := m.YStride
	if ys == 0 {
		ys = m.Rows
	}
	slots, sb, woff, kernel := uint32(0), uint64(m.SlotBytes), uint64(m.WOff), wt.mv
	bufs := map[int]BufRef{1: m.W, 2: m.X, 3: m.Y, 4: m.X, 5: m.X}
	switch {
	case m.IDs != nil && m.Locs != nil:
		if len(m.Bases) > MaxBases || m.LocStride < 1 || m.LocIndex < 0 || m.LocIndex >= m.LocStride {
			c.fail(fmt.Errorf("mat-vec %s: location table of stride %d, index %d, %d bases (at most %d)", m.T, m.LocStride, m.LocIndex, len(m.Bases), MaxBases))
			return
		}
		slots, sb, woff, kernel = 2, uint64(m.LocStride), uint64(m.LocIndex), wt.mvl
		bufs[4], bufs[5] = *m.IDs, *m.Locs
		for i := range MaxBases {
			bufs[6+i] = m.W
			if i < len(m.Bases) {
				bufs[6+i] = m.Bases[i]
			}
		}
	case m.IDs != nil && m.Slots != nil:
		slots = 1
		bufs[4], bufs[5] = *m.IDs, *m.Slots
	}
	a := (&argBuilder{}).u32(uint32(m.Cols)).u32(uint32(m.Rows)).u64(uint64(wt.RowBytes(m.Cols))).
		u64(uint64(m.MatBytes)).u32(uint32(m.XStride)).u32(uint32(ys)).u32(slots).u32(0).
		u64(sb).u64(woff).bytes()
	rowsPerTG := g.NSG * g.NR
	c.Dispatch(Dispatch{
		Kernel: kernel, FC: map[int]int32{0: int32(g.NSG), 1: int32(g.NR)},
		Grid: [3]uint32{uint32((m.Rows + rowsPerTG - 1) / rowsPerTG), uint32(n), 1}, TG: [3]uint32{uint32(SimdWidth * g.NSG), 1, 1},
		Bufs: bufs, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 36,
	})
}

// MatMulMinRows is the batch from which Backend uses MatMul rather than
// one mat-vec per row. Not measured on a GPU yet (no Mac): mat-mat reads
// each weight block once per 32 rows instead of once per row, which should
// pay from a few rows on memory-bound weights; a Mac run should tune it
// against llama.cpp's Metal build (which switches at 9 rows).
const MatMulMinRows = 4

// MatMul is Y[t] = W·X[t] for NTok activation rows (prefill): W is one
// matrix of Rows×Cols values of type T; row t of X is at float
// t·XStride, or IDs[t]·XStride when IDs is set (the rows routed to one
// expert); Y[t] at t·YStride (0: Rows).
type MatMul struct {
	T                ggml.Type
	Rows, Cols, NTok int
	W, X, Y          BufRef
	XStride, YStride int
	IDs              *BufRef
}

// MatMulTile is the tile a MatMul threadgroup computes: 32 weight rows ×
// 32 activation rows, 4 simdgroups, two 4 KiB tiles of threadgroup memory.
const MatMulTile = 32

// Encode appends the dispatch to c.
func (m MatMul) Encode(c *Commands) {
	wt, err := weightType(m.T)
	if err != nil {
		c.fail(err)
		return
	}
	if m.Cols%32 != 0 || m.Cols%wt.BlockVals != 0 || m.Rows <= 0 || m.NTok <= 0 || m.XStride < m.Cols {
		c.fail(fmt.Errorf("mat-mat %s: %d×%d × %d rows (x stride %d): columns must be a multiple of 32 and of the block size %d",
			m.T, m.Rows, m.Cols, m.NTok, m.XStride, wt.BlockVals))
		return
	}
	ys := m.YStride
	if ys == 0 {
		ys = m.Rows
	}
	useIDs := uint32(0)
	bufs := map[int]BufRef{1: m.W, 2: m.X, 3: m.Y, 4: m.X}
	if m.IDs != nil {
		useIDs, bufs[4] = 1, *m.IDs
	}
	a := (&argBuilder{}).u32(uint32(m.Cols)).u32(uint32(m.Rows)).u64(uint64(wt.RowBytes(m.Cols))).
		u32(uint32(m.NTok)).u32(uint32(m.XStride)).u32(uint32(ys)).u32(0).u32(useIDs).bytes()
	c.Dispatch(Dispatch{
		Kernel: "kernel_mm_" + wt.suffix,
		Grid:   [3]uint32{uint32((m.Rows + MatMulTile - 1) / MatMulTile), uint32((m.NTok + MatMulTile - 1) / MatMulTile), 1},
		TG:     [3]uint32{4 * SimdWidth, 1, 1},
		Bufs:   bufs, Bytes: map[int][]byte{0: a}, TGMem: map[int]int{0: 2 * 4 * MatMulTile * MatMulTile},
		SplitArg: 0, SplitOff: 28,
	})
}

// GetRows writes the dequantized rows IDs[0..N) of W (rows of Cols values
// of type T) to Out.
type GetRows struct {
	T           ggml.Type
	Cols, N     int
	W, IDs, Out BufRef
}

// Encode appends the dispatch to c.
func (g GetRows) Encode(c *Commands) {
	wt, err := weightType(g.T)
	if err != nil {
		c.fail(err)
		return
	}
	if g.Cols%32 != 0 || g.Cols%wt.BlockVals != 0 {
		c.fail(fmt.Errorf("get_rows %s: %d columns", g.T, g.Cols))
		return
	}
	a := (&argBuilder{}).u32(uint32(g.Cols)).u64(uint64(wt.RowBytes(g.Cols))).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_get_rows_" + wt.suffix, Grid: [3]uint32{uint32(g.N), 1, 1}, TG: [3]uint32{SimdWidth, 1, 1},
		Bufs: map[int]BufRef{1: g.W, 2: g.IDs, 3: g.Out}, Bytes: map[int][]byte{0: a}, SplitOff: -1})
}

// reduceThreads is the threadgroup size for a per-row reduction over n
// values: a multiple of the SIMD width, at most 1024.
func reduceThreads(n int) int {
	t := (n + SimdWidth - 1) / SimdWidth * SimdWidth
	return min(max(t, SimdWidth), 256)
}

// RMSNorm writes x·w/sqrt(mean(x²)+eps) for Rows rows of N values (rows
// XStride apart, 0: N) from X to Out (which may be X); W has N values.
type RMSNorm struct {
	N, Rows, XStride int
	Eps              float32
	X, W, Out        BufRef
}

// Encode appends the dispatch to c.
func (r RMSNorm) Encode(c *Commands) {
	st := r.XStride
	if st == 0 {
		st = r.N
	}
	t := reduceThreads(r.N)
	a := (&argBuilder{}).u32(uint32(r.N)).f32(r.Eps).u32(uint32(st)).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_rms_norm", Grid: [3]uint32{uint32(r.Rows), 1, 1}, TG: [3]uint32{uint32(t), 1, 1},
		Bufs: map[int]BufRef{1: r.X, 2: r.W, 3: r.Out}, Bytes: map[int][]byte{0: a},
		TGMem: map[int]int{0: tgMem(4 * t / SimdWidth)}, SplitOff: -1})
}

func tgMem(n int) int { return (n + tgMemGranularity - 1) / tgMemGranularity * tgMemGranularity }

// Rope rotates Heads heads of HeadDim values in X, in place, NEOX style,
// at the position in Pos (one int32).
type Rope struct {
	HeadDim, Heads, Dims           int
	FreqBase, FreqScale, ExtFactor float32
	AttnFactor                     float32
	Corr                           [2]float32 // YaRN correction dims (ExtFactor ≠ 0)
	X, Pos                         BufRef
}

// Encode appends the dispatch to c.
func (r Rope) Encode(c *Commands) {
	if r.Dims%2 != 0 || r.Dims > r.HeadDim || r.Dims/2 > MaxThreadsPerTG {
		c.fail(fmt.Errorf("rope: %d rotated dims of %d", r.Dims, r.HeadDim))
		return
	}
	a := (&argBuilder{}).u32(uint32(r.HeadDim)).u32(uint32(r.Dims)).f32(r.FreqBase).f32(r.FreqScale).
		f32(r.ExtFactor).f32(r.AttnFactor).f32(r.Corr[0]).f32(r.Corr[1]).bytes()
	t := (r.Dims/2 + SimdWidth - 1) / SimdWidth * SimdWidth
	c.Dispatch(Dispatch{Kernel: "kernel_rope_neox", Grid: [3]uint32{uint32(r.Heads), 1, 1}, TG: [3]uint32{uint32(t), 1, 1},
		Bufs: map[int]BufRef{1: r.X, 2: r.Pos}, Bytes: map[int][]byte{0: a}, SplitOff: -1})
}

// KVStore writes Rows rows of K and V (KVDim floats each) as F16 into the
// caches at positions Pos, Pos+1, ...: K as [nCtx][KVDim]; V the same, or
// (VTrans = nCtx) transposed, KVDim rows of nCtx positions.
type KVStore struct {
	KVDim, Rows, VTrans int
	K, V, KC, VC, Pos   BufRef
}

// Encode appends the dispatch to c.
func (k KVStore) Encode(c *Commands) {
	a := (&argBuilder{}).u32(uint32(k.KVDim)).u32(0).u32(uint32(k.VTrans)).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_kv_store", Grid: [3]uint32{uint32((k.KVDim + 255) / 256), uint32(max(k.Rows, 1)), 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: k.K, 2: k.V, 3: k.KC, 4: k.VC, 5: k.Pos}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 4})
}

// Attention is causal attention of Rows (0: 1) new positions Pos, Pos+1,
// ... for Heads query heads over the F16 caches (V laid out as KVStore's
// VTrans says), with scratch Scores of Rows×Heads×NCtx floats.
type Attention struct {
	HeadDim, Heads, HeadsKV, NCtx int
	Rows, VTrans                  int
	Scale                         float32
	Q, KC, VC, Scores, Out, Pos   BufRef
	Mask
}

// Mask restricts attention to some positions (qwen4exp's QSA): with Words
// > 0, row r keeps position j when bit j%64 of uint64 Sel[r·Words+j/64] is
// set (engine/backend.SparseAttention's layout); a row keeps at least one.
// Words 0: every position.
type Mask struct {
	Sel   BufRef
	Words int
}

// bind returns the mask's buffer (fallback when there is no mask: bound,
// never read) and its length per row in 32-bit words.
func (m Mask) bind(fallback BufRef) (BufRef, uint32) {
	if m.Words <= 0 {
		return fallback, 0
	}
	return m.Sel, uint32(2 * m.Words)
}

// Encode appends the dispatch to c.
func (at Attention) Encode(c *Commands) {
	if at.HeadsKV <= 0 || at.Heads%at.HeadsKV != 0 {
		c.fail(fmt.Errorf("attention: %d heads over %d KV heads", at.Heads, at.HeadsKV))
		return
	}
	sel, words := at.Mask.bind(at.Q)
	a := (&argBuilder{}).u32(uint32(at.HeadDim)).u32(uint32(at.Heads / at.HeadsKV)).u32(uint32(at.HeadsKV * at.HeadDim)).
		u32(uint32(at.NCtx)).f32(at.Scale).u32(uint32(at.VTrans)).u32(uint32(at.Heads * at.HeadDim)).u32(words).bytes()
	const t = 256
	c.Dispatch(Dispatch{Kernel: "kernel_attn_decode", Grid: [3]uint32{uint32(at.Heads), uint32(max(at.Rows, 1)), 1}, TG: [3]uint32{t, 1, 1},
		Bufs:  map[int]BufRef{1: at.Q, 2: at.KC, 3: at.VC, 4: at.Scores, 5: at.Out, 6: at.Pos, 7: sel},
		Bytes: map[int][]byte{0: a}, TGMem: map[int]int{0: tgMem(4 * t / SimdWidth)}, SplitOff: -1})
}

// FlashAttention is causal attention without a score buffer (any context
// length): Rows query rows at positions Pos[0]+row over the half KV cache
// (V as K, or transposed in rows of VTrans positions), one simdgroup per
// head and row. HeadDim must be a multiple of 32, at most 256.
type FlashAttention struct {
	HeadDim, Heads, HeadsKV int
	Rows, VTrans            int
	Scale                   float32
	Q, KC, VC, Out, Pos     BufRef
	Mask
}

// FlashHeadDim reports whether FlashAttention supports head dimension hd.
func FlashHeadDim(hd int) bool { return hd > 0 && hd%SimdWidth == 0 && hd <= 8*SimdWidth }

// Encode appends the dispatch to c.
func (at FlashAttention) Encode(c *Commands) {
	if at.HeadsKV <= 0 || at.Heads%at.HeadsKV != 0 || !FlashHeadDim(at.HeadDim) {
		c.fail(fmt.Errorf("flash attention: %d heads over %d KV heads of %d values (a multiple of 32, at most 256)", at.Heads, at.HeadsKV, at.HeadDim))
		return
	}
	sel, words := at.Mask.bind(at.Q)
	a := (&argBuilder{}).u32(uint32(at.HeadDim)).u32(uint32(at.Heads / at.HeadsKV)).u32(uint32(at.HeadsKV * at.HeadDim)).
		f32(at.Scale).u32(uint32(at.VTrans)).u32(uint32(at.Heads * at.HeadDim)).u32(words).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_flash_attn", Grid: [3]uint32{uint32(at.Heads), uint32(max(at.Rows, 1)), 1}, TG: [3]uint32{SimdWidth, 1, 1},
		Bufs:  map[int]BufRef{1: at.Q, 2: at.KC, 3: at.VC, 4: at.Out, 5: at.Pos, 6: sel},
		Bytes: map[int][]byte{0: a}, TGMem: map[int]int{0: tgMem(4 * at.HeadDim)}, SplitOff: -1})
}

// Softmax replaces each of Rows rows of N floats in X by its softmax.
type Softmax struct {
	N, Rows int
	X       BufRef
}

// Encode appends the dispatch to c.
func (s Softmax) Encode(c *Commands) {
	t := reduceThreads(s.N)
	c.Dispatch(Dispatch{Kernel: "kernel_softmax", Grid: [3]uint32{uint32(s.Rows), 1, 1}, TG: [3]uint32{uint32(t), 1, 1},
		Bufs: map[int]BufRef{1: s.X}, Bytes: map[int][]byte{0: (&argBuilder{}).u32(uint32(s.N)).bytes()},
		TGMem: map[int]int{0: tgMem(4 * t / SimdWidth)}, SplitOff: -1})
}

// Router picks each of Tokens tokens' K experts from its Experts logits
// (replaced by their softmax): IDs (int32) best first, Weights their
// probabilities renormalised and multiplied by Scale (0 or 1: none). With
// Cache enabled it applies engine/routing's cache-aware rule (MoCE in a
// max-rank window) given Resident (one int32 per expert, non-zero:
// resident), with float32 scores where the CPU's are float64. With Probs
// the logits already are the softmax (Backend.Route) and are left as they
// are.
type Router struct {
	Experts, K, Tokens   int
	Scale                float32
	Logits, IDs, Weights BufRef
	Cache                routing.CacheRoute
	Resident             BufRef
	Probs                bool
}

// Encode appends the dispatch to c.
func (r Router) Encode(c *Commands) {
	if r.Experts > 32*32 || r.K > 32 || r.K > r.Experts || r.K < 1 {
		c.fail(fmt.Errorf("router: top %d of %d experts (at most 32 of 1024)", r.K, r.Experts))
		return
	}
	probs := uint32(0)
	if r.Probs {
		probs = 1
	}
	if r.Cache.Enabled {
		if err := r.Cache.Validate(r.K, r.Experts); err != nil {
			c.fail(err)
			return
		}
		a := (&argBuilder{}).u32(uint32(r.Experts)).u32(uint32(r.K)).f32(r.Scale).f32(float32(r.Cache.Lambda)).
			u32(uint32(r.Cache.ProtectedTop)).u32(uint32(r.Cache.AlwaysKept)).u32(uint32(r.Cache.MaxRank)).f32(float32(r.Cache.MaxMass)).u32(probs).bytes()
		c.Dispatch(Dispatch{Kernel: "kernel_router_cache", Grid: [3]uint32{uint32(max(r.Tokens, 1)), 1, 1}, TG: [3]uint32{SimdWidth, 1, 1},
			Bufs:  map[int]BufRef{1: r.Logits, 2: r.IDs, 3: r.Weights, 4: r.Resident},
			Bytes: map[int][]byte{0: a}, TGMem: map[int]int{0: tgMem(4 * r.Experts), 1: tgMem(4 * r.Experts)}, SplitOff: -1})
		return
	}
	a := (&argBuilder{}).u32(uint32(r.Experts)).u32(uint32(r.K)).f32(r.Scale).u32(probs).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_router", Grid: [3]uint32{uint32(max(r.Tokens, 1)), 1, 1}, TG: [3]uint32{SimdWidth, 1, 1},
		Bufs: map[int]BufRef{1: r.Logits, 2: r.IDs, 3: r.Weights}, Bytes: map[int][]byte{0: a}, SplitOff: -1})
}

func elementwise(c *Commands, kernel string, n int, bufs map[int]BufRef) {
	a := (&argBuilder{}).u32(uint32(n)).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: kernel, Grid: [3]uint32{uint32((n + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: bufs, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 4})
}

// SwiGLU writes silu(Gate)·Up (N floats) to Out.
type SwiGLU struct {
	N             int
	Gate, Up, Out BufRef
}

// Encode appends the dispatch to c.
func (s SwiGLU) Encode(c *Commands) {
	elementwise(c, "kernel_swiglu", s.N, map[int]BufRef{1: s.Gate, 2: s.Up, 3: s.Out})
}

// Add adds Y into X (N floats).
type Add struct {
	N    int
	X, Y BufRef
}

// Encode appends the dispatch to c.
func (s Add) Encode(c *Commands) { elementwise(c, "kernel_add", s.N, map[int]BufRef{1: s.X, 2: s.Y}) }

// Combine adds to X (Embd floats) the K expert outputs Down ([K][Embd])
// weighted by Weights.
type Combine struct {
	Embd, K          int
	X, Down, Weights BufRef
}

// Encode appends the dispatch to c.
func (s Combine) Encode(c *Commands) {
	a := (&argBuilder{}).u32(uint32(s.Embd)).u32(uint32(s.K)).u32(0).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_moe_combine", Grid: [3]uint32{uint32((s.Embd + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: s.X, 2: s.Down, 3: s.Weights}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 8})
}

// NormRope applies to each of Heads heads of HeadDim in each of Rows rows
// of X, in place, an RMSNorm with W (skipped when W.Buf is nil) and NEOX
// RoPE over RopeDims dimensions with row r's cos/sin at CS[r·RopeDims:]
// (skipped when RopeDims is 0).
type NormRope struct {
	HeadDim, Heads, Rows, RopeDims int
	Eps                            float32
	X, W, CS                       BufRef
}

// Encode appends the dispatch to c.
func (n NormRope) Encode(c *Commands) {
	hasW := uint32(0)
	w, cs := n.W, n.CS
	if w.Buf != nil {
		hasW = 1
	} else {
		w = n.X
	}
	if cs.Buf == nil {
		cs = n.X
	}
	t := reduceThreads(n.HeadDim)
	a := (&argBuilder{}).u32(uint32(n.HeadDim)).u32(uint32(n.Heads)).u32(uint32(n.RopeDims)).u32(hasW).f32(n.Eps).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_norm_rope", Grid: [3]uint32{uint32(n.Heads), uint32(n.Rows), 1}, TG: [3]uint32{uint32(t), 1, 1},
		Bufs: map[int]BufRef{1: n.X, 2: w, 3: cs}, Bytes: map[int][]byte{0: a},
		TGMem: map[int]int{0: tgMem(4 * t / SimdWidth)}, SplitOff: -1})
}

// Axpy is Y = W·X (Accumulate false) or Y += W·X over N floats.
type Axpy struct {
	N          int
	W          float32
	Accumulate bool
	Y, X       BufRef
}

// Encode appends the dispatch to c.
func (x Axpy) Encode(c *Commands) {
	acc := uint32(0)
	if x.Accumulate {
		acc = 1
	}
	a := (&argBuilder{}).u32(uint32(x.N)).u32(0).f32(x.W).u32(acc).bytes()
	c.Dispatch(Dispatch{Kernel: "kernel_axpy", Grid: [3]uint32{uint32((x.N + 255) / 256), 1, 1}, TG: [3]uint32{256, 1, 1},
		Bufs: map[int]BufRef{1: x.Y, 2: x.X}, Bytes: map[int][]byte{0: a}, SplitArg: 0, SplitOff: 4})
}

func (c *Commands) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// kernelNames lists every kernel the geometry code dispatches.
func kernelNames() []string {
	var out []string
	for _, w := range weightTypes {
		out = append(out, w.mv, w.mvl, "kernel_get_rows_"+w.suffix)
	}
	return append(out, "kernel_rms_norm", "kernel_rope_neox", "kernel_kv_store", "kernel_attn_decode",
		"kernel_softmax", "kernel_router", "kernel_swiglu", "kernel_add", "kernel_moe_combine", "kernel_norm_rope", "kernel_axpy", "kernel_router_cache")
}
