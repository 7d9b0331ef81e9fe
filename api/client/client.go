// Package client is the Go client of Strata's websocket API (/v1/ws): it
// authenticates, multiplexes operations over one connection by request
// id, and turns the protocol's events into calls and callbacks. The tests
// and the menu-bar app use it.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/strata-llm/strata/api/protocol"
)

// Options configure Dial.
type Options struct {
	Token string
	// TokenInHello sends the token in the first message instead of the
	// Authorization header (as browsers must).
	TokenInHello bool
	Header       http.Header // extra handshake headers (e.g. Origin)
	Name         string      // client name sent in hello, for the server's logs
}

// Client is one websocket connection. Its methods are safe for
// concurrent use; each call is one request multiplexed on the connection.
type Client struct {
	ws    *websocket.Conn
	hello protocol.HelloResult

	wmu sync.Mutex // serialises writes

	mu      sync.Mutex
	pending map[string]*mailbox
	err     error // why the connection ended
	closing string

	next atomic.Uint64
	done chan struct{}
}

// Dial connects to url (ws://host:port/v1/ws), authenticates and sends
// hello. Refusals are *protocol.Error values (code unauthorized, busy, …).
func Dial(ctx context.Context, url string, opts Options) (*Client, error) {
	h := http.Header{}
	for k, v := range opts.Header {
		h[k] = v
	}
	if !opts.TokenInHello && opts.Token != "" {
		h.Set("Authorization", "Bearer "+opts.Token)
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.DialContext(ctx, url, h)
	if err != nil {
		if resp != nil {
			return nil, httpError(resp)
		}
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	c := &Client{ws: ws, pending: map[string]*mailbox{}, done: make(chan struct{})}
	go c.readLoop()
	hp := protocol.HelloParams{Protocol: protocol.Version, Client: opts.Name}
	if opts.TokenInHello {
		hp.Token = opts.Token
	}
	if err := c.call(ctx, protocol.TypeHello, hp, &c.hello); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// httpError turns a refused handshake into a *protocol.Error.
func httpError(resp *http.Response) error {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error.Code != "" {
		return &protocol.Error{Code: protocol.Code(body.Error.Code), Message: body.Error.Message}
	}
	return fmt.Errorf("handshake refused: HTTP %d", resp.StatusCode)
}

// Hello is the server's hello result.
func (c *Client) Hello() protocol.HelloResult { return c.hello }

// Done is closed when the connection has ended; Err says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended (nil while it is open). A server
// close carries its reason (e.g. "server shutting down").
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection.
func (c *Client) Close() error {
	c.wmu.Lock()
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second))
	c.wmu.Unlock()
	err := c.ws.Close()
	<-c.done
	return err
}

func (c *Client) readLoop() {
	defer close(c.done)
	for {
		var ev protocol.Event
		_, data, err := c.ws.ReadMessage()
		if err == nil {
			err = json.Unmarshal(data, &ev)
			if err != nil {
				err = fmt.Errorf("bad event from server: %w", err)
			}
		}
		if err != nil {
			c.mu.Lock()
			if c.closing != "" {
				err = fmt.Errorf("connection closed by server: %s (%w)", c.closing, err)
			}
			c.err = err
			for _, mb := range c.pending {
				mb.close(err)
			}
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		if ev.Type == protocol.EventClosing {
			c.closing = ev.Message
		}
		mb := c.pending[ev.ID]
		c.mu.Unlock()
		if mb != nil {
			mb.push(ev)
		}
	}
}

// Start sends one request and returns its id and a stream of its events.
// Call the returned stop function when done with it.
func (c *Client) Start(typ string, params any) (id string, next func(context.Context) (protocol.Event, error), stop func(), err error) {
	id = strconv.FormatUint(c.next.Add(1), 10)
	mb := newMailbox()
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return "", nil, nil, err
	}
	c.pending[id] = mb
	c.mu.Unlock()
	stop = func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.Send(typ, id, params); err != nil {
		stop()
		return "", nil, nil, err
	}
	return id, mb.pop, stop, nil
}

// Send writes one raw request.
func (c *Client) Send(typ, id string, params any) error {
	req := protocol.Request{Type: typ, ID: id}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return err
		}
		req.Params = b
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.SendRaw(b)
}

// SendRaw writes one message as it is (tests use it for malformed input).
func (c *Client) SendRaw(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, msg)
}

// Do sends a request and returns its final event (result or done),
// passing the others (queued, delta, progress, stats) to onEvent. An error
// event is returned as a *protocol.Error. If ctx ends first the request is
// cancelled on the server and Do waits for its final event.
func (c *Client) Do(ctx context.Context, typ string, params any, onEvent func(protocol.Event)) (protocol.Event, error) {
	id, next, stop, err := c.Start(typ, params)
	if err != nil {
		return protocol.Event{}, err
	}
	defer stop()
	cancelled := false
	for {
		ev, err := next(ctx)
		if err != nil {
			if ctx.Err() != nil && !cancelled {
				cancelled = true
				// Tell the server; the final event still comes.
				c.Send(protocol.TypeCancel, id+"-cancel", protocol.CancelParams{ID: id})
				var cancelWait context.CancelFunc
				ctx, cancelWait = context.WithTimeout(context.Background(), 10*time.Second)
				defer cancelWait()
				continue
			}
			return protocol.Event{}, err
		}
		switch ev.Type {
		case protocol.EventResult, protocol.EventDone:
			return ev, nil
		case protocol.EventError:
			return ev, &protocol.Error{Code: ev.Code, Message: ev.Message}
		default:
			if onEvent != nil {
				onEvent(ev)
			}
		}
	}
}

func (c *Client) call(ctx context.Context, typ string, params, result any) error {
	ev, err := c.Do(ctx, typ, params, nil)
	if err != nil {
		return err
	}
	if result != nil {
		if err := json.Unmarshal(ev.Result, result); err != nil {
			return fmt.Errorf("%s: bad result: %w", typ, err)
		}
	}
	return nil
}

// Generation is the outcome of Chat or Complete.
type Generation struct {
	ID        string
	Text      string
	Tokens    []int32
	Stats     protocol.GenStats
	Positions []int // queue positions reported while waiting
}

// Complete continues a raw prompt (or token ids), calling onDelta (may
// be nil) for every delta as it arrives. Cancelling ctx cancels the
// generation; the result then has FinishReason "cancelled".
func (c *Client) Complete(ctx context.Context, p protocol.CompleteParams, onDelta func(protocol.Event)) (*Generation, error) {
	return c.generate(ctx, protocol.TypeComplete, p, onDelta)
}

// Chat answers chat turns; see Complete.
func (c *Client) Chat(ctx context.Context, p protocol.ChatParams, onDelta func(protocol.Event)) (*Generation, error) {
	return c.generate(ctx, protocol.TypeChat, p, onDelta)
}

func (c *Client) generate(ctx context.Context, typ string, params any, onDelta func(protocol.Event)) (*Generation, error) {
	g := &Generation{}
	ev, err := c.Do(ctx, typ, params, func(ev protocol.Event) {
		g.ID = ev.ID
		switch ev.Type {
		case protocol.EventQueued:
			g.Positions = append(g.Positions, ev.Position)
		case protocol.EventDelta:
			g.Text += ev.Text
			g.Tokens = append(g.Tokens, ev.Tokens...)
			if onDelta != nil {
				onDelta(ev)
			}
		}
	})
	g.ID = ev.ID
	if ev.Stats != nil {
		g.Stats = *ev.Stats
	}
	return g, err
}

// Cancel cancels the running request id (a generation, pull or
// subscription). It does not wait for the request's final event.
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.call(ctx, protocol.TypeCancel, protocol.CancelParams{ID: id}, nil)
}

// EngineStatus returns the engine's state.
func (c *Client) EngineStatus(ctx context.Context) (protocol.EngineStatus, error) {
	var st protocol.EngineStatus
	err := c.call(ctx, protocol.TypeEngineStatus, nil, &st)
	return st, err
}

// EngineLoad loads model (empty: the selected or demo model).
func (c *Client) EngineLoad(ctx context.Context, model string) (protocol.EngineStatus, error) {
	var st protocol.EngineStatus
	err := c.call(ctx, protocol.TypeEngineLoad, protocol.EngineLoadParams{Model: model}, &st)
	return st, err
}

// EngineUnload unloads the model.
func (c *Client) EngineUnload(ctx context.Context) (protocol.EngineStatus, error) {
	var st protocol.EngineStatus
	err := c.call(ctx, protocol.TypeEngineUnload, nil, &st)
	return st, err
}

// ModelsList lists catalog and installed models.
func (c *Client) ModelsList(ctx context.Context) ([]protocol.ModelEntry, error) {
	var r protocol.ModelsListResult
	err := c.call(ctx, protocol.TypeModelsList, nil, &r)
	return r.Models, err
}

// ModelsPull downloads a model, calling onProgress (may be nil).
func (c *Client) ModelsPull(ctx context.Context, name string, onProgress func(protocol.PullProgress)) error {
	_, err := c.Do(ctx, protocol.TypeModelsPull, protocol.ModelParams{Name: name}, func(ev protocol.Event) {
		if ev.Progress != nil && onProgress != nil {
			onProgress(*ev.Progress)
		}
	})
	return err
}

// ModelsCancelPull cancels a running download of name.
func (c *Client) ModelsCancelPull(ctx context.Context, name string) error {
	return c.call(ctx, protocol.TypeModelsCancelPull, protocol.ModelParams{Name: name}, nil)
}

// ModelsDelete removes an installed model.
func (c *Client) ModelsDelete(ctx context.Context, name string) error {
	return c.call(ctx, protocol.TypeModelsDelete, protocol.ModelParams{Name: name}, nil)
}

// ModelsSelect makes name the active model and loads it.
func (c *Client) ModelsSelect(ctx context.Context, name string) (protocol.EngineStatus, error) {
	var st protocol.EngineStatus
	err := c.call(ctx, protocol.TypeModelsSelect, protocol.ModelParams{Name: name}, &st)
	return st, err
}

// SettingsGet returns the settings object.
func (c *Client) SettingsGet(ctx context.Context) (json.RawMessage, error) {
	var r json.RawMessage
	err := c.call(ctx, protocol.TypeSettingsGet, nil, &r)
	return r, err
}

// SettingsSet changes the fields in patch (a struct or map marshalled to
// a JSON object) and returns the settings as applied.
func (c *Client) SettingsSet(ctx context.Context, patch any) (json.RawMessage, error) {
	b, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	var r json.RawMessage
	err = c.call(ctx, protocol.TypeSettingsSet, protocol.SettingsSetParams{Settings: b}, &r)
	return r, err
}

// Subscribe asks for telemetry every interval, delivered to fn on its own
// goroutine until the returned stop is called (which unsubscribes).
func (c *Client) Subscribe(ctx context.Context, interval time.Duration, fn func(protocol.Telemetry)) (stop func() error, err error) {
	id, next, done, err := c.Start(protocol.TypeStatsSubscribe, protocol.StatsSubscribeParams{IntervalMS: int(interval / time.Millisecond)})
	if err != nil {
		return nil, err
	}
	ev, err := next(ctx)
	if err == nil && ev.Type == protocol.EventError {
		err = &protocol.Error{Code: ev.Code, Message: ev.Message}
	}
	if err != nil {
		done()
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			ev, err := next(lctx)
			if err != nil {
				return
			}
			if ev.Type == protocol.EventStats && ev.Telemetry != nil {
				fn(*ev.Telemetry)
			}
		}
	}()
	return func() error {
		cancel()
		<-finished
		done()
		return c.call(context.Background(), protocol.TypeStatsUnsubscribe, protocol.StatsUnsubscribeParams{ID: id}, nil)
	}, nil
}

// mailbox is an unbounded queue of one request's events, so the reader
// never blocks on a slow consumer.
type mailbox struct {
	mu     sync.Mutex
	q      []protocol.Event
	err    error
	notify chan struct{}
}

func newMailbox() *mailbox { return &mailbox{notify: make(chan struct{}, 1)} }

func (m *mailbox) push(ev protocol.Event) {
	m.mu.Lock()
	m.q = append(m.q, ev)
	m.mu.Unlock()
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

func (m *mailbox) close(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
	}
	m.mu.Unlock()
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

func (m *mailbox) pop(ctx context.Context) (protocol.Event, error) {
	for {
		m.mu.Lock()
		if len(m.q) > 0 {
			ev := m.q[0]
			m.q = m.q[1:]
			m.mu.Unlock()
			return ev, nil
		}
		err := m.err
		m.mu.Unlock()
		if err != nil {
			return protocol.Event{}, err
		}
		select {
		case <-m.notify:
		case <-ctx.Done():
			return protocol.Event{}, ctx.Err()
		}
	}
}

// IsCode reports whether err is a protocol error with code.
func IsCode(err error, code protocol.Code) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == code
}
