// Package backend defines the operations the model blocks issue and the
// memory they issue them on, so that an architecture's graph can run on any
// implementation: engine/cpu, and metal (Apple GPUs, proven on Linux by its emulator).
//
// The contract is that of a recorder, not of synchronous calls: an op may
// only be queued when it is called, and its results may be read by the host
// only after Sync. The CPU backend runs every op at once (Sync returns at
// once); a GPU backend may record a whole decode step into one command
// buffer, with Sync as the host handshake (e.g. when a MoE layer's routing
// must be read to make its experts resident). Float32 tensors are plain
// slices of memory the backend allocated with Alloc (on Apple silicon the
// GPU reads the same pages), weights are Matrices the backend made from the
// model's bytes.
//
// A Backend is used by one forward pass at a time; it is not safe for
// concurrent use.
package backend

import (
	"context"
	"unsafe"

	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/routing"
)

// Matrix is a 2-D weight of ggml blocks: Rows rows of Cols elements, as
// stored in the GGUF file (ggml's ne0 = Cols). Impl is the backend's own
// handle; Matrices are made by Backend.NewMatrix.
type Matrix struct {
	Type       ggml.Type
	Data       []byte
	Rows, Cols int
	Impl       any
}

// KVCache is one sequence's attention cache for every attention layer, in
// llama.cpp's layout without flash attention: per layer, K as F16 rows of
// KVDim by position, V transposed (KVDim rows of NCtx).
type KVCache struct {
	K, V  [][]uint16 // per layer (nil for layers without attention)
	NCtx  int
	KVDim int
}

// Bytes is the memory the cache holds.
func (c *KVCache) Bytes() int64 {
	var n int64
	for i := range c.K {
		n += 2 * int64(len(c.K[i])+len(c.V[i]))
	}
	return n
}

// AttnParams describe one attention layer's heads.
type AttnParams struct {
	Heads, HeadsKV, HeadDim int
	Scale                   float32 // applied to K·Q before the softmax
}

// ExpertWeights is one expert's three projections, as raw ggml blocks:
// Gate and Up are [ff rows × embd], Down is [embd rows × ff]. The bytes
// may live anywhere (the file's mapping, an expert cache's slot); they
// must stay valid while an op that uses them runs.
type ExpertWeights struct {
	Gate, Up, Down    []byte
	GateT, UpT, DownT ggml.Type
}

// ExpertJob is one expert's work in a MoE layer: its weights, and the rows
// of the layer input it is applied to.
type ExpertJob struct {
	W    ExpertWeights
	Rows []int32   // rows of the input, ascending
	Out  []float32 // [len(Rows)][embd], written by ExpertsFFN
}

// Backend is the set of heavy operations the shared blocks issue. All
// float32 arguments are row-major [rows][cols] tensors from Alloc unless
// said otherwise.
type Backend interface {
	// Name is a short name for logs ("cpu", "metal").
	Name() string
	// Threads is the number of CPU threads the backend uses.
	Threads() int
	// Alloc returns n zeroed float32s the backend's ops can read and write.
	Alloc(n int) []float32
	// NewMatrix wraps rows×cols elements of type t stored in data (which
	// must stay valid while the Matrix is used); it fails when the backend
	// has no kernels for t or the sizes disagree.
	NewMatrix(t ggml.Type, data []byte, rows, cols int) (*Matrix, error)
	// NewKVCache allocates a cache of nCtx positions of kvDim for the
	// layers marked in attn.
	NewKVCache(attn []bool, nCtx, kvDim int) *KVCache

	// GetRows writes row ids[i] of m, dequantized, into out[i].
	GetRows(m *Matrix, ids []int32, out []float32)
	// RMSNorm writes x normalised by its root mean square and scaled by w
	// into out (which may be x), for rows rows of len(w).
	RMSNorm(out, x, w []float32, rows int, eps float32)
	// Linear computes out[r] = w · in[r] for rows rows (in has w.Cols
	// columns, out w.Rows). Consecutive Linear calls on the same in share
	// its conversion to the weights' activation format.
	Linear(w *Matrix, in []float32, rows int, out []float32)
	// Add adds y into x elementwise.
	Add(x, y []float32)
	// NormRope applies, to each of heads heads of headDim in each of rows
	// rows of x, an RMSNorm with w (skipped when w is nil) and NEOX RoPE
	// over the first ropeDims dimensions with row r's cos/sin in
	// cs[r*ropeDims:] (skipped when ropeDims is 0).
	NormRope(x []float32, rows, heads, headDim int, w []float32, eps float32, cs []float32, ropeDims int)
	// StoreKV writes rows rows of k and v (each [rows][kvDim]) into layer
	// il of c at positions pos0...
	StoreKV(c *KVCache, il int, k, v []float32, rows, pos0 int)
	// Attention computes causal attention for rows rows of q (row r at
	// position pos0+r, attending to positions 0..pos0+r of layer il of c)
	// into out ([rows][heads*headDim]).
	Attention(c *KVCache, il int, q []float32, rows, pos0 int, p AttnParams, out []float32)
	// SparseAttention is Attention restricted, for each row r, to the
	// positions j ≤ pos0+r whose bit is set in the row's mask (bit j%64 of
	// sel[r*words+j/64]): llama.cpp's masked attention, the scores of the
	// other positions set to -inf before the softmax (qwen4exp's QSA). A
	// row must keep at least one position.
	SparseAttention(c *KVCache, il int, q []float32, rows, pos0 int, p AttnParams, sel []uint64, words int, out []float32)
	// Softmax normalises each of rows rows of cols values in place.
	Softmax(x []float32, rows, cols int)
	// ExpertsFFN computes, for each job, SwiGLU(in·Gateᵀ, in·Upᵀ)·Downᵀ for
	// the job's rows of in ([rows][embd]; experts of ff hidden values),
	// into the job's Out. With reuseInput
	// the activation conversion of in from the previous ExpertsFFN call is
	// used again (the caller guarantees in has not changed), so a layer
	// whose experts arrive in several waves converts its input once.
	ExpertsFFN(in []float32, rows, embd, ff int, jobs []ExpertJob, reuseInput bool) error
	// Combine writes, for each of rows rows, the sum over k < used of
	// wts[r*used+k] · src[r*used+k] (in that order, as ggml adds the expert
	// views) into out[r], then adds out[r] into x[r]. Rows have embd values.
	Combine(x, out []float32, rows, embd, used int, wts []float32, src [][]float32)
	// SplitHeads splits each of rows rows of x, made of heads groups of
	// d0+d1 values, into dst0 ([rows][heads*d0], the first d0 values of
	// each group) and dst1 ([rows][heads*d1], the rest): a query packed
	// with its gate, or DeltaNet's beta/alpha pairs.
	SplitHeads(dst0, dst1, x []float32, rows, heads, d0, d1 int)
	// SigmoidMul multiplies each of rows rows of x by sigmoid(g) (ggml's
	// 1/(1+expf(-g))): g holds either as many values per row as x (a gate
	// per element) or one (a gate per row, broadcast).
	SigmoidMul(x, g []float32, rows int)
	// GatedRMSNorm replaces each of rows groups of len(w) values of x by
	// RMSNorm(x)·w·silu(z), with z laid out as x (llama.cpp's
	// build_norm_gated: ggml_rms_norm, ggml_mul by w, ggml_mul by ggml_silu).
	GatedRMSNorm(x, z, w []float32, rows int, eps float32)
	// CausalConv computes, for each of rows rows of x ([rows][channels]),
	// a causal depthwise convolution over the sequence formed by state
	// ([channels][taps-1], the inputs before row 0, oldest first) and x,
	// with w ([channels][taps]), followed by SiLU, into out
	// ([rows][channels]) (ggml_ssm_conv then ggml_silu). state is replaced
	// by the last taps-1 inputs; snaps[i], if any and not nil, receives the
	// state as it is after row rows-len(snaps)+i (len(snaps) ≤ rows). With
	// from not nil, the inputs before row 0 are read from from (left
	// unchanged unless it is state) instead of state, which only receives
	// the result: a session keeps its checkpoint without copying it.
	CausalConv(out, x, from, state, w []float32, rows, channels, taps int, snaps [][]float32)
	// GatedDeltaNet runs the gated delta rule (ggml_gated_delta_net as
	// llama.cpp's CPU backend computes it, one token after another) for
	// rows rows, updating state ([ValueHeads][Dim][Dim], row j of head h
	// is column j of its state matrix) in place; see DeltaNetParams for
	// the inputs. snaps and from work as in CausalConv. out is
	// [rows][ValueHeads*Dim].
	GatedDeltaNet(p DeltaNetParams, qkv, b, a []float32, rows int, from, state []float32, snaps [][]float32, out []float32)
	// GroupRMSNorm normalises, in each of rows rows of len(w) values of x,
	// every group of n consecutive values by its own root mean square
	// (ggml_rms_norm over the groups), then multiplies the row by w
	// elementwise (ggml_mul), into out (which may be x); len(w) is a
	// multiple of n. The result is rounded as RMSNorm with a weight of
	// ones followed by that product: qwen4exp's grouped norm of its
	// hyper-connection streams.
	GroupRMSNorm(out, x, w []float32, rows, n int, eps float32)
	// ScaledSiLU replaces each x[i] by silu(v) with v = scale·x[i] rounded
	// to float32 (ggml_scale, then ggml_silu: v/(1+expf(-v))).
	ScaledSiLU(x []float32, scale float32)
	// HyperMix writes into out ([rows][n]), for each row, the mean of its
	// streams of xn ([rows][streams][n]) gated by gate (laid out as xn):
	// out = (Σ_c xn_c·sigmoid(gate_c))·(1/streams), each product rounded to
	// float32, summed in stream order, then multiplied by the float32
	// 1/streams; sigmoid(g) is 1/(1+expf(-g)). It is a hyper-connection
	// mixer's last step (llama.cpp's qwen4exp build_hc_mix).
	HyperMix(out, xn, gate []float32, rows, streams, n int)
	// HyperCombine adds y ([rows][n]) into every stream c of x
	// ([rows][streams][n]) scaled by w = 2·sigmoid(inject[r·streams+c]·
	// (1/streams)): x_c += y·w, the product rounded to float32 before the
	// sum (ggml_mul, then ggml_add). It is a hyper-connection module's
	// combine (llama.cpp's qwen4exp build_hc_combine).
	HyperCombine(x, y, inject []float32, rows, streams, n int)
	// Route chooses, for each of rows rows of p ([rows][experts] router
	// probabilities, after Softmax), k experts by pol against one
	// snapshot of residency (resident: one flag per expert; nil: none),
	// as engine/routing's CacheRoute.Route (the zero policy, or no
	// residency, is routing.Exact), writing them best-first into sel
	// ([rows][k]) and their renormalised weights, times scale (0 or 1:
	// none), into wts ([rows][k]). A MoE layer's routing on the device:
	// the host reads sel and wts after Sync, to fetch the experts.
	Route(p []float32, rows, experts, k int, scale float32, pol routing.CacheRoute, resident []bool, sel []int32, wts []float32)
	// Fill sets every value of x to v (a MoE output cleared before the
	// experts add into it).
	Fill(x []float32, v float32)
	// Repeat writes copies copies of each of rows rows of n values of src
	// into dst ([rows][copies][n]): qwen4exp's residual widened into its
	// hyper-connection streams, the PLE value broadcast over them.
	Repeat(dst, src []float32, rows, copies, n int)
	// PLEGate writes into gate[i], for each of groups groups of n values
	// of key and qry (group i at i·n), sgn(s)·sqrt(max(|s|, 1e-6)) with
	// s = (Σ_j key_j·qry_j)·(1/sqrt(n)): each product rounded to float32,
	// summed in float64 (ggml_mul, then ggml_sum_rows), the sum rounded to
	// float32 and multiplied by the float32 1/sqrt(n); sgn(0) is 0. It is
	// qwen4exp's PLE gate, one score per stream (llama.cpp's build_ple).
	PLEGate(gate, key, qry []float32, groups, n int)
	// StoreF16 writes each value of src rounded to IEEE binary16 (nearest
	// even, as ggml's FP32_TO_FP16) into dst, backend memory from AllocU16
	// (qwen4exp's indexer key cache).
	StoreF16(dst []uint16, src []float32)
	// QSAPool writes into dst ([blocks][dim]) the mean of each block of r
	// consecutive F16 keys of raw ([blocks·r][dim]): the members summed in
	// order in float32, then multiplied by the float32 1/r (qwen4exp's
	// indexer pooling, llama.cpp's build_qsa_top_k).
	QSAPool(dst []float32, raw []uint16, blocks, r, dim int)
	// QSASelect writes, for each of rows rows of the indexer queries q
	// ([rows][heads·dim], normed and rotated; row t at position pos0+t),
	// the cells the row keeps into its mask (bit j%64 of
	// sel[t·words+j/64], backend memory from AllocU64, as SparseAttention
	// reads it; the words for positions 0..pos0+t are rewritten, no bit
	// past the row's position set). A row at position p keeps every
	// position when p+1 ≤ width; else the tail cells (p+1)/r·r…p and, by
	// libstdc++'s std::partial_sort over the cells' values (ties as its
	// heap decides them), the best of the others up to width cells, a
	// cell of block b worth the block's score Σ_h ReLU(q_h·keys[b]) (keys:
	// [blocks][dim], pooled, normed and rotated; each dot product rounded
	// once to float32, the heads summed in order). It is qwen4exp's QSA
	// selection (llama.cpp's ggml_top_k over set_input_qsa's cells).
	QSASelect(sel []uint64, q, keys []float32, rows, pos0, heads, dim, r, width, words int)
	// Sync waits until every queued op has run, so the host may read
	// their results.
	Sync() error
	// Close frees the backend's threads and memory.
	Close() error
}

// DeltaNetParams describe one gated DeltaNet layer's recurrence. Its
// inputs per row are qkv (the convolved projections: KeyHeads query heads,
// KeyHeads key heads, then ValueHeads value heads, each of Dim values),
// and b, a (ValueHeads values each). Query and key heads are L2-normalised
// with Eps (ggml_l2_norm) and value head h uses key head h/(ValueHeads/
// KeyHeads) (qwen3next's repeat-interleave), or h mod KeyHeads with
// KeyTiled (the fused ggml_gated_delta_net's broadcast, qwen4exp); beta = sigmoid(b), the decay g = softplus(a+DtBias)·A
// (softplus(x) = x above 20), and per head
// S ← exp(g)·S; S += k ⊗ beta·(v − Sᵀk); out = Sᵀq / sqrt(Dim).
type DeltaNetParams struct {
	KeyHeads, ValueHeads, Dim int
	DtBias, A                 []float32 // [ValueHeads]: ssm_dt.bias, ssm_a
	Eps                       float32
	KeyTiled                  bool // value head h reads key head h mod KeyHeads
}

// AllocU16 returns n zeroed uint16s of be's memory (Alloc's, viewed as
// uint16s), which the ops may write (StoreF16).
func AllocU16(be Backend, n int) []uint16 {
	f := be.Alloc((n + 1) / 2)
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(f))), n)
}

// AllocU64 returns n zeroed uint64s of be's memory (Alloc's, viewed as
// uint64s; Alloc's memory is 8-byte aligned), which the ops may write
// (QSASelect's masks).
func AllocU64(be Backend, n int) []uint64 {
	f := be.Alloc(2 * n)
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(f))), n)
}

// AllocI32 returns n zeroed int32s of be's memory (Alloc's, viewed as
// int32s), which the ops may write (Route's choices, read by the host at a
// Handshake).
func AllocI32(be Backend, n int) []int32 {
	f := be.Alloc(n)
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(f))), n)
}

// Handshaker is implemented by a backend that records its ops (a GPU's
// command buffer) and can stop the device between them to run host code,
// so that a MoE layer makes its experts available in the middle of the
// recorded ops instead of ending them with a Sync: a decode step then runs
// as one command buffer, with one handshake per MoE layer. The CPU
// backend, which runs every op at once, does not implement it (its MoE
// layers Sync, which costs it nothing).
type Handshaker interface {
	// Handshake queues fn to run on the host when the device reaches it:
	// every op queued before it has completed (fn may read their results
	// in backend memory and fill ExpertSlots). The ops queued after it up
	// to the next Resume may run while fn runs (they must not touch what
	// fn reads or writes: a MoE layer's shared expert); those after the
	// Resume start once fn has returned. fn must not queue ops. An error
	// from fn is returned by the Sync that runs it, and the ops after the
	// Resume do not run.
	Handshake(fn func(ctx context.Context) error)
	// Resume ends the overlap of the last Handshake (a Handshake or Sync
	// without one resumes at once).
	Resume()
	// ExpertSlots returns n slots in backend memory for one expert each
	// (gate and up of t[0], t[1]: [ff × embd]; down of t[2]: [embd × ff])
	// among experts, filled by Put at a Handshake and read by
	// SlotExpertsFFN. Slots of the same shape may be returned to several
	// layers: each layer's handshake refills them after the previous
	// layer's experts have run.
	ExpertSlots(experts, n, embd, ff int, t [3]ggml.Type) (ExpertSlots, error)
	// SlotExpertsFFN queues ExpertsFFN's arithmetic (one mat-vec per row
	// and expert) for rows rows of in ([rows][embd]) and each k < used:
	// out[r][k] ([rows][used][embd]) gets row r's output of the expert
	// sel[r·used+k] names, with the weights s.Put gave that expert. sel
	// must be backend memory (from AllocI32, written by Route): the
	// device reads it when the op runs.
	SlotExpertsFFN(s ExpertSlots, in []float32, rows, used int, sel []int32, out []float32) error
	// CombineWeights adds, for each of rows rows, Σ_k wts[r·used+k]·
	// src[r][k] (src: [rows][used][embd], summed in k order, each product
	// rounded to float32: Combine's arithmetic) into x[r] ([rows][embd]),
	// with wts read by the device when the op runs (backend memory,
	// written by Route).
	CombineWeights(x []float32, rows, embd, used int, wts, src []float32)
	// RouteResident is Route with a residency the device reads when the
	// op runs: resident ([experts] int32, non-zero for a resident expert)
	// is backend memory (from AllocI32), written at record time or by a
	// Handshake's fn queued before it (the previous MoE layer's, once its
	// experts are in).
	RouteResident(p []float32, rows, experts, k int, scale float32, pol routing.CacheRoute, resident []int32, sel []int32, wts []float32)
	// Syncs is the number of Syncs so far: a handshake queued since the
	// count last changed has not run yet.
	Syncs() int
	// AfterRun, called from a Handshake's fn, runs fn on the host once
	// the ops queued after that handshake have completed: before the
	// next handshake's fn, or when the Sync running them returns (also
	// when it fails). A layer holds the experts ExpertSlots.Bind used
	// in place until then.
	AfterRun(fn func())
}

// ExpertSlots are device slots for the experts a MoE layer uses in a few
// rows (Handshaker.ExpertSlots).
type ExpertSlots interface {
	// Put makes w the weights of expert for the next SlotExpertsFFN, in
	// slot k (< n; one expert per slot). It is called from a Handshake's
	// fn; w may be reused by its provider once Put returns.
	Put(k int, expert int32, w ExpertWeights) error
	// Bind makes w the weights of expert for the next SlotExpertsFFN
	// where they lie, without a copy, if the device can read that memory
	// (an expert arena the backend allocated: HostAllocator), and
	// reports whether it did; else the caller Puts them. Called from a
	// Handshake's fn; w must stay as it is until the Handshaker's
	// AfterRun runs.
	Bind(expert int32, w ExpertWeights) bool
}

// Replayer is implemented by a backend that can keep a step's recorded
// ops and run them again (a GPU's command list), so that a session's
// decode steps of one shape run its graph code once. Replay runs the step
// recorded under key for a batch at pos0 and reports whether there was
// one; if not, the session calls Record, runs its graph code as usual and
// calls the returned function with whether the step succeeded: the step
// is kept if its ops ran as one Sync and read nothing a replay would not
// renew. A replay renews the positions its ops were given (as pos0 plus
// their offset from the recording's) and the contents of the host slices
// they read and write; everything else (the buffers, the shapes, which
// ops) must be what key says, and the host slices must be the session's
// own.
type Replayer interface {
	Replay(key StepKey, pos0 int) (bool, error)
	Record(key StepKey, pos0 int) (done func(ok bool))
	// Forget drops the steps of owner (a session closing).
	Forget(owner any)
	// Redo runs fn(pos0) and, while a step is recorded, keeps it: a
	// replay runs fn again with the replay's position (plus the same
	// offset) in place of the ops fn queued. For ops whose encoding
	// follows the position and host work a step needs each time (the
	// QSA indexer's key store, pooling and selection; the PLE rows'
	// gather). fn must queue the same ops, in shape, at every position
	// the step's key covers.
	Redo(pos0 int, fn func(pos0 int) error) error
}

// StepKey names a recorded step: its session and its shape (comparable:
// whatever the session's graph code for the step depends on besides pos0
// and the contents of its buffers).
type StepKey struct {
	Owner any
	Shape any
}

// ExpertLoads count how a Handshaker's handshakes gave experts to its
// device (its ExpertLoads method, where it has one).
type ExpertLoads struct {
	Bound  int64 // used where their provider read them (ExpertSlots.Bind)
	Copied int64 // copied into a slot (ExpertSlots.Put)
}

// HostAllocator is implemented by a backend whose device can read host
// memory it allocated in place: an expert provider's arena allocated
// here lets ExpertSlots.Bind use the experts without copying them.
type HostAllocator interface {
	// AllocHost returns n bytes of zeroed, page-aligned host memory and
	// the function that frees it (after the backend's last use).
	AllocHost(n int) (mem []byte, free func(), err error)
}
