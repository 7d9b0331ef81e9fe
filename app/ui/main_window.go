package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// mainView is the main window's content: the status and detail lines and
// the tray menu's items as buttons, for desktops without a tray.
type mainView struct {
	u       *UI
	status  *widget.Label
	detail  *widget.Label
	buttons map[string]*widget.Button
	login   *widget.Check
	content fyne.CanvasObject
}

func newMainView(u *UI) *mainView {
	v := &mainView{u: u, buttons: map[string]*widget.Button{}}
	v.status = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.status.Wrapping = fyne.TextWrapWord
	v.detail = widget.NewLabel("")
	box := container.NewVBox(v.status, v.detail, widget.NewSeparator())
	for _, it := range []struct {
		label string
		f     func()
	}{
		{LabelStart, u.Start}, {LabelStop, u.Stop},
		{LabelChat, func() { u.ShowChat() }}, {LabelStatus, func() { u.ShowStatus() }},
		{LabelModels, func() { u.ShowModels() }}, {LabelSettings, func() { u.ShowSettings() }},
		{LabelCopyAPI, u.CopyAPI}, {LabelLogs, u.OpenLogs},
	} {
		b := widget.NewButton(it.label, it.f)
		v.buttons[it.label] = b
		box.Add(b)
	}
	v.login = widget.NewCheck(LabelLogin, nil)
	box.Add(v.login)
	box.Add(widget.NewSeparator())
	quit := widget.NewButton(LabelQuit, u.Quit)
	v.buttons[LabelQuit] = quit
	box.Add(quit)
	v.content = container.NewPadded(box)
	return v
}

// refreshLocked mirrors the tray menu's state.
func (v *mainView) refreshLocked() {
	u := v.u
	u.menuLocked() // the buttons mirror the menu's items
	v.status.SetText(u.statusLineLocked())
	v.detail.SetText(u.detailLineLocked())
	for label, b := range v.buttons {
		if it, ok := u.items[label]; ok && it.Disabled {
			b.Disable()
		} else {
			b.Enable()
		}
	}
	login := u.items[LabelLogin]
	v.login.OnChanged = nil
	v.login.SetChecked(login.Checked)
	if login.Disabled {
		v.login.Disable()
	} else {
		v.login.Enable()
	}
	v.login.OnChanged = func(bool) { u.ToggleLogin() }
}
