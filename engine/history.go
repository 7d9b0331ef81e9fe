package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
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

// modelIdentity is f's identity: the hash of its header and tensor table.
func modelIdentity(f *gguf.File) (usage.Identity, int, int, error) {
	layers, _ := f.ArchUint("block_count")
	ne, _ := f.ArchUint("expert_count")
	id, err := usage.IdentityOf(f.Name, f.DataOffset)
	return id, int(layers), int(ne), err
}

// openHistory reads f's history from dir. A history of another model or a
// damaged file is set aside with a log line and an empty one begins: it is
// never trusted, and never fails the load.
func openHistory(f *gguf.File, dir string, log *slog.Logger) (*history, error) {
	id, layers, ne, err := modelIdentity(f)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("usage history: %w", err)
	}
	path := historyPath(dir, id)
	h, err := usage.Load(path, id, layers, ne)
	if err != nil {
		aside := path + ".bad-" + time.Now().UTC().Format("20060102T150405")
		log.Warn("usage history ignored", "file", path, "err", err, "set_aside", aside)
		if errors.Is(err, usage.ErrCorrupt) || errors.Is(err, usage.ErrMismatch) {
			os.Rename(path, aside)
		}
		h = usage.New(id, layers, ne)
	}
	return &history{h: h, path: path, log: log}, nil
}

// openProfile returns the first static usage profile for f found in dirs
// (named like a history: strata dev profile writes them), or nil. A
// profile that does not match f or is damaged is skipped with a log line
// (and left in place: a shipped profile may be read-only).
func openProfile(f *gguf.File, dirs []string, shipped fs.FS, log *slog.Logger) *usage.History {
	if len(dirs) == 0 && shipped == nil {
		return nil
	}
	id, layers, ne, err := modelIdentity(f)
	if err != nil {
		log.Warn("usage profile not read", "err", err)
		return nil
	}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		path := historyPath(dir, id)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		p, err := usage.Load(path, id, layers, ne)
		if err != nil {
			log.Warn("usage profile ignored", "file", path, "err", err)
			continue
		}
		return p
	}
	if shipped == nil {
		return nil
	}
	name := filepath.Base(historyPath("", id))
	data, err := fs.ReadFile(shipped, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("shipped usage profile not read", "file", name, "err", err)
		}
		return nil
	}
	p, err := usage.Parse(data, id, layers, ne)
	if err != nil {
		log.Warn("shipped usage profile ignored", "file", name, "err", err)
		return nil
	}
	return p
}

// warmOrder lists the experts to warm, hottest first, by the history (nil
// when none is kept) blended with the static profile (nil when none).
func warmOrder(h *history, profile *usage.History) [][2]int {
	b := usage.Blend{Profile: profile}
	if h != nil {
		b.History = h.h
	}
	hot := b.Hottest()
	out := make([][2]int, len(hot))
	for i, e := range hot {
		out[i] = [2]int{e.Layer, e.Expert}
	}
	return out
}

// endTurn weighs the turn's tokens in, decays, saves, and lets the cache
// swap its coldest experts for the hottest missing ones (by the history
// blended with the profile).
func (h *history) endTurn(tokens int, s *experts.Stream, profile *usage.History) {
	h.h.Tokens += float64(tokens)
	h.h.EndTurn(0)
	h.save()
	score := usage.Blend{History: h.h, Profile: profile}.Scorer()
	if n := s.Rebalance(score, rebalanceSwaps); n > 0 {
		h.log.Debug("expert cache rebalanced from the usage history", "swaps", n)
	}
}

func (h *history) save() {
	if err := h.h.Save(h.path); err != nil {
		h.log.Warn("usage history not saved", "err", err)
	}
}

// ForgetHistory deletes what the engine learned about expert usage: with
// all, every history in dir (and the loaded model's counts in memory);
// without, only the loaded model's (ErrNoModel when none is loaded). It
// waits for a running generation to finish, so a history is never
// forgotten halfway through a turn that then saves it again.
func (e *Engine) ForgetHistory(dir string, all bool) error {
	if err := e.acquire(context.Background()); err != nil {
		return err
	}
	defer e.release()
	e.mu.Lock()
	lm := e.lm
	e.mu.Unlock()
	if !all && lm == nil {
		return ErrNoModel
	}
	var files []string
	if lm != nil && lm.hist != nil {
		h := lm.hist.h
		*h = *usage.New(h.ID, h.Layers, h.Experts)
		files = append(files, lm.hist.path)
	}
	if dir != "" {
		if all {
			more, _ := filepath.Glob(filepath.Join(dir, "*.usage"))
			files = append(files, more...)
		} else if id, _, _, err := modelIdentity(lm.file); err == nil {
			files = append(files, historyPath(dir, id)) // kept while learning was on
		}
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("forget the usage history: %w", err)
		}
	}
	e.log.Info("usage history forgotten", "all", all, "files", len(files))
	return nil
}
