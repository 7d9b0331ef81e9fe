package qwen4exp

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/experts"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/gguf"
)

// The PLE table (per_layer_token_embd, llama.cpp's TENSOR_READ_LAZY) is
// never loaded whole: it is the size of a vocabulary-sized embedding per
// n-gram head, and a forward pass reads Heads rows per token. Its rows are
// read on demand: from the file's mapping (the pages of the rows used are
// all that become resident), or, when the experts are streamed, with
// preads through the expert stream's I/O pool into a small row cache. The
// row ids are a pure function of the tokens (PLEParams.RowIDs), so the
// reads are issued when the forward pass starts and collected at the PLE
// layer: the same bytes, read sooner. The table is never a backend Matrix,
// so the backend's warm-up never touches it.

// pleRawReader reads bytes of the model's file on the expert stream's
// readers (experts.Stream).
type pleRawReader interface {
	ReadRaw(path string, reqs []experts.RawRead, urgent bool) (*experts.RawReads, error)
}

// pleCacheRows is the row cache's size before a batch needs more (the
// rows of 256 tokens of 16 heads): a decode step's rows of the recent
// tokens are hits.
const pleCacheRows = 4096

// pleTable serves the table's rows.
type pleTable struct {
	Type     ggml.Type
	Cols     int // HeadDim
	Rows     int
	rowBytes int

	mapped []byte // the table's bytes in the mapping; nil: streamed

	rr   pleRawReader
	path string
	off  int64 // file offset of row 0

	mu     sync.Mutex
	arena  []byte // streamed: [slots][rowBytes]
	slotOf map[int32]int32
	rowOf  []int32  // per slot; -1: free
	used   []uint64 // per slot: the fetch that last used it
	gen    uint64
	hand   int
	stats  pleStats
	// inflight are the reads of the last fetch until it is collected.
	inflight      *experts.RawReads
	inflightSlots []int32
}

// pleStats count the table's row reads.
type pleStats struct {
	Rows      int64 // rows gathered
	Reads     int64 // rows read from the file (streamed misses)
	BytesRead int64
}

// newPLETable serves the rows of t (rows × cols of typ) from f: through
// rr's readers when rr is set and reads f's file, else from the mapping.
func newPLETable(f *gguf.File, t *gguf.TensorInfo, typ ggml.Type, cols, rows int, rr pleRawReader) (*pleTable, error) {
	rb, err := typ.RowSize(int64(cols))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", Arch, t.Name, err)
	}
	p := &pleTable{Type: typ, Cols: cols, Rows: rows, rowBytes: int(rb)}
	if uint64(rb)*uint64(rows) != t.Size {
		return nil, fmt.Errorf("%s: %s holds %d bytes, want %d rows of %d", Arch, t.Name, t.Size, rows, rb)
	}
	if rr != nil {
		path, off, size := f.Location(t)
		if off+int64(t.Size) > size {
			return nil, fmt.Errorf("%s: tensor %s ends past the end of %s", Arch, t.Name, path)
		}
		p.rr, p.path, p.off = rr, path, off
		p.slotOf = map[int32]int32{}
		p.grow(pleCacheRows)
		return p, nil
	}
	p.mapped = f.Data(t)
	if len(p.mapped) != int(t.Size) {
		return nil, fmt.Errorf("%s: tensor %s has %d bytes of data, want %d", Arch, t.Name, len(p.mapped), t.Size)
	}
	return p, nil
}

// Streamed reports whether rows are read from the SSD.
func (p *pleTable) Streamed() bool { return p.rr != nil }

// CacheBytes is the row cache's memory (0 when mapped).
func (p *pleTable) CacheBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(len(p.arena))
}

func (p *pleTable) grow(slots int) {
	old := len(p.rowOf)
	p.arena = append(p.arena, make([]byte, (slots-old)*p.rowBytes)...)
	for i := old; i < slots; i++ {
		p.rowOf = append(p.rowOf, -1)
		p.used = append(p.used, 0)
	}
}

// pleFetch is one forward pass's rows: started by Start, collected by
// Collect.
type pleFetch struct {
	ids   []int32 // the rows, in gather order
	slots []int32 // streamed: each row's cache slot
	reads *experts.RawReads
	err   error
}

// Start checks ids and issues the reads of the rows of ids that are not
// cached; it does not wait for them. The fetch's slots stay cached until
// the next Start.
func (p *pleTable) Start(f *pleFetch, ids []int32) {
	f.ids, f.slots, f.reads, f.err = append(f.ids[:0], ids...), f.slots[:0], nil, nil
	for _, id := range ids {
		if id < 0 || int(id) >= p.Rows {
			f.err = fmt.Errorf("%s: PLE row %d outside the table's %d rows", Arch, id, p.Rows)
			return
		}
	}
	if p.rr == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A fetch that was never collected (its forward pass failed first)
	// may still be reading into the arena: let it finish, and forget its
	// rows if a read failed.
	if in := p.inflight; in != nil {
		p.inflight = nil
		p.mu.Unlock()
		err := in.Wait()
		p.mu.Lock()
		if err != nil {
			p.forget(p.inflightSlots)
		}
	}
	p.gen++
	var miss []int32
	for _, id := range ids {
		s, ok := p.slotOf[id]
		if !ok {
			// The clock hand takes the next slot this fetch does not use
			// (FIFO replacement); a fetch wanting more rows than the cache
			// holds grows it.
			for tried := 0; ; tried++ {
				if tried == len(p.rowOf) {
					p.hand = len(p.rowOf)
					p.grow(len(p.rowOf) + len(ids))
				}
				p.hand %= len(p.rowOf)
				if p.used[p.hand] != p.gen {
					break
				}
				p.hand++
			}
			s = int32(p.hand)
			p.hand++
			if old := p.rowOf[s]; old >= 0 {
				delete(p.slotOf, old)
			}
			p.rowOf[s], p.slotOf[id] = id, s
			miss = append(miss, s)
			p.stats.Reads++
			p.stats.BytesRead += int64(p.rowBytes)
		}
		p.used[s] = p.gen
		f.slots = append(f.slots, s)
	}
	p.stats.Rows += int64(len(ids))
	// The requests point into the arena once it has stopped growing.
	reqs := make([]experts.RawRead, len(miss))
	for i, s := range miss {
		reqs[i] = experts.RawRead{Off: p.off + int64(p.rowOf[s])*int64(p.rowBytes), Dst: p.arena[int(s)*p.rowBytes : int(s+1)*p.rowBytes]}
	}
	if len(reqs) > 0 {
		f.reads, f.err = p.rr.ReadRaw(p.path, reqs, true)
		if f.err != nil {
			p.forget(miss)
		}
		p.inflight, p.inflightSlots = f.reads, append(p.inflightSlots[:0], miss...)
	}
}

// forget drops the rows of slots from the cache (p.mu held).
func (p *pleTable) forget(slots []int32) {
	for _, s := range slots {
		if id := p.rowOf[s]; id >= 0 {
			delete(p.slotOf, id)
			p.rowOf[s] = -1
		}
	}
}

// Collect waits for the fetch's reads and copies its rows, in order, into
// dst (len(ids)·rowBytes bytes).
func (p *pleTable) Collect(f *pleFetch, dst []byte) error {
	if f.err != nil {
		return f.err
	}
	rb := p.rowBytes
	if p.rr == nil {
		for i, id := range f.ids {
			copy(dst[i*rb:(i+1)*rb], p.mapped[int(id)*rb:int(id+1)*rb])
		}
		return nil
	}
	err := error(nil)
	if f.reads != nil {
		err = f.reads.Wait()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight == f.reads {
		p.inflight = nil
	}
	if err != nil {
		// Forget what the failed reads were to fill: read again next time.
		p.forget(f.slots)
		return fmt.Errorf("%s: read PLE rows: %w", Arch, err)
	}
	for i, s := range f.slots {
		copy(dst[i*rb:(i+1)*rb], p.arena[int(s)*rb:int(s+1)*rb])
	}
	return nil
}

// Stats returns the table's counters.
func (p *pleTable) Stats() pleStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// pleStage is a session's staging matrix: the rows of one forward pass as
// a backend Matrix (in backend memory, so a device backend sees the host's
// writes), from which GetRows dequantizes them.
type pleStage struct {
	buf  []float32
	mat  *backend.Matrix
	rows int
	iota []int32
}

// Gather fills emb ([n][Cols]) with the fetch's rows.
func (st *pleStage) Gather(be backend.Backend, p *pleTable, f *pleFetch, emb []float32) error {
	n := len(f.ids)
	if n > st.rows {
		st.buf = be.Alloc((n*p.rowBytes + 3) / 4)
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(st.buf))), n*p.rowBytes)
		m, err := be.NewMatrix(p.Type, b, n, p.Cols)
		if err != nil {
			return fmt.Errorf("%s: PLE rows: %w", Arch, err)
		}
		st.mat, st.rows = m, n
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(st.buf))), n*p.rowBytes)
	if err := p.Collect(f, b); err != nil {
		return err
	}
	for i := len(st.iota); i < n; i++ {
		st.iota = append(st.iota, int32(i))
	}
	be.GetRows(st.mat, st.iota[:n], emb[:n*p.Cols])
	return nil
}

// Bytes is the staging memory.
func (st *pleStage) Bytes() int64 { return 4 * int64(len(st.buf)) }

// pleTableName is the table's tensor.
const pleTableName = "per_layer_token_embd.weight"
