package ui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/models"
)

// modelsView is the models window's content: the demo model, the catalog
// and installed models in one list, each with its size, how it fits this
// machine, its state, a progress bar while downloading, and its actions.
type modelsView struct {
	u       *UI
	win     fyne.Window
	header  *widget.Label
	list    *fyne.Container
	add     *widget.Entry
	message *widget.Label
	content fyne.CanvasObject

	rows      map[string]*modelRow // by model name ("" is the demo)
	verifying map[string]string    // name → progress text of a running Verify
	failures  map[string]string    // name → raw error of the last action
}

// modelRow is one model's widgets.
type modelRow struct {
	state    *widget.Label
	progress *widget.ProgressBar
	buttons  map[string]*widget.Button
}

// Button labels in the models window.
const (
	BtnDownload = "Download"
	BtnPause    = "Pause"
	BtnResume   = "Resume"
	BtnCancel   = "Cancel"
	BtnVerify   = "Verify"
	BtnDelete   = "Delete"
	BtnUse      = "Use"
	BtnDetails  = "Details…"
	BtnAdd      = "Add and download"
)

func newModelsView(u *UI, w fyne.Window) *modelsView {
	v := &modelsView{u: u, win: w, rows: map[string]*modelRow{}, verifying: map[string]string{}, failures: map[string]string{}}
	v.header = widget.NewLabel(fmt.Sprintf("This computer has %s of memory.", formatBytes(int64(u.d.TotalRAM))))
	v.list = container.NewVBox()
	v.add = widget.NewEntry()
	v.add.SetPlaceHolder("Hugging Face owner/repo/file.gguf or an https:// link")
	v.message = widget.NewLabel("")
	v.message.Wrapping = fyne.TextWrapWord
	v.message.Hide()
	addBtn := widget.NewButton(BtnAdd, func() { v.pull(strings.TrimSpace(v.add.Text)) })
	addRow := container.NewBorder(nil, nil, widget.NewLabel("Other model:"), addBtn, v.add)
	v.content = container.NewBorder(v.header, container.NewVBox(widget.NewSeparator(), v.message, addRow), nil, nil,
		container.NewVScroll(v.list))
	return v
}

// onEventLocked updates the list for a download event.
func (v *modelsView) onEventLocked(ev models.Event) {
	if ev.Phase == models.PhaseFailed {
		v.failures[ev.Name] = ev.Error
	}
	v.rebuildLocked()
}

// rebuildLocked redraws the list from the model manager.
func (v *modelsView) rebuildLocked() {
	u := v.u
	active := u.d.Settings.Get().Model
	v.list.RemoveAll()
	v.rows = map[string]*modelRow{}
	v.list.Add(v.demoRow(active == ""))
	if u.d.Models == nil {
		v.list.Refresh()
		return
	}
	for _, e := range u.d.Models.List() {
		if ev, ok := u.pulls[e.Name]; ok && e.State == models.StateDownloading {
			e.Progress = &ev
		}
		v.list.Add(widget.NewSeparator())
		v.list.Add(v.row(e, e.Name == active))
	}
	v.list.Refresh()
}

func (v *modelsView) demoRow(active bool) fyne.CanvasObject {
	title := "Demo model (random weights)"
	if active {
		title += " — in use"
	}
	r := &modelRow{state: widget.NewLabel("Built in · makes random text, for trying Strata out"), buttons: map[string]*widget.Button{}}
	v.rows[""] = r
	box := container.NewVBox(widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), r.state)
	if !active {
		b := widget.NewButton(BtnUse, func() { v.use("") })
		r.buttons[BtnUse] = b
		box.Add(container.NewHBox(b))
	}
	return box
}

func (v *modelsView) row(e models.Entry, active bool) fyne.CanvasObject {
	title := e.Display
	if title == "" {
		title = e.Name
	}
	if active {
		title += " — in use"
	}
	r := &modelRow{state: widget.NewLabel(v.stateText(e)), buttons: map[string]*widget.Button{}}
	r.state.Wrapping = fyne.TextWrapWord
	v.rows[e.Name] = r
	box := container.NewVBox(widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	if e.Description != "" {
		d := widget.NewLabel(e.Description)
		d.Wrapping = fyne.TextWrapWord
		box.Add(d)
	}
	if e.Unchecked && e.State == models.StateAvailable {
		// Catalog entries written where the hub could not be reached name a
		// repository and files that may not exist (yet): say so before a
		// download is tried, not only when it fails.
		u := widget.NewLabel("Its download address is a best guess that could not be checked when this version of Strata was made; if the files are not there, the download stops with a message and nothing is kept.")
		u.Wrapping = fyne.TextWrapWord
		box.Add(u)
	}
	if e.NeedsNewer {
		box.Add(widget.NewLabel(v.sizeText(e))) // how it would fit says nothing: it cannot run
	} else {
		box.Add(widget.NewLabel(v.sizeText(e) + " · " + fitText(models.Classify(e, v.u.d.TotalRAM))))
	}
	box.Add(r.state)
	if p := e.Progress; p != nil && (e.State == models.StateDownloading || e.State == models.StatePaused) {
		r.progress = widget.NewProgressBar()
		if p.Total > 0 {
			r.progress.SetValue(float64(p.Done) / float64(p.Total))
		}
		box.Add(r.progress)
	}
	btn := func(label string, f func()) {
		b := widget.NewButton(label, f)
		r.buttons[label] = b
	}
	name := e.Name
	switch e.State {
	case models.StateAvailable:
		if !e.NeedsNewer {
			btn(BtnDownload, func() { v.pull(name) })
		}
	case models.StateDownloading:
		btn(BtnPause, func() { v.act(name, "pause", v.u.d.Models.Pause) })
		btn(BtnCancel, func() { v.act(name, "cancel", v.u.d.Models.Cancel) })
	case models.StatePaused, models.StateFailed:
		btn(BtnResume, func() {
			v.act(name, "resume", func(n string) error { return v.u.d.Models.Resume(v.u.ctx, n) })
		})
		btn(BtnCancel, func() { v.act(name, "cancel", v.u.d.Models.Cancel) })
	case models.StateInstalled:
		if !active {
			btn(BtnUse, func() { v.use(name) })
		}
		btn(BtnVerify, func() { v.verify(name) })
		btn(BtnDelete, func() { v.confirmDelete(name, title) })
	}
	if raw := v.failureFor(e); raw != "" {
		btn(BtnDetails, func() { dialog.ShowInformation("What went wrong", raw, v.win) })
	}
	bar := container.NewHBox()
	for _, l := range []string{BtnUse, BtnDownload, BtnPause, BtnResume, BtnVerify, BtnCancel, BtnDelete, BtnDetails} {
		if b, ok := r.buttons[l]; ok {
			bar.Add(b)
		}
	}
	box.Add(bar)
	return box
}

func (v *modelsView) failureFor(e models.Entry) string {
	if raw := v.failures[e.Name]; raw != "" {
		return raw
	}
	if e.State == models.StateFailed {
		return e.Error
	}
	return ""
}

func (v *modelsView) sizeText(e models.Entry) string {
	switch {
	case e.Size > 0:
		return formatBytes(e.Size)
	case e.ApproxSize > 0:
		return "about " + formatBytes(e.ApproxSize)
	}
	return "size unknown"
}

func fitText(f models.Fit) string {
	switch f {
	case models.FitInRAM:
		return "fits in memory"
	case models.FitStreaming:
		return "runs with SSD streaming"
	case models.FitTooLarge:
		return "too large for this computer"
	}
	return "memory needs unknown"
}

func (v *modelsView) stateText(e models.Entry) string {
	if t, ok := v.verifying[e.Name]; ok {
		return t
	}
	p := e.Progress
	switch e.State {
	case models.StateDownloading:
		if p == nil {
			return "Starting the download…"
		}
		if p.Phase == models.PhaseVerifying {
			return "Checking the download… " + percent(p.Done, p.Total)
		}
		s := "Downloading " + percent(p.Done, p.Total)
		if p.Rate > 0 {
			s += " · " + formatBytes(int64(p.Rate)) + "/s"
		}
		if p.ETASeconds > 0 {
			s += " · " + formatETA(p.ETASeconds) + " left"
		}
		return s
	case models.StatePaused:
		if p != nil && p.Total > 0 {
			return "Paused at " + percent(p.Done, p.Total)
		}
		return "Paused"
	case models.StateFailed:
		return "The download failed: " + friendly(e.Error)
	case models.StateInstalled:
		if raw := v.failures[e.Name]; raw != "" {
			return "Installed · " + friendly(raw)
		}
		if e.NeedsNewer {
			return "Installed · needs a newer Strata: this version cannot run this kind of model yet"
		}
		if e.Verified {
			return "Installed · verified"
		}
		return "Installed · unverified (no checksum was published)"
	}
	if raw := v.failures[e.Name]; raw != "" {
		return "Not downloaded · " + friendly(raw)
	}
	if e.NeedsNewer {
		return "Needs a newer Strata: this version cannot run this kind of model yet, so it cannot be downloaded"
	}
	return "Not downloaded"
}

func percent(done, total int64) string {
	if total <= 0 {
		return formatBytes(done)
	}
	return fmt.Sprintf("%d%%", done*100/total)
}

func formatETA(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("about %d min", int(d.Minutes()+0.5))
	}
	return fmt.Sprintf("about %d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

func formatBytes(n int64) string {
	const (
		kb = 1 << 10
		mb = 1 << 20
		gb = 1 << 30
	)
	switch {
	case n >= gb:
		return fmt.Sprintf("%.1f GB", float64(n)/gb)
	case n >= mb:
		return fmt.Sprintf("%.1f MB", float64(n)/mb)
	case n >= kb:
		return fmt.Sprintf("%.0f KB", float64(n)/kb)
	}
	return fmt.Sprintf("%d bytes", n)
}

// friendly turns an error into words a nontechnical user understands; the
// raw error stays one click away (Details…).
func friendly(raw string) string {
	l := strings.ToLower(raw)
	switch {
	case strings.Contains(l, "no space") || strings.Contains(l, "free space") || strings.Contains(l, "disk"):
		return "there is not enough free disk space."
	case strings.Contains(l, "sha256") || strings.Contains(l, "checksum") || strings.Contains(l, "hash"):
		return "the downloaded file was damaged, so it was removed. Please try again."
	case strings.Contains(l, "not a valid gguf") || strings.Contains(l, "gguf"):
		return "the file is not a model Strata can use."
	case strings.Contains(l, "404") || strings.Contains(l, "not found"):
		return "the file was not found on the server."
	case strings.Contains(l, "401") || strings.Contains(l, "403") || strings.Contains(l, "forbidden"):
		return "the server refused the download (the model may need a login on its website)."
	case strings.Contains(l, "dial") || strings.Contains(l, "connection") || strings.Contains(l, "timeout") ||
		strings.Contains(l, "no such host") || strings.Contains(l, "network") || strings.Contains(l, "stall"):
		return "Strata could not reach the download server. Check your internet connection and try again."
	case strings.Contains(l, "needs a newer strata"):
		return "this model needs a newer Strata: this version cannot run this kind of model yet."
	case strings.Contains(l, "invalid name") || strings.Contains(l, "unknown model"):
		return "that is not a model name, Hugging Face file or https link Strata knows."
	}
	return "something went wrong (see Details)."
}

// showMessage puts a message above the add row; err "" clears it.
func (v *modelsView) showMessage(text string) {
	v.message.SetText(text)
	if text == "" {
		v.message.Hide()
	} else {
		v.message.Show()
	}
}

func (v *modelsView) pull(ref string) {
	if ref == "" || v.u.d.Models == nil {
		return
	}
	name, err := v.u.d.Models.Pull(v.u.ctx, ref)
	v.u.locked(func() {
		if err != nil {
			v.showMessage("Could not start the download: " + friendly(err.Error()))
			if name != "" {
				v.failures[name] = err.Error()
			}
			v.u.log.Warn("pull", "ref", ref, "err", err)
		} else {
			v.showMessage("")
			delete(v.failures, name)
		}
		v.rebuildLocked()
	})
}

// act runs a pull control (pause, resume, cancel) and shows its error.
func (v *modelsView) act(name, what string, f func(string) error) {
	err := f(name)
	v.u.locked(func() {
		if err != nil && !errors.Is(err, models.ErrNoPull) {
			v.failures[name] = err.Error()
			v.showMessage(fmt.Sprintf("Could not %s the download: %s", what, friendly(err.Error())))
		} else {
			delete(v.failures, name)
			v.showMessage("")
		}
		v.rebuildLocked()
	})
}

// use makes name the active model ("" for the demo) and, if the engine
// has a model loaded, loads the new one.
func (v *modelsView) use(name string) {
	s := v.u.d.Settings.Get()
	s.Model = name
	err := v.u.d.Settings.Set(s)
	v.u.locked(func() {
		if err != nil {
			v.showMessage("Could not choose the model: " + err.Error())
		}
		v.rebuildLocked()
	})
	if err != nil {
		return
	}
	switch v.u.d.Engine.Status().State {
	case engine.StateReady, engine.StateGenerating, engine.StateLoading:
		v.u.Start()
	}
}

func (v *modelsView) verify(name string) {
	v.u.locked(func() {
		v.verifying[name] = "Checking the files…"
		v.rebuildLocked()
	})
	go func() {
		rep, err := v.u.d.Models.Verify(v.u.ctx, name, func(done, total int64) {
			v.u.do(func() {
				v.verifying[name] = "Checking the files… " + percent(done, total)
				if r, ok := v.rows[name]; ok {
					r.state.SetText(v.verifying[name])
				}
			})
		})
		v.u.do(func() {
			delete(v.verifying, name)
			if err != nil {
				v.failures[name] = err.Error()
				v.showMessage("The check failed: " + friendly(err.Error()))
			} else {
				delete(v.failures, name)
				v.showMessage(fmt.Sprintf("%s checked: %s", name, verifyText(rep)))
			}
			v.rebuildLocked()
		})
	}()
}

func verifyText(rep models.VerifyReport) string {
	if rep.Verified {
		return "the files are intact."
	}
	return "the files are readable, but no published checksum exists to compare with."
}

func (v *modelsView) confirmDelete(name, title string) {
	dialog.ShowConfirm("Delete "+title+"?", "The model's files are removed from this computer. You can download it again later.",
		func(ok bool) {
			if ok {
				v.remove(name)
			}
		}, v.win)
}

func (v *modelsView) remove(name string) {
	err := v.u.d.Models.Delete(name)
	if err == nil && v.u.d.Settings.Get().Model == name {
		s := v.u.d.Settings.Get()
		s.Model = ""
		err = v.u.d.Settings.Set(s)
	}
	v.u.locked(func() {
		if err != nil {
			v.failures[name] = err.Error()
			v.showMessage("Could not delete the model: " + friendly(err.Error()))
		}
		v.rebuildLocked()
	})
}
