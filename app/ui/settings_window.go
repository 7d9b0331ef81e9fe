package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-llm/strata/internal/settings"
)

// settingsForm is the settings window's content: every knob grouped, with
// its explanation and default, inline errors, Apply and Reset to defaults.
type settingsForm struct {
	u       *UI
	win     fyne.Window
	rows    map[string]*fieldRow
	status  *widget.Label
	netWarn *widget.Label
	backend *widget.Label // what runs the model now, and why
	apply   *widget.Button
	reset   *widget.Button
	content fyne.CanvasObject
	inner   fyne.CanvasObject // the scrolled part
	bottom  fyne.CanvasObject // status and buttons

	origins    *widget.Entry // allowed web pages, one origin per line
	originsErr *widget.Label

	forget       *widget.Button        // "Forget what you learned"; nil without Deps.ForgetHistory
	forgetChoice *widget.RadioGroup    // in the open confirmation: the loaded model or every model
	forgetDlg    *dialog.ConfirmDialog // the open confirmation, if any
	forgetDone   chan struct{}         // closed when the last forget ended (for tests)
}

// The choices of the forget confirmation.
const (
	forgetLoaded = "Only the loaded model"
	forgetAll    = "Every model"
)

// fieldRow is one knob's controls.
type fieldRow struct {
	f     settings.Field
	check *widget.Check  // Bool fields
	entry *widget.Entry  // Int and Float fields
	pick  *widget.Select // Choice fields
	err   *widget.Label  // the validation error, hidden when none
}

func newSettingsForm(u *UI, w fyne.Window) *settingsForm {
	f := &settingsForm{u: u, win: w, rows: map[string]*fieldRow{}}
	f.status = widget.NewLabel("")
	f.status.Wrapping = fyne.TextWrapWord
	f.netWarn = widget.NewLabel("Other devices on your network will be able to reach Strata. They still need the token.")
	f.netWarn.Importance = widget.WarningImportance
	f.netWarn.Wrapping = fyne.TextWrapWord
	f.netWarn.Hide()
	f.backend = widget.NewLabel("")
	f.backend.Wrapping = fyne.TextWrapWord
	f.showBackend()

	groups := container.NewVBox()
	if u.d.SettingsNotice != "" {
		n := widget.NewLabel(u.d.SettingsNotice)
		n.Wrapping = fyne.TextWrapWord
		n.Importance = widget.WarningImportance
		groups.Add(n)
	}
	group := container.New(layout.NewFormLayout()) // one form, so the controls line up across groups
	groups.Add(group)
	last := ""
	for _, fl := range settings.Fields() {
		if fl.Group != last {
			last = fl.Group
			group.Add(widget.NewLabelWithStyle(fl.Group, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
			group.Add(widget.NewLabel(""))
		}
		r := f.newRow(fl)
		f.rows[fl.Key] = r
		var control fyne.CanvasObject = r.entry
		if r.check != nil {
			control = r.check
		}
		if r.pick != nil {
			control = r.pick
		}
		def := fl.Format(settings.Defaults())
		if fl.Kind == settings.Bool {
			def = map[bool]string{true: "on", false: "off"}[fl.Bool(settings.Defaults())]
		}
		help := fl.Help + " Default: " + def + "."
		if !fl.Live {
			help = "Coming in a later version. " + help
		}
		hl := widget.NewLabel(help)
		hl.Wrapping = fyne.TextWrapWord
		hl.SizeName = theme.SizeNameCaptionText
		hl.Importance = widget.LowImportance
		cell := container.NewVBox(control, hl, r.err)
		if fl.Key == "api.allow_network" {
			cell.Add(f.netWarn)
		}
		if fl.Key == "advanced.backend" {
			cell.Add(f.backend)
		}
		group.Add(widget.NewLabel(fl.Label))
		group.Add(cell)
		if fl.Key == "api.allow_network" && u.d.RegenerateToken != nil {
			group.Add(widget.NewLabel("Token"))
			group.Add(widget.NewButton("Regenerate token", f.regenerate))
		}
		if fl.Key == "memory.learn_usage" && u.d.ForgetHistory != nil {
			f.forget = widget.NewButton("Forget what you learned…", f.confirmForget)
			group.Add(widget.NewLabel(""))
			group.Add(f.forget)
		}
	}
	// Browser access: a list, so it is not one of the fields above.
	group.Add(widget.NewLabelWithStyle("Browser access", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	group.Add(widget.NewLabel(""))
	f.origins = widget.NewMultiLineEntry()
	f.origins.SetPlaceHolder("https://app.example\nchrome-extension://ID")
	f.origins.SetMinRowsVisible(3)
	f.originsErr = widget.NewLabel("")
	f.originsErr.Importance = widget.DangerImportance
	f.originsErr.Wrapping = fyne.TextWrapWord
	f.originsErr.Hide()
	oh := widget.NewLabel("Web pages and browser extensions that may use Strata, one per line (scheme://host[:port]). " +
		settings.BrowserRisk + " Default: none.")
	oh.Wrapping = fyne.TextWrapWord
	oh.SizeName = theme.SizeNameCaptionText
	oh.Importance = widget.LowImportance
	group.Add(widget.NewLabel("Allowed web pages"))
	group.Add(container.NewVBox(f.origins, oh, f.originsErr))

	f.apply = widget.NewButton("Apply", func() { f.Apply() })
	f.apply.Importance = widget.HighImportance
	f.reset = widget.NewButton("Reset to defaults", func() { f.Reset() })
	bar := container.NewHBox(f.reset, layout.NewSpacer(), f.apply)
	f.inner = container.NewPadded(groups)
	f.bottom = container.NewVBox(widget.NewSeparator(), f.status, bar)
	f.content = container.NewBorder(nil, f.bottom, nil, nil, container.NewVScroll(f.inner))
	return f
}

func (f *settingsForm) newRow(fl settings.Field) *fieldRow {
	r := &fieldRow{f: fl, err: widget.NewLabel("")}
	r.err.Importance = widget.DangerImportance
	r.err.Wrapping = fyne.TextWrapWord
	r.err.Hide()
	if fl.Kind == settings.Bool {
		r.check = widget.NewCheck("On", nil)
		if fl.Key == "api.allow_network" {
			r.check.OnChanged = func(on bool) {
				if on {
					f.netWarn.Show()
				} else {
					f.netWarn.Hide()
				}
			}
		}
		if !fl.Live {
			r.check.Disable()
		}
	} else if fl.Kind == settings.Choice {
		var labels []string
		for _, o := range fl.Options {
			labels = append(labels, o.Label)
		}
		r.pick = widget.NewSelect(labels, nil)
		if !fl.Live {
			r.pick.Disable()
		}
	} else {
		r.entry = widget.NewEntry()
		if !fl.Live {
			r.entry.Disable()
		}
	}
	return r
}

// showBackend says what runs the model and why (the engine's decision:
// the Metal selftest's verdict, or why the CPU runs it).
func (f *settingsForm) showBackend() {
	if f.u.d.Engine == nil {
		f.backend.Hide()
		return
	}
	st := f.u.d.Engine.Status()
	text := "Now: " + backendLabel(st.Backend)
	if st.BackendReason != "" {
		text += ". " + capitalize(st.BackendReason)
	}
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	f.backend.SetText(text)
	f.backend.Importance = widget.MediumImportance
	if st.BackendFallback {
		f.backend.Importance = widget.WarningImportance
	}
	f.backend.Show()
}

func backendLabel(name string) string {
	switch name {
	case "metal":
		return "the Mac's graphics chip (Metal)"
	case "cpu", "":
		return "the processor (CPU)"
	}
	return name
}

// load shows s in the controls and clears errors.
func (f *settingsForm) load(s settings.Settings) {
	for _, r := range f.rows {
		if r.check != nil {
			r.check.SetChecked(r.f.Bool(s))
		} else if r.pick != nil {
			r.pick.SetSelected(r.f.Format(s))
		} else {
			r.entry.SetText(r.f.Format(s))
		}
		r.setErr("")
	}
	f.origins.SetText(strings.Join(s.Browser.AllowedOrigins.List(), "\n"))
	f.originsErr.Hide()
	f.showBackend()
}

// parseOrigins reads the origins list, one per line (blank lines ignored).
func (f *settingsForm) parseOrigins() (settings.Origins, error) {
	var list []string
	for _, line := range strings.Split(f.origins.Text, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		o, err := settings.CheckOrigin(line)
		if err != nil {
			return settings.Origins{}, err
		}
		list = append(list, o)
	}
	return settings.NewOrigins(list...), nil
}

func (r *fieldRow) setErr(msg string) {
	r.err.SetText(msg)
	if msg == "" {
		r.err.Hide()
	} else {
		r.err.Show()
	}
}

// Apply checks every control; if all are valid it saves the settings
// (which notifies subscribers, so live knobs take effect) and reports
// whether it did. Errors appear under their fields.
func (f *settingsForm) Apply() bool {
	s := f.u.d.Settings.Get()
	bad := 0
	for _, fl := range settings.Fields() {
		r := f.rows[fl.Key]
		r.setErr("")
		if !fl.Live {
			continue // shown, not editable
		}
		if r.check != nil {
			fl.SetBool(&s, r.check.Checked)
			continue
		}
		if r.pick != nil {
			if err := fl.Parse(&s, r.pick.Selected); err != nil {
				r.setErr(errText(err))
				bad++
			}
			continue
		}
		if err := fl.Parse(&s, r.entry.Text); err != nil {
			r.setErr(errText(err))
			bad++
		}
	}
	f.originsErr.Hide()
	if o, err := f.parseOrigins(); err != nil {
		f.originsErr.SetText(capitalize(err.Error()) + ".")
		f.originsErr.Show()
		bad++
	} else {
		s.Browser.AllowedOrigins = o
	}
	if bad == 0 {
		for _, fe := range s.Check() {
			if fe.Key == "browser.allowed_origins" {
				f.originsErr.SetText(capitalize(fe.Msg) + ".")
				f.originsErr.Show()
			}
			if r, ok := f.rows[fe.Key]; ok {
				r.setErr(capitalize(fe.Msg) + ".")
			}
			bad++
		}
	}
	if bad > 0 {
		f.status.Importance = widget.DangerImportance
		f.status.SetText(fmt.Sprintf("%d setting(s) need fixing; see the red text.", bad))
		return false
	}
	if err := f.u.d.Settings.Set(s); err != nil {
		f.status.Importance = widget.DangerImportance
		f.status.SetText("Your settings could not be saved: " + err.Error())
		return false
	}
	f.status.Importance = widget.SuccessImportance
	f.status.SetText("Saved. The changes are in effect.")
	return true
}

// Reset restores every knob to its default (the chosen model stays) and
// saves.
func (f *settingsForm) Reset() bool {
	d := settings.Defaults()
	d.Model = f.u.d.Settings.Get().Model
	if err := f.u.d.Settings.Set(d); err != nil {
		f.status.Importance = widget.DangerImportance
		f.status.SetText("Your settings could not be saved: " + err.Error())
		return false
	}
	f.load(d)
	f.status.Importance = widget.SuccessImportance
	f.status.SetText("Defaults restored and saved.")
	return true
}

func (f *settingsForm) regenerate() {
	dialog.ShowConfirm("Regenerate the API token?",
		"Apps that use Strata will need the new token (use Copy API address and token).",
		func(ok bool) {
			if !ok {
				return
			}
			if err := f.u.d.RegenerateToken(); err != nil {
				f.status.Importance = widget.DangerImportance
				f.status.SetText("The token could not be regenerated: " + err.Error())
				return
			}
			f.status.Importance = widget.SuccessImportance
			f.status.SetText("A new token was made.")
		}, f.win)
}

// confirmForget asks what to forget (the loaded model's history, or every
// model's) and, when confirmed, deletes it in the background: the engine
// waits for a running generation first.
func (f *settingsForm) confirmForget() {
	f.u.mu.Lock()
	name := f.u.modelName(f.u.status)
	f.u.mu.Unlock()
	options := []string{forgetAll}
	if name != "" {
		options = []string{forgetLoaded + " (" + name + ")", forgetAll}
	}
	f.forgetChoice = widget.NewRadioGroup(options, nil)
	f.forgetChoice.SetSelected(options[0])
	f.forgetChoice.Required = true
	msg := widget.NewLabel("Strata learns which parts of a model your conversations use, so it starts faster after a restart. " +
		"Forgetting deletes that record; the model then learns again from scratch. Your chats are not touched.")
	msg.Wrapping = fyne.TextWrapWord
	f.forgetDlg = dialog.NewCustomConfirm("Forget what you learned?", "Forget", "Cancel",
		container.NewVBox(msg, f.forgetChoice), func(ok bool) {
			choice := f.forgetChoice.Selected
			f.forgetDlg, f.forgetChoice = nil, nil
			if ok {
				f.forgetNow(choice == forgetAll)
			}
		}, f.win)
	f.forgetDlg.Resize(fyne.NewSize(420, 260))
	f.forgetDlg.Show()
}

// forgetNow runs Deps.ForgetHistory off the UI thread and reports.
func (f *settingsForm) forgetNow(all bool) {
	f.status.Importance = widget.MediumImportance
	f.status.SetText("Forgetting…")
	f.forget.Disable()
	done := make(chan struct{})
	f.forgetDone = done
	go func() {
		defer close(done)
		err := f.u.d.ForgetHistory(all)
		fyne.Do(func() {
			f.u.mu.Lock()
			defer f.u.mu.Unlock()
			f.forget.Enable()
			switch {
			case err != nil:
				f.status.Importance = widget.DangerImportance
				f.status.SetText("What Strata learned could not be forgotten: " + err.Error())
			case all:
				f.status.Importance = widget.SuccessImportance
				f.status.SetText("Forgotten for every model. Strata learns again from your next conversation.")
			default:
				f.status.Importance = widget.SuccessImportance
				f.status.SetText("Forgotten for the loaded model. Strata learns again from your next conversation.")
			}
		})
	}()
}

// errText is a field error's message for display under its control.
func errText(err error) string {
	if fe, ok := err.(*settings.FieldError); ok {
		return capitalize(fe.Msg) + "."
	}
	return err.Error()
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
