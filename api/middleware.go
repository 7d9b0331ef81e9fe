package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/strata-llm/strata/api/protocol"
)

// chain wraps h so that mws run in the order given (the first sees the
// request first).
func chain(h http.Handler, mws ...func(http.Handler) http.Handler) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// checkHost refuses requests whose Host header is not one of our own
// names with the port the connection arrived on, whatever address we are
// bound to. This stops DNS rebinding: a web page on evil.example whose name
// now resolves to 127.0.0.1 still sends Host: evil.example.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r) {
			writeHTTPError(w, http.StatusForbidden, protocol.CodeUnauthorized, "host not allowed: "+truncate(r.Host, 100))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(r *http.Request) bool {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil { // no port: the scheme's default
		host, port = r.Host, "80"
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		}
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, lport, err := net.SplitHostPort(local.String()); err == nil && lport != port {
			return false
		}
	}
	host = strings.ToLower(host)
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return slices.Contains(s.cfg.AllowedHosts, host)
}

// checkOrigin lets requests without an Origin header (native clients)
// through, and those from allow-listed origins with CORS headers; any other
// origin is refused — on HTTP and on the websocket handshake, which
// browsers do not subject to CORS.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !s.originAllowed(origin) {
			writeHTTPError(w, http.StatusForbidden, protocol.CodeUnauthorized, "origin not allowed: "+truncate(origin, 100))
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed matches exact origins (scheme and host compared without
// case, as browsers send them in lower case).
func (s *Server) originAllowed(origin string) bool {
	o := strings.ToLower(strings.TrimSuffix(origin, "/"))
	if o == "" || o == "null" {
		return false
	}
	match := func(list []string) bool {
		return slices.ContainsFunc(list, func(a string) bool { return strings.ToLower(strings.TrimSuffix(a, "/")) == o })
	}
	if match(s.cfg.AllowedOrigins) {
		return true
	}
	return s.cfg.Origins != nil && match(s.cfg.Origins())
}

// requireToken checks Authorization: Bearer on every request. The
// websocket may instead send the token in its first message, so a
// handshake without the header is let through to serveWS (which then
// demands hello with the token); a wrong token is refused here.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, present := bearer(r)
		switch {
		case present && s.cfg.Tokens.Valid(tok):
			next.ServeHTTP(w, r.WithContext(withAuthorized(r.Context())))
		case present:
			writeHTTPError(w, http.StatusUnauthorized, protocol.CodeUnauthorized, "invalid API token")
		case r.URL.Path == "/v1/ws":
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="strata"`)
			writeHTTPError(w, http.StatusUnauthorized, protocol.CodeUnauthorized, "missing API token: send Authorization: Bearer <token>")
		}
	})
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", true // present but not a bearer token: refused
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

type authKey struct{}

func withAuthorized(ctx context.Context) context.Context {
	return context.WithValue(ctx, authKey{}, true)
}

// authorized reports whether requireToken accepted a bearer token.
func authorized(ctx context.Context) bool {
	ok, _ := ctx.Value(authKey{}).(bool)
	return ok
}

// writeHTTPError writes an OpenAI-style error body with our stable code.
func writeHTTPError(w http.ResponseWriter, status int, code protocol.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": string(code), "code": string(code)},
	})
}

// httpStatus maps an error code to an HTTP status.
func httpStatus(code protocol.Code) int {
	switch code {
	case protocol.CodeUnauthorized:
		return http.StatusUnauthorized
	case protocol.CodeBadRequest:
		return http.StatusBadRequest
	case protocol.CodeNotFound:
		return http.StatusNotFound
	case protocol.CodeBusy:
		return http.StatusTooManyRequests
	case protocol.CodeModelNotLoaded:
		return http.StatusServiceUnavailable
	case protocol.CodeCancelled:
		return 499 // client closed request (nginx's convention)
	default:
		return http.StatusInternalServerError
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
