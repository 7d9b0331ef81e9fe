package models_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/internal/testfix"
	"github.com/strata-llm/strata/models"
	"github.com/strata-llm/strata/models/download"
)

func readFixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(testfix.Path(t, testfix.Qwen3MoEQ4_K_M))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}

// splitFixture returns the Q8_0 fixture split into n parts by our
// gguf-split writer, in order.
func splitFixture(t *testing.T, n int) [][]byte {
	t.Helper()
	f, err := gguf.Open(testfix.Path(t, testfix.Qwen3MoEQ8_0))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	per := (len(f.Tensors) + n - 1) / n
	paths, err := gguf.WriteSplit(t.Context(), f, filepath.Join(t.TempDir(), "s"), gguf.SplitOptions{MaxTensors: per})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != n {
		t.Fatalf("split into %d parts, want %d", len(paths), n)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// hub is a fake Hugging Face: files by path, served with Range support,
// X-Linked-Etag when linked is set, optionally throttled.
type hub struct {
	mu       sync.Mutex
	files    map[string][]byte
	linked   bool
	throttle time.Duration // per 256 KiB chunk
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	b, ok := h.files[r.URL.Path]
	linked, throttle := h.linked, h.throttle
	h.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
	if linked {
		w.Header().Set("X-Linked-Etag", `"`+sum(b)+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(b)))
	}
	if throttle > 0 && r.Method == http.MethodGet {
		http.ServeContent(&slowWriter{ResponseWriter: w, d: throttle, ctx: r.Context()}, r, "", time.Time{}, bytes.NewReader(b))
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

type slowWriter struct {
	http.ResponseWriter
	d   time.Duration
	ctx context.Context
}

func (s *slowWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		c := min(len(b), 256<<10)
		select {
		case <-time.After(s.d):
		case <-s.ctx.Done():
			return n, s.ctx.Err()
		}
		k, err := s.ResponseWriter.Write(b[:c])
		n += k
		if err != nil {
			return n, err
		}
		s.ResponseWriter.(http.Flusher).Flush()
		b = b[c:]
	}
	return n, nil
}

func newHub(t *testing.T, files map[string][]byte, linked bool) (*hub, *httptest.Server) {
	h := &hub{files: files, linked: linked}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func newManager(t *testing.T, dir string, srv *httptest.Server, cat []models.CatalogEntry) *models.Manager {
	t.Helper()
	if cat == nil {
		cat = []models.CatalogEntry{}
	}
	m, err := models.NewManager(dir, models.Options{
		Catalog: cat,
		Client:  srv.Client(),
		HubURL:  srv.URL,
		Download: download.Options{
			RetryBase:    time.Millisecond,
			RetryMax:     10 * time.Millisecond,
			SaveInterval: 20 * time.Millisecond,
			MinPartSize:  1 << 20,
			FreeSpace:    func(string) (uint64, error) { return 1 << 40, nil },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func entry(t *testing.T, m *models.Manager, name string) models.Entry {
	t.Helper()
	for _, e := range m.List() {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("%s not listed", name)
	return models.Entry{}
}

// pullAndWait pulls ref and collects its events until a terminal one.
func pullAndWait(t *testing.T, m *models.Manager, ref string) (string, []models.Event, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := m.Subscribe(ctx)
	name, err := m.Pull(t.Context(), ref)
	if err != nil {
		return name, nil, err
	}
	var got []models.Event
	for ev := range events {
		if ev.Name != name {
			continue
		}
		got = append(got, ev)
		if ev.Phase.Terminal() {
			break
		}
	}
	return name, got, m.Wait(t.Context(), name)
}

func TestPullHuggingFace(t *testing.T) {
	data := readFixture(t)
	_, srv := newHub(t, map[string][]byte{"/owner/repo/resolve/main/tiny-qwen3moe-Q4_K_M.gguf": data}, true)
	m := newManager(t, t.TempDir(), srv, nil)
	name, events, err := pullAndWait(t, m, "owner/repo/tiny-qwen3moe-Q4_K_M.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if name != "tiny-qwen3moe-Q4_K_M" {
		t.Errorf("name %q", name)
	}
	last := events[len(events)-1]
	if last.Phase != models.PhaseDone || !last.Verified || last.Done != int64(len(data)) || last.Total != int64(len(data)) {
		t.Errorf("last event %+v", last)
	}
	e := entry(t, m, name)
	if e.State != models.StateInstalled || !e.Verified || e.Size != int64(len(data)) || e.Source.Kind != "hf" {
		t.Errorf("entry %+v", e)
	}
	p, err := m.Path(name)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Error("installed file differs from the served one")
	}
	man, err := m.Manifest(name)
	if err != nil {
		t.Fatal(err)
	}
	if man.Files[0].Expected != sum(data) || man.Files[0].HashSource != "hub" || man.VerifiedAt.IsZero() {
		t.Errorf("manifest %+v", man)
	}
	if _, err := m.Pull(t.Context(), "owner/repo/tiny-qwen3moe-Q4_K_M.gguf"); !errors.Is(err, models.ErrInstalled) {
		t.Errorf("second pull: %v, want ErrInstalled", err)
	}

	// Verify passes, then catches a flipped byte.
	if rep, err := m.Verify(t.Context(), name, nil); err != nil || !rep.Verified || !rep.Files[0].Valid {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	bad := bytes.Clone(data)
	bad[len(bad)-1] ^= 0xff
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Verify(t.Context(), name, nil); !errors.Is(err, download.ErrHashMismatch) {
		t.Errorf("verify of a corrupted file: %v", err)
	}

	if err := m.Delete(name); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Path(name); !errors.Is(err, models.ErrNotInstalled) {
		t.Errorf("path after delete: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(p)); !errors.Is(err, os.ErrNotExist) {
		t.Error("model folder left after delete")
	}
}

func TestPullCatalogSplitAndUnverified(t *testing.T) {
	parts := splitFixture(t, 2)
	data := parts[0]
	files := map[string][]byte{
		"/acme/big-GGUF/resolve/main/Q4/big-Q4-00001-of-00002.gguf": parts[0],
		"/acme/big-GGUF/resolve/main/Q4/big-Q4-00002-of-00002.gguf": parts[1],
	}
	_, srv := newHub(t, files, false) // the hub publishes no hashes
	cat := []models.CatalogEntry{{
		Name: "big-q4", Display: "Big", Arch: "qwen3moe", Quant: "Q4_K_M",
		HF: &models.HFSource{Repo: "acme/big-GGUF", Revision: "main"},
		Files: []models.FileSpec{
			{Path: "Q4/big-Q4-00001-of-00002.gguf", SHA256: sum(data), Size: int64(len(data))},
			{Path: "Q4/big-Q4-00002-of-00002.gguf"},
		},
	}}
	m := newManager(t, t.TempDir(), srv, cat)
	if e := entry(t, m, "big-q4"); e.State != models.StateAvailable || !e.InCatalog {
		t.Fatalf("before pull: %+v", e)
	}
	_, _, err := pullAndWait(t, m, "big-q4")
	if err != nil {
		t.Fatal(err)
	}
	e := entry(t, m, "big-q4")
	if e.State != models.StateInstalled || e.Verified {
		t.Errorf("one shard has no known hash: want installed and unverified, got %+v", e)
	}
	if filepath.Base(e.Path) != "big-Q4-00001-of-00002.gguf" {
		t.Errorf("path %s, want the first shard", e.Path)
	}
	man, _ := m.Manifest("big-q4")
	if man.Files[0].Expected == "" || man.Files[1].Expected != "" || man.VerifiedAt.IsZero() == false {
		t.Errorf("manifest files %+v verified_at %v", man.Files, man.VerifiedAt)
	}
	if rep, err := m.Verify(t.Context(), "big-q4", nil); err != nil || rep.Verified || len(rep.Files) != 2 || !rep.Files[1].Valid {
		t.Errorf("verify of an unverified model: %+v %v (must hash fine and stay unverified)", rep, err)
	}
	// The engine loads the installed model from its first part, whole.
	f, err := gguf.Open(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.SplitParts()) != 2 || len(f.Tensors) != 51 {
		t.Errorf("installed model: parts %v, %d tensors", f.SplitParts(), len(f.Tensors))
	}
	f.Close()

	// Verify checks every part: a changed byte in part 2 is caught by its
	// hash (recorded at install), a part that is not this model's by the
	// validator.
	p2 := filepath.Join(filepath.Dir(e.Path), "big-Q4-00002-of-00002.gguf")
	bad := bytes.Clone(parts[1])
	bad[len(bad)-1] ^= 0xff
	if err := os.WriteFile(p2, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Verify(t.Context(), "big-q4", nil); !errors.Is(err, download.ErrHashMismatch) || !strings.Contains(err.Error(), "big-Q4-00002-of-00002.gguf") {
		t.Errorf("verify with part 2 changed: %v", err)
	}
	if err := os.WriteFile(p2, readFixture(t), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := m.Verify(t.Context(), "big-q4", nil)
	if !errors.Is(err, models.ErrInvalidGGUF) || rep.Files[0].Valid {
		t.Errorf("verify with part 2 replaced: %+v %v", rep, err)
	}
}

// A split model whose parts do not make one model is refused after the
// download and its files removed; the engine never sees it.
func TestPullSplitInvalidSet(t *testing.T) {
	parts := splitFixture(t, 3)
	other := splitFixture(t, 2)
	tests := []struct {
		name  string
		files [3][]byte
		want  string
	}{
		{"part from another split", [3][]byte{parts[0], other[1], parts[2]}, "part"},
		{"unsplit file as part 1", [3][]byte{readFixture(t), parts[1], parts[2]}, "named as part 1 of 3"},
		{"parts in the wrong order", [3][]byte{parts[0], parts[2], parts[1]}, "want part 2 of 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string][]byte{}
			for i, b := range tc.files {
				files[fmt.Sprintf("/dl/m-%05d-of-00003.gguf", i+1)] = b
			}
			_, srv := newHub(t, files, true)
			m := newManager(t, t.TempDir(), srv, nil)
			name, _, err := pullAndWait(t, m, srv.URL+"/dl/m-00001-of-00003.gguf")
			if !errors.Is(err, models.ErrInvalidGGUF) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("pull: %v, want ErrInvalidGGUF with %q", err, tc.want)
			}
			if left, _ := filepath.Glob(filepath.Join(m.Dir(), name, "*.gguf")); len(left) != 0 {
				t.Errorf("files left: %v", left)
			}
		})
	}
}

// A split pull paused in its second part resumes there: the finished first
// part is not fetched again, and each part is verified against its hash.
func TestPullSplitResumesPerPart(t *testing.T) {
	parts := splitFixture(t, 2)
	files := map[string][]byte{
		"/o/r/resolve/main/m-00001-of-00002.gguf": parts[0],
		"/o/r/resolve/main/m-00002-of-00002.gguf": parts[1],
	}
	h, srv := newHub(t, files, true)
	var gets sync.Map
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			n, _ := gets.LoadOrStore(r.URL.Path, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}
		h.ServeHTTP(w, r)
	})
	h.throttle = 50 * time.Millisecond // ~5 MB/s per connection
	dir := t.TempDir()
	m := newManager(t, dir, srv, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := m.Subscribe(ctx)
	name, err := m.Pull(t.Context(), "o/r/m-00001-of-00002.gguf")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(len(parts[0]) + len(parts[1]))
	for ev := range events {
		if ev.Phase.Terminal() {
			t.Fatalf("the pull ended before it could be paused: %+v", ev)
		}
		if ev.Phase == models.PhaseDownloading && ev.File == "m-00002-of-00002.gguf" && ev.Done > int64(len(parts[0]))+int64(len(parts[1]))/4 {
			if ev.Total != total {
				t.Errorf("progress %+v, want a total of both parts, %d", ev, total)
			}
			break
		}
	}
	if err := m.Pause(name); err != nil {
		t.Fatal(err)
	}
	m.Wait(t.Context(), name)
	m.Close()
	first := func() int64 {
		n, ok := gets.Load("/o/r/resolve/main/m-00001-of-00002.gguf")
		if !ok {
			return 0
		}
		return n.(*atomic.Int64).Load()
	}
	before := first()

	m2 := newManager(t, dir, srv, nil)
	if e := entry(t, m2, name); e.State != models.StatePaused || e.Progress.Done <= int64(len(parts[0])) {
		t.Fatalf("after restart: %+v %+v", e, e.Progress)
	}
	h.mu.Lock()
	h.throttle = 0
	h.mu.Unlock()
	if err := m2.Resume(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	if err := m2.Wait(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	if after := first(); after != before {
		t.Errorf("part 1 fetched again on resume (%d GETs before, %d after)", before, after)
	}
	man, _ := m2.Manifest(name)
	if !man.Verified || len(man.Files) != 2 || man.Files[0].SHA256 != sum(parts[0]) || man.Files[1].SHA256 != sum(parts[1]) {
		t.Errorf("manifest %+v", man)
	}
}

func TestPullUserSplitRef(t *testing.T) {
	parts := splitFixture(t, 3)
	files := map[string][]byte{}
	for i := 1; i <= 3; i++ {
		files[fmt.Sprintf("/dl/m-%05d-of-00003.gguf", i)] = parts[i-1]
	}
	_, srv := newHub(t, files, true)
	m := newManager(t, t.TempDir(), srv, nil)
	name, _, err := pullAndWait(t, m, srv.URL+"/dl/m-00002-of-00003.gguf")
	if err != nil {
		t.Fatal(err)
	}
	man, _ := m.Manifest(name)
	if name != "m" || len(man.Files) != 3 || !man.Verified || man.Source.Kind != "url" {
		t.Errorf("name %q manifest %+v", name, man)
	}
}

func TestPullFailures(t *testing.T) {
	data := readFixture(t)
	garbage := bytes.Repeat([]byte("not a gguf "), 1000)
	_, srv := newHub(t, map[string][]byte{
		"/o/r/resolve/main/garbage.gguf": garbage,
		"/o/r/resolve/main/good.gguf":    data,
	}, true)
	tests := []struct {
		name, ref string
		cat       []models.CatalogEntry
		want      error
		text      string
	}{
		{name: "not a gguf", ref: "o/r/garbage.gguf", want: models.ErrInvalidGGUF, text: "removed"},
		{name: "missing file", ref: "o/r/nope.gguf", text: "404"},
		{name: "catalog hash wrong", ref: "good", want: download.ErrHashMismatch, text: "removed",
			cat: []models.CatalogEntry{{Name: "good", Display: "G", Arch: "qwen3moe", Quant: "q",
				HF: &models.HFSource{Repo: "o/r"}, Files: []models.FileSpec{{Path: "good.gguf", SHA256: strings.Repeat("ab", 32)}}}}},
		{name: "catalog size wrong", ref: "good", want: download.ErrSizeMismatch,
			cat: []models.CatalogEntry{{Name: "good", Display: "G", Arch: "qwen3moe", Quant: "q",
				HF: &models.HFSource{Repo: "o/r"}, Files: []models.FileSpec{{Path: "good.gguf", Size: 12345}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, t.TempDir(), srv, tc.cat)
			name, events, err := pullAndWait(t, m, tc.ref)
			if err == nil {
				t.Fatal("pull succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err %q does not say %q", err, tc.text)
			}
			if last := events[len(events)-1]; last.Phase != models.PhaseFailed || last.Error == "" {
				t.Errorf("last event %+v", last)
			}
			e := entry(t, m, name)
			if e.State != models.StateFailed || e.Error == "" || e.Path != "" {
				t.Errorf("entry %+v", e)
			}
			gguf, _ := filepath.Glob(filepath.Join(m.Dir(), name, "*.gguf"))
			if len(gguf) != 0 {
				t.Errorf("files that look complete were left: %v", gguf)
			}
			if _, err := m.Path(name); !errors.Is(err, models.ErrNotInstalled) {
				t.Errorf("path: %v", err)
			}
			if err := m.Cancel(name); err != nil {
				t.Errorf("cancel of a failed pull: %v", err)
			}
			if _, err := os.Stat(filepath.Join(m.Dir(), name)); !errors.Is(err, os.ErrNotExist) {
				t.Error("cancel left the folder")
			}
		})
	}
}

func TestPauseRestartResumeCancel(t *testing.T) {
	data := bytes.Repeat(readFixture(t), 2) // ~9.7 MB
	h, srv := newHub(t, map[string][]byte{"/o/r/resolve/main/x.gguf": data}, true)
	h.throttle = 5 * time.Millisecond // ~50 MB/s per connection, 4 connections
	dir := t.TempDir()
	m := newManager(t, dir, srv, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := m.Subscribe(ctx)
	name, err := m.Pull(t.Context(), "o/r/x.gguf")
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Phase == models.PhaseDownloading && ev.Done > int64(len(data))/4 {
			if ev.Total != int64(len(data)) || ev.Rate <= 0 {
				t.Errorf("progress %+v", ev)
			}
			break
		}
	}
	if err := m.Pause(name); err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(t.Context(), name); !errors.Is(err, models.ErrPaused) {
		t.Errorf("wait after pause: %v", err)
	}
	m.Close()

	// A new manager (the app restarted) lists the pull as paused.
	m2 := newManager(t, dir, srv, nil)
	e := entry(t, m2, name)
	if e.State != models.StatePaused || e.Progress == nil || e.Progress.Done == 0 || e.Progress.Total != int64(len(data)) {
		t.Fatalf("after restart: %+v progress %+v", e, e.Progress)
	}
	pausedAt := e.Progress.Done
	h.mu.Lock()
	h.throttle = 0
	h.mu.Unlock()
	if err := m2.Resume(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	if err := m2.Wait(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	e = entry(t, m2, name)
	if e.State != models.StateInstalled || !e.Verified {
		t.Errorf("after resume: %+v", e)
	}
	t.Logf("paused at %d of %d bytes, resumed to a verified install", pausedAt, len(data))

	// Cancel removes everything of a running pull.
	if err := m2.Delete(name); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.throttle = 20 * time.Millisecond
	h.mu.Unlock()
	if _, err := m2.Pull(t.Context(), "o/r/x.gguf"); err != nil {
		t.Fatal(err)
	}
	if err := m2.Cancel(name); err != nil {
		t.Fatal(err)
	}
	if err := m2.Wait(t.Context(), name); !errors.Is(err, models.ErrCancelled) {
		t.Errorf("wait after cancel: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Error("cancel left files")
	}
	if e := entry(t, m2, name); e.State != models.StateAvailable {
		// not in the catalog: a cancelled user pull disappears from the list
		t.Errorf("after cancel: %+v", e)
	}
}

func TestPullDiskFull(t *testing.T) {
	data := readFixture(t)
	_, srv := newHub(t, map[string][]byte{"/o/r/resolve/main/x.gguf": data}, true)
	m, err := models.NewManager(t.TempDir(), models.Options{
		Catalog: []models.CatalogEntry{}, Client: srv.Client(), HubURL: srv.URL,
		Download: download.Options{SpaceMargin: -1, FreeSpace: func(string) (uint64, error) { return 1 << 20, nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, _, err = pullAndWait(t, m, "o/r/x.gguf")
	if !errors.Is(err, download.ErrNoSpace) || !strings.Contains(err.Error(), download.FormatBytes(int64(len(data)))) {
		t.Errorf("err %v; want ErrNoSpace naming %s", err, download.FormatBytes(int64(len(data))))
	}
}

func TestRefsAndNamesRefused(t *testing.T) {
	_, srv := newHub(t, map[string][]byte{}, true)
	m := newManager(t, t.TempDir(), srv, nil)
	for _, ref := range []string{
		"o/r/../../../etc/passwd.gguf",
		"o/r/a/../b.gguf",
		"o/../x.gguf",
		"../r/x.gguf",
		"o/r/.hidden.gguf",
		"o/r@../x.gguf",
		"http://example.com/x.gguf",
		"https://example.com/",
		"https://example.com/a/..%2f..%2fx.gguf",
		"o/r/" + strings.Repeat("a", 300) + ".gguf",
		"just-a-word",
		"o/r/x-00004-of-00003.gguf",
	} {
		if _, err := m.Pull(t.Context(), ref); err == nil {
			t.Errorf("Pull(%q) accepted", ref)
		}
	}
	for _, name := range []string{"..", "../x", "/etc", "a/b", `a\b`, "", ".", "x\x00y", strings.Repeat("n", 201)} {
		if _, err := m.Path(name); !errors.Is(err, models.ErrBadName) {
			t.Errorf("Path(%q): %v", name, err)
		}
		if err := m.Delete(name); !errors.Is(err, models.ErrBadName) {
			t.Errorf("Delete(%q): %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(m.Dir()); len(entries) != 0 {
		t.Errorf("refused refs touched the store: %v", entries)
	}
}

func TestManifestWithBadFileNameIgnored(t *testing.T) {
	_, srv := newHub(t, map[string][]byte{}, true)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "evil"), 0o755)
	os.WriteFile(filepath.Join(dir, "evil", "manifest.json"),
		[]byte(`{"version":1,"name":"evil","files":[{"name":"../../etc/passwd","size":1,"sha256":""}]}`), 0o644)
	m := newManager(t, dir, srv, nil)
	if _, err := m.Path("evil"); err == nil {
		t.Error("a manifest naming ../../etc/passwd was accepted")
	}
	for _, e := range m.List() {
		if e.Name == "evil" && e.State == models.StateInstalled {
			t.Error("listed as installed")
		}
	}
}

// Catalog entries of an architecture the engine cannot run are listed as
// needing a newer Strata and refuse to download, before any request; the
// embedded catalog marks exactly the entries the engine cannot load.
func TestCatalogNeedsNewerStrata(t *testing.T) {
	h, srv := newHub(t, map[string][]byte{}, true)
	var requests atomic.Int64
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	})
	cat := []models.CatalogEntry{{
		Name: "next-q4", Display: "Next", Arch: "qwen99future", Quant: "Q4_K_M",
		HF:    &models.HFSource{Repo: "acme/next-GGUF"},
		Files: []models.FileSpec{{Path: "next-00001-of-00002.gguf"}, {Path: "next-00002-of-00002.gguf"}},
	}}
	m := newManager(t, t.TempDir(), srv, cat)
	if e := entry(t, m, "next-q4"); !e.NeedsNewer || e.State != models.StateAvailable {
		t.Errorf("entry %+v, want needs_newer_strata", e)
	}
	_, err := m.Pull(t.Context(), "next-q4")
	if !errors.Is(err, models.ErrNeedsNewer) || !strings.Contains(err.Error(), "needs a newer Strata") || !strings.Contains(err.Error(), "qwen99future") {
		t.Errorf("pull: %v, want ErrNeedsNewer naming the architecture", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests to the hub for a refused pull", n)
	}
	if ents, _ := os.ReadDir(m.Dir()); len(ents) != 0 {
		t.Errorf("a refused pull left %v", ents)
	}

	def, err := models.NewManager(t.TempDir(), models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	for _, e := range def.List() {
		if e.NeedsNewer == engine.Supports(e.Arch) {
			t.Errorf("%s (%s): needs_newer_strata %v, engine.Supports %v", e.Name, e.Arch, e.NeedsNewer, engine.Supports(e.Arch))
		}
		if !e.NeedsNewer {
			continue // pulling it would go to the real hub
		}
		if _, err := def.Pull(t.Context(), e.Name); !errors.Is(err, models.ErrNeedsNewer) {
			t.Errorf("%s: pull %v, want ErrNeedsNewer", e.Name, err)
		}
	}
}
