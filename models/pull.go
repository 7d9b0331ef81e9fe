package models

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-llm/strata/models/download"
)

// run performs one pull: learn sizes and hashes, check the disk, fetch each
// file, validate, write the manifest.
func (m *Manager) run(ctx context.Context, t *task, p *plan) error {
	folder := filepath.Join(m.dir, p.Name)
	stopped := func(err error) error {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			if errors.Is(cause, ErrPaused) || errors.Is(cause, ErrCancelled) {
				return cause
			}
			return ErrPaused // the manager is closing
		}
		return err
	}
	m.emit(t, Event{Name: p.Name, Phase: PhaseStarting})

	// Ask the hub about files whose size or hash the plan lacks.
	for i := range p.Files {
		f := &p.Files[i]
		if f.Done || (f.Size > 0 && f.SHA256 != "") {
			continue
		}
		info, err := download.Probe(ctx, m.opts.Client, f.URL)
		if err != nil {
			var se *download.StatusError
			if errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) {
				return stopped(fmt.Errorf("%s: the server has no file at %s (HTTP %d); check the name", f.Name, f.URL, se.Code))
			}
			if errors.Is(err, download.ErrInsecureRedirect) || errors.Is(err, download.ErrInsecureURL) {
				return stopped(fmt.Errorf("%s: %w", f.Name, err))
			}
			if ctx.Err() != nil {
				return stopped(err)
			}
			m.log.Info("probe failed; the download will learn the size", "file", f.Name, "err", err)
			continue
		}
		size := info.Size
		if info.LinkedSize >= 0 {
			size = info.LinkedSize
		}
		if f.Size > 0 && size >= 0 && size != f.Size {
			return fmt.Errorf("%s: %w: the server has %d bytes, the catalog says %d", f.Name, download.ErrSizeMismatch, size, f.Size)
		}
		if f.Size == 0 && size > 0 {
			f.Size = size
		}
		if f.SHA256 == "" && download.IsSHA256(info.LinkedETag) {
			f.SHA256, f.HashSource = strings.ToLower(info.LinkedETag), "hub"
		}
	}
	if err := writeJSONAtomic(folder, pullFile, p); err != nil {
		return err
	}

	// Check the disk for everything still to come.
	var need int64
	for _, f := range p.Files {
		if f.Done || f.Size <= 0 {
			continue
		}
		done, _, _ := download.Pending(filepath.Join(folder, f.Name))
		need += f.Size - done
	}
	if err := download.CheckSpace(folder, need, m.opts.Download); err != nil {
		return err
	}

	var before int64 // bytes of the files already finished
	total := func() int64 {
		var n int64
		for _, f := range p.Files {
			if f.Size <= 0 {
				return 0
			}
			n += f.Size
		}
		return n
	}
	for i := range p.Files {
		f := &p.Files[i]
		dest := filepath.Join(folder, f.Name)
		if f.Done {
			if fi, err := os.Stat(dest); err == nil && (f.Size <= 0 || fi.Size() == f.Size) {
				before += fi.Size()
				continue
			}
			f.Done = false // the file went away: fetch it again
		}
		if _, err := os.Stat(dest); err == nil {
			// Renamed into place but not recorded (a crash in between):
			// adopt it if it matches.
			got, err := download.HashFile(ctx, dest, nil)
			if err != nil {
				return stopped(err)
			}
			if f.SHA256 == "" || got == f.SHA256 {
				f.Done, f.Got, f.Verified = true, got, f.SHA256 != ""
				fi, _ := os.Stat(dest)
				before += fi.Size()
				if err := writeJSONAtomic(folder, pullFile, p); err != nil {
					return err
				}
				continue
			}
			if err := os.Remove(dest); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		base := before
		tot := total()
		res, err := download.Fetch(ctx, download.Request{URL: f.URL, Dest: dest, Size: f.Size, SHA256: f.SHA256}, m.opts.Download,
			func(pr download.Progress) {
				ev := Event{Name: p.Name, File: f.Name, Done: base + pr.Done, Total: tot, Rate: pr.Rate}
				switch pr.Phase {
				case download.PhaseVerifying:
					ev.Phase = PhaseVerifying
				case download.PhaseStarting:
					ev.Phase = PhaseStarting
				default:
					ev.Phase = PhaseDownloading
				}
				if tot == 0 && pr.Total > 0 && len(p.Files) == 1 {
					ev.Total = pr.Total
				}
				if ev.Total > 0 && pr.Rate > 0 && ev.Phase == PhaseDownloading {
					ev.ETASeconds = float64(ev.Total-ev.Done) / pr.Rate
				}
				m.emit(t, ev)
			})
		if err != nil {
			return stopped(fmt.Errorf("%s: %w", f.Name, err))
		}
		f.Done, f.Got, f.Verified, f.Size = true, res.SHA256, res.Verified, res.Size
		if res.HashSource == "server" {
			f.SHA256, f.HashSource = res.SHA256, "hub"
		}
		before += res.Size
		if err := writeJSONAtomic(folder, pullFile, p); err != nil {
			return err
		}
	}

	// Validate the model (all parts of a split one, read from the first)
	// before it counts as installed.
	m.emit(t, Event{Name: p.Name, Phase: PhaseVerifying, Done: before, Total: before})
	if err := m.opts.Validate(filepath.Join(folder, p.Files[0].Name)); err != nil {
		// The bytes are what the server published but not a model we
		// can run: remove them so nothing looks installed.
		for _, g := range p.Files {
			os.Remove(filepath.Join(folder, g.Name))
		}
		for i := range p.Files {
			p.Files[i].Done = false
		}
		return fmt.Errorf("%s: %w: %v; the downloaded files were removed", p.Files[0].Name, ErrInvalidGGUF, err)
	}
	now := time.Now().UTC()
	man := Manifest{Version: 1, Name: p.Name, Display: p.Display, Arch: p.Arch, Quant: p.Quant, Source: p.Source,
		Verified: true, InstalledAt: now}
	for _, f := range p.Files {
		mf := ManifestFile{Name: f.Name, URL: f.URL, Size: f.Size, SHA256: f.Got, HashSource: f.HashSource}
		if f.Verified {
			mf.Expected = f.SHA256
		} else {
			man.Verified = false
			mf.HashSource = ""
		}
		man.Files = append(man.Files, mf)
	}
	if man.Verified {
		man.VerifiedAt = now
	}
	if err := writeJSONAtomic(folder, manifestFile, &man); err != nil {
		return err
	}
	if err := removeSync(folder, pullFile); err != nil {
		m.log.Warn("remove pull record", "name", p.Name, "err", err)
	}
	m.emit(t, Event{Name: p.Name, Phase: PhaseVerifying, Done: before, Total: before, Verified: man.Verified})
	return nil
}

// emit records ev as the task's latest and sends it to subscribers
// (progress may be dropped for a slow subscriber; terminal events are not).
func (m *Manager) emit(t *task, ev Event) {
	m.mu.Lock()
	t.last = ev
	m.mu.Unlock()
	m.publish(ev, false)
}

type subscriber struct {
	ch  chan Event
	ctx context.Context
	mu  chan struct{} // a one-slot lock that also orders close after sends
}

// Subscribe returns a channel of every pull's events until ctx is done,
// when it is closed. Progress events are dropped while the channel is full;
// terminal ones (done, paused, cancelled, failed) wait for the reader.
func (m *Manager) Subscribe(ctx context.Context) <-chan Event {
	s := &subscriber{ch: make(chan Event, 64), ctx: ctx, mu: make(chan struct{}, 1)}
	m.mu.Lock()
	m.subs[s] = struct{}{}
	m.mu.Unlock()
	go func() {
		<-ctx.Done()
		m.mu.Lock()
		delete(m.subs, s)
		m.mu.Unlock()
		s.mu <- struct{}{}
		close(s.ch)
	}()
	return s.ch
}

func (m *Manager) publish(ev Event, terminal bool) {
	m.mu.Lock()
	subs := make([]*subscriber, 0, len(m.subs))
	for s := range m.subs {
		subs = append(subs, s)
	}
	m.mu.Unlock()
	for _, s := range subs {
		select {
		case s.mu <- struct{}{}:
		case <-s.ctx.Done():
			continue
		}
		if s.ctx.Err() == nil {
			select {
			case s.ch <- ev:
			default:
				if terminal {
					// Wait for the reader, unless it went away or the
					// manager is closing.
					select {
					case s.ch <- ev:
					case <-s.ctx.Done():
					case <-m.ctx.Done():
					}
				}
			}
		}
		<-s.mu
	}
}
