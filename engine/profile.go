package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-llm/strata/engine/usage"
)

// ProfileOptions configure BuildProfile.
type ProfileOptions struct {
	Options
	// Texts are the corpus, each tokenized as a raw prompt and forwarded
	// in chunks the context holds.
	Texts []string
	// Progress, if set, is told the tokens forwarded so far and in all.
	Progress func(done, total int)
}

// BuildProfile runs a corpus through the model at path and returns its
// static usage profile: per (layer, expert) how many of the corpus's
// tokens selected the expert, undecayed, with Tokens the corpus's token
// count, in the history's format and keyed by the model's identity (save
// it under a ProfileDirs folder as ProfilePath names it). The counts are
// the router's choices with exact routing, whatever Options.Routing says.
func BuildProfile(ctx context.Context, path string, po ProfileOptions) (*usage.History, error) {
	o := po.Options
	o.HistoryDir, o.ProfileDirs = "", nil
	o.record = true
	e := New(o)
	defer e.Close()
	if err := e.Load(ctx, path); err != nil {
		return nil, err
	}
	lm, err := e.acquireModel(ctx)
	if err != nil {
		return nil, err
	}
	defer e.release()
	chunk := lm.sess.Cap() - 1
	var chunks [][]int32
	total := 0
	for _, t := range po.Texts {
		ids := lm.tok.Encode(t, true, true)
		for len(ids) > 0 {
			n := min(len(ids), chunk)
			chunks = append(chunks, ids[:n])
			total += n
			ids = ids[n:]
		}
	}
	if total == 0 {
		return nil, errors.New("profile: the corpus has no tokens")
	}
	done := 0
	for _, c := range chunks {
		if err := lm.sess.Truncate(0); err != nil {
			return nil, err
		}
		lm.batch.Tokens, lm.batch.Logits = c, make([]bool, len(c)) // no logits: only the routers' choices count
		if err := lm.sess.Forward(ctx, &lm.batch); err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		done += len(c)
		lm.rec.Tokens = float64(done)
		if po.Progress != nil {
			po.Progress(done, total)
		}
	}
	return lm.rec, nil
}

// ProfilePath is where a static profile (or history) of the model with
// identity id lives in dir.
func ProfilePath(dir string, id usage.Identity) string { return historyPath(dir, id) }
