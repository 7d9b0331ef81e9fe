package qwen4exp

import (
	"fmt"
	"slices"
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
// reads are issued when the forward pass starts, or before it for tokens
// the caller knows are coming (Session.Prefetch: a verify's drafted
// tokens once the drafter returns them), and collected at the PLE layer:
// the same bytes, read sooner. The table is never a backend Matrix,
// so the backend's warm-up never touches it.

// pleRawReader reads bytes of the model's file on the expert stream's
// readers (experts.Stream).
type pleRawReader interface {
	ReadRaw(path string, reqs []experts.RawRead, urgent bool) (*experts.RawReads, error)
}

// pleCacheRows is the row cache's size before a batch needs more (the
// rows of 256 tokens of 16 heads), and the slots of each chunk of its
// arena: a decode step's rows of the recent tokens are hits.
const pleCacheRows = 4096

// pleTable serves the table's rows.
//
// Streamed, the row cache's slots live in chunks of pleCacheRows that
// never move (a read in flight writes into its slot while the cache
// grows). A slot whose read is in flight (fill) is never evicted; reads
// are issued by Start (a forward pass's rows) or Prefetch (rows a coming
// forward pass will want, e.g. drafted tokens'), and a Start that finds a
// row in flight collects that read instead of issuing its own.
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
	chunks [][]byte // streamed: [pleCacheRows][rowBytes] each
	slotOf map[int32]int32
	rowOf  []int32  // per slot; -1: free
	used   []uint64 // per slot: the fetch that last used (or will use) it
	fill   []*experts.RawReads
	// batches are the reads in flight: the slots each fills.
	batches map[*experts.RawReads][]int32
	gen     uint64
	hand    int
	stats   pleStats
}

// pleStats count the table's row reads.
type pleStats struct {
	Rows       int64 // rows gathered
	Reads      int64 // rows read from the file (streamed misses)
	BytesRead  int64
	Prefetched int64 // of Reads, rows Prefetch issued
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
		p.batches = map[*experts.RawReads][]int32{}
		p.gen = 1 // a slot used by no fetch (0) is older than any
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
	return int64(len(p.chunks)) * pleCacheRows * int64(p.rowBytes)
}

// grow adds chunks until the cache has at least slots slots (p.mu held).
func (p *pleTable) grow(slots int) {
	for len(p.rowOf) < slots {
		p.chunks = append(p.chunks, make([]byte, pleCacheRows*p.rowBytes))
		for range pleCacheRows {
			p.rowOf = append(p.rowOf, -1)
			p.used = append(p.used, 0)
			p.fill = append(p.fill, nil)
		}
	}
}

// slot is slot s's bytes.
func (p *pleTable) slot(s int32) []byte {
	c, i := int(s)/pleCacheRows, int(s)%pleCacheRows
	return p.chunks[c][i*p.rowBytes : (i+1)*p.rowBytes]
}

// pleFetch is one forward pass's rows: started by Start, collected by
// Collect.
type pleFetch struct {
	ids   []int32 // the rows, in gather order
	slots []int32 // streamed: each row's cache slot
	reads *experts.RawReads
	waits []*experts.RawReads // reads in flight that fill its slots (its own and prefetches')
	err   error
}

// claim takes a slot for row id (p.mu held): the clock hand's next slot
// that no fetch numbered keep or later uses and no read is filling (FIFO
// replacement); when there is none the cache grows.
func (p *pleTable) claim(id int32, keep uint64) int32 {
	for tried := 0; ; tried++ {
		if tried == len(p.rowOf) {
			p.hand = len(p.rowOf)
			p.grow(len(p.rowOf) + 1)
		}
		p.hand %= len(p.rowOf)
		if p.used[p.hand] < keep && p.fill[p.hand] == nil {
			break
		}
		p.hand++
	}
	s := int32(p.hand)
	p.hand++
	if old := p.rowOf[s]; old >= 0 {
		delete(p.slotOf, old)
	}
	p.rowOf[s], p.slotOf[id] = id, s
	return s
}

// read issues the reads of slots' rows (p.mu held) and marks them in
// flight.
func (p *pleTable) read(slots []int32) (*experts.RawReads, error) {
	reqs := make([]experts.RawRead, len(slots))
	for i, s := range slots {
		reqs[i] = experts.RawRead{Off: p.off + int64(p.rowOf[s])*int64(p.rowBytes), Dst: p.slot(s)}
	}
	// Urgent: the next forward pass's PLE layer waits for them.
	r, err := p.rr.ReadRaw(p.path, reqs, true)
	if err != nil {
		p.forget(slots)
		return nil, err
	}
	p.batches[r] = slices.Clone(slots)
	for _, s := range slots {
		p.fill[s] = r
	}
	p.stats.Reads += int64(len(slots))
	p.stats.BytesRead += int64(len(slots) * p.rowBytes)
	return r, nil
}

// settle ends read r in flight (p.mu held): its slots are filled, or
// forgotten when it failed.
func (p *pleTable) settle(r *experts.RawReads, err error) {
	for _, s := range p.batches[r] {
		if p.fill[s] != r {
			continue
		}
		p.fill[s] = nil
		if err != nil {
			p.forget([]int32{s})
		}
	}
	delete(p.batches, r)
}

// reap settles the reads in flight that are done, without waiting
// (p.mu held): a prefetch no fetch collected frees its slots here.
func (p *pleTable) reap() {
	for r := range p.batches {
		if done, err := r.Done(); done {
			p.settle(r, err)
		}
	}
}

// Start checks ids and issues the reads of the rows of ids that are not
// cached or in flight; it does not wait for them. The fetch's slots stay
// cached until the next Start.
func (p *pleTable) Start(f *pleFetch, ids []int32) {
	f.ids, f.slots, f.reads, f.waits, f.err = append(f.ids[:0], ids...), f.slots[:0], nil, f.waits[:0], nil
	if f.err = p.check(ids); f.err != nil || p.rr == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reap()
	p.gen++
	var miss []int32
	for _, id := range ids {
		s, ok := p.slotOf[id]
		if !ok {
			s = p.claim(id, p.gen)
			miss = append(miss, s)
		} else if r := p.fill[s]; r != nil && !slices.Contains(f.waits, r) {
			f.waits = append(f.waits, r) // a prefetch's read
		}
		p.used[s] = p.gen
		f.slots = append(f.slots, s)
	}
	p.stats.Rows += int64(len(ids))
	if len(miss) > 0 {
		f.reads, f.err = p.read(miss)
		if f.err == nil {
			f.waits = append(f.waits, f.reads)
		}
	}
}

// Prefetch issues the reads of the rows of ids (the rows a coming
// forward pass will want) that are not cached or in flight, and keeps
// them from eviction until the next Start, which finds them cached or
// in flight: the same bytes, read sooner. It never waits; a bad id or a
// failed read only makes the forward pass read (or refuse) the row itself.
func (p *pleTable) Prefetch(ids []int32) {
	if p.rr == nil || p.check(ids) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reap()
	next := p.gen + 1 // the next Start's
	var miss []int32
	for _, id := range ids {
		s, ok := p.slotOf[id]
		if !ok {
			// Neither the last fetch's slots (gen) nor those kept for the
			// next.
			s = p.claim(id, p.gen)
			miss = append(miss, s)
		}
		p.used[s] = next
	}
	if len(miss) > 0 {
		if _, err := p.read(miss); err == nil {
			p.stats.Prefetched += int64(len(miss))
		}
	}
}

// check refuses a row outside the table.
func (p *pleTable) check(ids []int32) error {
	for _, id := range ids {
		if id < 0 || int(id) >= p.Rows {
			return fmt.Errorf("%s: PLE row %d outside the table's %d rows", Arch, id, p.Rows)
		}
	}
	return nil
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

// Collect waits for the reads that fill the fetch's rows and copies its
// rows, in order, into dst (len(ids)·rowBytes bytes). A prefetch's read
// that failed is read again for the fetch; its own failing is an error.
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
	var failed error
	for _, r := range f.waits {
		err := r.Wait()
		p.mu.Lock()
		if _, ok := p.batches[r]; ok {
			p.settle(r, err)
		}
		p.mu.Unlock()
		if err != nil && r == f.reads && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		return fmt.Errorf("%s: read PLE rows: %w", Arch, failed)
	}
	p.mu.Lock()
	// A failed prefetch forgot its rows: read those again, now.
	var again []int32
	for i, id := range f.ids {
		if p.rowOf[f.slots[i]] != id {
			s, ok := p.slotOf[id]
			if !ok {
				s = p.claim(id, p.gen)
				again = append(again, s)
			}
			f.slots[i] = s
			p.used[s] = p.gen
		}
	}
	if len(again) > 0 {
		r, err := p.read(again)
		p.mu.Unlock()
		if err == nil {
			err = r.Wait()
		}
		p.mu.Lock()
		if r != nil {
			p.settle(r, err)
		}
		if err != nil {
			p.mu.Unlock()
			return fmt.Errorf("%s: read PLE rows: %w", Arch, err)
		}
	}
	defer p.mu.Unlock()
	for i, s := range f.slots {
		copy(dst[i*rb:(i+1)*rb], p.slot(s))
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
