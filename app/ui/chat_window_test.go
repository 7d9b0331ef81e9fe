package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-llm/strata/api"
	"github.com/strata-llm/strata/api/client"
	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/app/chats"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/internal/runner"
	"github.com/strata-llm/strata/internal/token"
	"github.com/strata-llm/strata/models"
	"github.com/strata-llm/strata/models/download"
)

// withAPI serves the real local API for the fixture's engine on a
// loopback port and points the UI at it. maxTokens is the server's
// default reply length (the chat window sends none).
func withAPI(t *testing.T, maxTokens int) func(*Deps) {
	return func(d *Deps) {
		tok, err := token.Open(d.Dirs.Config)
		if err != nil {
			t.Fatal(err)
		}
		demo := d.DefaultModel
		rcfg := runner.Config{Engine: d.Engine, Logger: d.Log,
			DefaultModel: func(context.Context) (string, error) { return demo, nil }}
		cfg := api.Config{Tokens: tok, Logger: d.Log, DefaultMaxTokens: maxTokens}
		if mgr, store := d.Models, d.Settings; mgr != nil {
			// As the program wires it (cmd_serve.go): models.select records
			// the choice; with no name the chosen model, else the demo, loads.
			cfg.Models = api.ModelManager(mgr)
			cfg.OnSelect = func(name, _ string) {
				s := store.Get()
				s.Model = name
				store.Set(s)
			}
			rcfg.DefaultModel = func(context.Context) (string, error) {
				if name := store.Get().Model; name != "" {
					return mgr.Path(name)
				}
				return demo, nil
			}
		}
		// The UI and the API share one lifecycle and queue, as in the program.
		run, err := runner.New(rcfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { run.Close() })
		d.Runner, cfg.Runner = run, run
		srv, err := api.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("serve: %v", err)
			}
		})
		addr := l.Addr().String()
		d.APIInfo = func() (string, string) { return addr, tok.String() }
	}
}

// chatState reads the chat view under the UI's lock.
type chatState struct {
	busy      bool
	status    string
	reply     string
	messages  []chats.Message
	shown     int // boxes in the transcript
	saved     int // chats in the list
	demoShown bool
	notice    string
}

func readChat(u *UI) chatState {
	var s chatState
	u.locked(func() {
		v := u.chatView
		s = chatState{busy: v.cancel != nil, status: v.status.Text, reply: v.replyText,
			messages: append([]chats.Message(nil), v.cur.Messages...), shown: len(v.transcript.Objects),
			saved: len(v.list), demoShown: v.demo.Visible()}
		if v.notice.Visible() {
			s.notice = v.notice.Text
		}
	})
	return s
}

// typeText types into the message box under the UI's lock (in the test
// driver the UI's updates run on other goroutines).
func typeText(u *UI, text string) {
	u.locked(func() { test.Type(u.chatView.input, text) })
}

// typeAndSend types text into the message box and presses Enter (whose
// send takes the lock itself).
func typeAndSend(u *UI, text string) {
	var in *chatEntry
	u.locked(func() { in = u.chatView.input })
	typeText(u, text)
	in.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}

// richText joins the text of every RichText in w, read under the UI's
// lock (replies change them from other goroutines).
func richText(u *UI, w fyne.Window) string {
	var b strings.Builder
	u.locked(func() {
		for _, x := range test.LaidOutObjects(w.Content()) {
			if r, ok := x.(*widget.RichText); ok {
				b.WriteString(r.String() + "\n")
			}
		}
	})
	return b.String()
}

func TestChatSendStreamsReply(t *testing.T) {
	f := newFixture(t, withAPI(t, 48))
	u := f.u
	u.Watch()
	w := u.ShowChat()
	if w.Title() != "Strata Chat" {
		t.Fatalf("title %q", w.Title())
	}
	var in *chatEntry
	var focused bool
	u.locked(func() { in = u.chatView.input; focused = w.Canvas().Focused() == in })
	if !focused {
		t.Error("the message box does not have the keyboard focus")
	}
	if s := readChat(u); !s.demoShown {
		t.Error("no demo warning with the demo model chosen")
	}

	// Shift+Enter is a new line, not a send.
	typeText(u, "Hello")
	var text string
	u.locked(func() {
		in.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
		in.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn}) // a newline: no send, no lock taken
		in.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	})
	typeText(u, "there")
	u.locked(func() { text = in.Text })
	if text != "Hello\nthere" || readChat(u).shown != 0 {
		t.Fatalf("after Shift+Enter: text %q, %d messages shown", text, readChat(u).shown)
	}

	// The engine is stopped: sending loads the demo model (through the
	// API), then the reply streams in.
	var seenStreaming bool
	in.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	u.locked(func() { text = in.Text })
	if s := readChat(u); !s.busy || s.shown != 2 || text != "" {
		t.Fatalf("after Enter: %+v, box %q", s, text)
	}
	waitFor(t, "the reply", func() bool {
		s := readChat(u)
		if s.busy && s.reply != "" {
			seenStreaming = true
		}
		return !s.busy
	})
	s := readChat(u)
	if !seenStreaming {
		t.Error("the reply never showed while it was being written")
	}
	if !strings.Contains(s.status, "48 tokens") || !strings.Contains(s.status, "tokens/s") {
		t.Errorf("status %q", s.status)
	}
	if len(s.messages) != 2 || s.messages[0].Content != "Hello\nthere" || s.messages[1].Role != chats.RoleAssistant ||
		s.messages[1].Content == "" || s.messages[1].Stopped || s.messages[1].TokensPerSecond <= 0 {
		t.Fatalf("messages %+v", s.messages)
	}
	if shown := richText(u, w); !strings.Contains(shown, "Hello\nthere") {
		t.Errorf("the transcript does not show the message: %q", shown)
	}
	if !s.demoShown || f.eng.Status().Model == nil || !f.eng.Status().Model.Demo {
		t.Error("the demo warning is not shown for a demo reply")
	}

	// It was saved, with the model's name and the demo mark.
	st, err := chats.Open(filepath.Join(f.dirs.Data, "chats"))
	if err != nil {
		t.Fatal(err)
	}
	list, notices, err := st.Load()
	if err != nil || len(notices) > 0 || len(list) != 1 {
		t.Fatalf("saved chats: %d %q %v", len(list), notices, err)
	}
	c := list[0]
	if c.Title != "Hello" || !c.Demo || c.Model != "Demo model (random weights)" || len(c.Messages) != 2 || c.Messages[1].Content != s.messages[1].Content {
		t.Fatalf("saved %+v", c)
	}
	if md := c.Markdown(); !strings.Contains(md, "its words are random too") {
		t.Errorf("export lacks the demo warning:\n%s", md)
	}

	// A second turn, with a system prompt, sends the whole conversation
	// and appends to it; the prompt is kept with the chat.
	prompt1 := f.eng.Status().LastStats.PromptTokens
	u.locked(func() { // as typing it would, under the lock (OnChanged takes it itself)
		v := u.chatView
		const sys = "Answer in verse, always, whatever the question is."
		v.system.OnChanged = nil
		v.system.SetText(sys)
		v.system.OnChanged = v.systemChanged
		v.systemChangedLocked(sys)
	})
	typeAndSend(u, "And again")
	waitFor(t, "the second reply", func() bool { return !readChat(u).busy })
	if s := readChat(u); len(s.messages) != 4 || s.shown != 4 || s.saved != 1 {
		t.Fatalf("after the second turn: %+v", s)
	}
	if last := f.eng.Status().LastStats; last == nil || last.PromptTokens <= prompt1+48+8 {
		t.Errorf("the second turn's prompt (%d tokens) lacks the first turn, its reply or the system prompt (first prompt %d)", last.PromptTokens, prompt1)
	}
	if list, _, _ := st.Load(); len(list) != 1 || list[0].System != "Answer in verse, always, whatever the question is." || len(list[0].Messages) != 4 {
		t.Errorf("saved after the second turn: %+v", list)
	}
}

func TestChatStopCancelsAtOnce(t *testing.T) {
	f := newFixture(t, withAPI(t, 4000))
	u := f.u
	u.Watch()
	w := u.ShowChat()
	typeAndSend(u, "Tell me a long story")
	waitFor(t, "a few tokens", func() bool { return len([]rune(readChat(u).reply)) >= 8 })

	var stop *widget.Button
	u.locked(func() { stop = u.chatView.stop })
	if !stop.Visible() {
		t.Fatal("no Stop button while the reply is written")
	}
	stop.OnTapped() // as a tap does; test.Tap would render outside the UI's lock
	at := readChat(u)
	if at.busy || at.status != "Stopped." {
		t.Fatalf("after Stop: %+v", at)
	}
	// The engine stops (finish reason cancelled) long before the 4000
	// tokens; nothing more reaches the window.
	waitFor(t, "the engine to stop", func() bool {
		st := f.eng.Status()
		return st.State == engine.StateReady && st.LastStats != nil && st.LastStats.FinishReason == engine.FinishCancelled
	})
	if n := f.eng.Status().LastStats.GeneratedTokens; n >= 4000 {
		t.Fatalf("the engine generated all %d tokens", n)
	}
	time.Sleep(100 * time.Millisecond)
	after := readChat(u)
	last := after.messages[len(after.messages)-1]
	if after.reply != at.reply || last.Content != at.reply || !last.Stopped {
		t.Fatalf("text changed after Stop: %q → %q (saved %q, stopped %v)", at.reply, after.reply, last.Content, last.Stopped)
	}
	if !strings.Contains(richText(u, w), "(stopped)") {
		t.Error("the stopped reply is not marked")
	}

	// The engine is free again: the next message gets a reply; Escape in
	// the message box stops it too.
	typeAndSend(u, "Shorter, please")
	waitFor(t, "a reply after Stop", func() bool { return len(readChat(u).reply) > 0 })
	var in *chatEntry
	u.locked(func() { in = u.chatView.input })
	in.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if s := readChat(u); s.busy || s.status != "Stopped." || !s.messages[len(s.messages)-1].Stopped {
		t.Fatalf("after Escape: %+v", s)
	}

	// New chat: an empty conversation, the old one stays in the list.
	var newChat *widget.Button
	u.locked(func() { newChat = findButton(t, w.Content(), labelNewChat) })
	newChat.OnTapped()
	s := readChat(u)
	if s.shown != 0 || len(s.messages) != 0 || s.saved != 1 {
		t.Fatalf("after New chat: %+v", s)
	}
	var focused bool
	u.locked(func() { focused = w.Canvas().Focused() == in })
	if !focused {
		t.Error("New chat did not put the keyboard in the message box")
	}
}

func TestChatWaitsInTheAPIQueue(t *testing.T) {
	var info func() (string, string)
	f := newFixture(t, func(d *Deps) {
		withAPI(t, 8)(d)
		info = d.APIInfo
	})
	if err := f.eng.Load(context.Background(), f.u.d.DefaultModel); err != nil {
		t.Fatal(err)
	}
	u := f.u
	u.Watch()
	u.ShowChat()

	// Another app holds the engine with a long generation.
	addr, tok := info()
	other, err := client.Dial(context.Background(), "ws://"+addr+"/v1/ws", client.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx, cancel := context.WithCancel(context.Background())
	otherDone := make(chan error, 1)
	go func() {
		// Seed 1: the demo model samples no end-of-text in 4000 tokens
		// (an unseeded run can end within a second).
		_, err := other.Complete(ctx, protocol.CompleteParams{Prompt: "busy", Options: protocol.Options{MaxTokens: 4000, Seed: 1}}, nil)
		otherDone <- err
	}()
	waitFor(t, "the other app's generation", func() bool { return f.eng.Status().State == engine.StateGenerating })

	typeAndSend(u, "Hi")
	waitFor(t, "the queue position", func() bool { return strings.Contains(readChat(u).status, "position 1 in the queue") })
	if s := readChat(u); !s.busy || s.reply != "" {
		t.Fatalf("while queued: %+v", s)
	}
	cancel()
	if err := <-otherDone; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the chat's turn", func() bool { return !readChat(u).busy })
	if s := readChat(u); s.reply == "" || !strings.Contains(s.status, "8 tokens") {
		t.Fatalf("after the queue: %+v", s)
	}
}

func TestChatPersistence(t *testing.T) {
	f := newFixture(t, nil)
	st, err := chats.Open(filepath.Join(f.dirs.Data, "chats"))
	if err != nil {
		t.Fatal(err)
	}
	older := conversation(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	older.Title = "An older chat"
	newer := conversation(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	for _, c := range []*chats.Chat{older, newer} {
		if err := st.Save(c); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt file is set aside with a notice; the others open.
	bad := filepath.Join(f.dirs.Data, "chats", "20261201-100000-deadbeef.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"id":"20261201-100000-deadbeef","messages":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	u := f.u
	w := u.ShowChat()
	s := readChat(u)
	if !strings.Contains(s.notice, "20261201-100000-deadbeef.json could not be read") || !strings.Contains(s.notice, "set aside") {
		t.Fatalf("notice %q", s.notice)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("the corrupt file is still in place: %v", err)
	}
	if m, _ := filepath.Glob(bad + ".corrupt-*"); len(m) != 1 {
		t.Fatalf("set-aside copies: %q", m)
	}
	if s.saved != 2 || len(s.messages) != len(newer.Messages) || s.messages[3].Content != newer.Messages[3].Content {
		t.Fatalf("opened %+v", s)
	}
	if shown := richText(u, w); !strings.Contains(shown, "Waves fold over waves") || !strings.Contains(shown, "(stopped)") {
		t.Errorf("transcript %q", shown)
	}

	// Opening the older chat from the list, then deleting it (confirmed).
	var list *widget.List
	u.locked(func() { list = u.chatView.history })
	list.Select(1)
	if s := readChat(u); len(s.messages) != len(older.Messages) {
		t.Fatalf("older chat not shown: %+v", s)
	}
	u.locked(u.chatView.confirmDeleteLocked)
	confirm := findButton(t, w.Canvas().Overlays().Top(), labelDelete)
	test.Tap(confirm)
	if s := readChat(u); s.saved != 1 || s.status != "Chat deleted." {
		t.Fatalf("after delete: %+v", s)
	}
	left, _, _ := st.Load()
	if len(left) != 1 || left[0].ID != newer.ID {
		t.Fatalf("on disk after delete: %d chats", len(left))
	}

	// Export writes the Markdown atomically.
	out := filepath.Join(t.TempDir(), "chat.md")
	if err := exportFile(storage.NewFileURI(out), newer.Markdown()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != newer.Markdown() {
		t.Fatalf("export %q %v", b, err)
	}
	if got := fileNameFor(`a/b: c\d`); got != "a-b- c-d" {
		t.Errorf("fileNameFor %q", got)
	}
}

func findButton(t *testing.T, o fyne.CanvasObject, text string) *widget.Button {
	t.Helper()
	if o == nil {
		t.Fatalf("no %q button: nothing shown", text)
	}
	for _, x := range test.LaidOutObjects(o) {
		if b, ok := x.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	t.Fatalf("no %q button", text)
	return nil
}

// conversation is a fixed chat for the persistence test and the golden
// image.
func conversation(at time.Time) *chats.Chat {
	c := chats.New(at)
	c.ID = at.UTC().Format("20060102-150405") + "-0a0b0c0d"
	c.Title, c.Model, c.Demo = "Write a haiku about the sea", "Demo model (random weights)", true
	c.Updated = at
	c.Messages = []chats.Message{
		{Role: chats.RoleUser, Content: "Write a haiku about the sea", Time: at},
		{Role: chats.RoleAssistant, Content: "Salt wind **lifts** the gulls —\n\n*Waves fold over waves*, grey on grey,\n\n1. tide\n2. foam", Time: at, TokensPerSecond: 41.5},
		{Role: chats.RoleUser, Content: "Another one, shorter", Time: at},
		{Role: chats.RoleAssistant, Content: "Waves fold over waves", Time: at, Stopped: true},
	}
	return c
}

func TestChatGolden(t *testing.T) {
	f := newFixture(t, nil)
	st, err := chats.Open(filepath.Join(f.dirs.Data, "chats"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(conversation(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	w := f.u.ShowChat()
	var v *chatView
	f.u.locked(func() { v = f.u.chatView })
	v.system.SetText("Answer in verse.")
	f.u.locked(func() {
		v.status.SetText("41 tokens · 41.5 tokens/s")
		w.Canvas().Unfocus()
		test.AssertImageMatches(t, "chat.png", w.Canvas().Capture())
	})
}

func TestDropOldestTurn(t *testing.T) {
	m := func(roles ...string) []protocol.Message {
		var out []protocol.Message
		for i, r := range roles {
			out = append(out, protocol.Message{Role: r, Content: string(rune('a' + i))})
		}
		return out
	}
	join := func(ms []protocol.Message) string {
		var b strings.Builder
		for _, x := range ms {
			b.WriteString(x.Role[:1] + x.Content + " ")
		}
		return b.String()
	}
	tests := []struct {
		in   []protocol.Message
		want string
		ok   bool
	}{
		{m("user", "assistant", "user"), "uc ", true},
		{m("system", "user", "assistant", "user"), "sa ud ", true},
		{m("system", "user", "assistant", "assistant", "user", "assistant", "user"), "sa ue af ug ", true},
		{m("user"), "ua ", false},
		{m("system", "user"), "sa ub ", false},
	}
	for _, tt := range tests {
		got, ok := dropOldestTurn(tt.in)
		if join(got) != tt.want || ok != tt.ok {
			t.Errorf("dropOldestTurn(%s) = %s %v, want %s %v", join(tt.in), join(got), ok, tt.want, tt.ok)
		}
	}
}

// A conversation longer than the context still gets replies: the oldest
// turns are left out of the prompt (the chat keeps them).
func TestChatLongerThanContext(t *testing.T) {
	f := newFixture(t, func(d *Deps) {
		eng := engine.New(engine.Options{Threads: 1, ContextLength: 96, Logger: d.Log})
		t.Cleanup(func() { eng.Close() })
		d.Engine = eng
		withAPI(t, 8)(d)
	})
	u := f.u
	u.Watch()
	u.ShowChat()
	long := strings.Repeat("the sea and the sky ", 8)
	for i := 0; i < 3; i++ {
		typeAndSend(u, long)
		waitFor(t, "a reply", func() bool { return !readChat(u).busy })
		s := readChat(u)
		if len(s.messages) != 2*(i+1) || s.messages[len(s.messages)-1].Content == "" {
			t.Fatalf("turn %d: %+v", i+1, s)
		}
	}
	if p := f.eng.Status().LastStats.PromptTokens; p >= 96 {
		t.Fatalf("last prompt %d tokens for a context of 96", p)
	}
	// One message longer than the context: a clear refusal, and the text
	// goes back into the box.
	typeAndSend(u, strings.Repeat(long, 4))
	waitFor(t, "the refusal", func() bool { return !readChat(u).busy })
	s := readChat(u)
	var box string
	u.locked(func() { box = u.chatView.input.Text })
	if !strings.HasPrefix(s.status, "No reply: ") || !strings.Contains(s.status, "does not fit") || len(s.messages) != 6 || box != strings.TrimSpace(strings.Repeat(long, 4)) {
		t.Fatalf("after a too long message: status %q, %d messages, box %d chars", s.status, len(s.messages), len(box))
	}
}

// choose picks a model as a person would: the picker shows it (rendered
// under the UI's lock, as background updates are), then its OnChanged runs.
func choose(u *UI, choice string) {
	var v *chatView
	u.locked(func() {
		v = u.chatView
		v.pickerSet = true
		v.picker.SetSelected(choice)
		v.pickerSet = false
	})
	v.picker.OnChanged(choice)
}

// The model picker lists the installed models; choosing one loads it
// through the API (models.select) and records it; the demo choice loads
// the demo model again.
func TestChatModelPicker(t *testing.T) {
	demo, err := demoPath()
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(demo)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "tiny.gguf", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	cat, err := models.LoadCatalog([]byte(fmt.Sprintf(`{"version":1,"models":[{
		"name":"tiny-test","display":"Tiny test model","description":"A small model served by this test.",
		"family":"test","arch":"qwen3moe","quant":"Q8_0","size_bytes":%d,
		"ram_recommended_bytes":1073741824,"ram_min_bytes":536870912,
		"files":[{"url":%q,"size":%d,"sha256":%q}]}]}`, len(body), srv.URL+"/tiny.gguf", len(body), sha256hex(body))))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(d *Deps) {
		mgr, err := models.NewManager(filepath.Join(d.Dirs.Data, "models"), models.Options{
			Catalog: cat, Client: srv.Client(), Download: download.Options{ProgressInterval: -1, SpaceMargin: -1},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mgr.Close() })
		if _, err := mgr.Pull(context.Background(), "tiny-test"); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Wait(context.Background(), "tiny-test"); err != nil {
			t.Fatal(err)
		}
		d.Models = mgr
		withAPI(t, 8)(d)
	})
	if err := f.eng.Load(context.Background(), f.u.d.DefaultModel); err != nil {
		t.Fatal(err)
	}
	u := f.u
	u.Watch()
	u.ShowChat()
	var picker *widget.Select
	u.locked(func() { picker = u.chatView.picker })
	if got := strings.Join(picker.Options, "|"); got != demoChoice+"|Tiny test model" || picker.Selected != demoChoice {
		t.Fatalf("picker %q, selected %q", got, picker.Selected)
	}
	path, err := f.u.d.Models.Path("tiny-test")
	if err != nil {
		t.Fatal(err)
	}
	choose(u, "Tiny test model")
	waitFor(t, "the chosen model", func() bool { return strings.HasSuffix(readChat(u).status, "is loaded.") })
	if got := f.eng.Status().Model.Path; got != path || f.store.Get().Model != "tiny-test" {
		t.Fatalf("loaded %s (want %s), settings model %q", got, path, f.store.Get().Model)
	}
	typeAndSend(u, "Hi")
	waitFor(t, "a reply", func() bool { return !readChat(u).busy })
	if s := readChat(u); s.messages[1].Content == "" {
		t.Fatalf("no reply from the chosen model: %+v", s)
	}

	choose(u, demoChoice)
	waitFor(t, "the demo model", func() bool { m := f.eng.Status().Model; return m != nil && m.Path == demo }) // one snapshot: the model may unload between two
	if f.store.Get().Model != "" {
		t.Fatalf("settings model %q after choosing the demo", f.store.Get().Model)
	}
}
