package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/synth"
)

// TestStreamPlanLeavesOutThePLETable: when a qwen4exp model streams, its
// PLE table is read row by row through the stream, so the plan's dense
// (resident) part leaves it out and the expert cache gets its share;
// held in memory or mapped, the table is part of the file as before.
func TestStreamPlanLeavesOutThePLETable(t *testing.T) {
	cfg := synth.Defaults(synth.ArchQwen4Exp)
	cfg.Layers, cfg.Vocab, cfg.PLEHeadRows = 4, 512, 4096
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, ok := f.Tensor("per_layer_token_embd.weight")
	if !ok || lazyBytes(f) != int64(ti.Size) || ti.Size == 0 {
		t.Fatalf("lazy bytes %d, table %v", lazyBytes(f), ti)
	}
	const usable = 1 << 30
	s, err := planMemory(f, Options{Streaming: StreamAlways}, 256, usable, 2*usable)
	if err != nil {
		t.Fatal(err)
	}
	if want := f.Size - expertBytes(f) - int64(ti.Size); s.mode != modeStream || s.dense != want {
		t.Fatalf("streaming plan %+v: dense %d, want %d (the file less its experts and PLE table)", s, s.dense, want)
	}
	m, err := planMemory(f, Options{Streaming: StreamNever}, 256, usable, 2*usable)
	if err != nil {
		t.Fatal(err)
	}
	if m.mode == modeStream || m.dense != f.Size-expertBytes(f) {
		t.Fatalf("in-memory plan %+v", m)
	}
}
