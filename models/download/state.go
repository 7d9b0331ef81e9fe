package download

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

const stateVersion = 1

// state is the persisted progress of one download, in "<dest>.partial.json".
// Every Next it records was fsynced to the partial file before the state was
// written, so it never claims bytes that are not on disk.
type state struct {
	Version int         `json:"version"`
	URL     string      `json:"url"`
	Size    int64       `json:"size"` // -1 when unknown
	ETag    string      `json:"etag,omitempty"`
	Ranged  bool        `json:"ranged"`
	Parts   []statePart `json:"parts"`
	Hash    *hashState  `json:"hash,omitempty"`
}

type statePart struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"` // exclusive; -1 when the size is unknown
	Next  int64 `json:"next"`
}

// hashState is the marshalled SHA-256 state of a single stream after
// Offset bytes.
type hashState struct {
	Offset int64  `json:"offset"`
	State  []byte `json:"state"`
}

func loadState(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("download state %s: %w", path, err)
	}
	if err := st.check(); err != nil {
		return nil, fmt.Errorf("download state %s: %w", path, err)
	}
	return &st, nil
}

// check rejects states that are inconsistent, whatever wrote them.
func (st *state) check() error {
	if st.Version != stateVersion {
		return fmt.Errorf("version %d, want %d", st.Version, stateVersion)
	}
	if len(st.Parts) == 0 || st.Size < -1 {
		return errors.New("no parts")
	}
	if st.Size < 0 && len(st.Parts) != 1 {
		return errors.New("unknown size with several parts")
	}
	var at int64
	for i, p := range st.Parts {
		if p.Start != at || p.Next < p.Start {
			return fmt.Errorf("part %d out of order", i)
		}
		if st.Size >= 0 && (p.End < p.Start || p.Next > p.End) {
			return fmt.Errorf("part %d out of range", i)
		}
		at = p.End
	}
	if st.Size >= 0 && at != st.Size {
		return errors.New("parts do not cover the file")
	}
	return nil
}

func (st *state) compatible(url string, size int64, etag string) bool {
	if st.URL != url {
		return false
	}
	if size >= 0 && st.Size >= 0 && size != st.Size {
		return false
	}
	if etag != "" && st.ETag != "" && etag != st.ETag {
		return false
	}
	return true
}

func (st *state) done() int64 {
	var n int64
	for _, p := range st.Parts {
		n += p.Next - p.Start
	}
	return n
}

// write replaces the state file atomically (temp file, fsync, rename). The
// directory is not fsynced: if the rename is lost, the older state is still
// true, only less advanced.
func (st *state) write(path string) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("download state: %w", err)
	}
	tmp := path + ".tmp"
	if err := writeSync(tmp, b); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("download state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("download state: %w", err)
	}
	return nil
}

func writeSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
