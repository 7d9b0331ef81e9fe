package models_test

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-llm/strata/models"
	"github.com/strata-llm/strata/models/download"
)

// TestCrashChild is the child process of TestKill9: it pulls, verifies and
// deletes a model in a loop until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("STRATA_CRASH_DIR")
	if dir == "" {
		t.Skip("only runs as the child of TestKill9")
	}
	pemBytes, err := os.ReadFile(os.Getenv("STRATA_CRASH_CA"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig.RootCAs = pool
	m, err := models.NewManager(dir, models.Options{
		Catalog: []models.CatalogEntry{}, Client: &http.Client{Transport: tr}, HubURL: os.Getenv("STRATA_CRASH_HUB"),
		Download: download.Options{SaveInterval: 5 * time.Millisecond, MinPartSize: 1 << 20,
			FreeSpace: func(string) (uint64, error) { return 1 << 40, nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ready\n")
	for {
		name, err := m.Pull(t.Context(), "o/r/tiny.gguf")
		if err == nil {
			err = m.Wait(t.Context(), name)
		}
		if err != nil && !errors.Is(err, models.ErrInstalled) {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := m.Verify(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Delete(name); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKill9 kills a child process with SIGKILL at random moments while it
// downloads, verifies (rewriting the manifest) and deletes a model, and
// checks after each kill that no manifest names a file that is missing or
// differs, and that every manifest on disk is whole. The next child resumes
// the same store (so downloads also resume after a crash); at the end the
// model must install verified and identical.
func TestKill9(t *testing.T) {
	if os.Getenv("STRATA_CRASH_DIR") != "" {
		t.Skip("child")
	}
	data := readFixture(t)
	h, srv := newHub(t, map[string][]byte{"/o/r/resolve/main/tiny.gguf": data}, true)
	h.throttle = time.Millisecond
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	kills := 30
	if testing.Short() {
		kills = 5
	}
	seen := map[string]int{}
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRATA_CRASH_DIR="+dir, "STRATA_CRASH_CA="+caFile, "STRATA_CRASH_HUB="+srv.URL)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child %d did not start: %q %v\n%s", i, line, err, stderr.String())
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		if err := cmd.Process.Signal(os.Kill); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
			t.Fatalf("child %d ended by itself (%v) before the kill:\n%s", i, err, stderr.String())
		}
		seen[checkStore(t, dir, data)]++
	}
	t.Logf("kill -9 points by store state: %v", seen)

	m := newManager(t, dir, srv, nil)
	h.mu.Lock()
	h.throttle = 0
	h.mu.Unlock()
	name, err := m.Pull(t.Context(), "o/r/tiny.gguf")
	if err == nil {
		err = m.Wait(t.Context(), name)
	}
	if err != nil && !errors.Is(err, models.ErrInstalled) {
		t.Fatal(err)
	}
	p, err := m.Path("tiny")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatal("final install differs from the source")
	}
	if e := entry(t, m, "tiny"); !e.Verified {
		t.Error("final install not verified")
	}
}

// checkStore asserts the crash invariants and returns a label of the state
// the kill left.
func checkStore(t *testing.T, dir string, data []byte) string {
	t.Helper()
	folder := filepath.Join(dir, "tiny")
	b, err := os.ReadFile(filepath.Join(folder, "manifest.json"))
	switch {
	case err == nil:
		var man models.Manifest
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatalf("torn manifest after kill -9: %v\n%s", err, b)
		}
		for _, f := range man.Files {
			got, err := os.ReadFile(filepath.Join(folder, f.Name))
			if err != nil {
				t.Fatalf("manifest names %s, which is missing: %v", f.Name, err)
			}
			if !bytes.Equal(got, data) || f.SHA256 != sum(data) {
				t.Fatalf("manifest names %s, whose bytes differ", f.Name)
			}
		}
		return "installed"
	case !errors.Is(err, os.ErrNotExist):
		t.Fatal(err)
	}
	if _, err := os.Stat(folder); errors.Is(err, os.ErrNotExist) {
		return "deleted"
	}
	tmps, _ := filepath.Glob(filepath.Join(folder, ".*tmp*"))
	if _, err := os.Stat(filepath.Join(folder, "tiny.gguf.partial")); err == nil {
		return "downloading"
	}
	if len(tmps) > 0 {
		return "mid-write"
	}
	if _, err := os.Stat(filepath.Join(folder, "tiny.gguf")); err == nil {
		return "validating"
	}
	ents, _ := os.ReadDir(folder)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return "other:" + strings.Join(names, ",")
}
