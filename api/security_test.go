package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/strata-llm/strata/api"
	"github.com/strata-llm/strata/api/client"
	"github.com/strata-llm/strata/api/protocol"
)

func errorCode(t *testing.T, resp *http.Response) string {
	t.Helper()
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return body.Error.Code
}

// nothingHappened checks no generation ran.
func nothingHappened(t *testing.T, h *harness) {
	t.Helper()
	if st := h.eng.Status(); st.LastStats != nil {
		t.Errorf("a generation ran: %+v", st.LastStats)
	}
}

type secCase struct {
	name   string
	method string
	path   string
	body   string
	hdr    map[string]string
	status int
	code   string
}

func TestHTTPSecurity(t *testing.T) {
	h := start(t, func(c *api.Config) { c.AllowedOrigins = []string{"http://localhost:3000"} })
	port := h.addr[strings.LastIndex(h.addr, ":")+1:]
	chat := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	tests := []secCase{
		{"rebinding host", "POST", "/v1/chat/completions", chat, map[string]string{"Host": "evil.example:" + port}, 403, "unauthorized"},
		{"host without port", "GET", "/v1/models", "", map[string]string{"Host": "localhost"}, 403, "unauthorized"},
		{"host wrong port", "GET", "/v1/models", "", map[string]string{"Host": "127.0.0.1:1"}, 403, "unauthorized"},
		{"foreign origin", "POST", "/v1/chat/completions", chat, map[string]string{"Origin": "https://evil.example"}, 403, "unauthorized"},
		{"null origin", "GET", "/v1/models", "", map[string]string{"Origin": "null"}, 403, "unauthorized"},
		{"missing token", "POST", "/v1/chat/completions", chat, map[string]string{"Authorization": ""}, 401, "unauthorized"},
		{"wrong token", "POST", "/v1/completions", `{"prompt":"a"}`, map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 64)}, 401, "unauthorized"},
		{"basic auth", "GET", "/v1/models", "", map[string]string{"Authorization": "Basic eDp5"}, 401, "unauthorized"},
		{"health needs token", "GET", "/health", "", map[string]string{"Authorization": ""}, 401, "unauthorized"},
		{"malformed json", "POST", "/v1/chat/completions", `{"messages":`, nil, 400, "bad_request"},
		{"path-like model", "POST", "/v1/chat/completions", `{"model":"../../etc/passwd","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "bad_request"},
		{"oversized body", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 1<<20+10) + `"}`, nil, 413, "bad_request"},
		{"bad role", "POST", "/v1/chat/completions", `{"messages":[{"role":"root","content":"hi"}]}`, nil, 400, "bad_request"},
		{"n=2", "POST", "/v1/chat/completions", `{"n":2,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "bad_request"},
		{"unknown endpoint", "GET", "/v1/secret", "", nil, 404, "not_found"},
	}
	// Every Ollama endpoint is behind the same Host, Origin and token checks.
	ochat := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":2}}`
	for _, ep := range []struct{ method, path, body string }{
		{"GET", "/api/version", ""}, {"GET", "/api/tags", ""}, {"GET", "/api/ps", ""},
		{"POST", "/api/show", `{"model":"demo"}`}, {"POST", "/api/chat", ochat},
		{"POST", "/api/generate", `{"model":"demo","prompt":"hi","options":{"num_predict":2}}`},
	} {
		tests = append(tests,
			secCase{ep.path + " rebinding host", ep.method, ep.path, ep.body, map[string]string{"Host": "evil.example:" + port}, 403, "unauthorized"},
			secCase{ep.path + " foreign origin", ep.method, ep.path, ep.body, map[string]string{"Origin": "https://evil.example"}, 403, "unauthorized"},
			secCase{ep.path + " missing token", ep.method, ep.path, ep.body, map[string]string{"Authorization": ""}, 401, "unauthorized"},
			secCase{ep.path + " wrong token", ep.method, ep.path, ep.body, map[string]string{"Authorization": "Bearer " + strings.Repeat("1", 64)}, 401, "unauthorized"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.request(t, tt.method, tt.path, tt.body, tt.hdr)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if code := errorCode(t, resp); code != tt.code {
				t.Errorf("code %q, want %q", code, tt.code)
			}
		})
	}
	nothingHappened(t, h)

	// Allowed: our names with the port, an allow-listed origin (with CORS).
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "LOCALHOST:" + port} {
		if resp := h.request(t, "GET", "/v1/models", "", map[string]string{"Host": host}); resp.StatusCode != 200 {
			t.Errorf("host %s: %d", host, resp.StatusCode)
		}
	}
	resp := h.request(t, "GET", "/v1/models", "", map[string]string{"Origin": "http://localhost:3000"})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Errorf("allowed origin: %d %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp = h.request(t, "OPTIONS", "/v1/chat/completions", "", map[string]string{"Origin": "http://localhost:3000", "Authorization": ""})
	if resp.StatusCode != 204 || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

func dialRaw(t *testing.T, h *harness, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(h.wsURL(), hdr)
	if ws != nil {
		t.Cleanup(func() { ws.Close() })
	}
	return ws, resp, err
}

// readUntilClose reads events until the server closes, returning them and
// the close error.
func readUntilClose(t *testing.T, ws *websocket.Conn) ([]protocol.Event, error) {
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var evs []protocol.Event
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			return evs, err
		}
		var ev protocol.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("event %q: %v", b, err)
		}
		evs = append(evs, ev)
	}
}

func TestWebsocketSecurity(t *testing.T) {
	h := start(t, func(c *api.Config) { c.AllowedOrigins = []string{"http://localhost:3000"} })
	port := h.addr[strings.LastIndex(h.addr, ":")+1:]
	ctx := ctxT(t, 30*time.Second)

	t.Run("foreign origin", func(t *testing.T) {
		_, err := client.Dial(ctx, h.wsURL(), client.Options{Token: h.tok.String(), Header: http.Header{"Origin": {"https://evil.example"}}})
		if !client.IsCode(err, protocol.CodeUnauthorized) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("allowed origin, token in hello", func(t *testing.T) {
		c, err := client.Dial(ctx, h.wsURL(), client.Options{Token: h.tok.String(), TokenInHello: true, Header: http.Header{"Origin": {"http://localhost:3000"}}})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
	t.Run("rebinding host", func(t *testing.T) {
		_, resp, err := dialRaw(t, h, http.Header{"Host": {"attacker.example:" + port}, "Authorization": {"Bearer " + h.tok.String()}})
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Errorf("got %v %v", resp, err)
		}
	})
	t.Run("wrong token header", func(t *testing.T) {
		_, err := client.Dial(ctx, h.wsURL(), client.Options{Token: "nope"})
		if !client.IsCode(err, protocol.CodeUnauthorized) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("wrong token in hello", func(t *testing.T) {
		_, err := client.Dial(ctx, h.wsURL(), client.Options{Token: strings.Repeat("a", 64), TokenInHello: true})
		if !client.IsCode(err, protocol.CodeUnauthorized) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("missing token: first message is not hello", func(t *testing.T) {
		ws, _, err := dialRaw(t, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		ws.WriteJSON(protocol.Request{Type: protocol.TypeComplete, ID: "1", Params: json.RawMessage(`{"prompt":"a"}`)})
		evs, err := readUntilClose(t, ws)
		if len(evs) == 0 || evs[0].Code != protocol.CodeUnauthorized || evs[0].ID != "1" {
			t.Errorf("events %+v", evs)
		}
		if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
			t.Errorf("close %v, want policy violation", err)
		}
	})
	t.Run("missing token: silence", func(t *testing.T) {
		h2 := start(t, func(c *api.Config) { c.AuthTimeout = 200 * time.Millisecond })
		ws, _, err := dialRaw(t, h2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readUntilClose(t, ws); err == nil {
			t.Error("connection stayed open without a token")
		}
	})
	nothingHappened(t, h)

	ws, _, err := dialRaw(t, h, http.Header{"Authorization": {"Bearer " + h.tok.String()}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(msg string) protocol.Event {
		t.Helper()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var ev protocol.Event
		if err := ws.ReadJSON(&ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	tests := []struct {
		name string
		msg  string
		code protocol.Code
	}{
		{"malformed json", `{"type":"complete",`, protocol.CodeBadRequest},
		{"unknown type", `{"type":"shell.exec","id":"1"}`, protocol.CodeBadRequest},
		{"unknown field", `{"type":"complete","id":"1","params":{"prompt":"a","cmd":"x"}}`, protocol.CodeBadRequest},
		{"oversized", `{"type":"complete","id":"1","params":{"prompt":"` + strings.Repeat("a", 1<<20) + `"}}`, protocol.CodeBadRequest},
		{"traversal select", `{"type":"models.select","id":"1","params":{"name":"../../../etc/passwd"}}`, protocol.CodeBadRequest},
		{"traversal delete", `{"type":"models.delete","id":"1","params":{"name":"..\\..\\x"}}`, protocol.CodeBadRequest},
		{"absolute load", `{"type":"engine.load","id":"1","params":{"model":"/etc/passwd"}}`, protocol.CodeBadRequest},
		{"pull file url", `{"type":"models.pull","id":"1","params":{"name":"file:///etc/passwd"}}`, protocol.CodeBadRequest},
		{"cancel unknown", `{"type":"cancel","id":"1","params":{"id":"zzz"}}`, protocol.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := send(tt.msg)
			if ev.Type != protocol.EventError || ev.Code != tt.code {
				t.Errorf("got %+v, want error %s", ev, tt.code)
			}
		})
	}
	// The connection survived all of that.
	ev := send(`{"type":"engine.status","id":"s"}`)
	if ev.Type != protocol.EventResult || ev.ID != "s" {
		t.Errorf("after errors: %+v", ev)
	}
	if st := h.eng.Status(); st.Model == nil || st.Model.Path != demoPath {
		t.Errorf("engine changed: %+v", st)
	}
	nothingHappened(t, h)

	// Far over the limit: the connection is closed with 1009 (the write
	// itself may already fail when the server hangs up mid-message).
	werr := ws.WriteMessage(websocket.TextMessage, []byte(strings.Repeat(" ", 5<<20)))
	_, err = readUntilClose(t, ws)
	if werr == nil && !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Errorf("huge message: %v, want close 1009", err)
	}
	if err == nil {
		t.Error("huge message: connection still open")
	}
}

func TestConnectionLimit(t *testing.T) {
	h := start(t, func(c *api.Config) { c.MaxConnections = 2 })
	h.dial(t)
	h.dial(t)
	_, err := client.Dial(ctxT(t, 10*time.Second), h.wsURL(), client.Options{Token: h.tok.String()})
	if !client.IsCode(err, protocol.CodeBusy) {
		t.Errorf("third connection: %v, want busy", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	h := start(t, func(c *api.Config) { c.IdleTimeout = 300 * time.Millisecond })
	c := h.dial(t)
	select {
	case <-c.Done():
		if err := c.Err(); err == nil || !strings.Contains(err.Error(), "idle") {
			t.Errorf("closed with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("idle connection not closed")
	}
}

// A client that stops reading is disconnected; others and the engine go on.
func TestSlowClientDisconnected(t *testing.T) {
	h := start(t, func(c *api.Config) {
		c.SendBuffer = 4
		c.WriteTimeout = 500 * time.Millisecond
	})
	ws, _, err := dialRaw(t, h, http.Header{"Authorization": {"Bearer " + h.tok.String()}})
	if err != nil {
		t.Fatal(err)
	}
	// A long generation; once it runs, many requests whose replies are
	// never read: the socket fills, the writer blocks, the bounded buffer
	// overflows.
	ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"complete","id":"slow","params":{"prompt":"a","max_tokens":400,"temperature":0}}`))
	// It has started once its first token arrives. (Polling the engine's
	// state for "generating" raced: with 4 events buffered, the unread
	// deltas could overflow the buffer and the generation end, cancelled,
	// between two polls.)
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), `"delta"`) {
		t.Fatalf("the generation did not start: %s %v", b, err)
	}
	ws.SetReadDeadline(time.Time{})
	for i := 0; i < 400; i++ {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"settings.get","id":"s`+strconv.Itoa(i)+`"}`)); err != nil {
			break // the server already hung up
		}
	}
	// The server hangs up (reading now only drains what was sent before).
	if _, err := readUntilClose(t, ws); err == nil {
		t.Fatal("slow connection not closed")
	}
	// Its generation stopped early, cancelled.
	deadline := time.Now().Add(10 * time.Second)
	for h.eng.Status().State == "generating" {
		if time.Now().After(deadline) {
			t.Fatal("the slow client's generation was not stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := h.eng.Status().LastStats; st == nil || st.FinishReason != "cancelled" || st.GeneratedTokens >= 400 {
		t.Errorf("slow client's generation: %+v, want cancelled early", st)
	}
	c := h.dial(t)
	g, err := c.Complete(ctxT(t, 30*time.Second), greedy(3, "b"), nil)
	if err != nil || len(g.Tokens) != 3 || len(g.Positions) != 0 {
		t.Fatalf("other client: %+v %v", g, err)
	}
}

// Origins from the settings apply at once, exact match, extension schemes too.
func TestOriginsFromSettings(t *testing.T) {
	var mu sync.Mutex
	list := []string{"chrome-extension://abcdef"}
	h := start(t, func(c *api.Config) {
		c.Origins = func() []string { mu.Lock(); defer mu.Unlock(); return list }
	})
	check := func(origin string, want int) {
		t.Helper()
		if resp := h.request(t, "GET", "/api/tags", "", map[string]string{"Origin": origin}); resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
	check("chrome-extension://abcdef", 200)
	check("chrome-extension://abcdeg", 403)
	check("https://abcdef", 403)
	mu.Lock()
	list = []string{"http://localhost:5173"}
	mu.Unlock()
	check("chrome-extension://abcdef", 403)
	check("http://localhost:5173", 200)
	check("http://localhost:5174", 403)
}
