package models

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/models/download"
)

// Options configure a Manager. The zero value is usable.
type Options struct {
	// Catalog lists the downloadable models (nil: the embedded catalog).
	Catalog []CatalogEntry
	// Client makes all requests (nil: download.DefaultClient()).
	Client *http.Client
	// HubURL is the Hugging Face endpoint (default https://huggingface.co).
	HubURL string
	// Download tunes the downloader; its Client is replaced by Client.
	Download download.Options
	// Validate checks a finished model given its first (or only) file,
	// with all the parts of a split model (nil: the strict validator,
	// gguf.Open, which reads every part).
	Validate func(path string) error
	// Supports says whether this Strata can run an architecture (GGUF
	// general.architecture); nil: engine.Supports. Catalog entries of
	// other architectures are listed as needing a newer Strata and are
	// not downloaded.
	Supports func(arch string) bool
	Log      *slog.Logger
}

// State is where a model stands.
type State string

// The states of an [Entry].
const (
	StateAvailable   State = "available"   // in the catalog, not downloaded
	StateDownloading State = "downloading" // a pull is running (or verifying)
	StatePaused      State = "paused"      // a pull was started and is not running
	StateFailed      State = "failed"      // the last pull failed (Error says why)
	StateInstalled   State = "installed"
)

// Phase is the stage of a pull, reported in [Event]s.
type Phase string

// The phases of a pull.
const (
	PhaseStarting    Phase = "starting"
	PhaseDownloading Phase = "downloading"
	PhaseVerifying   Phase = "verifying" // hashing, then validating the GGUF
	PhaseDone        Phase = "done"
	PhasePaused      Phase = "paused"
	PhaseCancelled   Phase = "cancelled"
	PhaseFailed      Phase = "failed"
)

// Terminal reports whether no more events follow this phase for this pull.
func (p Phase) Terminal() bool {
	return p == PhaseDone || p == PhasePaused || p == PhaseCancelled || p == PhaseFailed
}

// Event is the progress of one pull. Done and Total cover all its files.
type Event struct {
	Name       string  `json:"name"`
	Phase      Phase   `json:"phase"`
	File       string  `json:"file,omitempty"`
	Done       int64   `json:"bytes_done"`
	Total      int64   `json:"bytes_total"` // 0: unknown
	Rate       float64 `json:"rate"`        // bytes per second
	ETASeconds float64 `json:"eta_seconds"` // 0: unknown
	Verified   bool    `json:"verified,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// Entry is one model as the UI lists it: a catalog entry, an installed
// model, or both.
type Entry struct {
	Name        string `json:"name"`
	Display     string `json:"display"`
	Description string `json:"description,omitempty"`
	Family      string `json:"family,omitempty"`
	Arch        string `json:"arch,omitempty"`
	Quant       string `json:"quant,omitempty"`
	Source      Source `json:"source"`
	InCatalog   bool   `json:"in_catalog"`
	Unchecked   bool   `json:"unchecked,omitempty"` // catalog entry not checked against its hub
	// NeedsNewer: this Strata cannot run the model's architecture (a later
	// version may); such catalog entries are not downloaded.
	NeedsNewer bool `json:"needs_newer_strata,omitempty"`
	// Size is the exact size in bytes (installed: on disk), 0 when
	// unknown; ApproxSize an estimate for display then.
	Size           int64     `json:"size"`
	ApproxSize     int64     `json:"approx_size,omitempty"`
	RAMRecommended uint64    `json:"ram_recommended,omitempty"`
	RAMMin         uint64    `json:"ram_min,omitempty"`
	State          State     `json:"state"`
	Verified       bool      `json:"verified"`
	VerifiedAt     time.Time `json:"verified_at,omitzero"`
	Path           string    `json:"path,omitempty"`     // installed: the GGUF to load
	Progress       *Event    `json:"progress,omitempty"` // running or paused pull
	Error          string    `json:"error,omitempty"`
}

// Errors of the Manager. Use errors.Is.
var (
	ErrNotInstalled = errors.New("model not installed")
	ErrInstalled    = errors.New("model already installed")
	ErrNoPull       = errors.New("no such download")
	ErrPaused       = errors.New("download paused")
	ErrCancelled    = errors.New("download cancelled")
	ErrClosed       = errors.New("model manager closed")
	ErrInvalidGGUF  = errors.New("downloaded file is not a valid GGUF model")
	ErrNeedsNewer   = errors.New("needs a newer Strata")
)

// Manager owns the model store folder. Its methods are safe for concurrent
// use.
type Manager struct {
	dir     string
	opts    Options
	catalog []CatalogEntry
	log     *slog.Logger

	ctx  context.Context // the manager's lifetime
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex
	pulls map[string]*task
	subs  map[*subscriber]struct{}
}

type task struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	last   Event
	err    error
}

// NewManager opens (creating if needed) the store in dir.
func NewManager(dir string, opts Options) (*Manager, error) {
	if opts.Catalog == nil {
		cat, err := DefaultCatalog()
		if err != nil {
			return nil, err
		}
		opts.Catalog = cat
	}
	if opts.Client == nil {
		opts.Client = download.DefaultClient()
	}
	if opts.HubURL == "" {
		opts.HubURL = "https://huggingface.co"
	}
	if opts.Validate == nil {
		opts.Validate = validateGGUF
	}
	if opts.Supports == nil {
		opts.Supports = engine.Supports
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	opts.Download.Client = opts.Client
	if opts.Download.Log == nil {
		opts.Download.Log = opts.Log
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("models dir %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("models dir: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	m := &Manager{dir: abs, opts: opts, catalog: opts.Catalog, log: opts.Log, ctx: ctx, stop: stop,
		pulls: map[string]*task{}, subs: map[*subscriber]struct{}{}}
	m.tidy()
	return m, nil
}

// validateGGUF is the default validator: the strict GGUF reader, which
// opens every part of a split model. A file named as the first of N parts
// must be a split model of N parts.
func validateGGUF(path string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if m := splitRe.FindStringSubmatch(filepath.Base(path)); m != nil {
		n, _ := strconv.Atoi(m[3])
		if got := len(f.SplitParts()); n > 1 && got != n {
			return fmt.Errorf("%s is named as part 1 of %d, but the model it starts has %d part(s)", filepath.Base(path), n, got)
		}
	}
	return nil
}

// tidy removes leftovers of interrupted writes: temp files, and pull
// records of models whose manifest was written.
func (m *Manager) tidy() {
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		m.log.Warn("read models dir", "err", err)
		return
	}
	for _, e := range ents {
		if !e.IsDir() || ValidateName(e.Name()) != nil {
			continue
		}
		folder := filepath.Join(m.dir, e.Name())
		tmps, _ := filepath.Glob(filepath.Join(folder, ".*.tmp*"))
		for _, t := range tmps {
			os.Remove(t)
		}
		if _, err := os.Stat(filepath.Join(folder, manifestFile)); err == nil {
			removeSync(folder, pullFile)
		}
	}
}

// Dir is the store folder.
func (m *Manager) Dir() string { return m.dir }

// Catalog returns the catalog entries.
func (m *Manager) Catalog() []CatalogEntry { return slices.Clone(m.catalog) }

// Close pauses every running pull (their progress is kept) and waits for
// them to stop.
func (m *Manager) Close() error {
	m.stop()
	m.wg.Wait()
	return nil
}

func (m *Manager) folder(name string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	return filepath.Join(m.dir, name), nil
}

// Path returns the GGUF file the engine should load for an installed model
// (the first shard of a split model).
func (m *Manager) Path(name string) (string, error) {
	folder, err := m.folder(name)
	if err != nil {
		return "", err
	}
	man, err := readManifest(folder, name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w: %s", ErrNotInstalled, name)
		}
		return "", err
	}
	return filepath.Join(folder, man.Files[0].Name), nil
}

// Manifest returns the manifest of an installed model.
func (m *Manager) Manifest(name string) (*Manifest, error) {
	folder, err := m.folder(name)
	if err != nil {
		return nil, err
	}
	man, err := readManifest(folder, name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotInstalled, name)
	}
	return man, err
}

// List returns the catalog and the store: every catalog entry (in catalog
// order) with its state, then other installed or pulled models by name.
func (m *Manager) List() []Entry {
	byName := map[string]*Entry{}
	var out []*Entry
	for _, c := range m.catalog {
		e := &Entry{Name: c.Name, Display: c.Display, Description: c.Description, Family: c.Family,
			Arch: c.Arch, Quant: c.Quant, InCatalog: true, Unchecked: c.Unchecked, Size: c.SizeBytes,
			ApproxSize: c.ApproxSizeBytes, RAMRecommended: c.RAMRecommended, RAMMin: c.RAMMin, State: StateAvailable,
			Source: Source{Kind: "catalog", Ref: c.Name}, NeedsNewer: !m.opts.Supports(c.Arch)}
		if c.HF != nil {
			e.Source.Repo, e.Source.Revision = c.HF.Repo, c.HF.Revision
		}
		byName[c.Name] = e
		out = append(out, e)
	}
	var extra []*Entry
	get := func(name string) *Entry {
		if e, ok := byName[name]; ok {
			return e
		}
		e := &Entry{Name: name, Display: name, State: StateAvailable}
		byName[name] = e
		extra = append(extra, e)
		return e
	}
	ents, _ := os.ReadDir(m.dir)
	for _, d := range ents {
		name := d.Name()
		if !d.IsDir() || ValidateName(name) != nil {
			continue
		}
		folder := filepath.Join(m.dir, name)
		if man, err := readManifest(folder, name); err == nil {
			e := get(name)
			e.State = StateInstalled
			e.Display, e.Arch, e.Quant, e.Source = cmp.Or(man.Display, e.Display), cmp.Or(man.Arch, e.Arch), cmp.Or(man.Quant, e.Quant), man.Source
			e.NeedsNewer = e.Arch != "" && !m.opts.Supports(e.Arch)
			e.Verified, e.VerifiedAt = man.Verified, man.VerifiedAt
			e.Path = filepath.Join(folder, man.Files[0].Name)
			e.Size = 0
			for _, f := range man.Files {
				e.Size += f.Size
			}
			continue
		}
		if p, err := readPlan(folder, name); err == nil {
			e := get(name)
			e.State = StatePaused
			e.Display, e.Source = cmp.Or(p.Display, e.Display), p.Source
			e.Arch, e.Quant = cmp.Or(e.Arch, p.Arch), cmp.Or(e.Quant, p.Quant)
			if p.LastError != "" {
				e.State, e.Error = StateFailed, p.LastError
			}
			ev := planProgress(folder, p)
			ev.Phase = PhasePaused
			if e.State == StateFailed {
				ev.Phase = PhaseFailed
			}
			e.Progress = &ev
			if e.Size == 0 && ev.Total > 0 {
				e.Size = ev.Total
			}
		}
	}
	m.mu.Lock()
	for name, t := range m.pulls {
		e := get(name)
		ev := t.last
		select {
		case <-t.done:
			continue // finished: the disk state above is current
		default:
		}
		e.State = StateDownloading
		e.Progress = &ev
		e.Error = ""
	}
	m.mu.Unlock()
	slices.SortFunc(extra, func(a, b *Entry) int { return strings.Compare(a.Name, b.Name) })
	res := make([]Entry, 0, len(out)+len(extra))
	for _, e := range append(out, extra...) {
		res = append(res, *e)
	}
	return res
}

// planProgress reports how far an unfinished pull got, from the disk.
func planProgress(folder string, p *plan) Event {
	ev := Event{Name: p.Name}
	known := true
	for _, f := range p.Files {
		dest := filepath.Join(folder, f.Name)
		if f.Done {
			ev.Done += f.Size
			ev.Total += f.Size
			continue
		}
		done, total, ok := download.Pending(dest)
		if ok {
			ev.Done += done
		}
		switch {
		case f.Size > 0:
			ev.Total += f.Size
		case ok && total > 0:
			ev.Total += total
		default:
			known = false
		}
	}
	if !known {
		ev.Total = 0
	}
	return ev
}

// Pull starts downloading a model in the background and returns its name
// (the handle for Pause, Resume, Cancel, Wait and events). ref is a
// catalog name, a Hugging Face "owner/repo[@revision]/path/file.gguf"
// (or "hf://…" or its https://huggingface.co/… URL), or an https URL.
// Pulling a model that is already being pulled returns its name; one that
// is installed returns ErrInstalled.
func (m *Manager) Pull(ctx context.Context, ref string) (string, error) {
	p, err := resolve(m.catalog, m.opts.HubURL, ref)
	if err != nil {
		return "", fmt.Errorf("pull: %w", err)
	}
	folder, err := m.folder(p.Name)
	if err != nil {
		return "", fmt.Errorf("pull: %w", err)
	}
	if _, err := os.Stat(filepath.Join(folder, manifestFile)); err == nil {
		return p.Name, fmt.Errorf("pull %s: %w", p.Name, ErrInstalled)
	}
	// Keep what an earlier attempt of the same files learned.
	if old, err := readPlan(folder, p.Name); err == nil && samePlanFiles(old, &p) {
		p.Files = old.Files
		p.Source.Commit = old.Source.Commit
	}
	return p.Name, m.start(ctx, p)
}

func samePlanFiles(a, b *plan) bool {
	return slices.EqualFunc(a.Files, b.Files, func(x, y plannedFile) bool {
		return x.Name == y.Name && x.URL == y.URL && (y.SHA256 == "" || x.SHA256 == y.SHA256)
	})
}

// Resume restarts a paused or failed pull (also one from before a restart).
func (m *Manager) Resume(ctx context.Context, name string) error {
	folder, err := m.folder(name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	t, running := m.pulls[name]
	m.mu.Unlock()
	if running {
		select {
		case <-t.done:
		default:
			return nil
		}
	}
	p, err := readPlan(folder, name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("resume %s: %w", name, ErrNoPull)
		}
		return fmt.Errorf("resume %s: %w", name, err)
	}
	return m.start(ctx, *p)
}

func (m *Manager) start(_ context.Context, p plan) error {
	folder := filepath.Join(m.dir, p.Name)
	if p.Arch != "" && !m.opts.Supports(p.Arch) {
		return fmt.Errorf("pull %s: %w: this version cannot run %s models yet, so the download would be of no use", p.Name, ErrNeedsNewer, p.Arch)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ctx.Err(); err != nil {
		return ErrClosed
	}
	if t, ok := m.pulls[p.Name]; ok {
		select {
		case <-t.done:
		default:
			return nil // already running
		}
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return fmt.Errorf("pull %s: %w", p.Name, err)
	}
	p.LastError = ""
	if err := writeJSONAtomic(folder, pullFile, &p); err != nil {
		return fmt.Errorf("pull %s: %w", p.Name, err)
	}
	ctx, cancel := context.WithCancelCause(m.ctx)
	t := &task{cancel: cancel, done: make(chan struct{}), last: Event{Name: p.Name, Phase: PhaseStarting}}
	m.pulls[p.Name] = t
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel(nil)
		err := m.run(ctx, t, &p)
		ev := t.lastCopy(m)
		ev.Rate, ev.ETASeconds = 0, 0
		switch {
		case err == nil:
			ev.Phase = PhaseDone
		case errors.Is(err, ErrCancelled):
			ev.Phase = PhaseCancelled
		case errors.Is(err, ErrPaused) || m.ctx.Err() != nil:
			ev.Phase = PhasePaused
			if m.ctx.Err() != nil && !errors.Is(err, ErrPaused) {
				err = ErrPaused
			}
		default:
			ev.Phase = PhaseFailed
			ev.Error = err.Error()
			p.LastError = err.Error()
			if werr := writeJSONAtomic(folder, pullFile, &p); werr != nil {
				m.log.Warn("record failed pull", "name", p.Name, "err", werr)
			}
		}
		m.mu.Lock()
		t.err = err
		t.last = ev
		close(t.done)
		m.mu.Unlock()
		if err != nil {
			m.log.Info("pull ended", "name", p.Name, "phase", ev.Phase, "err", err)
		}
		m.publish(ev, true)
	}()
	return nil
}

func (t *task) lastCopy(m *Manager) Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return t.last
}

// Wait blocks until the pull of name ends and returns its error (nil when
// installed; ErrPaused or ErrCancelled when stopped so).
func (m *Manager) Wait(ctx context.Context, name string) error {
	m.mu.Lock()
	t, ok := m.pulls[name]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("wait %s: %w", name, ErrNoPull)
	}
	select {
	case <-t.done:
		return t.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Progress returns the latest event of a running or finished pull.
func (m *Manager) Progress(name string) (Event, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.pulls[name]
	if !ok {
		return Event{}, false
	}
	return t.last, true
}

// stopTask cancels a running pull with cause and waits for it; it reports
// whether one was running.
func (m *Manager) stopTask(name string, cause error) bool {
	m.mu.Lock()
	t, ok := m.pulls[name]
	m.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-t.done:
		return false
	default:
	}
	t.cancel(cause)
	<-t.done
	return true
}

// Pause stops a running pull, keeping its progress for Resume.
func (m *Manager) Pause(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if !m.stopTask(name, ErrPaused) {
		return fmt.Errorf("pause %s: %w", name, ErrNoPull)
	}
	return nil
}

// Cancel stops a pull (running or paused) and removes everything it
// downloaded.
func (m *Manager) Cancel(name string) error {
	folder, err := m.folder(name)
	if err != nil {
		return err
	}
	running := m.stopTask(name, ErrCancelled)
	if _, err := os.Stat(filepath.Join(folder, manifestFile)); err == nil {
		if running {
			return nil // it finished before the cancel reached it
		}
		return fmt.Errorf("cancel %s: %w; use delete", name, ErrInstalled)
	}
	if _, err := os.Stat(filepath.Join(folder, pullFile)); err != nil && !running {
		return fmt.Errorf("cancel %s: %w", name, ErrNoPull)
	}
	if err := os.RemoveAll(folder); err != nil {
		return fmt.Errorf("cancel %s: %w", name, err)
	}
	return nil
}

// Delete removes a model: its manifest first (so it stops counting as
// installed at once), then its files. A running pull is cancelled.
func (m *Manager) Delete(name string) error {
	folder, err := m.folder(name)
	if err != nil {
		return err
	}
	m.stopTask(name, ErrCancelled)
	if _, err := os.Stat(folder); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", name, ErrNotInstalled)
	}
	if err := removeSync(folder, manifestFile); err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	if err := os.RemoveAll(folder); err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return download.SyncDir(m.dir)
}

// StoreDir is where the models live inside Strata's data folder
// (dirs.Dirs.Data).
func StoreDir(dataDir string) string { return filepath.Join(dataDir, "models") }
