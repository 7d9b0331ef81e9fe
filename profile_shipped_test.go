package main

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/usage"
	"github.com/strata-llm/strata/resources"
)

// TestShippedDemoProfile: the profile shipped for the demo model is the
// demo model's (same identity, layers and experts, undamaged), and every
// other file shipped beside it parses as a profile. It fails when the demo
// model changes without the profile being made again (the command is in
// resources/profiles/README.md).
func TestShippedDemoProfile(t *testing.T) {
	path, err := engine.EnsureDemoModel(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := usage.IdentityOf(path, f.DataOffset)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := f.ArchUint("block_count")
	experts, _ := f.ArchUint("expert_count")
	name := filepath.Base(engine.ProfilePath("", id))
	data, err := fs.ReadFile(resources.Profiles(), name)
	if err != nil {
		t.Fatalf("no shipped profile for the demo model (%s): make it with `strata dev profile --out resources/profiles README.md`: %v", name, err)
	}
	p, err := usage.Parse(data, id, int(layers), int(experts))
	if err != nil {
		t.Fatalf("the shipped demo profile: %v", err)
	}
	if p.Tokens < 1000 {
		t.Fatalf("the shipped demo profile counts %g tokens", p.Tokens)
	}
	entries, err := fs.ReadDir(resources.Profiles(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".usage" {
			continue
		}
		b, _ := fs.ReadFile(resources.Profiles(), e.Name())
		if len(b) < 64 || string(b[:8]) != "STRATAUH" {
			t.Errorf("%s is not a usage profile", e.Name())
		}
	}
}
