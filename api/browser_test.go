package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-llm/strata/api"
)

func findChromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome",
		"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome", "/Applications/Chromium.app/Contents/MacOS/Chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is required under CI=true (scripts/deps.sh test installs it)")
	}
	t.Skip("no chromium here (scripts/deps.sh test installs it on Debian)")
	return ""
}

const browserPage = `<!doctype html><title>strata origin test</title><script type="module">
const api = %q, token = %q;
const res = {};
try { const r = await fetch(api + "/v1/models", {headers: {Authorization: "Bearer " + token}}); res.fetch = r.status; }
catch (e) { res.fetch = "blocked"; }
try { const r = await fetch(api + "/v1/models"); res.noToken = r.status; } catch (e) { res.noToken = "blocked"; }
try {
  const r = await fetch(api + "/v1/chat/completions", {method: "POST", headers: {Authorization: "Bearer " + token, "Content-Type": "application/json"},
    body: JSON.stringify({messages: [{role: "user", content: "hi"}], max_tokens: 3})});
  res.chat = r.status === 200 ? (await r.json()).usage.completion_tokens : r.status;
} catch (e) { res.chat = "blocked"; }
res.ws = await new Promise((resolve) => {
  const ws = new WebSocket(api.replace("http", "ws") + "/v1/ws");
  ws.onopen = () => ws.send(JSON.stringify({type: "hello", id: "h", params: {token}}));
  ws.onmessage = (m) => { const ev = JSON.parse(m.data); resolve(ev.type === "result" ? "hello ok" : "event " + ev.type); ws.close(); };
  ws.onerror = () => resolve("blocked");
  setTimeout(() => resolve("timeout"), 15000);
});
await fetch("/result", {method: "POST", body: JSON.stringify(res)});
</script>`

type pageResult struct {
	Fetch   any `json:"fetch"`
	NoToken any `json:"noToken"`
	Chat    any `json:"chat"`
	WS      any `json:"ws"`
}

// pageServer serves the test page on its own origin and receives what the
// page saw.
func pageServer(t *testing.T, target func() (apiURL, token string)) (*httptest.Server, chan pageResult) {
	results := make(chan pageResult, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		apiURL, token := target()
		fmt.Fprintf(w, browserPage, apiURL, token)
	})
	mux.HandleFunc("POST /result", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var res pageResult
		if err := json.Unmarshal(b, &res); err != nil {
			t.Errorf("page result %q: %v", b, err)
		}
		select {
		case results <- res:
		default:
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, results
}

func runChromium(t *testing.T, bin, url string, results chan pageResult) pageResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--user-data-dir="+t.TempDir(), url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // chromium's helpers go with it
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	select {
	case r := <-results:
		return r
	case <-ctx.Done():
		t.Fatalf("the page reported nothing; chromium said:\n%s", stderr.String())
	}
	return pageResult{}
}

// A real headless Chromium page: from an allow-listed origin fetch and the
// websocket work (and still need the token); from any other origin both fail.
func TestBrowserOrigins(t *testing.T) {
	bin := findChromium(t)
	var mu sync.Mutex
	var apiURL, token string
	target := func() (string, string) { mu.Lock(); defer mu.Unlock(); return apiURL, token }
	allowed, allowedRes := pageServer(t, target)
	other, otherRes := pageServer(t, target)
	h := start(t, func(c *api.Config) { c.AllowedOrigins = []string{allowed.URL} })
	mu.Lock()
	apiURL, token = "http://"+h.addr, h.tok.String()
	mu.Unlock()

	r := runChromium(t, bin, allowed.URL, allowedRes)
	if r.Fetch != float64(200) || r.NoToken != float64(401) || r.Chat != float64(3) || r.WS != "hello ok" {
		t.Errorf("allowed origin %s: %+v", allowed.URL, r)
	}
	r = runChromium(t, bin, other.URL, otherRes)
	if r.Fetch != "blocked" || r.NoToken != "blocked" || r.Chat != "blocked" || r.WS != "blocked" {
		t.Errorf("other origin %s: %+v", other.URL, r)
	}
}
