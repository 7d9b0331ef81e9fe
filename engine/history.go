package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/usage"
)

// rebalanceSwaps is how many experts a pass between turns may swap.
const rebalanceSwaps = 4

// history is a streamed model's usage history and its file.
type history struct {
	h    *usage.History
	path string
	log  *slog.Logger
}

// historyPath is where the history of the model with identity id lives.
func historyPath(dir string, id usage.Identity) string {
	return filepath.Join(dir, hex.EncodeToString(id[:12])+".usage")
}

// openHistory reads f's history from dir. A history of another model or a
// damaged file is set aside with a log line and an empty one begins: it is
// never trusted, and never fails the load.
func openHistory(f *gguf.File, dir string, log *slog.Logger) (*history, error) {
	layers, _ := f.ArchUint("block_count")
	ne, _ := f.ArchUint("expert_count")
	id, err := usage.IdentityOf(f.Name, f.DataOffset)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("usage history: %w", err)
	}
	path := historyPath(dir, id)
	h, err := usage.Load(path, id, int(layers), int(ne))
	if err != nil {
		aside := path + ".bad-" + time.Now().UTC().Format("20060102T150405")
		log.Warn("usage history ignored", "file", path, "err", err, "set_aside", aside)
		if errors.Is(err, usage.ErrCorrupt) || errors.Is(err, usage.ErrMismatch) {
			os.Rename(path, aside)
		}
		h = usage.New(id, int(layers), int(ne))
	}
	return &history{h: h, path: path, log: log}, nil
}

// order lists the experts to warm, hottest first.
func (h *history) order() [][2]int {
	hot := h.h.Hottest()
	out := make([][2]int, len(hot))
	for i, e := range hot {
		out[i] = [2]int{e.Layer, e.Expert}
	}
	return out
}

// endTurn weighs the turn's tokens in, decays, saves, and lets the cache
// swap its coldest experts for the hottest missing ones.
func (h *history) endTurn(tokens int, s *experts.Stream) {
	h.h.Tokens += float64(tokens)
	h.h.EndTurn(0)
	h.save()
	if n := s.Rebalance(h.h.Count, rebalanceSwaps); n > 0 {
		h.log.Debug("expert cache rebalanced from the usage history", "swaps", n)
	}
}

func (h *history) save() {
	if err := h.h.Save(h.path); err != nil {
		h.log.Warn("usage history not saved", "err", err)
	}
}

// ForgetHistory deletes the usage history of the loaded model (and its
// counts in memory) and of every model in dir.
func (e *Engine) ForgetHistory(dir string) error {
	if err := e.acquire(context.Background()); err != nil {
		return err
	}
	defer e.release()
	e.mu.Lock()
	lm := e.lm
	e.mu.Unlock()
	if lm != nil && lm.hist != nil {
		h := lm.hist.h
		*h = *usage.New(h.ID, h.Layers, h.Experts)
	}
	if dir == "" {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.usage"))
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
