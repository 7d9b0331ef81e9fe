package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/strata-llm/strata/engine"
)

// forwardLog is a slog.Handler that keeps the engine's per-forward debug
// records (see engine's debugForwards) and drops the rest.
type forwardLog struct {
	mu   sync.Mutex
	recs []forwardRec
}

// forwardRec is one record: its message and attributes.
type forwardRec struct {
	msg   string
	attrs map[string]slog.Value
}

func (l *forwardLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *forwardLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *forwardLog) WithGroup(string) slog.Handler            { return l }

func (l *forwardLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level != slog.LevelDebug {
		return nil
	}
	rec := forwardRec{msg: r.Message, attrs: map[string]slog.Value{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.Resolve()
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, rec)
	l.mu.Unlock()
	return nil
}

// take returns the records so far and forgets them (none from a nil l).
func (l *forwardLog) take() []forwardRec {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.recs
	l.recs = nil
	return out
}

// traceLine renders records as one request's trace: the gate's prices, then
// each forward as rows:ms/stall ms, "P" for a probe, "F" for a forced
// plain step, and "+a" for the drafts a verify accepted.
func traceLine(recs []forwardRec) string {
	var b strings.Builder
	for _, r := range recs {
		a := r.attrs
		switch r.msg {
		case "speculation: gate":
			fmt.Fprintf(&b, "[T(1) %.1f ms, T(n)/T(1) %.2f, stall %.1f ms a row] ", a["t1_ms"].Float64(), a["t_ratio"].Any(), a["stall_ms_per_row"].Float64())
		case "forward":
			fmt.Fprintf(&b, " %d:%.3g/%.3g", a["rows"].Int64(), a["ms"].Float64(), a["stall_ms"].Float64())
			if v, ok := a["probe"]; ok && v.Bool() {
				b.WriteString("P")
			}
			if v, ok := a["forced_plain"]; ok && v.Bool() {
				b.WriteString("F")
			}
		case "speculation: verified":
			fmt.Fprintf(&b, "+%d", a["accepted"].Int64())
		}
	}
	return b.String()
}

// TestDebugForwards: with its Logger at debug level the engine logs every
// decode forward and every verify's verdict, and they add up to the
// request's stats; at info level it logs none.
func TestDebugForwards(t *testing.T) {
	path := peakedModel(t, nil)
	prompt := []int32{11, 12, 13, 14, 11, 12, 13, 15, 16, 11, 12}
	req := engine.Request{Tokens: prompt, Sampling: engine.Sampling{MaxTokens: 48}}
	base := engine.Options{Threads: 2, ContextLength: 256, Streaming: engine.StreamNever}
	want, _ := run(t, base, path, req)
	for _, tc := range []struct {
		name string
		spec engine.Speculation
	}{
		{"plain", engine.Speculation{}},
		{"replay 0.7 depth 3", engine.Speculation{Enabled: true, MaxDraft: 3, Drafter: newReplay(want, len(prompt), 0.7, 1024, 2)}},
		{"replay 0.7 gate", engine.Speculation{Enabled: true, Gate: true, MaxDraft: 6, Drafter: newReplay(want, len(prompt), 0.7, 1024, 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &forwardLog{}
			o := base
			o.Speculation, o.Logger = tc.spec, slog.New(l)
			_, st := run(t, o, path, req)
			recs := l.take()
			var forwards, rows, verdicts, accepted int
			for _, r := range recs {
				switch r.msg {
				case "forward":
					forwards++
					rows += int(r.attrs["rows"].Int64())
					if r.attrs["ms"].Float64() <= 0 || r.attrs["stall_ms"].Float64() != 0 {
						t.Fatalf("forward %v: want a time and no stall in memory", r.attrs)
					}
				case "speculation: verified":
					verdicts++
					accepted += int(r.attrs["accepted"].Int64())
				}
			}
			t.Logf("%d generated: %s", st.GeneratedTokens, traceLine(recs))
			s := st.Speculation
			if s == nil {
				// Every token but the first (the prompt's logits) and the
				// last (nothing follows it) comes from a one-row step.
				if forwards != st.GeneratedTokens-1 || rows != forwards {
					t.Fatalf("plain: %d forwards of %d rows for %d tokens", forwards, rows, st.GeneratedTokens)
				}
				return
			}
			if gated := recs[0].msg == "speculation: gate"; gated != tc.spec.Gate {
				t.Fatalf("first record %q: want the gate's prices exactly when it drafts", recs[0].msg)
			}
			if forwards != s.Verifies+s.PlainSteps || rows != s.PlainSteps+s.Verifies+s.Verified {
				t.Fatalf("%d forwards of %d rows; stats %+v", forwards, rows, s)
			}
			// A verify the request ended inside is scored by the stats, not logged.
			if verdicts > s.Verifies || verdicts < s.Verifies-1 || accepted > s.Accepted || s.Verifies == 0 {
				t.Fatalf("%d verdicts, %d accepted; stats %+v", verdicts, accepted, s)
			}
			// At info level: nothing per forward.
			l2 := &forwardLog{}
			o.Logger = slog.New(levelOnly{l2, slog.LevelInfo})
			run(t, o, path, req)
			if n := len(l2.take()); n != 0 {
				t.Fatalf("info level: %d debug records", n)
			}
		})
	}
}

// levelOnly is h enabled from level up.
type levelOnly struct {
	*forwardLog
	level slog.Level
}

func (h levelOnly) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
