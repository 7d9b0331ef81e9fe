package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"boot.strata.dev/uilocale"
)

// TestMain lets a test run this binary as strata itself: with
// STRATA_TEST_MAIN set, its words are the command line.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("STRATA_TEST_MAIN"); ok {
		uilocale.Restore()
		if args == "printenv" {
			fmt.Printf("LANG=%s LANGUAGE=%s\n", os.Getenv("LANG"), os.Getenv("LANGUAGE"))
			os.Exit(0)
		}
		os.Exit(run(context.Background(), strings.Fields(args), os.Stdout, os.Stderr))
	}
	uilocale.Restore()
	os.Exit(m.Run())
}

// strataProcess runs this test binary as strata with args under env.
func strataProcess(t *testing.T, args string, env ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LC_ALL=", "LC_MESSAGES=", "LANGUAGE=", "STRATA_TEST_MAIN="+args)
	cmd.Env = append(cmd.Env, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("strata %s: %v\nstderr:\n%s", args, err, e.String())
	}
	return o.String(), e.String()
}

// Commands without a UI print nothing from the UI toolkit under the C
// locale (LANG=C.UTF-8: CI, containers, ssh), and the program sees the
// environment as it was given.
func TestCLocaleIsQuiet(t *testing.T) {
	home := t.TempDir()
	for _, lang := range []string{"C.UTF-8", "C.utf8", "POSIX", "C", "en_US.UTF-8"} {
		for _, args := range []string{"version", "--home " + home + " models --json", "help"} {
			out, errOut := strataProcess(t, args, "LANG="+lang)
			if errOut != "" {
				t.Errorf("LANG=%s strata %s wrote to stderr:\n%s", lang, args, errOut)
			}
			if out == "" {
				t.Errorf("LANG=%s strata %s printed nothing", lang, args)
			}
		}
		out, _ := strataProcess(t, "printenv", "LANG="+lang, "LANGUAGE=C.UTF-8:de")
		if want := "LANG=" + lang + " LANGUAGE=C.UTF-8:de\n"; out != want {
			t.Errorf("environment after start-up: %q, want %q", out, want)
		}
	}
}
