package ui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-llm/strata/models"
	"github.com/strata-llm/strata/models/download"
)

// gatedServer serves body over TLS without Range support; it sends the
// first half, then waits for release before sending the rest.
func gatedServer(t *testing.T, body []byte) (*httptest.Server, chan struct{}) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tiny.gguf" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		half := len(body) / 2
		w.Write(body[:half])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write(body[half:])
	}))
	t.Cleanup(srv.Close)
	return srv, release
}

func TestModelsWindowDownload(t *testing.T) {
	demo, err := demoPath()
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(demo)
	if err != nil {
		t.Fatal(err)
	}
	srv, release := gatedServer(t, body)
	cat, err := models.LoadCatalog([]byte(fmt.Sprintf(`{"version":1,"models":[{
		"name":"tiny-test","display":"Tiny test model","description":"A small model served by this test.",
		"family":"test","arch":"qwen3moe","quant":"Q8_0","size_bytes":%d,
		"ram_recommended_bytes":1073741824,"ram_min_bytes":536870912,
		"files":[{"url":%q,"size":%d,"sha256":%q}]}]}`, len(body), srv.URL+"/tiny.gguf", len(body), sha256hex(body))))
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, nil)
	mgr, err := models.NewManager(filepath.Join(fx.dirs.Data, "models"), models.Options{
		Catalog: cat, Client: srv.Client(),
		Download: download.Options{ProgressInterval: -1, SpaceMargin: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	fx.u.d.Models = mgr
	u := fx.u
	u.Watch()
	w := u.ShowModels()
	v := u.modelsView

	row := func(name string) (state string, progress float64, hasBar bool, buttons []string) {
		u.locked(func() {
			r, ok := v.rows[name]
			if !ok {
				return
			}
			state = r.state.Text
			if r.progress != nil {
				hasBar, progress = true, r.progress.Value
			}
			for l := range r.buttons {
				buttons = append(buttons, l)
			}
		})
		return
	}
	st, _, _, btns := row("tiny-test")
	if st != "Not downloaded" || strings.Join(btns, ",") != BtnDownload {
		t.Fatalf("before: %q %v", st, btns)
	}

	// press taps a button by running its action: test.Tap would walk the
	// widget tree while the download events rebuild it (the test driver runs
	// fyne.Do on the caller's goroutine, the real one on the main one).
	press := func(name, label string) {
		t.Helper()
		var f func()
		u.locked(func() {
			if b := v.rows[name].buttons[label]; b != nil && !b.Disabled() {
				f = b.OnTapped
			}
		})
		if f == nil {
			t.Fatalf("%s: no enabled %s button", name, label)
		}
		f()
	}
	press("tiny-test", BtnDownload)

	// Half the file arrives, then the server holds the rest: the row shows
	// 50 % with a progress bar.
	waitFor(t, "50% progress", func() bool {
		st, p, bar, _ := row("tiny-test")
		return bar && p == 0.5 && strings.HasPrefix(st, "Downloading 50%")
	})
	st, _, _, btns = row("tiny-test")
	if !strings.Contains(strings.Join(btns, ","), BtnPause) || !strings.Contains(strings.Join(btns, ","), BtnCancel) {
		t.Fatalf("downloading: buttons %v", btns)
	}
	t.Logf("%s while downloading: %q", time.Now().Format("15:04:05.000"), st)
	var b Badge
	u.locked(func() { b = u.badgeLocked() })
	if b.Title != "↓ 50%" {
		t.Errorf("badge while downloading %+v", b)
	}

	// Pause keeps the progress; the golden image shows the paused row.
	press("tiny-test", BtnPause)
	waitFor(t, "paused", func() bool { st, _, _, _ := row("tiny-test"); return st == "Paused at 50%" })
	if _, p, bar, btns := row("tiny-test"); !bar || p != 0.5 || !strings.Contains(strings.Join(btns, ","), BtnResume) {
		t.Fatalf("paused: bar %v at %v, buttons %v", bar, p, btns)
	}
	u.locked(func() { test.AssertImageMatches(t, "models_paused.png", w.Canvas().Capture()) })

	close(release)
	t.Logf("%s resume", time.Now().Format("15:04:05.000"))
	press("tiny-test", BtnResume)
	waitFor(t, "installed", func() bool { st, _, _, _ := row("tiny-test"); return st == "Installed · verified" })
	t.Logf("%s installed", time.Now().Format("15:04:05.000"))
	_, _, bar, btns := row("tiny-test")
	if bar {
		t.Error("progress bar shown for an installed model")
	}
	for _, want := range []string{BtnUse, BtnVerify, BtnDelete} {
		if !strings.Contains(strings.Join(btns, ","), want) {
			t.Errorf("installed: no %s in %v", want, btns)
		}
	}

	// Use it: the settings name it and Start loads it.
	press("tiny-test", BtnUse)
	if got := fx.store.Get().Model; got != "tiny-test" {
		t.Fatalf("active model %q", got)
	}
	path, err := mgr.Path("tiny-test")
	if err != nil {
		t.Fatal(err)
	}
	u.Menu()
	tap(t, u, LabelStart)
	waitFor(t, "ready", func() bool { return strings.HasSuffix(u.StatusLine(), "ready") })
	if got := fx.eng.Status().Model.Path; got != path {
		t.Fatalf("engine loaded %s, want %s", got, path)
	}

	u.locked(func() {
		test.AssertImageMatches(t, "models.png", w.Canvas().Capture())
	})
}

// An entry the engine cannot run says it needs a newer Strata and offers no
// download.
func TestModelsWindowNeedsNewerStrata(t *testing.T) {
	cat, err := models.LoadCatalog([]byte(`{"version":1,"models":[
		{"name":"next-test","display":"Next test model","description":"An entry of an architecture no version runs.",
		"family":"test","arch":"qwen99future","quant":"Q4_K_M","approx_size_bytes":48500000000,
		"ram_recommended_bytes":68719476736,"ram_min_bytes":17179869184,
		"files":[{"url":"https://example.invalid/next-00001-of-00002.gguf","size":0,"sha256":""},
		         {"url":"https://example.invalid/next-00002-of-00002.gguf","size":0,"sha256":""}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, nil)
	mgr, err := models.NewManager(filepath.Join(fx.dirs.Data, "models"), models.Options{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	fx.u.d.Models = mgr
	fx.u.d.TotalRAM = 8 << 30
	w := fx.u.ShowModels()
	v := fx.u.modelsView
	fx.u.locked(func() {
		r := v.rows["next-test"]
		if r == nil {
			t.Fatal("no row for next-test")
		}
		if !strings.HasPrefix(r.state.Text, "Needs a newer Strata") {
			t.Errorf("state %q", r.state.Text)
		}
		if len(r.buttons) != 0 {
			t.Errorf("buttons %v, want none", r.buttons)
		}
	})
	var texts []string
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			texts = append(texts, x.Text)
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case *container.Scroll:
			walk(x.Content)
		}
	}
	fx.u.locked(func() { walk(w.Content()) })
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "Needs a newer Strata") || strings.Contains(all, "fits") || strings.Contains(all, "streaming") || strings.Contains(all, "too large") {
		t.Errorf("window text:\n%s", all)
	}
}

// A catalog entry whose hub address could not be checked says so before a
// download is tried, and still offers the download.
func TestModelsWindowUncheckedEntry(t *testing.T) {
	cat, err := models.LoadCatalog([]byte(`{"version":1,"models":[
		{"name":"guess-test","display":"Guessed model","description":"An unchecked entry.",
		"family":"test","arch":"qwen3moe","quant":"Q4_K_M","approx_size_bytes":1000000,"unchecked":true,
		"ram_recommended_bytes":68719476736,"ram_min_bytes":17179869184,
		"files":[{"url":"https://example.invalid/guess.gguf","size":0,"sha256":""}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, nil)
	mgr, err := models.NewManager(filepath.Join(fx.dirs.Data, "models"), models.Options{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	fx.u.d.Models = mgr
	fx.u.d.TotalRAM = 8 << 30
	w := fx.u.ShowModels()
	v := fx.u.modelsView
	fx.u.locked(func() {
		r := v.rows["guess-test"]
		if r == nil {
			t.Fatal("no row for guess-test")
		}
		if r.buttons[BtnDownload] == nil {
			t.Errorf("buttons %v, want a download", r.buttons)
		}
	})
	var texts []string
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			texts = append(texts, x.Text)
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case *container.Scroll:
			walk(x.Content)
		}
	}
	fx.u.locked(func() { walk(w.Content()) })
	if all := strings.Join(texts, "\n"); !strings.Contains(all, "could not be checked") {
		t.Errorf("window text:\n%s", all)
	}
}
