package blocks

import (
	"context"
	"fmt"
	"slices"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/model"
	"github.com/strata-llm/strata/engine/routing"
)

// MoE is one mixture-of-experts layer: router logits → softmax → the
// routing step → the chosen experts' SwiGLU FFNs, whose weights come from
// the expert provider and are computed in the order they arrive → the
// weighted sum in slot order (so results never depend on arrival order).
type MoE struct {
	Layer        int
	Router       *backend.Matrix // [experts × embd]
	Experts      int
	Used         int // experts per token
	Embd, FF     int
	WeightsScale float32 // expert_weights_scale; 0 or 1: none
	Provider     model.ExpertProvider
	// NextRouter is the next MoE layer's router (nil for the last): with a
	// streaming provider, applying it to this layer's input predicts the
	// next layer's experts for read-ahead (colibri measured this recalls
	// ~72 % of the true top-8, against ~41 % for "the same experts as the
	// last token").
	NextRouter *backend.Matrix
	// Routing is the model's routing policy and telemetry (nil: exact).
	Routing *routing.State
	// Usage records each row's chosen experts (nil: not recorded).
	Usage model.UsageRecorder
	// Shared, if not nil, is an expert every token uses, added to the
	// routed experts' sum (qwen3next).
	Shared *SharedExpert
	// Tensors are the layer's expert tensors (their types): with them, a
	// backend that implements backend.Handshaker runs a one-row layer
	// without a Sync (nil: the layer always syncs).
	Tensors *model.LayerExperts
}

// SharedExpert is a dense SwiGLU FFN of FF hidden values whose output is
// scaled by sigmoid(Gate·x) per token (llama.cpp's ffn_*_shexp and
// ffn_gate_inp_shexp).
type SharedExpert struct {
	W    backend.ExpertWeights
	FF   int
	Gate *backend.Matrix // [1 × embd]
}

// predictRows is the largest batch whose next-layer experts are predicted:
// a prompt's batch needs most experts anyway.
const predictRows = 4

// MoEBuf is a session's scratch for MoE layers, grown to the largest batch
// and reused, so decoding allocates nothing per token.
type MoEBuf struct {
	logits []float32   // [rows][experts]
	sel    []int32     // [rows][used] chosen experts, best first
	wts    []float32   // [rows][used]
	groups [][]int32   // per expert: the rows using it
	slotOf []int32     // [rows][used]: index into order
	order  []int32     // the active experts, ascending
	outs   [][]float32 // per active expert: [rows using it][embd]
	src    [][]float32 // [rows][used]: the slot's expert output row
	jobs   []backend.ExpertJob
	ready  []int
	done   []bool
	out    []float32 // [rows][embd] combine scratch
	shared []float32 // [rows][embd] the shared expert's output
	sgate  []float32 // [rows] its gate
	all    []int32   // 0..rows-1
	sjob   [1]backend.ExpertJob
	pred   []float32 // [rows][experts] next layer's router probabilities
	next   []int32   // predicted experts of the next layer
	inNext []bool
	res    []bool  // residency snapshot
	psel   []int32 // predicted choices: [rows][used]
	pwts   []float32
	hs     hsBuf
}

// hsBuf is the scratch of the handshake path (forwardHandshake): device
// memory the ops write and the host reads at the handshake.
type hsBuf struct {
	sel, psel []int32   // [used]: Route's choices, the next layer's predicted
	wts, pwts []float32 // [used]
	down      []float32 // [used][embd]: each slot's expert output
	order     []int32
	ready     []int
	copied    []int // of ready, those put into slots
	got       []bool
	next      []int32
	inNext    []bool
	// Cache-aware routing: the residency mask the queued Route reads
	// (device memory, one int32 per expert), written at record time when
	// no handshake is pending, else by the pending handshake (pend, queued
	// when the backend had run pendAt Syncs) once its experts are in;
	// resHost is the same snapshot for the telemetry.
	res     []int32
	resHost []bool
	pres    []bool // the next layer's, for the prediction
	pend    *hsPending
	pendAt  int
	rsc     routing.Scratch
}

// hsPending is a queued handshake's link to the next MoE layer: the layer
// whose residency it writes into hsBuf.res after its loading (-1: none).
type hsPending struct{ next int }

// Forward adds the layer's output for rows rows of the normed input xn
// into the residual x.
func (m *MoE) Forward(ctx context.Context, be backend.Backend, xn, x []float32, rows int, buf *MoEBuf) error {
	ne, nu, e := m.Experts, m.Used, m.Embd
	if len(buf.logits) < rows*ne {
		buf.logits = be.Alloc(rows * ne)
	}
	logits := buf.logits[:rows*ne]
	be.Linear(m.Router, xn, rows, logits)
	be.Softmax(logits, rows, ne)
	if hs, ok := be.(backend.Handshaker); ok && rows <= handshakeRows && m.Tensors != nil {
		return m.forwardHandshake(be, hs, xn, x, logits, rows, buf)
	}
	if cap(buf.sel) < rows*nu {
		buf.sel = make([]int32, rows*nu)
		buf.wts = make([]float32, rows*nu)
		buf.slotOf = make([]int32, rows*nu)
		buf.src = make([][]float32, rows*nu)
	}
	sel, wts := buf.sel[:rows*nu], buf.wts[:rows*nu]
	// Every row routes against one snapshot of residency, taken in the
	// layer's logical order (so the result never depends on I/O timing).
	pol := m.policy()
	var res []bool
	if pol.Enabled {
		buf.res = m.Provider.Resident(m.Layer, buf.res)
		res = buf.res
	}
	be.Route(logits, rows, ne, nu, m.WeightsScale, pol, res, sel, wts)
	// The one handshake the layer needs: the host learns the chosen
	// experts, to fetch them.
	if err := be.Sync(); err != nil {
		return err
	}
	if pol.Enabled {
		for r := 0; r < rows; r++ {
			m.Routing.Stats.Add(pol.Describe(logits[r*ne:(r+1)*ne], nu, sel[r*nu:(r+1)*nu], res), nu)
		}
	}
	if m.Usage != nil {
		rr, _ := m.Usage.(model.RouteRecorder)
		for r := 0; r < rows; r++ {
			if rr != nil {
				rr.AddRoute(m.Layer, logits[r*ne:(r+1)*ne], sel[r*nu:(r+1)*nu])
			}
			m.Usage.Add(m.Layer, sel[r*nu:(r+1)*nu])
		}
	}
	// Group the rows by expert, in row order; the active experts ascending.
	if len(buf.groups) < ne {
		buf.groups = make([][]int32, ne)
	}
	groups := buf.groups[:ne]
	for i := range groups {
		groups[i] = groups[i][:0]
	}
	for slot, ex := range sel {
		groups[ex] = append(groups[ex], int32(slot/nu))
	}
	buf.order = buf.order[:0]
	for ex := range groups {
		if len(groups[ex]) > 0 {
			buf.order = append(buf.order, int32(ex))
		}
	}
	na := len(buf.order)
	for len(buf.outs) < na {
		buf.outs = append(buf.outs, nil)
	}
	for a, ex := range buf.order {
		if n := len(groups[ex]) * e; len(buf.outs[a]) < n {
			buf.outs[a] = be.Alloc(n)
		}
		// groups[ex] lists rows ascending; slot j of row r uses expert ex
		// at the position of r in that list.
		for j, r := range groups[ex] {
			for k := 0; k < nu; k++ {
				if sel[int(r)*nu+k] == ex {
					buf.src[int(r)*nu+k] = buf.outs[a][j*e : (j+1)*e]
				}
			}
		}
	}

	f, err := m.Provider.Fetch(ctx, m.Layer, buf.order)
	if err != nil {
		return fmt.Errorf("layer %d: experts: %w", m.Layer, err)
	}
	defer f.Release()
	if m.NextRouter != nil && m.Provider.Streaming() && rows <= predictRows {
		if err := m.readAhead(be, xn, rows, buf); err != nil {
			return err
		}
	}
	if cap(buf.done) < na {
		buf.done = make([]bool, na)
	}
	done := buf.done[:na]
	clear(done)
	var sh []float32
	if m.Shared != nil {
		if sh, err = m.shared(be, xn, rows, buf); err != nil {
			return err
		}
	}
	first := true
	for left := na; left > 0; {
		buf.ready, err = f.Ready(ctx, buf.ready[:0])
		if err != nil {
			return fmt.Errorf("layer %d: experts: %w", m.Layer, err)
		}
		buf.jobs = buf.jobs[:0]
		for _, a := range buf.ready {
			if a < 0 || a >= na || done[a] {
				return fmt.Errorf("layer %d: expert provider returned index %d twice or out of range", m.Layer, a)
			}
			done[a] = true
			ex := buf.order[a]
			buf.jobs = append(buf.jobs, backend.ExpertJob{W: f.Weights(a), Rows: groups[ex], Out: buf.outs[a][:len(groups[ex])*e]})
		}
		left -= len(buf.jobs)
		if err := be.ExpertsFFN(xn, rows, e, m.FF, buf.jobs, !first); err != nil {
			return fmt.Errorf("layer %d: %w", m.Layer, err)
		}
		if err := be.Sync(); err != nil {
			return err
		}
		f.Done(buf.ready)
		first = false
	}
	clear(buf.jobs[:cap(buf.jobs)]) // drop references to expert memory
	if len(buf.out) < rows*e {
		buf.out = be.Alloc(rows * e)
	}
	// No Sync after the combine: it reads the experts' outputs (backend
	// memory) and wts, not the experts' weights, which the Sync of each
	// wave has let go; the caller syncs when it reads x.
	if sh == nil {
		be.Combine(x, buf.out[:rows*e], rows, e, nu, wts, buf.src[:rows*nu])
		return nil
	}
	// llama.cpp adds moe_out + shared, then the residual: Combine adds the
	// routed sum into the shared output (a+b = b+a exactly), which then
	// goes into x.
	be.Combine(sh, buf.out[:rows*e], rows, e, nu, wts, buf.src[:rows*nu])
	be.Add(x, sh)
	return nil
}

// shared computes the gated shared expert of rows rows of xn.
func (m *MoE) shared(be backend.Backend, xn []float32, rows int, buf *MoEBuf) ([]float32, error) {
	e, s := m.Embd, m.Shared
	if len(buf.shared) < rows*e {
		buf.shared, buf.sgate = be.Alloc(rows*e), be.Alloc(rows)
	}
	for len(buf.all) < rows {
		buf.all = append(buf.all, int32(len(buf.all)))
	}
	sh, g := buf.shared[:rows*e], buf.sgate[:rows]
	be.Linear(s.Gate, xn, rows, g)
	buf.sjob[0] = backend.ExpertJob{W: s.W, Rows: buf.all[:rows], Out: sh}
	err := be.ExpertsFFN(xn, rows, e, s.FF, buf.sjob[:], false)
	buf.sjob[0] = backend.ExpertJob{}
	if err != nil {
		return nil, fmt.Errorf("layer %d: shared expert: %w", m.Layer, err)
	}
	be.SigmoidMul(sh, g, rows)
	return sh, nil
}

// readAhead applies the next layer's router to this layer's input and
// hands the provider the union of each row's top experts, in row and rank
// order (a deterministic function of the input, so residency stays
// independent of I/O timing).
func (m *MoE) readAhead(be backend.Backend, xn []float32, rows int, buf *MoEBuf) error {
	ne, nu := m.Experts, m.Used
	if len(buf.pred) < rows*ne {
		buf.pred = be.Alloc(rows * ne)
	}
	p := buf.pred[:rows*ne]
	be.Linear(m.NextRouter, xn, rows, p)
	be.Softmax(p, rows, ne)
	// The same rule the next layer will route by, against its residency
	// now, so read-ahead fetches what the router will pick.
	pol := m.policy()
	var res []bool
	if pol.Enabled {
		buf.res = m.Provider.Resident(m.Layer+1, buf.res)
		res = buf.res
	}
	if cap(buf.psel) < rows*nu {
		buf.psel, buf.pwts = make([]int32, rows*nu), make([]float32, rows*nu)
	}
	psel := buf.psel[:rows*nu]
	be.Route(p, rows, ne, nu, 0, pol, res, psel, buf.pwts[:rows*nu])
	if err := be.Sync(); err != nil {
		return err
	}
	if len(buf.inNext) < ne {
		buf.inNext = make([]bool, ne)
	}
	clear(buf.inNext)
	buf.next = buf.next[:0]
	for _, e := range psel { // row by row, in rank order
		if !buf.inNext[e] {
			buf.inNext[e] = true
			buf.next = append(buf.next, e)
		}
	}
	m.Provider.Prefetch(m.Layer+1, buf.next)
	return nil
}

// policy is the routing policy in force (the zero policy is exact).
func (m *MoE) policy() routing.CacheRoute {
	if m.Routing == nil {
		return routing.CacheRoute{}
	}
	return m.Routing.Policy
}

// handshakeRows is the largest batch whose MoE layers run through a
// backend's handshakes (a decode step, a speculative verification): each
// row's experts are separate mat-vecs there, as the Sync path computes a
// few rows; a prompt's batch syncs and runs each expert over all its rows.
const handshakeRows = predictRows

// forwardHandshake is Forward for a few rows on a backend with handshakes:
// the routing, the next layer's prediction (a streaming provider), the
// shared expert, the routed experts and the combine are all queued, with
// one handshake between the routing and the experts where the host fetches
// the chosen experts and puts them into the backend's slots; nothing
// syncs, so a decode step is one command buffer. The host waits inside the
// handshake until every chosen expert has arrived (no overlap of expert
// reads with expert compute: the device is stopped there anyway). The
// provider sees the calls of the Sync path in the same order (Fetch of the
// active experts ascending, Prefetch of the prediction, Ready and Done),
// so residency, the cache-aware choices and the results are the same.
func (m *MoE) forwardHandshake(be backend.Backend, hs backend.Handshaker, xn, x, logits []float32, rows int, buf *MoEBuf) error {
	ne, nu, e := m.Experts, m.Used, m.Embd
	n := rows * nu
	h := &buf.hs
	if len(h.sel) < n || len(h.down) < n*e {
		h.sel, h.psel = backend.AllocI32(be, n), backend.AllocI32(be, n)
		h.wts, h.pwts = be.Alloc(n), be.Alloc(n)
		h.down = be.Alloc(n * e)
	}
	sel, wts, down := h.sel[:n], h.wts[:n], h.down[:n*e]
	t := m.Tensors
	slots, err := hs.ExpertSlots(ne, min(n, ne), e, m.FF, [3]ggml.Type{t.Gate.Type, t.Up.Type, t.Down.Type})
	if err != nil { // before anything is queued or pending
		return fmt.Errorf("layer %d: %w", m.Layer, err)
	}
	pol := m.policy()
	// With a streaming provider, the cache-aware policy routes against
	// the residency the previous MoE layer leaves, known only once that
	// layer's handshake has fetched its experts: that handshake writes it
	// into h.res, which the Route queued here reads on the device. Other
	// providers report no residency (all resident): the Sync path routes
	// them exactly, and so does this one.
	aware := pol.Enabled && m.Provider.Streaming()
	st := &hsPending{next: -1}
	if aware {
		if len(h.res) < ne {
			h.res, h.resHost = backend.AllocI32(be, ne), make([]bool, ne)
		}
		switch rp, replays := be.(backend.Replayer); {
		case h.pend != nil && h.pendAt == hs.Syncs():
			h.pend.next = m.Layer // not run yet: it writes this layer's residency
		case replays: // a replayed step snapshots the residency again
			if err := rp.Redo(0, func(int) error { m.writeResidency(m.Layer, h); return nil }); err != nil {
				return fmt.Errorf("layer %d: %w", m.Layer, err)
			}
		default:
			m.writeResidency(m.Layer, h)
		}
		h.pend, h.pendAt = st, hs.Syncs()
		hs.RouteResident(logits, rows, ne, nu, m.WeightsScale, pol, h.res[:ne], sel, wts)
	} else {
		be.Route(logits, rows, ne, nu, m.WeightsScale, pol, nil, sel, wts)
	}
	var pred []float32
	if m.NextRouter != nil && m.Provider.Streaming() && rows <= predictRows {
		// readAhead's prediction: the probabilities queued; the choice at
		// the handshake, against the residency after this layer's Fetch.
		if len(buf.pred) < rows*ne {
			buf.pred = be.Alloc(rows * ne)
		}
		pred = buf.pred[:rows*ne]
		be.Linear(m.NextRouter, xn, rows, pred)
		be.Softmax(pred, rows, ne)
	}
	hs.Handshake(func(ctx context.Context) error {
		if h.pend == st {
			h.pend = nil
		}
		if err := m.loadExperts(ctx, hs, slots, logits, rows, sel, pred, aware, h); err != nil {
			h.pend = nil // the handshakes after this one do not run
			return fmt.Errorf("layer %d: experts: %w", m.Layer, err)
		}
		if st.next >= 0 {
			m.writeResidency(st.next, h)
		}
		return nil
	})
	// The shared expert runs on the device while the host loads the
	// routed experts (it reads xn and the shared weights, which the
	// handshake does not touch).
	var sh []float32
	if m.Shared != nil {
		if sh, err = m.shared(be, xn, rows, buf); err != nil {
			return err
		}
	}
	hs.Resume()
	if err := hs.SlotExpertsFFN(slots, xn, rows, nu, sel, down); err != nil {
		return fmt.Errorf("layer %d: %w", m.Layer, err)
	}
	if sh == nil {
		hs.CombineWeights(x[:rows*e], rows, e, nu, wts, down)
		return nil
	}
	hs.CombineWeights(sh, rows, e, nu, wts, down) // as Forward: the routed sum into the shared output, then x
	be.Add(x, sh)
	return nil
}

// loadExperts runs at the handshake: it records the routing (usage), asks
// the provider for the active experts (and, with a prediction, reads ahead
// the next layer's), and gives each to the backend as it arrives: bound
// where it lies when the backend can read the provider's memory and the
// provider placed every expert of the fetch (then the fetch is held until
// the device has run the layer's experts: hs.AfterRun releases it), else
// put into its slot (its index among the active experts) and marked done,
// so a provider with less room than the layer needs reuses its memory.
func (m *MoE) loadExperts(ctx context.Context, hs backend.Handshaker, slots backend.ExpertSlots, logits []float32, rows int, sel []int32, pred []float32, aware bool, h *hsBuf) error {
	ne, nu := m.Experts, m.Used
	if pol := m.policy(); pol.Enabled {
		var res []bool
		if aware {
			res = h.resHost[:ne]
		}
		for r := 0; r < rows; r++ {
			m.Routing.Stats.Add(pol.Describe(logits[r*ne:(r+1)*ne], nu, sel[r*nu:(r+1)*nu], res), nu)
		}
	}
	if len(h.inNext) < ne {
		h.inNext = make([]bool, ne)
	}
	seen := h.inNext[:ne]
	clear(seen)
	h.order = h.order[:0]
	for r := 0; r < rows; r++ {
		rs := sel[r*nu : (r+1)*nu]
		for k, ex := range rs {
			if ex < 0 || int(ex) >= ne || slices.Contains(rs[:k], ex) {
				return fmt.Errorf("routing chose experts %v for row %d", rs, r)
			}
			if !seen[ex] {
				seen[ex] = true
				h.order = append(h.order, ex)
			}
		}
		if m.Usage != nil {
			if rr, ok := m.Usage.(model.RouteRecorder); ok {
				rr.AddRoute(m.Layer, logits[r*ne:(r+1)*ne], rs)
			}
			m.Usage.Add(m.Layer, rs)
		}
	}
	slices.Sort(h.order)
	f, err := m.Provider.Fetch(ctx, m.Layer, h.order)
	if err != nil {
		return err
	}
	p, hold := f.(model.Placer)
	hold = hold && p.Placed()
	held := false
	defer func() {
		if held {
			hs.AfterRun(f.Release)
		} else {
			f.Release()
		}
	}()
	if pred != nil {
		// readAhead's choice, on the host: the same rule as the device's
		// Route (the selftest holds them to the same experts).
		pol := m.policy()
		var res []bool
		if pol.Enabled {
			h.pres = m.Provider.Resident(m.Layer+1, h.pres)
			res = h.pres
		}
		// h.psel and h.pwts are backend memory no op writes any more.
		psel := h.psel[:rows*nu]
		for r := 0; r < rows; r++ {
			pol.Route(pred[r*ne:(r+1)*ne], nu, 0, res, &h.rsc, psel[r*nu:(r+1)*nu], h.pwts[r*nu:(r+1)*nu])
		}
		clear(seen)
		h.next = h.next[:0]
		for _, ex := range psel { // row by row, in rank order, as readAhead
			if ex >= 0 && int(ex) < ne && !seen[ex] {
				seen[ex] = true
				h.next = append(h.next, ex)
			}
		}
		m.Provider.Prefetch(m.Layer+1, h.next)
	}
	if cap(h.got) < len(h.order) {
		h.got = make([]bool, len(h.order))
	}
	h.got = h.got[:len(h.order)]
	clear(h.got)
	for done := 0; done < len(h.order); {
		h.copied = h.copied[:0]
		if h.ready, err = f.Ready(ctx, h.ready[:0]); err != nil {
			return err
		}
		for _, a := range h.ready {
			if a < 0 || a >= len(h.order) || h.got[a] {
				return fmt.Errorf("expert provider returned index %d twice or out of range", a)
			}
			h.got[a] = true
			w := f.Weights(a)
			if hold && slots.Bind(h.order[a], w) {
				held = true
				continue
			}
			if err := slots.Put(a, h.order[a], w); err != nil {
				return err
			}
			h.copied = append(h.copied, a)
		}
		done += len(h.ready)
		f.Done(h.copied) // the provider may reuse their memory
	}
	return nil
}

// writeResidency snapshots layer's residency into h.res (the device's
// copy the queued Route reads) and h.resHost (the telemetry's).
func (m *MoE) writeResidency(layer int, h *hsBuf) {
	h.resHost = m.Provider.Resident(layer, h.resHost[:0])
	for i := range h.res[:m.Experts] {
		h.res[i] = 0
		if i < len(h.resHost) && h.resHost[i] {
			h.res[i] = 1
		}
	}
}
