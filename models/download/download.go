// Package download fetches one large file over HTTPS into a local path,
// resumably and with integrity checks.
//
// A download writes into a sparse "<dest>.partial" file with several ranged
// connections at once, and records its progress in "<dest>.partial.json"
// (written atomically, and only after the data it describes was fsynced), so
// that a later [Fetch] with the same request resumes where the last one
// stopped, whether it was cancelled, the process quit or the machine lost
// power. Each connection has stall detection and retries with exponential
// backoff; a server that ignores Range requests gets one plain stream.
// Redirects are followed only to https URLs.
//
// When the file is complete it is hashed with SHA-256 (streaming while it
// arrives when it came as one stream, else in a verifying pass with
// progress), compared with the expected hash, fsynced and renamed to its
// final name. On a mismatch the data is removed and [ErrHashMismatch] is
// returned. A file with no expected hash, neither given nor published by the
// server (Hugging Face's X-Linked-Etag), is kept but reported as not
// verified.
package download

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Phase is the stage a download is in.
type Phase string

// The phases reported in [Progress].
const (
	PhaseStarting    Phase = "starting"    // asking the server about the file
	PhaseDownloading Phase = "downloading" // receiving bytes
	PhaseVerifying   Phase = "verifying"   // hashing the finished file
	PhaseDone        Phase = "done"        // renamed to its final name
)

// Progress is one progress report of a download.
type Progress struct {
	Phase Phase
	Done  int64         // bytes downloaded (or hashed, when verifying)
	Total int64         // 0 when unknown
	Rate  float64       // bytes per second, smoothed
	ETA   time.Duration // 0 when unknown
}

// Request says what to download and where.
type Request struct {
	URL    string // https only
	Dest   string // final path; the folder must exist
	Size   int64  // expected size in bytes, 0 when unknown
	SHA256 string // expected hex sha256, "" when unknown
}

// Result describes a finished download.
type Result struct {
	Path   string
	Size   int64
	SHA256 string // computed
	// Verified is true when SHA256 matched an expected hash, either the
	// request's or the one the server published (HashSource says which).
	Verified   bool
	HashSource string // "request", "server" or "" (unverified)
	Ranged     bool   // several ranged connections were used
	Parts      int
	Resumed    int64 // bytes reused from an earlier attempt
	Retries    int   // failed requests that were retried
	Stalls     int   // requests cancelled by stall detection
}

// Options tune a download. The zero value is usable.
type Options struct {
	// Client makes the requests (default: a client with sensible
	// timeouts). Its CheckRedirect is replaced by the https-only policy.
	Client *http.Client
	// Connections is the number of parallel ranged requests (default 4).
	Connections int
	// MinPartSize is the smallest part worth its own connection
	// (default 8 MiB).
	MinPartSize int64
	// StallTimeout cancels a request that received nothing for this long
	// (default 30 s).
	StallTimeout time.Duration
	// MaxRetries is how many consecutive failures without progress a part
	// tolerates (default 10).
	MaxRetries int
	// RetryBase and RetryMax bound the exponential backoff (default 1 s,
	// 60 s).
	RetryBase, RetryMax time.Duration
	// SaveInterval is how often the progress state is persisted
	// (default 2 s).
	SaveInterval time.Duration
	// ProgressInterval is how often progress is reported (default
	// 250 ms; negative: after every write).
	ProgressInterval time.Duration
	// FreeSpace reports the bytes available to an unprivileged user in
	// dir (default: statfs).
	FreeSpace func(dir string) (uint64, error)
	// SpaceMargin is kept free beyond the file itself (default 256 MiB;
	// negative: none).
	SpaceMargin int64
	Log         *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = DefaultClient()
	}
	if o.Connections <= 0 {
		o.Connections = 4
	}
	if o.MinPartSize <= 0 {
		o.MinPartSize = 8 << 20
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 30 * time.Second
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 10
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if o.SaveInterval <= 0 {
		o.SaveInterval = 2 * time.Second
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = 250 * time.Millisecond
	}
	if o.FreeSpace == nil {
		o.FreeSpace = FreeSpace
	}
	if o.SpaceMargin == 0 {
		o.SpaceMargin = 256 << 20
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// DefaultClient returns the client used when Options.Client is nil: no
// overall timeout (files are large; stalls are detected per request) but
// bounded connection set-up.
func DefaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	t.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: t}
}

// Errors a download can end with. Use errors.Is / errors.As.
var (
	ErrHashMismatch     = errors.New("sha256 mismatch")
	ErrSizeMismatch     = errors.New("size mismatch")
	ErrInsecureURL      = errors.New("only https URLs are allowed")
	ErrInsecureRedirect = errors.New("redirect to a non-https URL refused")
	ErrNoSpace          = errors.New("not enough disk space")
)

// SpaceError reports that the disk is too full. It matches [ErrNoSpace].
type SpaceError struct {
	Dir  string
	Need int64 // bytes needed (including the margin); 0 when unknown
	Free int64 // bytes free when checked; -1 when unknown
}

func (e *SpaceError) Error() string {
	if e.Need <= 0 {
		return fmt.Sprintf("not enough disk space in %s: the disk filled up during the download; free some space and resume", e.Dir)
	}
	return fmt.Sprintf("not enough disk space in %s: need %s free, have %s; free %s and try again",
		e.Dir, FormatBytes(e.Need), FormatBytes(e.Free), FormatBytes(e.Need-e.Free))
}

// Is makes a SpaceError match ErrNoSpace.
func (e *SpaceError) Is(target error) bool { return target == ErrNoSpace }

// StatusError is an HTTP status the server answered with.
type StatusError struct {
	URL  string
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: server answered %d %s", redact(e.URL), e.Code, http.StatusText(e.Code))
}

// temporary reports whether retrying might help.
func (e *StatusError) temporary() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout
}

// FormatBytes renders n as "1.5 GB" (decimal units, as disks are sold).
func FormatBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTP"[exp])
}

// redact drops the query of a URL (signed CDN URLs carry credentials).
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.RawQuery = ""
	u.User = nil
	return u.String()
}

// PartialPath and StatePath name the scratch files of a download to dest.
func PartialPath(dest string) string { return dest + ".partial" }

// StatePath is where the progress of a download to dest is persisted.
func StatePath(dest string) string { return dest + ".partial.json" }

// Remove deletes the scratch files of a download to dest (not dest itself).
func Remove(dest string) error {
	var errs []error
	for _, p := range []string{PartialPath(dest), StatePath(dest), StatePath(dest) + ".tmp"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Pending reports the bytes already downloaded and the total (0 unknown)
// recorded for an unfinished download to dest; ok is false when there is
// none.
func Pending(dest string) (done, total int64, ok bool) {
	st, err := loadState(StatePath(dest))
	if err != nil {
		return 0, 0, false
	}
	if _, err := os.Stat(PartialPath(dest)); err != nil {
		return 0, 0, false
	}
	for _, p := range st.Parts {
		done += p.Next - p.Start
	}
	return done, max(st.Size, 0), true
}

// Fetch downloads req.URL to req.Dest, resuming from persisted state when
// there is any. progress, if not nil, is called from one goroutine at a
// time. When ctx is cancelled Fetch persists its state and returns ctx's
// error; call it again to resume.
func Fetch(ctx context.Context, req Request, opts Options, progress func(Progress)) (Result, error) {
	opts = opts.withDefaults()
	if progress == nil {
		progress = func(Progress) {}
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return Result{}, fmt.Errorf("download: invalid URL: %w", err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return Result{}, fmt.Errorf("download %s: %w", redact(req.URL), ErrInsecureURL)
	}
	if req.SHA256 != "" && !IsSHA256(req.SHA256) {
		return Result{}, fmt.Errorf("download %s: expected sha256 %q is not 64 hex digits", redact(req.URL), req.SHA256)
	}
	d := &downloader{req: req, opts: opts, progress: progress, client: httpsOnly(opts.Client)}
	d.req.SHA256 = strings.ToLower(req.SHA256)
	return d.run(ctx)
}

// IsSHA256 reports whether s is 64 hex digits.
func IsSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// httpsOnly returns a copy of c that follows redirects only to https.
func httpsOnly(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if r.URL.Scheme != "https" {
			return fmt.Errorf("%w: %s", ErrInsecureRedirect, redact(r.URL.String()))
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cc
}

type downloader struct {
	req      Request
	opts     Options
	progress func(Progress)
	client   *http.Client

	f     *os.File
	state *state
	parts []*part
	// hashing of a single stream from offset 0
	pmu   sync.Mutex // serialises progress callbacks
	hmu   sync.Mutex
	h     hash.Hash // nil when the hash must be computed afterwards
	hashN int64     // bytes hashed into h

	retries, stalls atomic.Int64
	hashSource      string
}

type part struct {
	mu    sync.Mutex
	start int64
	end   int64 // exclusive; -1 when the size is unknown (single stream)
	next  int64
}

func (p *part) snapshot() (next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

func (d *downloader) run(ctx context.Context) (Result, error) {
	dest := d.req.Dest
	d.progress(Progress{Phase: PhaseStarting, Total: d.req.Size})
	info, err := Probe(ctx, d.client, d.req.URL)
	if err != nil {
		var se *StatusError
		if ctx.Err() != nil || errors.Is(err, ErrInsecureRedirect) || (errors.As(err, &se) && se.Code == http.StatusNotFound) {
			return Result{}, fmt.Errorf("download %s: %w", redact(d.req.URL), err)
		}
		// Some servers refuse HEAD; the GET will tell us what we need.
		d.opts.Log.Debug("probe failed; continuing without it", "url", redact(d.req.URL), "err", err)
		info = Info{Size: -1}
	}
	size := info.Size
	if info.LinkedSize > 0 {
		size = info.LinkedSize
	}
	if d.req.Size > 0 && size >= 0 && size != d.req.Size {
		return Result{}, fmt.Errorf("download %s: %w: server has %d bytes, expected %d", redact(d.req.URL), ErrSizeMismatch, size, d.req.Size)
	}
	if size < 0 && d.req.Size > 0 {
		size = d.req.Size
	}
	d.hashSource = "request"
	if d.req.SHA256 == "" {
		d.hashSource = ""
		if IsSHA256(info.LinkedETag) {
			d.req.SHA256 = strings.ToLower(info.LinkedETag)
			d.hashSource = "server"
		}
	}

	// Resume only what was downloaded from the same file.
	st, err := loadState(StatePath(dest))
	if err == nil && st.compatible(d.req.URL, size, info.ETag) {
		if _, err := os.Stat(PartialPath(dest)); err != nil {
			st = nil
		}
	} else {
		if err == nil {
			d.opts.Log.Info("discarding partial download of a different file", "dest", dest)
		}
		st = nil
	}
	if st == nil {
		if err := Remove(dest); err != nil {
			return Result{}, fmt.Errorf("download %s: %w", dest, err)
		}
		st = d.plan(size, info)
	}
	d.state = st
	if st.Size < 0 && size >= 0 {
		st.Size = size
	}

	resumed := st.done()
	if st.Size > 0 {
		if err := CheckSpace(filepath.Dir(dest), st.Size-resumed, d.opts); err != nil {
			return Result{}, err
		}
	}

	f, err := os.OpenFile(PartialPath(dest), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return Result{}, fmt.Errorf("download: %w", err)
	}
	d.f = f
	defer func() {
		if d.f != nil {
			d.f.Close()
		}
	}()
	if st.Size > 0 {
		fi, err := f.Stat()
		if err != nil {
			return Result{}, fmt.Errorf("download: %w", err)
		}
		if fi.Size() != st.Size {
			if err := f.Truncate(st.Size); err != nil { // sparse
				return Result{}, fmt.Errorf("download: size %s: %w", PartialPath(dest), mapNoSpace(err, dest))
			}
		}
	}
	d.loadParts()

	err = d.transfer(ctx)
	if errors.Is(err, errRangeIgnored) {
		d.opts.Log.Info("server ignored Range; falling back to one stream", "url", redact(d.req.URL))
		d.state.Parts = []statePart{{Start: 0, End: d.state.Size, Next: 0}}
		d.state.Ranged = false
		d.state.Hash = nil
		d.loadParts()
		err = d.transfer(ctx)
	}
	if saveErr := d.save(); saveErr != nil && err == nil {
		err = saveErr
	}
	if err != nil {
		return Result{}, err
	}
	if st.Size < 0 {
		st.Size = d.parts[0].next
	}
	if d.req.Size > 0 && st.Size != d.req.Size {
		return Result{}, fmt.Errorf("download %s: %w: received %d bytes, expected %d", redact(d.req.URL), ErrSizeMismatch, st.Size, d.req.Size)
	}

	sum, err := d.digest(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{
		Path:       dest,
		Size:       st.Size,
		SHA256:     sum,
		Ranged:     st.Ranged,
		Parts:      len(st.Parts),
		Resumed:    resumed,
		Retries:    int(d.retries.Load()),
		Stalls:     int(d.stalls.Load()),
		HashSource: d.hashSource,
	}
	if d.req.SHA256 != "" {
		if sum != d.req.SHA256 {
			d.f.Close()
			d.f = nil
			rmErr := Remove(dest)
			return Result{}, errors.Join(fmt.Errorf("download %s: %w: expected %s, got %s; the downloaded file was removed",
				redact(d.req.URL), ErrHashMismatch, d.req.SHA256, sum), rmErr)
		}
		res.Verified = true
	}
	if err := d.f.Sync(); err != nil {
		return Result{}, fmt.Errorf("download: sync: %w", mapNoSpace(err, dest))
	}
	if err := d.f.Close(); err != nil {
		d.f = nil
		return Result{}, fmt.Errorf("download: close: %w", mapNoSpace(err, dest))
	}
	d.f = nil
	if err := os.Rename(PartialPath(dest), dest); err != nil {
		return Result{}, fmt.Errorf("download: %w", err)
	}
	if err := SyncDir(filepath.Dir(dest)); err != nil {
		return Result{}, err
	}
	if err := os.Remove(StatePath(dest)); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.opts.Log.Warn("remove download state", "err", err)
	}
	d.progress(Progress{Phase: PhaseDone, Done: st.Size, Total: st.Size})
	return res, nil
}

// plan splits a new download into parts.
func (d *downloader) plan(size int64, info Info) *state {
	st := &state{Version: stateVersion, URL: d.req.URL, Size: size, ETag: info.ETag}
	n := int64(1)
	if size > 0 && info.AcceptRanges && d.opts.Connections > 1 {
		n = min(int64(d.opts.Connections), max(1, size/d.opts.MinPartSize))
	}
	if n == 1 {
		st.Parts = []statePart{{Start: 0, End: size, Next: 0}}
		return st
	}
	st.Ranged = true
	step := size / n
	for i := range n {
		s, e := i*step, (i+1)*step
		if i == n-1 {
			e = size
		}
		st.Parts = append(st.Parts, statePart{Start: s, End: e, Next: s})
	}
	return st
}

// loadParts builds the live parts (and the streaming hash) from d.state.
func (d *downloader) loadParts() {
	d.parts = d.parts[:0]
	for _, sp := range d.state.Parts {
		d.parts = append(d.parts, &part{start: sp.Start, end: sp.End, next: sp.Next})
	}
	d.h, d.hashN = nil, 0
	if len(d.parts) == 1 {
		h := sha256.New()
		switch {
		case d.parts[0].next == 0:
			d.h = h
		case d.state.Hash != nil && d.state.Hash.Offset == d.parts[0].next:
			if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(d.state.Hash.State); err == nil {
				d.h, d.hashN = h, d.state.Hash.Offset
			}
		}
	}
}

// save persists the progress: snapshot offsets, fsync the data they cover,
// then atomically replace the state file.
func (d *downloader) save() error {
	sps := make([]statePart, len(d.parts))
	var hs *hashState
	d.hmu.Lock()
	for i, p := range d.parts {
		sps[i] = statePart{Start: p.start, End: p.end, Next: p.snapshot()}
	}
	if d.h != nil && len(d.parts) == 1 && d.hashN == sps[0].Next {
		if b, err := d.h.(encoding.BinaryMarshaler).MarshalBinary(); err == nil {
			hs = &hashState{Offset: d.hashN, State: b}
		}
	}
	d.hmu.Unlock()
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("download: sync %s: %w", PartialPath(d.req.Dest), mapNoSpace(err, d.req.Dest))
	}
	d.state.Parts = sps
	d.state.Hash = hs
	return d.state.write(StatePath(d.req.Dest))
}

var errRangeIgnored = errors.New("server ignored the Range header")

// transfer runs one worker per unfinished part, a saver and a reporter.
func (d *downloader) transfer(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	errs := make([]error, len(d.parts))
	for i, p := range d.parts {
		if p.end >= 0 && p.next >= p.end {
			continue
		}
		wg.Go(func() {
			if err := d.work(ctx, p); err != nil {
				errs[i] = err
				cancel(err)
			}
		})
	}
	finished := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { d.saver(ctx, finished) })
	bg.Go(func() { d.reporter(finished) })
	wg.Wait()
	close(finished)
	bg.Wait()
	// The first failure (or the caller's cancellation) is the cause; the
	// other workers' errors are its echoes.
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return errors.Join(errs...)
}

func (d *downloader) saver(ctx context.Context, finished <-chan struct{}) {
	t := time.NewTicker(d.opts.SaveInterval)
	defer t.Stop()
	for {
		select {
		case <-finished:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			if err := d.save(); err != nil {
				d.opts.Log.Warn("save download state", "err", err)
			}
		}
	}
}

func (d *downloader) done() int64 {
	var n int64
	for _, p := range d.parts {
		n += p.snapshot() - p.start
	}
	return n
}

func (d *downloader) reporter(finished <-chan struct{}) {
	interval := d.opts.ProgressInterval
	if interval < 0 {
		interval = 50 * time.Millisecond // per-write reports come from the workers
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	last, lastT := d.done(), time.Now()
	var rate float64
	for {
		select {
		case <-finished:
			return
		case now := <-t.C:
			n := d.done()
			inst := float64(n-last) / now.Sub(lastT).Seconds()
			if rate == 0 {
				rate = inst
			} else {
				rate = 0.8*rate + 0.2*inst
			}
			last, lastT = n, now
			total := max(d.state.Size, 0)
			var eta time.Duration
			if total > 0 && rate > 0 {
				eta = time.Duration(float64(total-n) / rate * float64(time.Second))
			}
			if d.opts.ProgressInterval > 0 {
				d.report(Progress{Phase: PhaseDownloading, Done: n, Total: total, Rate: rate, ETA: eta})
			}
		}
	}
}

// report calls the progress callback, one call at a time.
func (d *downloader) report(p Progress) {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	d.progress(p)
}

// work downloads one part, retrying transient failures.
func (d *downloader) work(ctx context.Context, p *part) error {
	failures := 0
	for {
		before := p.snapshot()
		err := d.attempt(ctx, p)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if !retryable(err) {
			return err
		}
		d.retries.Add(1)
		if p.snapshot() > before {
			failures = 0
		}
		failures++
		if failures > d.opts.MaxRetries {
			return fmt.Errorf("download %s: giving up after %d attempts: %w", redact(d.req.URL), failures, err)
		}
		wait := d.opts.RetryBase << min(failures-1, 20)
		if wait > d.opts.RetryMax || wait <= 0 {
			wait = d.opts.RetryMax
		}
		wait = time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
		d.opts.Log.Debug("retrying part", "start", p.start, "next", before, "after", wait, "err", err)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
		}
	}
}

var errStalled = errors.New("no data received within the stall timeout")

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func retryable(err error) bool {
	var pe permanentError
	if errors.As(err, &pe) {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.temporary()
	}
	if errors.Is(err, ErrInsecureRedirect) || errors.Is(err, errRangeIgnored) {
		return false
	}
	return true // network errors, unexpected EOF, stalls
}

// attempt makes one request for the rest of p and copies the body.
func (d *downloader) attempt(ctx context.Context, p *part) error {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(d.opts.StallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()

	next := p.snapshot()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, d.req.URL, nil)
	if err != nil {
		return permanentError{fmt.Errorf("download: %w", err)}
	}
	ranged := next > 0 || d.state.Ranged
	if ranged {
		if p.end >= 0 {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", next, p.end-1))
		} else {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", next))
		}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return d.reqErr(rctx, err)
	}
	defer resp.Body.Close()
	size := d.state.Size
	switch {
	case resp.StatusCode == http.StatusPartialContent && ranged:
		start, total, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return permanentError{fmt.Errorf("download %s: %w", redact(d.req.URL), err)}
		}
		if start != next {
			return permanentError{fmt.Errorf("download %s: server sent bytes from %d, asked for %d", redact(d.req.URL), start, next)}
		}
		if total >= 0 && size >= 0 && total != size {
			return permanentError{fmt.Errorf("download %s: %w: server now has %d bytes, expected %d", redact(d.req.URL), ErrSizeMismatch, total, size)}
		}
	case resp.StatusCode == http.StatusOK:
		if resp.ContentLength >= 0 && size >= 0 && resp.ContentLength != size {
			return permanentError{fmt.Errorf("download %s: %w: Content-Length %d, expected %d", redact(d.req.URL), ErrSizeMismatch, resp.ContentLength, size)}
		}
		if ranged {
			if len(d.parts) > 1 {
				return errRangeIgnored
			}
			// One stream that must restart from zero.
			d.hmu.Lock()
			p.mu.Lock()
			p.next = 0
			p.mu.Unlock()
			d.h, d.hashN = sha256.New(), 0
			d.hmu.Unlock()
			next = 0
		}
	default:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return &StatusError{URL: d.req.URL, Code: resp.StatusCode}
	}

	body := &stallReader{r: resp.Body, t: stall, d: d.opts.StallTimeout}
	buf := make([]byte, 256<<10)
	off := next
	for {
		if p.end >= 0 && off >= p.end {
			return nil
		}
		want := int64(len(buf))
		if p.end >= 0 {
			want = min(want, p.end-off)
		}
		n, rerr := io.ReadFull(body, buf[:want])
		if n > 0 {
			if _, err := d.f.WriteAt(buf[:n], off); err != nil {
				return permanentError{fmt.Errorf("download: write %s: %w", PartialPath(d.req.Dest), mapNoSpace(err, d.req.Dest))}
			}
			off += int64(n)
			d.hmu.Lock()
			if d.h != nil && d.hashN == off-int64(n) {
				d.h.Write(buf[:n])
				d.hashN = off
			}
			p.mu.Lock()
			p.next = off
			p.mu.Unlock()
			d.hmu.Unlock()
			if d.opts.ProgressInterval < 0 {
				d.report(Progress{Phase: PhaseDownloading, Done: d.done(), Total: max(size, 0)})
			}
		}
		switch {
		case rerr == nil:
		case errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF):
			if p.end < 0 && (resp.ContentLength < 0 || off-next == resp.ContentLength) {
				return nil // unknown size: the stream's end is the file's end
			}
			if p.end >= 0 && off >= p.end {
				return nil
			}
			return fmt.Errorf("download %s: connection closed at byte %d: %w", redact(d.req.URL), off, io.ErrUnexpectedEOF)
		default:
			return d.reqErr(rctx, rerr)
		}
	}
}

// stallReader restarts the stall timer on every read that returns data.
type stallReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (s *stallReader) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if n > 0 {
		s.t.Reset(s.d)
	}
	return n, err
}

func (d *downloader) reqErr(rctx context.Context, err error) error {
	if cause := context.Cause(rctx); errors.Is(cause, errStalled) {
		d.stalls.Add(1)
		return fmt.Errorf("download %s: %w", redact(d.req.URL), errStalled)
	}
	if errors.Is(err, ErrInsecureRedirect) {
		return permanentError{fmt.Errorf("download: %w", err)}
	}
	return err
}

// parseContentRange parses "bytes START-END/TOTAL" (TOTAL may be "*": -1).
func parseContentRange(s string) (start, total int64, err error) {
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	a, _, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	start, err = strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	total = -1
	if tot != "*" {
		total, err = strconv.ParseInt(tot, 10, 64)
		if err != nil || total < 0 {
			return 0, 0, fmt.Errorf("bad Content-Range %q", s)
		}
	}
	return start, total, nil
}

// digest returns the hex sha256 of the partial file, from the streaming
// hash when it covers the whole file, else by reading it back.
func (d *downloader) digest(ctx context.Context) (string, error) {
	size := d.state.Size
	if d.h != nil && d.hashN == size {
		return hex.EncodeToString(d.h.Sum(nil)), nil
	}
	return HashFile(ctx, PartialPath(d.req.Dest), func(done, total int64) {
		d.progress(Progress{Phase: PhaseVerifying, Done: done, Total: total})
	})
}

// HashFile returns the hex sha256 of the file at path, reporting progress
// (bytes hashed, file size) about every 64 MiB.
func HashFile(ctx context.Context, path string, progress func(done, total int64)) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hash: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("hash: %w", err)
	}
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		done += int64(n)
		if progress != nil && (done%(64<<20) < int64(n) || err == io.EOF) {
			progress(done, fi.Size())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", path, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CheckSpace returns a *SpaceError when dir has less than need bytes plus
// the margin free.
func CheckSpace(dir string, need int64, opts Options) error {
	freeSpace, margin := opts.FreeSpace, opts.SpaceMargin
	if freeSpace == nil {
		freeSpace = FreeSpace
	}
	if margin == 0 {
		margin = 256 << 20
	}
	free, err := freeSpace(dir)
	if err != nil {
		return fmt.Errorf("free space in %s: %w", dir, err)
	}
	total := need + max(margin, 0)
	if free > uint64(1<<62) {
		free = 1 << 62
	}
	if int64(free) < total {
		return &SpaceError{Dir: dir, Need: total, Free: int64(free)}
	}
	return nil
}

// mapNoSpace turns ENOSPC/EDQUOT into a *SpaceError.
func mapNoSpace(err error, dest string) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &SpaceError{Dir: filepath.Dir(dest), Free: -1}
	}
	return err
}

// SyncDir fsyncs a directory so a rename in it is durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
