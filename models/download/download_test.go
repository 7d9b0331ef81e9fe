package download_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-llm/strata/models/download"
)

// bigSize is the size of the file every test serves: 64 MB (16 MB under
// the race detector).
var bigSize = func() int64 {
	if raceEnabled {
		return 16 << 20
	}
	return 64 << 20
}()

// source is the file every test serves, and its sha256.
var source = sync.OnceValues(func() ([]byte, string) {
	b := make([]byte, bigSize)
	rand.NewChaCha8([32]byte{1, 2, 3}).Read(b)
	s := sha256.Sum256(b)
	return b, hex.EncodeToString(s[:])
})

// server serves data at /file with optional faults. hook, when set, runs
// before each GET with its 1-based number and may take over the request
// (return true).
type server struct {
	data        []byte
	ignoreRange bool // answer 200 with the whole body to ranged GETs
	noRanges    bool // also do not advertise Accept-Ranges
	linkedETag  string
	etag        atomic.Value // string; default "v1"
	gets, heads atomic.Int64
	hook        func(w http.ResponseWriter, r *http.Request, n int64) bool
	// cut, when set, returns how many body bytes GET n may send before the
	// connection is dropped (-1: all).
	cut func(n int64) int64
	// stall, when set, returns after how many body bytes GET n goes silent
	// until the client hangs up (-1: never).
	stall func(n int64) int64
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	etag := `"v1"`
	if v, ok := s.etag.Load().(string); ok {
		etag = v
	}
	w.Header().Set("ETag", etag)
	if s.linkedETag != "" {
		w.Header().Set("X-Linked-Etag", `"`+s.linkedETag+`"`)
	}
	if !s.noRanges {
		w.Header().Set("Accept-Ranges", "bytes")
	}
	if r.Method == http.MethodHead {
		s.heads.Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(len(s.data)))
		return
	}
	n := s.gets.Add(1)
	if s.hook != nil && s.hook(w, r, n) {
		return
	}
	start, end := int64(0), int64(len(s.data))
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && !s.ignoreRange {
		a, b, _ := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
		start, _ = strconv.ParseInt(a, 10, 64)
		if b != "" {
			e, _ := strconv.ParseInt(b, 10, 64)
			end = e + 1
		}
		if start >= int64(len(s.data)) || end > int64(len(s.data)) || start >= end {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(s.data)))
		status = http.StatusPartialContent
	}
	w.Header().Set("Content-Length", strconv.FormatInt(end-start, 10))
	w.WriteHeader(status)
	body := s.data[start:end]
	if s.cut != nil {
		if c := s.cut(n); c >= 0 && c < int64(len(body)) {
			w.Write(body[:c])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // drop the connection mid-body
		}
	}
	if s.stall != nil {
		if c := s.stall(n); c >= 0 && c < int64(len(body)) {
			w.Write(body[:c])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
	}
	w.Write(body)
}

func newServer(t *testing.T, s *server) (*httptest.Server, *http.Client) {
	t.Helper()
	if s.data == nil {
		s.data, _ = source()
	}
	ts := httptest.NewTLSServer(s)
	t.Cleanup(ts.Close)
	return ts, ts.Client()
}

func fastOpts(c *http.Client) download.Options {
	return download.Options{
		Client:       c,
		Connections:  4,
		MinPartSize:  1 << 20,
		StallTimeout: 2 * time.Second,
		RetryBase:    time.Millisecond,
		RetryMax:     20 * time.Millisecond,
		SaveInterval: 50 * time.Millisecond,
		FreeSpace:    func(string) (uint64, error) { return 1 << 40, nil },
	}
}

// checkFile asserts that path holds exactly want and no scratch files remain.
func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the source (%d vs %d bytes)", path, len(got), len(want))
	}
	for _, p := range []string{download.PartialPath(path), download.StatePath(path)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (err %v)", p, err)
		}
	}
}

// checkAbsent asserts that neither dest nor anything that looks complete exists.
func checkAbsent(t *testing.T, dest string) {
	t.Helper()
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a failed download (err %v)", dest, err)
	}
}

func TestFetchFaults(t *testing.T) {
	data, sum := source()
	tests := []struct {
		name   string
		srv    *server
		conns  int
		check  func(t *testing.T, r download.Result)
		stall  time.Duration
		expect string // sha256 given in the request
	}{
		{
			name:   "clean ranged",
			srv:    &server{},
			expect: sum,
			check: func(t *testing.T, r download.Result) {
				if !r.Ranged || r.Parts != 4 {
					t.Errorf("ranged %v parts %d, want 4 ranged parts", r.Ranged, r.Parts)
				}
			},
		},
		{
			name: "connections dropped at random offsets",
			srv: func() *server {
				rng := rand.New(rand.NewPCG(7, 7))
				var mu sync.Mutex
				return &server{cut: func(n int64) int64 {
					mu.Lock()
					defer mu.Unlock()
					if n > 24 || rng.IntN(3) == 0 {
						return -1
					}
					return rng.Int64N(6 << 20)
				}}
			}(),
			expect: sum,
			check: func(t *testing.T, r download.Result) {
				if r.Retries == 0 {
					t.Error("no retries counted though connections were dropped")
				}
			},
		},
		{
			name: "5xx then success",
			srv: &server{hook: func(w http.ResponseWriter, r *http.Request, n int64) bool {
				if n <= 5 {
					http.Error(w, "busy", []int{500, 502, 503, 504, 429}[n-1])
					return true
				}
				return false
			}},
			expect: sum,
			check: func(t *testing.T, r download.Result) {
				if r.Retries < 5 {
					t.Errorf("retries %d, want >= 5", r.Retries)
				}
			},
		},
		{
			name:  "slow stream fires stall detection",
			stall: 150 * time.Millisecond,
			srv: &server{stall: func(n int64) int64 {
				if n <= 2 {
					return 1 << 20 // 1 MB, then silence
				}
				return -1
			}},
			expect: sum,
			check: func(t *testing.T, r download.Result) {
				if r.Stalls == 0 {
					t.Error("stall detection did not fire")
				}
			},
		},
		{
			name:   "range ignored though advertised",
			srv:    &server{ignoreRange: true},
			expect: sum,
			check: func(t *testing.T, r download.Result) {
				if r.Ranged {
					t.Error("still ranged after the server ignored Range")
				}
			},
		},
		{
			name:   "no range support",
			srv:    &server{ignoreRange: true, noRanges: true},
			expect: sum,
			check: func(t *testing.T, r download.Result) {
				if r.Ranged || r.Parts != 1 {
					t.Errorf("ranged %v parts %d, want one stream", r.Ranged, r.Parts)
				}
			},
		},
		{
			name: "hash published by the server",
			srv:  &server{linkedETag: sum},
			check: func(t *testing.T, r download.Result) {
				if !r.Verified || r.HashSource != "server" {
					t.Errorf("verified %v source %q, want verified by the server's hash", r.Verified, r.HashSource)
				}
			},
		},
		{
			name: "no hash anywhere: kept unverified",
			srv:  &server{},
			check: func(t *testing.T, r download.Result) {
				if r.Verified || r.HashSource != "" {
					t.Errorf("verified %v source %q without any expected hash", r.Verified, r.HashSource)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, cl := newServer(t, tc.srv)
			dest := filepath.Join(t.TempDir(), "model.gguf")
			opts := fastOpts(cl)
			if tc.stall > 0 {
				opts.StallTimeout = tc.stall
			}
			res, err := download.Fetch(t.Context(), download.Request{URL: srv.URL + "/file", Dest: dest, SHA256: tc.expect}, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, dest, data)
			if res.SHA256 != sum || res.Size != bigSize {
				t.Errorf("result sha %s size %d", res.SHA256, res.Size)
			}
			if tc.expect != "" && !res.Verified {
				t.Error("not verified though the hash was given")
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func TestFetchRejects(t *testing.T) {
	data, sum := source()
	bad := bytes.Clone(data)
	bad[bigSize/2] ^= 1
	tests := []struct {
		name    string
		srv     *server
		req     func(base string) download.Request
		want    error
		message string
	}{
		{
			name: "wrong bytes",
			srv:  &server{data: bad},
			req: func(base string) download.Request {
				return download.Request{URL: base + "/file", SHA256: sum}
			},
			want:    download.ErrHashMismatch,
			message: "removed",
		},
		{
			name: "wrong bytes against the server's own hash",
			srv:  &server{data: bad, linkedETag: sum},
			req: func(base string) download.Request {
				return download.Request{URL: base + "/file"}
			},
			want: download.ErrHashMismatch,
		},
		{
			name: "size differs from the expected size",
			srv:  &server{},
			req: func(base string) download.Request {
				return download.Request{URL: base + "/file", Size: bigSize + 1}
			},
			want:    download.ErrSizeMismatch,
			message: strconv.FormatInt(bigSize+1, 10),
		},
		{
			name: "body shorter than the expected size on one stream",
			srv:  &server{data: data[:bigSize-10], ignoreRange: true, noRanges: true, hook: nil},
			req: func(base string) download.Request {
				return download.Request{URL: base + "/file", Size: bigSize}
			},
			want: download.ErrSizeMismatch,
		},
		{
			name: "plain http",
			srv:  &server{},
			req: func(base string) download.Request {
				return download.Request{URL: strings.Replace(base, "https:", "http:", 1) + "/file"}
			},
			want: download.ErrInsecureURL,
		},
		{
			name: "redirect to http refused",
			srv: &server{hook: func(w http.ResponseWriter, r *http.Request, n int64) bool {
				http.Redirect(w, r, "http://"+r.Host+"/file", http.StatusFound)
				return true
			}},
			req: func(base string) download.Request {
				return download.Request{URL: base + "/redirect"}
			},
			want: download.ErrInsecureRedirect,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, cl := newServer(t, tc.srv)
			if tc.name == "redirect to http refused" {
				// Redirect HEAD as well, so the refusal comes from the probe and the GET.
				inner := srv.Config.Handler
				srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/redirect" {
						http.Redirect(w, r, "http://"+r.Host+"/file", http.StatusFound)
						return
					}
					inner.ServeHTTP(w, r)
				})
			}
			dest := filepath.Join(t.TempDir(), "model.gguf")
			req := tc.req(srv.URL)
			req.Dest = dest
			_, err := download.Fetch(t.Context(), req, fastOpts(cl), nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.message != "" && !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not mention %q", err, tc.message)
			}
			checkAbsent(t, dest)
			if errors.Is(err, download.ErrHashMismatch) {
				for _, p := range []string{download.PartialPath(dest), download.StatePath(dest)} {
					if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s kept after a hash mismatch", p)
					}
				}
			}
		})
	}
}

func TestRedirectToHTTPSFollowed(t *testing.T) {
	data, sum := source()
	target, cl := newServer(t, &server{})
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Linked-Etag", sum)
		http.Redirect(w, r, target.URL+"/file?sig=secret", http.StatusFound)
	}))
	defer front.Close()
	dest := filepath.Join(t.TempDir(), "m.gguf")
	res, err := download.Fetch(t.Context(), download.Request{URL: front.URL + "/resolve/main/m.gguf", Dest: dest}, fastOpts(cl), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, dest, data)
	if !res.Verified || res.HashSource != "server" {
		t.Errorf("verified %v from %q; the hash on the redirect hop should count", res.Verified, res.HashSource)
	}
}

// TestResumeKillPoints stops the downloader at 50 random points (5 runs of
// 10), each time reopening from the persisted state; every run must end in
// a verified file identical to the source.
func TestResumeKillPoints(t *testing.T) {
	data, sum := source()
	srv, cl := newServer(t, &server{})
	rng := rand.New(rand.NewPCG(42, 1))
	const runs, killsPerRun = 5, 10
	var kills, resumedTotal int64
	for run := range runs {
		dest := filepath.Join(t.TempDir(), "m.gguf")
		opts := fastOpts(cl)
		opts.ProgressInterval = -1
		opts.Connections = []int{1, 4, 3, 2, 4}[run]
		points := make([]int64, killsPerRun)
		for i := range points {
			points[i] = rng.Int64N(bigSize)
		}
		slices.Sort(points)
		var res download.Result
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithCancel(t.Context())
			var kill int64 = -1
			if attempt < len(points) {
				kill = points[attempt]
			}
			var err error
			res, err = download.Fetch(ctx, download.Request{URL: srv.URL + "/file", Dest: dest, SHA256: sum}, opts, func(p download.Progress) {
				if kill >= 0 && p.Phase == download.PhaseDownloading && p.Done >= kill {
					cancel()
				}
			})
			cancel()
			if err == nil {
				break
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("run %d attempt %d: %v", run, attempt, err)
			}
			kills++
			done, total, ok := download.Pending(dest)
			if !ok || total != bigSize || done > bigSize {
				t.Fatalf("run %d: pending state done %d total %d ok %v", run, done, total, ok)
			}
			if attempt > 3*killsPerRun {
				t.Fatalf("run %d does not finish", run)
			}
		}
		if !res.Verified {
			t.Fatalf("run %d not verified", run)
		}
		resumedTotal += res.Resumed
		checkFile(t, dest, data)
	}
	t.Logf("kill points: %d stops over %d runs, all %d runs verified and identical; last attempts reused %d MB in total",
		kills, runs, runs, resumedTotal>>20)
	if kills < runs*killsPerRun/2 {
		t.Errorf("only %d kills happened", kills)
	}
}

func TestResumeDiscardsChangedFile(t *testing.T) {
	data, sum := source()
	s := &server{}
	srv, cl := newServer(t, s)
	dest := filepath.Join(t.TempDir(), "m.gguf")
	ctx, cancel := context.WithCancel(t.Context())
	opts := fastOpts(cl)
	opts.ProgressInterval = -1
	_, err := download.Fetch(ctx, download.Request{URL: srv.URL + "/file", Dest: dest}, opts, func(p download.Progress) {
		if p.Done > bigSize/3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	// The server's file changes (different ETag): the partial data must not be reused.
	s.etag.Store(`"v2"`)
	res, err := download.Fetch(t.Context(), download.Request{URL: srv.URL + "/file", Dest: dest, SHA256: sum}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 0 {
		t.Errorf("reused %d bytes of a file whose ETag changed", res.Resumed)
	}
	checkFile(t, dest, data)
}

func TestDiskFullBeforeStart(t *testing.T) {
	s := &server{}
	srv, cl := newServer(t, s)
	dest := filepath.Join(t.TempDir(), "m.gguf")
	opts := fastOpts(cl)
	opts.SpaceMargin = 1 << 20
	opts.FreeSpace = func(string) (uint64, error) { return 10 << 20, nil }
	_, err := download.Fetch(t.Context(), download.Request{URL: srv.URL + "/file", Dest: dest}, opts, nil)
	if !errors.Is(err, download.ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	need := download.FormatBytes(bigSize + 1<<20)
	if !strings.Contains(err.Error(), need) {
		t.Errorf("message %q does not name the %s needed", err, need)
	}
	if s.gets.Load() != 0 {
		t.Errorf("%d GETs made though the disk was too small", s.gets.Load())
	}
	checkAbsent(t, dest)
	if _, err := os.Stat(download.PartialPath(dest)); !errors.Is(err, os.ErrNotExist) {
		t.Error("partial file created")
	}
}

// TestDiskFullMidDownload fills a real 8 MB tmpfs (root only).
func TestDiskFullMidDownload(t *testing.T) {
	dir := mountTmpfs(t, "8m")
	data, sum := source()
	srv, cl := newServer(t, &server{data: data[:16<<20]}) // twice the disk
	_ = sum
	dest := filepath.Join(dir, "m.gguf")

	// With the real statfs reading the download is refused up front.
	opts := fastOpts(cl)
	opts.FreeSpace = nil
	opts.SpaceMargin = -1
	_, err := download.Fetch(t.Context(), download.Request{URL: srv.URL + "/file", Dest: dest}, opts, nil)
	if !errors.Is(err, download.ErrNoSpace) || !strings.Contains(err.Error(), download.FormatBytes(16<<20)) {
		t.Fatalf("pre-check on an 8 MB tmpfs: %v", err)
	}
	if _, err := os.Stat(download.PartialPath(dest)); !errors.Is(err, os.ErrNotExist) {
		t.Error("partial file created though the pre-check failed")
	}

	opts = fastOpts(cl) // FreeSpace lies: the pre-check passes
	_, err = download.Fetch(t.Context(), download.Request{URL: srv.URL + "/file", Dest: dest}, opts, nil)
	if !errors.Is(err, download.ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	t.Logf("ENOSPC reported as: %v", err)
	checkAbsent(t, dest)
	// Whatever state was kept must not claim more than the disk could hold.
	if done, _, ok := download.Pending(dest); ok && done > 8<<20 {
		t.Errorf("state claims %d bytes on an 8 MB disk", done)
	}
}
