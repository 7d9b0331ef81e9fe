package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/strata-llm/strata/models"
	"github.com/strata-llm/strata/models/download"
)

// openModels opens the model store in the data folder. HF_ENDPOINT (as
// in the Hugging Face tools) points Hugging Face references at a mirror.
func openModels(env *cmdEnv) (*models.Manager, error) {
	return models.NewManager(models.StoreDir(env.Dirs.Data), models.Options{
		Log:    env.Log,
		HubURL: os.Getenv("HF_ENDPOINT"),
	})
}

func cmdModels(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "models", "strata models [--json]",
		"Lists the catalog and the installed models with their sizes, state and\nhow they fit this computer's memory.")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	m, err := openModels(env)
	if err != nil {
		return err
	}
	defer m.Close()
	list := m.List()
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	ram := models.TotalRAM()
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tSIZE\tON THIS MACHINE\tDESCRIPTION")
	unchecked := false
	for _, e := range list {
		name := e.Name
		if e.Unchecked {
			name += " *"
			unchecked = true
		}
		fit := fitText(models.Classify(e, ram))
		if e.NeedsNewer {
			fit = "-" // it cannot run here at all
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, stateText(e), sizeText(e), fit, e.Description)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unchecked {
		fmt.Fprintln(env.Stdout, "\n* repository not checked when the catalog was written; sizes are estimates.")
	}
	for _, e := range list {
		if e.NeedsNewer {
			fmt.Fprintln(env.Stdout, "Models that need a newer Strata use an architecture this version cannot run yet; they cannot be downloaded.")
			break
		}
	}
	return nil
}

func stateText(e models.Entry) string {
	switch {
	case e.NeedsNewer && e.State == models.StateAvailable:
		return "needs a newer Strata"
	case e.NeedsNewer && e.State == models.StateInstalled:
		return "installed, needs a newer Strata"
	}
	switch e.State {
	case models.StateInstalled:
		if e.Verified {
			return "installed, verified"
		}
		return "installed, unverified"
	case models.StatePaused, models.StateDownloading:
		if p := e.Progress; p != nil && p.Total > 0 {
			return fmt.Sprintf("%s %d%%", e.State, p.Done*100/p.Total)
		}
	case models.StateFailed:
		return "failed (strata pull to retry)"
	}
	return string(e.State)
}

func sizeText(e models.Entry) string {
	switch {
	case e.Size > 0:
		return download.FormatBytes(e.Size)
	case e.ApproxSize > 0:
		return "≈" + download.FormatBytes(e.ApproxSize)
	}
	return "?"
}

func fitText(f models.Fit) string {
	switch f {
	case models.FitInRAM:
		return "fits in RAM"
	case models.FitStreaming:
		return "runs with SSD streaming"
	case models.FitTooLarge:
		return "too large"
	}
	return "unknown"
}

func cmdPull(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "pull", "strata pull NAME|OWNER/REPO/FILE.gguf|https://URL",
		"Downloads a model: a catalog name (see strata models), a Hugging Face\nOWNER/REPO[@REVISION]/PATH/FILE.gguf, or an https URL. Split GGUFs bring all\ntheir parts. Interrupted downloads resume when pulled again.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: pull needs one model", errUsage)
	}
	m, err := openModels(env)
	if err != nil {
		return err
	}
	defer m.Close()
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	events := m.Subscribe(sctx)
	name, err := m.Pull(ctx, fs.Arg(0))
	if errors.Is(err, models.ErrInstalled) {
		fmt.Fprintf(env.Stdout, "%s is already installed\n", name)
		return nil
	}
	if err != nil {
		return err
	}
	show := newPullView(env, name)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("pull %s: event stream ended", name)
			}
			if ev.Name != name {
				continue
			}
			show.update(ev)
			if !ev.Phase.Terminal() {
				continue
			}
			show.finish()
			err := m.Wait(context.Background(), name)
			if err != nil {
				return err
			}
			path, _ := m.Path(name)
			if ev.Verified {
				fmt.Fprintf(env.Stdout, "%s installed and verified: %s\n", name, path)
			} else {
				fmt.Fprintf(env.Stdout, "%s installed, unverified (no published sha256 to check against): %s\n", name, path)
			}
			return nil
		case <-ctx.Done():
			m.Pause(name)
			show.finish()
			fmt.Fprintf(env.Stderr, "download paused; run \"strata pull %s\" to resume\n", fs.Arg(0))
			return ctx.Err()
		}
	}
}

// pullView shows pull progress: a bar on a terminal, else a line per
// phase and every 10%.
type pullView struct {
	env      *cmdEnv
	name     string
	bar      *progressbar.ProgressBar
	tty      bool
	phase    models.Phase
	lastTen  int64
	barTotal int64
}

func newPullView(env *cmdEnv, name string) *pullView {
	v := &pullView{env: env, name: name, lastTen: -1}
	if f, ok := env.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		v.tty = true
	}
	return v
}

func (v *pullView) update(ev models.Event) {
	if v.tty {
		v.updateBar(ev)
		return
	}
	if ev.Phase != v.phase {
		v.phase = ev.Phase
		if !ev.Phase.Terminal() {
			fmt.Fprintf(v.env.Stderr, "%s: %s\n", v.name, ev.Phase)
		}
	}
	if ev.Phase == models.PhaseDownloading && ev.Total > 0 {
		if ten := ev.Done * 10 / ev.Total; ten != v.lastTen {
			v.lastTen = ten
			line := fmt.Sprintf("%s: %d%% of %s", v.name, ten*10, download.FormatBytes(ev.Total))
			if ev.Rate > 0 {
				line += fmt.Sprintf(", %s/s", download.FormatBytes(int64(ev.Rate)))
			}
			if ev.ETASeconds > 0 {
				line += ", " + (time.Duration(ev.ETASeconds) * time.Second).String() + " left"
			}
			fmt.Fprintln(v.env.Stderr, line)
		}
	}
	if ev.Phase == models.PhaseFailed {
		fmt.Fprintf(v.env.Stderr, "%s: failed\n", v.name)
	}
}

// updateBar keeps one bar per phase with bytes to show (downloading,
// verifying).
func (v *pullView) updateBar(ev models.Event) {
	switch {
	case ev.Phase == models.PhaseStarting:
		return
	case ev.Phase.Terminal():
		if v.bar != nil {
			if ev.Phase == models.PhaseDone {
				v.bar.Finish()
			} else {
				v.bar.Exit()
			}
		}
		return
	}
	if v.bar == nil || ev.Phase != v.phase || (ev.Total > 0 && ev.Total != v.barTotal) {
		v.finish()
		total := ev.Total
		if total <= 0 {
			total = -1 // unknown: a spinner
		}
		v.barTotal = ev.Total
		v.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(v.env.Stderr),
			progressbar.OptionSetDescription(fmt.Sprintf("%s: %s", v.name, ev.Phase)),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30),
		)
	}
	v.phase = ev.Phase
	v.bar.Set64(ev.Done)
}

func (v *pullView) finish() {
	if v.bar != nil {
		if !v.bar.IsFinished() {
			v.bar.Finish()
		}
		fmt.Fprintln(v.env.Stderr)
		v.bar = nil
	}
}

func cmdRm(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "rm", "strata rm NAME", "Removes an installed model (or an unfinished download) and its files.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: rm needs one model name", errUsage)
	}
	m, err := openModels(env)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Delete(fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "removed %s\n", fs.Arg(0))
	return nil
}

func cmdVerify(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "verify", "strata verify NAME|FILE",
		"Re-hashes an installed model against the sha256 it was installed with and\nchecks it with the strict GGUF validator; for a FILE, prints its sha256 and\nvalidates it.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: verify needs a model name or a file", errUsage)
	}
	arg := fs.Arg(0)
	m, err := openModels(env)
	if err != nil {
		return err
	}
	defer m.Close()
	if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() && (strings.ContainsRune(arg, os.PathSeparator) || models.ValidateName(arg) != nil || strings.HasSuffix(arg, ".gguf")) {
		files, err := m.VerifyPath(ctx, arg, nil)
		for _, f := range files {
			fmt.Fprintf(env.Stdout, "%s  %s\n", f.SHA256, f.Name)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(env.Stdout, "valid GGUF")
		return nil
	}
	rep, err := m.Verify(ctx, arg, nil)
	for _, f := range rep.Files {
		status := "ok"
		switch {
		case f.Expected != "" && f.SHA256 != f.Expected:
			status = "SHA256 MISMATCH"
		case !f.Valid:
			status = "INVALID GGUF"
		case f.Expected == "":
			status = "ok (no published sha256: unverified)"
		}
		fmt.Fprintf(env.Stdout, "%s  %s  %s\n", f.SHA256, f.Name, status)
	}
	if err != nil {
		return err
	}
	if rep.Verified {
		fmt.Fprintf(env.Stdout, "%s verified\n", arg)
	} else {
		fmt.Fprintf(env.Stdout, "%s is a valid GGUF but unverified\n", arg)
	}
	return nil
}
