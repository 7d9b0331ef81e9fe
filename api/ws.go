package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/engine"
)

const (
	closeGoingAway = websocket.CloseGoingAway
	closePolicy    = websocket.ClosePolicyViolation
	closeNormal    = websocket.CloseNormalClosure
	closeTooBig    = websocket.CloseMessageTooBig
	closeTryLater  = websocket.CloseTryAgainLater
)

// wsConn is one websocket client. The handler goroutine reads, one
// goroutine writes (events go through a bounded buffer; a client that
// falls behind is disconnected), and each operation runs in its own
// goroutine so one connection can multiplex several.
type wsConn struct {
	s   *Server
	ws  *websocket.Conn
	log *slog.Logger

	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	send   chan []byte
	authed bool // touched only by the reader

	mu    sync.Mutex
	ops   map[string]context.CancelFunc // in-flight operations by request id
	opsWG sync.WaitGroup

	closeMu     sync.Mutex
	closed      bool
	closeCode   int
	closeReason string
	drain       bool // send what is queued before closing

	lastActive atomic.Int64 // unix nanoseconds of the last message
	writerDone chan struct{}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		writeHTTPError(w, http.StatusServiceUnavailable, protocol.CodeBusy, "server shutting down")
		return
	case len(s.conns) >= s.cfg.MaxConnections:
		s.mu.Unlock()
		writeHTTPError(w, http.StatusServiceUnavailable, protocol.CodeBusy, "too many connections")
		return
	}
	c := &wsConn{
		s:          s,
		log:        s.log.With("remote", r.RemoteAddr),
		send:       make(chan []byte, s.cfg.SendBuffer),
		ops:        map[string]context.CancelFunc{},
		authed:     authorized(r.Context()),
		writerDone: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	s.conns[c] = struct{}{} // reserve the slot before the handshake
	s.connWG.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.connWG.Done()
	}()

	up := websocket.Upgrader{
		HandshakeTimeout: s.cfg.ReadHeaderTimeout,
		ReadBufferSize:   4096,
		WriteBufferSize:  4096,
		CheckOrigin:      func(*http.Request) bool { return true }, // checkOrigin ran already
	}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		c.cancel()
		return // Upgrade answered with an HTTP error
	}
	c.ws = ws
	c.touch()
	go c.writeLoop()
	c.readLoop()
	c.closeWith(closeNormal, "connection ended")
	c.mu.Lock()
	for _, cancel := range c.ops {
		cancel()
	}
	c.mu.Unlock()
	c.opsWG.Wait()
	<-c.writerDone
}

func (c *wsConn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

func (c *wsConn) readLoop() {
	cfg := &c.s.cfg
	max := cfg.MaxMessageBytes
	c.ws.SetReadLimit(int64(4 * max)) // hard limit: the connection is closed with 1009
	pongWait := 2 * cfg.PingInterval
	c.ws.SetPongHandler(func(string) error {
		if c.authed {
			c.ws.SetReadDeadline(time.Now().Add(pongWait))
		}
		return nil
	})
	if c.authed {
		c.ws.SetReadDeadline(time.Now().Add(pongWait))
	} else {
		c.ws.SetReadDeadline(time.Now().Add(cfg.AuthTimeout))
	}
	for {
		typ, rd, err := c.ws.NextReader()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.closeWith(closeTooBig, "message too big")
			}
			return
		}
		c.touch()
		data, err := io.ReadAll(io.LimitReader(rd, int64(max)+1))
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.closeWith(closeTooBig, "message too big")
			}
			return
		}
		if c.authed {
			c.ws.SetReadDeadline(time.Now().Add(pongWait))
		}
		var req protocol.Request
		var params any
		switch {
		case len(data) > max:
			if _, err := io.Copy(io.Discard, rd); err != nil {
				c.closeWith(closeTooBig, "message too big")
				return
			}
			err = protocol.Errorf(protocol.CodeBadRequest, "message larger than %d bytes", max)
		case typ != websocket.TextMessage:
			err = protocol.Errorf(protocol.CodeBadRequest, "binary messages are not accepted: send JSON text")
		default:
			req, params, err = protocol.Decode(data)
		}
		if !c.authed {
			if !c.authenticate(req, params, err) {
				return
			}
			continue
		}
		if err != nil {
			c.sendError(req.ID, err)
			continue
		}
		c.dispatch(req, params)
	}
}

// authenticate handles the first message of a connection that sent no
// Authorization header: it must be hello with the token.
func (c *wsConn) authenticate(req protocol.Request, params any, err error) bool {
	hp, ok := params.(*protocol.HelloParams)
	switch {
	case err == nil && ok && hp.Token != "" && c.s.cfg.Tokens.Valid(hp.Token):
		c.authed = true
		c.ws.SetReadDeadline(time.Now().Add(2 * c.s.cfg.PingInterval))
		c.dispatch(req, params)
		return true
	case err == nil && ok && hp.Token != "":
		err = protocol.Errorf(protocol.CodeUnauthorized, "invalid API token")
	default:
		err = protocol.Errorf(protocol.CodeUnauthorized, "authenticate first: send hello with the API token (or the Authorization: Bearer header)")
	}
	c.sendError(req.ID, err)
	c.log.Warn("websocket refused", "reason", err)
	c.closeWith(closePolicy, "unauthorized")
	return false
}

// closeWith ends the connection with a close frame carrying reason;
// queued events are sent first unless the client is too slow for them.
func (c *wsConn) closeWith(code int, reason string) { c.close(code, reason, true) }

func (c *wsConn) close(code int, reason string, drain bool) {
	c.closeMu.Lock()
	if c.closed {
		c.closeMu.Unlock()
		return
	}
	c.closed, c.closeCode, c.closeReason, c.drain = true, code, reason, drain
	c.closeMu.Unlock()
	if code != closeNormal {
		c.log.Info("websocket closing", "code", code, "reason", reason)
	}
	c.cancel()
}

func (c *wsConn) writeLoop() {
	defer close(c.writerDone)
	defer c.ws.Close()
	cfg := &c.s.cfg
	ping := time.NewTicker(min(cfg.PingInterval, cfg.IdleTimeout/4+time.Millisecond))
	defer ping.Stop()
	lastPing := time.Now()
	for {
		select {
		case msg := <-c.send:
			c.ws.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
				c.close(websocket.CloseAbnormalClosure, "write failed", false)
				return
			}
		case now := <-ping.C:
			c.mu.Lock()
			busy := len(c.ops) > 0
			c.mu.Unlock()
			if !busy && now.Sub(time.Unix(0, c.lastActive.Load())) > cfg.IdleTimeout {
				c.closeWith(closeNormal, "idle timeout")
				continue
			}
			if now.Sub(lastPing) >= cfg.PingInterval {
				lastPing = now
				if err := c.ws.WriteControl(websocket.PingMessage, nil, now.Add(cfg.WriteTimeout)); err != nil {
					c.close(websocket.CloseAbnormalClosure, "ping failed", false)
					return
				}
			}
		case <-c.ctx.Done():
			c.finish()
			return
		}
	}
}

// finish sends what is queued (unless the client is too slow), a closing
// event and the close frame.
func (c *wsConn) finish() {
	c.closeMu.Lock()
	code, reason, drain := c.closeCode, c.closeReason, c.drain
	c.closeMu.Unlock()
	if code == 0 {
		code, reason = closeGoingAway, "server shutting down"
	}
	deadline := time.Now().Add(time.Second)
	if drain {
		c.ws.SetWriteDeadline(deadline)
	loop:
		for {
			select {
			case msg := <-c.send:
				if c.ws.WriteMessage(websocket.TextMessage, msg) != nil {
					return
				}
			default:
				break loop
			}
		}
		if code != closeNormal || reason != "connection ended" {
			b, _ := json.Marshal(protocol.Event{Type: protocol.EventClosing, Message: reason})
			if c.ws.WriteMessage(websocket.TextMessage, b) != nil {
				return
			}
		}
	}
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), deadline)
}

// enqueue queues ev for the writer without blocking. If the buffer is
// full the client is too slow: it is disconnected and false returned.
func (c *wsConn) enqueue(ev protocol.Event) bool {
	if c.ctx.Err() != nil {
		return false
	}
	b, err := json.Marshal(ev)
	if err != nil {
		c.log.Error("encode event", "type", ev.Type, "err", err)
		return false
	}
	select {
	case c.send <- b:
		return true
	default:
		c.close(closeTryLater, "client too slow: send buffer full", false)
		return false
	}
}

func (c *wsConn) reply(id string, result any) {
	b, err := json.Marshal(result)
	if err != nil {
		c.sendError(id, err)
		return
	}
	c.enqueue(protocol.Event{Type: protocol.EventResult, ID: id, Result: b})
}

func (c *wsConn) sendError(id string, err error) {
	var pe *protocol.Error
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Message
	} else {
		c.log.Error("operation failed", "id", id, "err", err)
	}
	c.enqueue(protocol.Event{Type: protocol.EventError, ID: id, Code: protocol.CodeOf(err), Message: msg})
}

// dispatch starts the operation; cancel and stats.unsubscribe act at once.
func (c *wsConn) dispatch(req protocol.Request, params any) {
	switch p := params.(type) {
	case *protocol.CancelParams:
		if c.cancelOp(p.ID) {
			c.reply(req.ID, protocol.CancelResult{Cancelled: true})
		} else {
			c.sendError(req.ID, protocol.Errorf(protocol.CodeNotFound, "no running operation with id %q", p.ID))
		}
		return
	case *protocol.StatsUnsubscribeParams:
		if c.cancelOp(p.ID) {
			c.reply(req.ID, protocol.OK{OK: true})
		} else {
			c.sendError(req.ID, protocol.Errorf(protocol.CodeNotFound, "no subscription with id %q", p.ID))
		}
		return
	}
	c.mu.Lock()
	if _, dup := c.ops[req.ID]; dup {
		c.mu.Unlock()
		c.sendError(req.ID, protocol.Errorf(protocol.CodeBadRequest, "id %q is already used by a running operation", req.ID))
		return
	}
	if len(c.ops) >= c.s.cfg.MaxOpsPerConn {
		c.mu.Unlock()
		c.sendError(req.ID, protocol.Errorf(protocol.CodeBusy, "more than %d operations in flight on this connection", c.s.cfg.MaxOpsPerConn))
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.ops[req.ID] = cancel
	c.opsWG.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.opsWG.Done()
		defer func() {
			c.mu.Lock()
			delete(c.ops, req.ID)
			c.mu.Unlock()
			cancel()
		}()
		c.run(ctx, req, params)
	}()
}

func (c *wsConn) cancelOp(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cancel, ok := c.ops[id]
	if ok {
		cancel()
	}
	return ok
}

func (c *wsConn) run(ctx context.Context, req protocol.Request, params any) {
	s := c.s
	id := req.ID
	switch req.Type {
	case protocol.TypeHello:
		c.reply(id, protocol.HelloResult{
			Server:   s.cfg.Version,
			Protocol: protocol.Version,
			Engine:   s.status(),
			Limits: protocol.Limits{
				MaxMessageBytes: s.cfg.MaxMessageBytes,
				MaxConnections:  s.cfg.MaxConnections,
				MaxQueue:        s.run.MaxQueue(),
				MaxTokens:       s.cfg.MaxTokens,
				SendBuffer:      s.cfg.SendBuffer,
			},
		})
	case protocol.TypeChat, protocol.TypeComplete:
		c.runGenerate(ctx, id, params)
	case protocol.TypeEngineStatus:
		c.reply(id, s.status())
	case protocol.TypeEngineLoad:
		if _, err := s.loadModel(ctx, params.(*protocol.EngineLoadParams).Model); err != nil {
			c.sendError(id, err)
			return
		}
		c.reply(id, s.status())
	case protocol.TypeEngineUnload:
		if err := s.run.Stop(); err != nil {
			c.sendError(id, err)
			return
		}
		c.reply(id, s.status())
	case protocol.TypeModelsSelect:
		name := params.(*protocol.ModelParams).Name
		path, err := s.loadModel(ctx, name)
		if err != nil {
			c.sendError(id, err)
			return
		}
		if s.cfg.OnSelect != nil {
			s.cfg.OnSelect(name, path)
		}
		c.reply(id, s.status())
	case protocol.TypeModelsList, protocol.TypeModelsPull, protocol.TypeModelsCancelPull, protocol.TypeModelsDelete:
		c.runModels(ctx, req, params)
	case protocol.TypeSettingsGet, protocol.TypeSettingsSet:
		if s.cfg.Settings == nil {
			c.sendError(id, protocol.Errorf(protocol.CodeNotFound, "settings are not available on this server"))
			return
		}
		var b []byte
		var err error
		if req.Type == protocol.TypeSettingsGet {
			b, err = s.cfg.Settings.Get()
		} else {
			b, err = s.cfg.Settings.Set(ctx, params.(*protocol.SettingsSetParams).Settings)
		}
		if err != nil {
			c.sendError(id, err)
			return
		}
		c.enqueue(protocol.Event{Type: protocol.EventResult, ID: id, Result: b})
	case protocol.TypeStatsSubscribe:
		iv := time.Duration(params.(*protocol.StatsSubscribeParams).IntervalMS) * time.Millisecond
		if iv == 0 {
			iv = time.Second
		}
		c.reply(id, protocol.OK{OK: true})
		t := time.NewTicker(iv)
		defer t.Stop()
		for {
			tel := s.telemetry()
			if !c.enqueue(protocol.Event{Type: protocol.EventStats, ID: id, Telemetry: &tel}) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	default:
		c.sendError(id, protocol.Errorf(protocol.CodeBadRequest, "unknown type %q", req.Type))
	}
}

func (c *wsConn) runGenerate(ctx context.Context, id string, params any) {
	var g genRequest
	var opts protocol.Options
	var ts toolSpec
	switch p := params.(type) {
	case *protocol.ChatParams:
		g.req.Messages, opts = engineMessages(p.Messages), p.Options
		var err error
		if ts, err = parseTools(p.Tools, p.ToolChoice); err != nil {
			c.sendError(id, err)
			return
		}
	case *protocol.CompleteParams:
		g.req.Prompt, g.req.Tokens, opts = p.Prompt, p.Tokens, p.Options
	}
	smp, err := c.s.sampling(opts)
	if err == nil {
		g.req.Constraint, err = constraint(opts.ResponseFormat)
	}
	if err == nil {
		err = ts.apply(&g.req)
	}
	if err != nil {
		c.sendError(id, err)
		return
	}
	tp := newToolParser(ts)
	wsCalls := func(calls []toolCall) []protocol.ToolCall {
		var out []protocol.ToolCall
		for _, tc := range calls {
			out = append(out, protocol.ToolCall{ID: tc.ID, Type: "function", Function: protocol.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		return out
	}
	g.req.Sampling, g.keepAlive = smp, opts.KeepAlive
	queued := func(pos int) { c.enqueue(protocol.Event{Type: protocol.EventQueued, ID: id, Position: pos}) }
	emit := func(t engine.Token) error {
		text, calls := tp.add(t.Text)
		ev := protocol.Event{Type: protocol.EventDelta, ID: id, Text: text, ToolCalls: wsCalls(calls)}
		if t.ID >= 0 {
			ev.Tokens = []int32{t.ID}
		}
		if !c.enqueue(ev) {
			return errors.New("client disconnected")
		}
		return nil
	}
	st, err := c.s.generate(ctx, g, queued, emit)
	if err != nil && !errors.Is(err, errCancelled) {
		c.sendError(id, err)
		return
	}
	if text, calls := tp.end(); text != "" || len(calls) > 0 {
		c.enqueue(protocol.Event{Type: protocol.EventDelta, ID: id, Text: text, ToolCalls: wsCalls(calls)})
	}
	c.enqueue(protocol.Event{Type: protocol.EventDone, ID: id, Stats: &st})
}

func (c *wsConn) runModels(ctx context.Context, req protocol.Request, params any) {
	s, id := c.s, req.ID
	if s.cfg.Models == nil {
		c.sendError(id, protocol.Errorf(protocol.CodeNotFound, "no model manager on this server"))
		return
	}
	switch req.Type {
	case protocol.TypeModelsList:
		ms, err := s.cfg.Models.List(ctx)
		if err != nil {
			c.sendError(id, err)
			return
		}
		if ms == nil {
			ms = []protocol.ModelEntry{}
		}
		c.reply(id, protocol.ModelsListResult{Models: ms})
	case protocol.TypeModelsPull:
		name := params.(*protocol.ModelParams).Name
		pctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		s.mu.Lock()
		if _, running := s.pulls[name]; running {
			s.mu.Unlock()
			c.sendError(id, protocol.Errorf(protocol.CodeBusy, "%s is already being downloaded", name))
			return
		}
		s.pulls[name] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.pulls, name)
			s.mu.Unlock()
		}()
		var last time.Time
		var lastPhase string
		err := s.cfg.Models.Pull(pctx, name, func(p protocol.PullProgress) {
			// At most 5 events a second, but every phase change.
			if now := time.Now(); p.Phase != lastPhase || now.Sub(last) >= 200*time.Millisecond {
				last, lastPhase = now, p.Phase
				c.enqueue(protocol.Event{Type: protocol.EventProgress, ID: id, Progress: &p})
			}
		})
		if err != nil {
			c.sendError(id, err)
			return
		}
		c.reply(id, protocol.OK{OK: true})
	case protocol.TypeModelsCancelPull:
		name := params.(*protocol.ModelParams).Name
		s.mu.Lock()
		cancel, ok := s.pulls[name]
		s.mu.Unlock()
		if !ok {
			c.sendError(id, protocol.Errorf(protocol.CodeNotFound, "no download of %s is running", name))
			return
		}
		cancel(ErrPullCancelled)
		c.reply(id, protocol.OK{OK: true})
	case protocol.TypeModelsDelete:
		name := params.(*protocol.ModelParams).Name
		path, err := s.cfg.Models.Path(ctx, name)
		if err != nil {
			c.sendError(id, err)
			return
		}
		if st := s.run.Status(); st.Model != nil && st.Model.Path == path {
			c.sendError(id, protocol.Errorf(protocol.CodeBusy, "%s is loaded: unload it first", name))
			return
		}
		if err := s.cfg.Models.Delete(ctx, name); err != nil {
			c.sendError(id, err)
			return
		}
		c.reply(id, protocol.OK{OK: true})
	}
}
