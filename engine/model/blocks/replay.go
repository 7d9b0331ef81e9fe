package blocks

import (
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/model"
)

// Step runs a session's graph code for a batch at pos0 (run: its ops,
// ending with the head's Sync) through rp: a step recorded under key is
// replayed and the head's outputs pointed at its buffers; else run
// records it. The caller has written the step's
// host inputs (token ids, rope rows) into buffers of its own, the same
// for every step of key, and key says everything else the ops depend on
// (HeadKey among it).
func Step(rp backend.Replayer, key backend.StepKey, pos0 int, head *Head, b *model.Batch, hb *HeadBuf, run func() error) error {
	if ok, err := rp.Replay(key, pos0); ok {
		if err != nil {
			return err
		}
		head.Outputs(b, hb)
		return nil
	}
	done := rp.Record(key, pos0)
	err := run()
	done(err == nil)
	return err
}

// HeadKey identifies the buffers a step's head writes its outputs into
// and the rows it writes (a step replayed must find them where it put
// them: a larger batch reallocates them).
type HeadKey struct {
	logits, hidden *float32
	wantLogits     bool
	wantHidden     bool
}

// Key is the head's part of a one-row step's key.
func (buf *HeadBuf) Key(b *model.Batch) HeadKey {
	return HeadKey{logits: unsafe.SliceData(buf.logits), hidden: unsafe.SliceData(buf.hidden),
		wantLogits: b.WantsLogits(0), wantHidden: b.WantsHidden(0)}
}
