package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3next"
	"github.com/strata-llm/strata/internal/sysmem"
)

// Streaming says when the engine streams experts from the SSD.
type Streaming string

const (
	// StreamAuto streams when the model does not fit the memory this
	// process may use (with its KV cache and a margin); the default.
	StreamAuto Streaming = ""
	// StreamAlways streams every model with experts.
	StreamAlways Streaming = "always"
	// StreamNever reads a model that fits half of RAM into memory and maps
	// a larger one, leaving it to the page cache.
	StreamNever Streaming = "never"
)

// memoryMode is how a model's weights are held.
type memoryMode int

const (
	modeInMemory memoryMode = iota // read into anonymous memory
	modeMapped                     // mapped, paged in by the kernel
	modeStream                     // dense part pinned, experts streamed into an arena
)

func (m memoryMode) String() string {
	return [...]string{"in memory", "mapped", "streaming experts"}[m]
}

// memoryPlan is how a model will be held, decided before anything large
// is allocated.
type memoryPlan struct {
	mode   memoryMode
	arena  int64 // expert cache bytes (modeStream)
	dense  int64 // bytes of everything but the routed experts
	usable uint64
}

// marginBytes is what the plan leaves free of the usable memory: for the
// Go heap, the tokenizer, the UI and the page cache the mapped dense part
// needs to stay resident; at most 1/8 of what is usable.
const marginBytes = 512 << 20

// streamed says whether t is read from the SSD while decoding when a
// model streams: the routed experts (llama.cpp's "*_exps" tensors).
// Everything else is the dense part, held in the process's own memory.
func streamed(t *gguf.TensorInfo) bool { return strings.Contains(t.Name, "_exps.") }

// expertBytes sums the streamed tensors of f.
func expertBytes(f *gguf.File) int64 {
	var n int64
	for i := range f.Tensors {
		if streamed(&f.Tensors[i]) {
			n += int64(f.Tensors[i].Size)
		}
	}
	return n
}

// lazy says whether t is read row by row when a model's experts stream,
// never held whole: qwen4exp's PLE table (per_layer_token_embd,
// llama.cpp's TENSOR_READ_LAZY). It is neither pinned nor in the arena.
func lazy(f *gguf.File, t *gguf.TensorInfo) bool {
	return f.Arch() == "qwen4exp" && t.Name == "per_layer_token_embd.weight"
}

// lazyBytes sums f's lazy tensors.
func lazyBytes(f *gguf.File) int64 {
	var n int64
	for i := range f.Tensors {
		if lazy(f, &f.Tensors[i]) {
			n += int64(f.Tensors[i].Size)
		}
	}
	return n
}

// kvEstimate is an upper bound of the KV cache of nCtx positions: every
// attention layer with F16 K and V of head_count_kv × key_length.
func kvEstimate(f *gguf.File, nCtx int) int64 {
	layers, _ := f.ArchUint("block_count")
	heads, ok := f.ArchUint("attention.head_count_kv")
	if !ok {
		heads, _ = f.ArchUint("attention.head_count")
	}
	dim, ok := f.ArchUint("attention.key_length")
	if !ok {
		if e, ok := f.ArchUint("embedding_length"); ok {
			if h, _ := f.ArchUint("attention.head_count"); h > 0 {
				dim = e / h
			}
		}
	}
	attn := int64(layers)
	if _, hybrid := f.ArchUint("ssm.state_size"); hybrid {
		// Hybrid models (qwen3next) keep KV only in every
		// full_attention_interval-th layer (4 unless the file says).
		interval, ok := f.ArchUint("full_attention_interval")
		if !ok || interval == 0 {
			interval = 4
		}
		attn = (int64(layers) + int64(interval) - 1) / int64(interval)
	}
	kv := attn * int64(nCtx) * int64(heads) * int64(dim) * 2 * 2
	return kv + recurrentEstimate(f, int64(layers))
}

// recurrentEstimate is an upper bound of the recurrent state of hybrid
// models (qwen3next): every layer's DeltaNet state and convolution window,
// live and in each rollback checkpoint.
func recurrentEstimate(f *gguf.File, layers int64) int64 {
	state, ok := f.ArchUint("ssm.state_size")
	if !ok {
		return 0
	}
	vheads, _ := f.ArchUint("ssm.time_step_rank")
	groups, _ := f.ArchUint("ssm.group_count")
	taps, _ := f.ArchUint("ssm.conv_kernel")
	if state > 1024 || vheads > 1024 || groups > 1024 || taps > 64 {
		return 0 // out of range: opening the model refuses it
	}
	conv := (2*groups + vheads) * state * max(taps, 1) // ≥ (taps-1) channels' window
	per := 4 * int64(vheads*state*state+conv)
	return layers * per * (qwen3next.Checkpoints + 1)
}

// planMemory decides how to hold f: in memory when it fits half of RAM
// and streaming is not forced, streaming when the model does not fit
// what this process may use (or when forced), else mapped. A model whose
// dense part does not fit is refused here, before anything is allocated.
func planMemory(f *gguf.File, opts Options, nCtx int, usable, total uint64) (memoryPlan, error) {
	exp := expertBytes(f)
	p := memoryPlan{dense: f.Size - exp, usable: usable}
	kv := kvEstimate(f, nCtx)
	margin := int64(marginBytes)
	if usable > 0 {
		margin = min(margin, int64(usable/8))
	}
	fits := usable == 0 || f.Size+kv+margin <= int64(usable)
	switch {
	case exp > 0 && (opts.Streaming == StreamAlways || (opts.Streaming == StreamAuto && !fits)):
		p.mode = modeStream
		p.dense -= lazyBytes(f) // streamed with the experts, row by row
		left := int64(usable) - p.dense - kv - margin
		if usable > 0 && left <= 0 {
			return p, fmt.Errorf("the model's dense part (%s) and KV cache (%s) need more than the %s of memory this process may use",
				gib(p.dense), gib(kv), gib(int64(usable)))
		}
		p.arena = opts.ExpertCache
		if p.arena <= 0 {
			p.arena = left
			if usable == 0 {
				p.arena = exp / 4
			}
		}
		p.arena = min(p.arena, exp)
	case total > 0 && uint64(f.Size) <= total/2 && fits:
		p.mode = modeInMemory
	default:
		p.mode = modeMapped
	}
	return p, nil
}

func gib(n int64) string { return fmt.Sprintf("%.2f GB", float64(n)/1e9) }

// openFile maps path, plans how to hold it for its context length, and
// reads it into memory if the plan says so, telling progress (when not
// nil) the bytes read and the file's size.
func openFile(ctx context.Context, path string, opts Options, progress func(done, total int64)) (*gguf.File, memoryPlan, int, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, memoryPlan{}, 0, err
	}
	nctx := contextFor(f, opts)
	plan, err := planMemory(f, opts, nctx, sysmem.Usable(), sysmem.Total())
	if err != nil {
		f.Close()
		return nil, plan, 0, fmt.Errorf("load %s: %w", path, err)
	}
	switch plan.mode {
	case modeMapped:
		return f, plan, nctx, nil
	case modeStream:
		// The dense part in the process's own memory: mapped, the kernel
		// would drop and re-read it under the very pressure streaming is
		// for (and a cgroup limit charges it as page cache either way).
		if _, err := f.Pin(ctx, func(t *gguf.TensorInfo) bool { return !streamed(t) && !lazy(f, t) }); err != nil {
			f.Close()
			return nil, plan, 0, fmt.Errorf("load %s: %w", path, err)
		}
		return f, plan, nctx, nil
	}
	total := f.Size
	f.Close()
	var done int64
	var read func(int64)
	if progress != nil {
		progress(0, total)
		read = func(n int64) { done += n; progress(min(done, total), total) }
	}
	f, err = gguf.LoadProgress(ctx, path, read)
	return f, plan, nctx, err
}

// contextFor is the session length: the option, else the model's trained
// context up to 4096.
func contextFor(f *gguf.File, opts Options) int {
	if opts.ContextLength > 0 {
		return opts.ContextLength
	}
	if n, ok := f.ArchUint("context_length"); ok && n > 0 {
		return int(min(n, 4096))
	}
	return 4096
}

// newStream returns the expert-provider factory of a streaming plan and a
// pointer that receives the provider when the model makes it. A backend
// whose device reads host memory in place allocates the arena, so that
// its kernels use the experts where they were read (no copy per layer).
func newStream(f *gguf.File, plan memoryPlan, readers int, be backend.Backend) (func(*model.ExpertLayout) (model.ExpertProvider, error), **experts.Stream) {
	var s *experts.Stream
	o := experts.StreamOptions{Budget: plan.arena, Readers: readers}
	if ha, ok := be.(backend.HostAllocator); ok {
		o.Alloc = ha.AllocHost
	}
	return func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		st, err := experts.NewStream(f, l, o)
		if err != nil {
			return nil, err
		}
		s = st
		return st, nil
	}, &s
}
