package engine

import (
	"os"
	"sync/atomic"
	"time"

	"github.com/strata-llm/strata/engine/gguf"
)

// keepWarmEvery is how often the memory of a loaded model is touched (a
// byte of every page) while no request runs, so that a request after a
// long idle does not pay more for its first pass over the weights than
// one right after another.
//
// Measured on the project's VM (Firecracker, AMD EPYC Zen 4, 2 vCPUs): a
// pass reading a byte of every 4 KiB page of 1.3 GB took 5–7 ms right
// after the previous pass but 14–93 ms after 60 s of idle (three rounds);
// with a pass every 5 s during those 60 s the pass after them took
// 7.2–7.7 ms. strata bench --ttft-idle 60s (4-layer A3B-shaped Q5_K_M
// qwen3moe, 64-token prompt, 2 threads): without the keeper, ratios 1.33
// (3 rounds; one round 2.62) and 1.00 (5 rounds; one 1.36) of the warm
// time to first token; with it 1.12, 1.03 and 1.01 (3, 5 and 5 rounds;
// worst round 1.13): the penalty comes and goes, the keeper removes its
// tail. Laptops have their own reasons to lose idle pages' speed (macOS
// compresses the memory of apps that sit idle). A pass costs about
// 4 ns per page once warm: 0.1 % of one core for a 1.3 GB model and ~1.5 %
// for a 20 GB one, only while the model is loaded (the keep-alive) and
// nothing runs.
const keepWarmEvery = 5 * time.Second

// keepWarmCheck is how many pages a pass touches between looks at the
// engine's turn: a request that starts mid-pass waits at most for these.
const keepWarmCheck = 512

// keeper touches a loaded model's memory every keepWarmEvery while the
// engine's turn is free (see keepWarmEvery). The zero value is not used;
// startKeeper makes one and stop ends it.
type keeper struct {
	regions [][]byte      // the memory kept warm
	turn    chan struct{} // the engine's turn: held by every request, load and unload
	every   time.Duration
	page    int
	stopc   chan struct{}
	done    chan struct{}
	passes  atomic.Int64 // completed passes
	sink    atomic.Uint32
}

// warmRegions is the memory a loaded model computes from: the whole file
// when it was read into memory; the pinned dense tensors and the expert
// arena when experts stream. A mapped model (page cache) is left to the
// kernel: touching it could read evicted pages back from the disk.
func warmRegions(f *gguf.File, mode memoryMode, arena []byte) [][]byte {
	switch mode {
	case modeInMemory:
		return f.Mappings()
	case modeStream:
		var out [][]byte
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if streamed(t) || lazy(f, t) || t.Size == 0 {
				continue
			}
			if b := f.Data(t); len(b) > 0 {
				out = append(out, b)
			}
		}
		if len(arena) > 0 {
			out = append(out, arena)
		}
		return out
	}
	return nil
}

// startKeeper starts keeping regions warm; nil when there is nothing to
// keep.
func startKeeper(regions [][]byte, turn chan struct{}, every time.Duration) *keeper {
	if len(regions) == 0 || every <= 0 {
		return nil
	}
	k := &keeper{regions: regions, turn: turn, every: every, page: os.Getpagesize(),
		stopc: make(chan struct{}), done: make(chan struct{})}
	go k.run()
	return k
}

func (k *keeper) run() {
	defer close(k.done)
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		select {
		case <-k.stopc:
			return
		case <-t.C:
		}
		if k.busy() {
			continue
		}
		if k.pass() {
			k.passes.Add(1)
		}
	}
}

// busy reports whether a request (or a load or unload) holds the turn.
func (k *keeper) busy() bool { return len(k.turn) > 0 }

// pass touches a byte of every page of the regions, giving up when the
// turn is taken or the keeper stopped; it reports whether it finished.
func (k *keeper) pass() bool {
	var acc byte
	n := 0
	for _, r := range k.regions {
		for off := 0; off < len(r); off += k.page {
			acc += r[off]
			if n++; n%keepWarmCheck == 0 {
				select {
				case <-k.stopc:
					return false
				default:
				}
				if k.busy() {
					return false
				}
			}
		}
	}
	k.sink.Add(uint32(acc))
	return true
}

// stop ends the keeper and waits for it (before the memory is freed); nil
// is a no-op.
func (k *keeper) stop() {
	if k == nil {
		return
	}
	close(k.stopc)
	<-k.done
}
