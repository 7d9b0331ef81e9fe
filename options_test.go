package main

import (
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/backendpick"
	"github.com/strata-llm/strata/internal/dirs"
	"github.com/strata-llm/strata/internal/settings"
)

// TestEngineOptionsFromSettings: every speculation, routing and memory knob reaches the engine.
func TestEngineOptionsFromSettings(t *testing.T) {
	s := settings.Defaults()
	s.Advanced.Threads, s.Advanced.ContextLength = 3, 2048
	s.Speculation = settings.Speculation{Enabled: true, AutoDepth: false, MaxDraftTokens: 4, MinDraftProb: 0.3, PromptLookup: false, MTP: true}
	s.Routing = settings.Routing{Enabled: true, Strength: 3, ProtectedTop: 1, MaxRankWindow: 12, AlwaysKept: 2}
	s.Memory.ExpertCacheGB, s.Memory.LearnUsage = 2.5, true
	o := engineOptions(s, dirs.Dirs{Data: "/data"}, nil, backendpick.Decision{})
	want := engine.Speculation{Enabled: true, Gate: false, MaxDraft: 4, MinDraftProb: 0.3, Lookup: false, MTP: true}
	if o.Threads != 3 || o.ContextLength != 2048 || o.Speculation != want {
		t.Fatalf("options %+v, want speculation %+v", o, want)
	}
	if r := o.Routing; !r.Enabled || r.Lambda != 3 || r.ProtectedTop != 1 || r.MaxRank != 12 || r.AlwaysKept != 2 {
		t.Fatalf("routing %+v", r)
	}
	if o.Profiles == nil {
		t.Fatal("the shipped profiles are not passed to the engine")
	}
	if o.ExpertCache != 2.5e9 || o.HistoryDir != filepath.Join("/data", "usage") {
		t.Fatalf("expert cache %d, history %q", o.ExpertCache, o.HistoryDir)
	}
	s.Memory.LearnUsage = false
	if o := engineOptions(s, dirs.Dirs{Data: "/data"}, nil, backendpick.Decision{}); o.HistoryDir != "" || len(o.ProfileDirs) != 1 || o.ProfileDirs[0] != filepath.Join("/data", "profiles") {
		t.Fatalf("history kept with learning off: %q (profiles %q: read whatever the setting)", o.HistoryDir, o.ProfileDirs)
	}
	d := engineOptions(settings.Defaults(), dirs.Dirs{}, nil, backendpick.Decision{}).Speculation
	if !d.Enabled || !d.Gate || !d.Lookup || !d.MTP || d.MaxDraft != 8 {
		t.Fatalf("defaults give %+v", d)
	}
}

// TestEngineOptionsBackend: the backend decision reaches the engine whole.
func TestEngineOptionsBackend(t *testing.T) {
	pick := backendpick.Decision{Backend: "metal", Checked: true, Reason: "the Metal selftest passed on Apple M3"}
	o := engineOptions(settings.Defaults(), dirs.Dirs{}, nil, pick)
	if o.Backend != "metal" || !o.BackendChecked || o.BackendReason != pick.Reason || o.BackendFallback {
		t.Fatalf("options %+v", o)
	}
	pick = backendpick.Decision{Backend: "cpu", Fallback: true, Reason: "the Metal selftest failed"}
	if o := engineOptions(settings.Defaults(), dirs.Dirs{}, nil, pick); o.Backend != "cpu" || o.BackendChecked || !o.BackendFallback {
		t.Fatalf("options %+v", o)
	}
}
