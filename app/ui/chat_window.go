package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-llm/strata/api/client"
	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/app/chats"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/atomicfile"
	"github.com/strata-llm/strata/models"
)

// Chat window texts (tests find widgets by them).
const (
	labelSend    = "Send"
	labelStop    = "Stop"
	labelNewChat = "New chat"
	labelDelete  = "Delete"
	labelExport  = "Export…"
	demoChoice   = "Demo model (random weights)"
	demoWarning  = "This is the demo model. Its weights are random, so its words are random too.\n" +
		"It shows how replies stream, nothing more. Download a real model in Models…"
)

// chatEntry is the message box: Enter sends, Shift+Enter starts a new
// line, Escape stops a reply being written.
type chatEntry struct {
	widget.Entry
	shift  bool
	onSend func()
	onStop func()
}

func newChatEntry(onSend func()) *chatEntry {
	e := &chatEntry{onSend: onSend}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.SetPlaceHolder("Message (Enter sends, Shift+Enter starts a new line, Esc stops)")
	e.ExtendBaseWidget(e)
	return e
}

// KeyDown tracks Shift (desktop.Keyable).
func (e *chatEntry) KeyDown(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = true
	}
	e.Entry.KeyDown(k)
}

// KeyUp tracks Shift (desktop.Keyable).
func (e *chatEntry) KeyUp(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = false
	}
	e.Entry.KeyUp(k)
}

// TypedKey sends on Enter; with Shift held the entry inserts a newline
// (its OnSubmitted is nil, so Shift does not submit).
func (e *chatEntry) TypedKey(k *fyne.KeyEvent) {
	if (k.Name == fyne.KeyReturn || k.Name == fyne.KeyEnter) && !e.shift {
		if e.onSend != nil {
			e.onSend()
		}
		return
	}
	if k.Name == fyne.KeyEscape && e.onStop != nil {
		e.onStop()
		return
	}
	e.Entry.TypedKey(k)
}

// chatView is the chat window's content: the list of chats on the left;
// the model picker, the system prompt, the conversation, the status line
// and the message box on the right. Fields are guarded by UI.mu.
type chatView struct {
	u     *UI
	w     fyne.Window
	store *chats.Store

	list   []*chats.Chat // saved chats, newest first
	cur    *chats.Chat   // the chat shown (not in list until saved)
	models map[string]string

	notice     *widget.Label
	demo       *fyne.Container
	right      *fyne.Container
	picker     *widget.Select
	system     *widget.Entry
	transcript *fyne.Container
	scroll     *container.Scroll
	status     *widget.Label
	input      *chatEntry
	send, stop *widget.Button
	del, exp   *widget.Button
	history    *widget.List
	content    fyne.CanvasObject

	// The running reply: gen counts sends; a reply's events apply only
	// while gen is still theirs (Stop, New chat and switching chats move
	// it on, so nothing arrives after them).
	gen       int
	cancel    context.CancelFunc
	reply     *widget.RichText
	replyText string
	pickerSet bool // picker changes made by the code, not the person
	selecting bool // list selections made by the code

	// The list's titles, for its callbacks (which run during refreshes,
	// some while UI.mu is held).
	titlesMu sync.Mutex
	titles   []string
}

// refreshHistoryLocked shows v.list in the list of chats.
func (v *chatView) refreshHistoryLocked() {
	titles := make([]string, len(v.list))
	for i, c := range v.list {
		titles[i] = c.Title
	}
	v.titlesMu.Lock()
	v.titles = titles
	v.titlesMu.Unlock()
	v.history.Refresh()
	v.selectCurrentLocked()
}

// selectCurrentLocked highlights the chat shown in the list.
func (v *chatView) selectCurrentLocked() {
	v.selecting = true
	defer func() { v.selecting = false }()
	if i := v.indexLocked(v.cur.ID); i >= 0 {
		v.history.Select(i)
	} else {
		v.history.UnselectAll()
	}
}

func newChatView(u *UI, w fyne.Window) *chatView {
	v := &chatView{u: u, w: w, models: map[string]string{}}
	// The labels above the conversation do not wrap (a wrapped label
	// there reports its height for the wrong width and spills over the
	// conversation): their lines are broken by hand and truncated.
	v.notice = widget.NewLabel("")
	v.notice.Truncation = fyne.TextTruncateEllipsis
	v.notice.Importance = widget.WarningImportance
	v.notice.Hide()
	warn := widget.NewLabel(demoWarning)
	warn.Truncation = fyne.TextTruncateEllipsis
	warn.Importance = widget.WarningImportance
	v.demo = container.NewBorder(nil, nil, widget.NewIcon(theme.WarningIcon()), nil, warn)
	v.demo.Hide()

	v.picker = widget.NewSelect(nil, func(choice string) {
		if v.pickerSet {
			return // set by refreshModelsLocked, which holds the lock
		}
		u.locked(func() { v.pickedLocked(choice) })
	})
	v.system = widget.NewMultiLineEntry()
	v.system.Wrapping = fyne.TextWrapWord
	v.system.SetMinRowsVisible(2)
	v.system.SetPlaceHolder("System prompt for this chat (optional), e.g. \"Answer briefly.\"")
	v.system.OnChanged = v.systemChanged

	v.transcript = container.NewVBox()
	v.scroll = container.NewVScroll(v.transcript)
	v.status = widget.NewLabel("")
	v.status.Truncation = fyne.TextTruncateEllipsis
	v.input = newChatEntry(func() { u.locked(v.sendLocked) })
	v.input.onStop = func() { u.locked(v.stopLocked) }
	v.input.SetMinRowsVisible(3)
	v.send = widget.NewButtonWithIcon(labelSend, theme.MailSendIcon(), func() { u.locked(v.sendLocked) })
	v.send.Importance = widget.HighImportance
	v.stop = widget.NewButtonWithIcon(labelStop, theme.MediaStopIcon(), func() { u.locked(v.stopLocked) })
	v.stop.Hide()

	newChat := widget.NewButtonWithIcon(labelNewChat, theme.ContentAddIcon(), func() { u.locked(v.newChatLocked) })
	v.del = widget.NewButtonWithIcon(labelDelete, theme.DeleteIcon(), func() { u.locked(v.confirmDeleteLocked) })
	v.exp = widget.NewButtonWithIcon(labelExport, theme.DocumentSaveIcon(), func() { u.locked(v.exportDialogLocked) })
	v.history = widget.NewList(
		func() int { v.titlesMu.Lock(); defer v.titlesMu.Unlock(); return len(v.titles) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			v.titlesMu.Lock()
			title := ""
			if i < len(v.titles) {
				title = v.titles[i]
			}
			v.titlesMu.Unlock()
			o.(*widget.Label).SetText(title)
		})
	v.history.OnSelected = func(i widget.ListItemID) {
		if v.selecting {
			return // selectCurrentLocked, which holds the lock
		}
		u.locked(func() { v.openChatLocked(i) })
	}

	left := container.NewBorder(newChat, container.NewGridWithColumns(2, v.del, v.exp), nil, nil, v.history)
	top := container.NewVBox(
		container.NewBorder(nil, nil, widget.NewLabel("Model"), nil, v.picker),
		v.system, v.notice, v.demo,
	)

	buttons := container.NewStack(v.send, v.stop)
	bottom := container.NewVBox(v.status, container.NewBorder(nil, nil, nil, buttons, v.input))
	right := container.NewBorder(top, bottom, nil, nil, v.scroll)
	v.right = right
	split := container.NewHSplit(left, right)
	split.Offset = 0.26
	v.content = split
	return v
}

// openLocked loads the chats (once) and shows the newest, or a new one.
func (v *chatView) openLocked() {
	if v.store != nil {
		return
	}
	st, err := chats.Open(filepath.Join(v.u.d.Dirs.Data, "chats"))
	if err != nil {
		v.showNoticeLocked("Chats cannot be saved: " + err.Error())
		v.cur = chats.New(time.Now())
		v.showChatLocked()
		return
	}
	v.store = st
	list, notices, err := st.Load()
	if err != nil {
		notices = append(notices, err.Error())
	}
	for _, n := range notices {
		v.u.log.Warn("chats", "notice", n)
	}
	v.showNoticeLocked(strings.Join(notices, "\n"))
	v.list = list
	if len(list) > 0 {
		v.cur = list[0]
	} else {
		v.cur = chats.New(time.Now())
	}
	v.refreshHistoryLocked()
	v.showChatLocked()
}

func (v *chatView) showNoticeLocked(text string) {
	v.notice.SetText(text)
	if text == "" {
		v.notice.Hide()
	} else {
		v.notice.Show()
	}
	v.right.Refresh()
	v.scroll.ScrollToBottom()
}

// refreshModelsLocked fills the picker: the demo model, then the
// installed ones; the chosen one (settings) is selected.
func (v *chatView) refreshModelsLocked() {
	opts := []string{demoChoice}
	v.models = map[string]string{demoChoice: ""}
	if v.u.d.Models != nil {
		for _, e := range v.u.d.Models.List() {
			if e.State != models.StateInstalled {
				continue
			}
			label := e.Display
			if label == "" || v.models[label] != "" {
				label = e.Name
			}
			opts = append(opts, label)
			v.models[label] = e.Name
		}
	}
	chosen := v.u.d.Settings.Get().Model
	sel := demoChoice
	for label, name := range v.models {
		if name == chosen {
			sel = label
		}
	}
	v.pickerSet = true
	v.picker.Options = opts
	v.picker.SetSelected(sel)
	v.picker.Refresh()
	v.pickerSet = false
	v.refreshDemoLocked()
}

// refreshDemoLocked shows the demo warning when the demo model is chosen
// or loaded.
func (v *chatView) refreshDemoLocked() {
	demo := v.picker.Selected == demoChoice
	if m := v.u.status.Model; m != nil && (v.u.status.State == engine.StateReady || v.u.status.State == engine.StateGenerating) {
		demo = m.Demo
	}
	if demo == v.demo.Visible() {
		return
	}
	if demo {
		v.demo.Show()
	} else {
		v.demo.Hide()
	}
	v.right.Refresh()
	v.scroll.ScrollToBottom()
}

// pickedLocked switches the model: the choice is saved in the settings
// and, if the engine is running, loaded (through the API, which waits
// for a running generation).
func (v *chatView) pickedLocked(choice string) {
	name, ok := v.models[choice]
	if !ok {
		return
	}
	s := v.u.d.Settings.Get()
	if s.Model != name {
		s.Model = name
		if err := v.u.d.Settings.Set(s); err != nil {
			v.statusLocked("Could not save the choice: " + err.Error())
			return
		}
	}
	v.refreshDemoLocked()
	st := v.u.d.Engine.Status().State // now, not as last watched
	if st != engine.StateReady && st != engine.StateGenerating {
		v.statusLocked(choice + " will load with the first message.")
		return
	}
	v.statusLocked("Loading " + choice + "…")
	go func() {
		err := v.withClient(func(ctx context.Context, c *client.Client) error {
			if name == "" {
				_, err := c.EngineLoad(ctx, "")
				return err
			}
			_, err := c.ModelsSelect(ctx, name)
			return err
		})
		v.u.do(func() {
			if err != nil {
				v.statusLocked("Could not load " + choice + ": " + err.Error())
			} else {
				v.statusLocked(choice + " is loaded.")
			}
			v.refreshDemoLocked()
		})
	}()
}

func (v *chatView) withClient(f func(context.Context, *client.Client) error) error {
	ctx, cancel := context.WithTimeout(v.u.ctx, 10*time.Minute)
	defer cancel()
	c, err := v.u.conn.get(ctx)
	if err != nil {
		return err
	}
	return f(ctx, c)
}

func (v *chatView) statusLocked(s string) { v.status.SetText(s) }

// systemChanged keeps the chat's system prompt (saved once the chat is).
func (v *chatView) systemChanged(s string) {
	v.u.locked(func() { v.systemChangedLocked(s) })
}

func (v *chatView) systemChangedLocked(s string) {
	if v.cur != nil && v.cur.System != s {
		v.cur.System = s
		if len(v.cur.Messages) > 0 {
			v.saveLocked()
		}
	}
}

// showChatLocked rebuilds the conversation for v.cur.
func (v *chatView) showChatLocked() {
	v.transcript.Objects = nil
	for _, m := range v.cur.Messages {
		v.transcript.Add(v.messageBox(m))
	}
	v.transcript.Refresh()
	v.system.OnChanged, v.system.Text = nil, v.cur.System
	v.system.Refresh()
	v.system.OnChanged = v.systemChanged
	v.scroll.ScrollToBottom()
	v.selectCurrentLocked()
	saved := v.indexLocked(v.cur.ID) >= 0
	if saved {
		v.del.Enable()
		v.exp.Enable()
	} else {
		v.del.Disable()
		v.exp.Disable()
	}
	v.w.SetTitle("Strata Chat")
}

func (v *chatView) indexLocked(id string) int {
	for i, c := range v.list {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// messageBox shows one turn: who spoke, then the text (the model's as
// Markdown, the person's as typed).
func (v *chatView) messageBox(m chats.Message) fyne.CanvasObject {
	who := widget.NewLabelWithStyle("You", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	var body *widget.RichText
	if m.Role == chats.RoleAssistant {
		who.SetText(v.assistantName())
		body = widget.NewRichTextFromMarkdown(m.Content)
		if m.Stopped {
			body.Segments = append(body.Segments, &widget.TextSegment{Text: "(stopped)", Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Italic: true}, ColorName: theme.ColorNamePlaceHolder}})
		}
	} else {
		body = widget.NewRichText(&widget.TextSegment{Text: m.Content, Style: widget.RichTextStyleParagraph})
	}
	body.Wrapping = fyne.TextWrapWord
	box := container.NewVBox(who, body)
	if m.Role != chats.RoleAssistant {
		bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
		bg.CornerRadius = theme.InputRadiusSize()
		return container.NewStack(bg, box)
	}
	return box
}

func (v *chatView) assistantName() string {
	if v.cur != nil && v.cur.Model != "" {
		return v.cur.Model
	}
	return "Strata"
}

// saveLocked writes the current chat and puts it first in the list.
func (v *chatView) saveLocked() {
	if v.store == nil {
		return
	}
	v.cur.Updated = time.Now()
	if err := v.store.Save(v.cur); err != nil {
		v.u.log.Error("save chat", "id", v.cur.ID, "err", err)
		v.statusLocked("This chat could not be saved: " + err.Error())
		return
	}
	if i := v.indexLocked(v.cur.ID); i >= 0 {
		v.list = append(v.list[:i], v.list[i+1:]...)
	}
	v.list = append([]*chats.Chat{v.cur}, v.list...)
	v.refreshHistoryLocked()
	v.del.Enable()
	v.exp.Enable()
}

// busyLocked shows Stop instead of Send while a reply runs.
func (v *chatView) busyLocked(busy bool) {
	if busy {
		v.send.Hide()
		v.stop.Show()
	} else {
		v.stop.Hide()
		v.send.Show()
	}
}

// sendLocked sends the message box's text and streams the reply.
func (v *chatView) sendLocked() {
	text := strings.TrimSpace(v.input.Text)
	if text == "" || v.cancel != nil {
		return
	}
	if len(v.cur.Messages) == 0 {
		v.cur.Title = chats.TitleFrom(text)
	}
	v.input.SetText("")
	v.cur.Messages = append(v.cur.Messages, chats.Message{Role: chats.RoleUser, Content: text, Time: time.Now()})
	v.transcript.Add(v.messageBox(v.cur.Messages[len(v.cur.Messages)-1]))
	v.saveLocked()

	msgs := make([]protocol.Message, 0, len(v.cur.Messages)+1)
	if s := strings.TrimSpace(v.cur.System); s != "" {
		msgs = append(msgs, protocol.Message{Role: "system", Content: s})
	}
	for _, m := range v.cur.Messages {
		msgs = append(msgs, protocol.Message{Role: m.Role, Content: m.Content})
	}
	v.cur.Messages = append(v.cur.Messages, chats.Message{Role: chats.RoleAssistant, Time: time.Now()})
	v.nameModelLocked()
	v.replyText = ""
	v.reply = widget.NewRichText()
	v.reply.Wrapping = fyne.TextWrapWord
	who := widget.NewLabelWithStyle(v.assistantName(), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.transcript.Add(container.NewVBox(who, v.reply))
	v.scroll.ScrollToBottom()

	v.gen++
	gen := v.gen
	ctx, cancel := context.WithCancel(v.u.ctx)
	v.cancel = cancel
	v.busyLocked(true)
	v.statusLocked("Sending…")
	v.w.Canvas().Focus(v.input)
	go v.run(ctx, gen, msgs)
}

// run asks the engine, through the API, for the reply of generation gen.
func (v *chatView) run(ctx context.Context, gen int, msgs []protocol.Message) {
	var final protocol.Event
	out := &replyStream{}
	c, err := v.u.conn.get(ctx)
	if err == nil {
		var st protocol.EngineStatus
		if st, err = c.EngineStatus(ctx); err == nil && st.State != string(engine.StateReady) && st.State != string(engine.StateGenerating) {
			v.u.do(func() {
				if v.gen == gen {
					v.statusLocked("Loading the model…")
				}
			})
			_, err = c.EngineLoad(ctx, "")
		}
	}
	for err == nil {
		final, err = c.Do(ctx, protocol.TypeChat, protocol.ChatParams{Messages: msgs}, func(ev protocol.Event) {
			switch ev.Type {
			case protocol.EventQueued:
				v.u.do(func() {
					if v.gen == gen {
						v.statusLocked(queueText(ev.Position))
					}
				})
			case protocol.EventDelta:
				if out.add(ev.Text) {
					v.u.do(func() {
						if text := out.take(); v.gen == gen {
							v.deltaLocked(text)
						}
					})
				}
			}
		})
		// A conversation longer than the model's context: leave out its
		// oldest turns, as Ollama and LM Studio do, and ask again.
		shorter, ok := dropOldestTurn(msgs)
		if !tooLong(err) || !ok {
			break
		}
		msgs, err = shorter, nil
		v.u.do(func() {
			if v.gen == gen {
				v.statusLocked("This chat is longer than the model can read at once: its oldest messages are left out.")
			}
		})
	}
	v.u.do(func() {
		if text := out.take(); v.gen == gen && text != "" {
			v.deltaLocked(text)
		}
		v.finishLocked(gen, final, err)
	})
}

// replyStream gathers a reply's text between two redraws, so a window
// that draws slower than the engine writes redraws once for many tokens
// instead of falling behind.
type replyStream struct {
	mu        sync.Mutex
	pending   string
	scheduled bool
}

// add appends text; it reports whether a redraw must be scheduled.
func (r *replyStream) add(text string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending += text
	if r.scheduled {
		return false
	}
	r.scheduled = true
	return true
}

// take returns the text gathered since the last take.
func (r *replyStream) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.pending
	r.pending, r.scheduled = "", false
	return t
}

// tooLong reports whether the engine refused a prompt longer than its
// context (before generating anything).
func tooLong(err error) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == protocol.CodeBadRequest && strings.Contains(pe.Message, "does not fit the context")
}

// dropOldestTurn removes the oldest user turn and the replies after it,
// keeping a leading system prompt and at least the last user message.
func dropOldestTurn(msgs []protocol.Message) ([]protocol.Message, bool) {
	head := 0
	if len(msgs) > 0 && msgs[0].Role == "system" {
		head = 1
	}
	rest := msgs[head:]
	next := 1
	for next < len(rest) && rest[next].Role != chats.RoleUser {
		next++
	}
	if next >= len(rest) {
		return msgs, false // only the last message is left
	}
	return append(append([]protocol.Message(nil), msgs[:head]...), rest[next:]...), true
}

// queueText says where a waiting message stands.
func queueText(pos int) string {
	if pos == 1 {
		return "Waiting for the engine: another reply is being written; this one is next (position 1 in the queue)."
	}
	return fmt.Sprintf("Waiting for the engine: position %d in the queue.", pos)
}

func (v *chatView) deltaLocked(text string) {
	if v.replyText == "" {
		v.statusLocked("Writing…")
	}
	v.replyText += text
	v.reply.ParseMarkdown(v.replyText)
	v.scroll.ScrollToBottom()
}

// finishLocked records the end of generation gen.
func (v *chatView) finishLocked(gen int, final protocol.Event, err error) {
	if gen != v.gen {
		return // stopped or left: already recorded
	}
	v.cancel = nil
	v.busyLocked(false)
	last := &v.cur.Messages[len(v.cur.Messages)-1]
	if err != nil && v.replyText == "" {
		// Nothing was written: take the message back into the box so the
		// person can send it again, and say why.
		user := v.cur.Messages[len(v.cur.Messages)-2]
		v.cur.Messages = v.cur.Messages[:len(v.cur.Messages)-2]
		n := len(v.transcript.Objects)
		v.transcript.Objects = v.transcript.Objects[:n-2]
		v.transcript.Refresh()
		v.input.SetText(user.Content)
		if len(v.cur.Messages) == 0 && v.store != nil {
			v.store.Delete(v.cur.ID)
			if i := v.indexLocked(v.cur.ID); i >= 0 {
				v.list = append(v.list[:i], v.list[i+1:]...)
				v.refreshHistoryLocked()
			}
		} else {
			v.saveLocked()
		}
		v.statusLocked("No reply: " + errorText(err))
		return
	}
	last.Content = v.replyText
	v.nameModelLocked()
	if final.Stats != nil {
		last.TokensPerSecond = final.Stats.TokensPerSecond
	}
	v.saveLocked()
	switch {
	case err != nil:
		v.statusLocked("The reply broke off: " + errorText(err))
	case final.Stats != nil:
		s := final.Stats
		line := fmt.Sprintf("%d tokens · %.1f tokens/s", s.GeneratedTokens, s.TokensPerSecond)
		if s.FinishReason == string(engine.FinishLength) {
			line += " · stopped at the length limit"
		}
		v.statusLocked(line)
	default:
		v.statusLocked("")
	}
}

// nameModelLocked records which model answered.
func (v *chatView) nameModelLocked() {
	if m := v.u.status.Model; m != nil {
		v.cur.Model, v.cur.Demo = v.u.modelName(v.u.status), m.Demo
	}
}

func errorText(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case protocol.CodeBusy:
			return "the engine's queue is full; try again in a moment."
		case protocol.CodeModelNotLoaded:
			return "no model is loaded; press Start engine in the menu."
		}
		return pe.Message
	}
	return err.Error()
}

// stopLocked stops the running reply at once: the text shown so far is
// kept, nothing more is added, and the engine is told to cancel (it
// stops within one token).
func (v *chatView) stopLocked() {
	if v.cancel == nil {
		return
	}
	v.cancel()
	v.cancel = nil
	v.gen++
	v.busyLocked(false)
	last := &v.cur.Messages[len(v.cur.Messages)-1]
	last.Content, last.Stopped = v.replyText, true
	v.reply.Segments = append(v.reply.Segments, &widget.TextSegment{Text: "(stopped)", Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Italic: true}, ColorName: theme.ColorNamePlaceHolder}})
	v.reply.Refresh()
	v.nameModelLocked()
	v.saveLocked()
	v.statusLocked("Stopped.")
}

// newChatLocked starts an empty chat (stopping a running reply).
func (v *chatView) newChatLocked() {
	v.stopLocked()
	v.cur = chats.New(time.Now())
	v.showChatLocked()
	v.statusLocked("")
	v.w.Canvas().Focus(v.input)
}

// openChatLocked shows the i-th saved chat.
func (v *chatView) openChatLocked(i int) {
	if i < 0 || i >= len(v.list) || v.list[i] == v.cur {
		return
	}
	v.stopLocked()
	v.cur = v.list[i]
	v.showChatLocked()
	v.statusLocked("")
	v.w.Canvas().Focus(v.input)
}

// confirmDeleteLocked asks before deleting the current chat.
func (v *chatView) confirmDeleteLocked() {
	if v.indexLocked(v.cur.ID) < 0 {
		return
	}
	title := v.cur.Title
	d := dialog.NewConfirm("Delete this chat?", fmt.Sprintf("“%s” will be deleted. This cannot be undone.", title), func(ok bool) {
		if ok {
			v.u.locked(v.deleteLocked)
		}
	}, v.w)
	d.SetConfirmText(labelDelete)
	d.Show()
}

// deleteLocked deletes the current chat and shows the next one.
func (v *chatView) deleteLocked() {
	v.stopLocked()
	if v.store != nil {
		if err := v.store.Delete(v.cur.ID); err != nil {
			v.statusLocked(err.Error())
			return
		}
	}
	if i := v.indexLocked(v.cur.ID); i >= 0 {
		v.list = append(v.list[:i], v.list[i+1:]...)
	}
	if len(v.list) > 0 {
		v.cur = v.list[0]
	} else {
		v.cur = chats.New(time.Now())
	}
	v.refreshHistoryLocked()
	v.showChatLocked()
	v.statusLocked("Chat deleted.")
}

// exportDialogLocked asks where to save the chat as Markdown.
func (v *chatView) exportDialogLocked() {
	md, title := v.cur.Markdown(), v.cur.Title
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil || wc == nil {
			return
		}
		uri := wc.URI()
		wc.Close()
		err = exportFile(uri, md)
		v.u.locked(func() {
			if err != nil {
				v.statusLocked("Export failed: " + err.Error())
			} else {
				v.statusLocked("Exported to " + uri.Path())
			}
		})
	}, v.w)
	d.SetFileName(fileNameFor(title) + ".md")
	d.SetFilter(storage.NewExtensionFileFilter([]string{".md"}))
	d.Show()
}

// exportFile writes md to a local file atomically.
func exportFile(uri fyne.URI, md string) error {
	if uri.Scheme() != "file" {
		return fmt.Errorf("cannot export to %s", uri)
	}
	return atomicfile.WriteFile(uri.Path(), []byte(md), 0o644)
}

// fileNameFor makes a file name from a chat title.
func fileNameFor(title string) string {
	var b strings.Builder
	for _, r := range title {
		switch {
		case r == '/' || r == '\\' || r == ':' || r < ' ':
			b.WriteRune('-')
		default:
			b.WriteRune(r)
		}
	}
	s := strings.Trim(strings.TrimSpace(b.String()), ".")
	if s == "" {
		return "chat"
	}
	return s
}

// ShowChat opens the chat window (or brings it to the front), with the
// keyboard in the message box.
func (u *UI) ShowChat() fyne.Window {
	u.mu.Lock()
	defer u.mu.Unlock()
	w := u.show(&u.chatWin, "Strata Chat", fyne.NewSize(860, 640), func(w fyne.Window) {
		u.chatView = newChatView(u, w)
		w.SetContent(u.chatView.content)
	})
	u.chatView.openLocked()
	u.chatView.refreshModelsLocked()
	w.Canvas().Focus(u.chatView.input)
	return w
}
