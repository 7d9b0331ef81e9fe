package experts_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/model/qwen3moe"
)

// TestReadRaw: bytes read through the stream's readers at unaligned
// offsets and lengths (urgent and read-ahead) are the file's; an offset
// past the end fails (Done reports it); a file the stream does not read is
// refused.
func TestReadRaw(t *testing.T) {
	path := writeModel(t, ggml.Q8_0)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	be := cpu.NewBackend(1)
	defer be.Close()
	var layout *model.ExpertLayout
	if _, err := qwen3moe.Open(f, model.Options{Backend: be, NewExperts: func(l *model.ExpertLayout) (model.ExpertProvider, error) {
		layout = l
		return experts.NewFile(f, l)
	}}); err != nil {
		t.Fatal(err)
	}
	s, err := experts.NewStream(f, layout, experts.StreamOptions{Budget: 1 << 20, Readers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, urgent := range []bool{true, false} {
		var reqs []experts.RawRead
		for i := 0; i < 200; i++ {
			n := 1 + rng.IntN(9000)
			off := rng.Int64N(int64(len(want) - n))
			reqs = append(reqs, experts.RawRead{Off: off, Dst: make([]byte, n)})
		}
		b, err := s.ReadRaw(path, reqs, urgent)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Wait(); err != nil {
			t.Fatal(err)
		}
		if done, err := b.Done(); !done || err != nil {
			t.Fatalf("after Wait: Done %v, %v", done, err)
		}
		for i, r := range reqs {
			if !bytes.Equal(r.Dst, want[r.Off:r.Off+int64(len(r.Dst))]) {
				t.Fatalf("urgent %v read %d (%d bytes at %d) differs from the file", urgent, i, len(r.Dst), r.Off)
			}
		}
	}
	b, err := s.ReadRaw(path, []experts.RawRead{{Off: int64(len(want)) - 10, Dst: make([]byte, 100)}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err == nil {
		t.Fatal("a read past the end succeeded")
	}
	if done, err := b.Done(); !done || err == nil {
		t.Fatalf("a failed read: Done %v, %v", done, err)
	}
	if _, err := s.ReadRaw(path+".other", nil, true); err == nil {
		t.Fatal("a file the stream does not read was accepted")
	}

	// Done does not wait: a read held in the reader is not done.
	hold := make(chan struct{})
	slow, err := experts.NewStream(f, layout, experts.StreamOptions{Budget: 1 << 20, Readers: 1, ReadDelay: func() { <-hold }})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	b, err = slow.ReadRaw(path, []experts.RawRead{{Off: 0, Dst: make([]byte, 8)}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := b.Done(); done || err != nil {
		t.Fatalf("a held read: Done %v, %v", done, err)
	}
	close(hold)
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if done, err := b.Done(); !done || err != nil {
		t.Fatalf("a released read: Done %v, %v", done, err)
	}
}
