package settings

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// FileName is the settings file's name inside the config folder.
const FileName = "settings.json"

// Store holds the current settings, persists them to one JSON file and
// notifies subscribers of every change. All methods are safe for
// concurrent use.
type Store struct {
	path string

	mu   sync.Mutex // serialises Set; guards cur and subs
	cur  Settings
	subs map[chan Settings]struct{}
}

// Load reads the settings file at path. A missing file gives the defaults.
// A file that cannot be read or is invalid is moved aside to path+".bad",
// the defaults are used, and notice says so in plain words (notice is ""
// otherwise). Load fails only if such a file cannot be moved aside, since
// saving over it would lose it.
func Load(path string) (st *Store, notice string, err error) {
	st = &Store{path: path, cur: Defaults(), subs: map[chan Settings]struct{}{}}
	data, err := readBounded(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, "", nil
	}
	if err == nil {
		var s Settings
		if s, err = Decode(Defaults(), data); err == nil {
			st.cur = s
			return st, "", nil
		}
	}
	bad := path + ".bad"
	if rerr := os.Rename(path, bad); rerr != nil {
		return nil, "", fmt.Errorf("settings file %s is unusable (%v) and could not be moved aside: %w", path, err, rerr)
	}
	notice = fmt.Sprintf("Your settings file could not be used, so the defaults are in effect. The old file was kept as %s. (%v)", bad, err)
	return st, notice, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// Path returns the settings file's path.
func (st *Store) Path() string { return st.path }

// Get returns the current settings.
func (st *Store) Get() Settings {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cur
}

// Set validates s, writes it to the file and makes it current, then
// notifies subscribers. On any error nothing changes.
func (st *Store) Set(s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := writeAtomic(st.path, s); err != nil {
		return err
	}
	st.cur = s
	for ch := range st.subs {
		select { // keep only the newest
		case <-ch:
		default:
		}
		ch <- s
	}
	return nil
}

// Save writes the current settings to the file.
func (st *Store) Save() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return writeAtomic(st.path, st.cur)
}

// Reset makes the defaults current (and saves them).
func (st *Store) Reset() error { return st.Set(Defaults()) }

// Subscribe returns a channel that receives the settings after every
// change (only the newest is kept if the reader is slow) and a function
// that ends the subscription and closes the channel.
func (st *Store) Subscribe() (<-chan Settings, func()) {
	ch := make(chan Settings, 1)
	st.mu.Lock()
	st.subs[ch] = struct{}{}
	st.mu.Unlock()
	return ch, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if _, ok := st.subs[ch]; ok {
			delete(st.subs, ch)
			close(ch)
		}
	}
}

// writeAtomic writes s as indented JSON to a temporary file beside path,
// syncs it and renames it over path, so a crash leaves either the old or
// the new file, never a partial one.
func writeAtomic(path string, s Settings) (err error) {
	data, err := jsonIndent(s)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	f, err := os.CreateTemp(dir, ".settings-*.tmp")
	if err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("save settings %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("save settings %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("save settings %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("save settings %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil { // persist the rename
		d.Sync()
		d.Close()
	}
	return nil
}
