// Package chats keeps the chat window's conversations: one JSON file per
// chat in a folder of the data directory, written atomically; a file that
// cannot be read is set aside with a notice instead of being lost or
// crashing the app; a chat exports as Markdown.
package chats

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-llm/strata/internal/atomicfile"
)

// Version is the chat file format's version.
const Version = 1

// MaxFileBytes bounds a chat file; bigger files are set aside.
const MaxFileBytes = 32 << 20

// Roles of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of a chat.
type Message struct {
	Role    string    `json:"role"` // user or assistant
	Content string    `json:"content"`
	Time    time.Time `json:"time,omitzero"`
	// Stopped marks a reply the person stopped before it ended.
	Stopped bool `json:"stopped,omitempty"`
	// TokensPerSecond is the reply's decode speed (assistant turns).
	TokensPerSecond float64 `json:"tokens_per_second,omitempty"`
}

// Chat is one conversation. The zero value is not valid: use New.
type Chat struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	Title   string `json:"title"`
	// Model is the name of the model that answered last, as shown to the
	// person; Demo marks the demo model (random weights, random words).
	Model    string    `json:"model,omitempty"`
	Demo     bool      `json:"demo,omitempty"`
	System   string    `json:"system,omitempty"` // the chat's system prompt
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Messages []Message `json:"messages"`
}

// New returns an empty chat with a fresh id.
func New(now time.Time) *Chat {
	var b [4]byte
	rand.Read(b[:])
	return &Chat{
		Version: Version,
		ID:      now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]),
		Title:   "New chat",
		Created: now, Updated: now,
		Messages: []Message{},
	}
}

// Clone returns a deep copy of c.
func (c *Chat) Clone() *Chat {
	d := *c
	d.Messages = slices.Clone(c.Messages)
	return &d
}

// TitleFrom makes a title from a first message: its first line, at most
// 60 characters.
func TitleFrom(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.Join(strings.Fields(line), " ")
	if r := []rune(line); len(r) > 60 {
		line = strings.TrimSpace(string(r[:59])) + "…"
	}
	if line == "" {
		return "New chat"
	}
	return line
}

// validID reports whether id can name a chat file: letters, digits and
// '-' only, so no path can be smuggled in.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Parse reads one chat file's content, checking it: the version, the
// id and the roles (invalid UTF-8 reads as U+FFFD, as encoding/json does).
func Parse(data []byte) (*Chat, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("chat file of %d bytes exceeds %d", len(data), MaxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var c Chat
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("not a chat file: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a chat file: data after the chat")
	}
	if c.Version != Version {
		return nil, fmt.Errorf("chat file version %d, want %d", c.Version, Version)
	}
	if !validID(c.ID) {
		return nil, fmt.Errorf("chat id %q is not valid", c.ID)
	}
	for i, m := range c.Messages {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return nil, fmt.Errorf("message %d: role %q is neither user nor assistant", i+1, m.Role)
		}
	}
	if c.Messages == nil {
		c.Messages = []Message{}
	}
	return &c, nil
}

// Store is the folder of chat files. Its methods are safe for concurrent
// use.
type Store struct {
	dir string
	mu  sync.Mutex
	now func() time.Time
}

// Open returns the store in dir, creating the folder (0700).
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("chats folder: %w", err)
	}
	return &Store{dir: dir, now: time.Now}, nil
}

// Dir returns the store's folder.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(id string) string { return filepath.Join(s.dir, id+".json") }

// Load reads every chat, newest first. A file that cannot be parsed is
// renamed to NAME.corrupt-TIME (kept for the person to look at, never
// read again) and a notice for each such file is returned; Load fails
// only when the folder itself cannot be read.
func (s *Store) Load() (list []*Chat, notices []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read chats: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		c, err := s.read(id)
		if err != nil {
			aside := name + ".corrupt-" + s.now().UTC().Format("20060102-150405")
			if rerr := os.Rename(filepath.Join(s.dir, name), filepath.Join(s.dir, aside)); rerr != nil {
				notices = append(notices, fmt.Sprintf("The chat file %s could not be read (%v) nor set aside (%v).", name, err, rerr))
				continue
			}
			notices = append(notices, fmt.Sprintf("The chat file %s could not be read (%v); it was set aside as %s.", name, err, aside))
			continue
		}
		list = append(list, c)
	}
	slices.SortStableFunc(list, func(a, b *Chat) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return list, notices, nil
}

func (s *Store) read(id string) (*Chat, error) {
	f, err := os.Open(s.path(id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if c.ID != id {
		return nil, fmt.Errorf("the file holds chat %q", c.ID)
	}
	return c, nil
}

// Save writes c atomically (mode 0600).
func (s *Store) Save(c *Chat) error {
	if !validID(c.ID) {
		return fmt.Errorf("save chat: id %q is not valid", c.ID)
	}
	c.Version = Version
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("save chat %s: %w", c.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return atomicfile.WriteFile(s.path(c.ID), append(b, '\n'), 0o600)
}

// Delete removes the chat id; a chat never saved is not an error.
func (s *Store) Delete(id string) error {
	if !validID(id) {
		return fmt.Errorf("delete chat: id %q is not valid", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete chat: %w", err)
	}
	return nil
}

// Markdown renders c as a Markdown document: the title, the model (with
// the demo model's warning), the system prompt, then each turn under a
// "You" or model heading.
func (c *Chat) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", oneLine(c.Title))
	if c.Model != "" {
		fmt.Fprintf(&b, "Model: %s\n", oneLine(c.Model))
	}
	fmt.Fprintf(&b, "Started: %s\n\n", c.Created.Format("2006-01-02 15:04"))
	if c.Demo {
		b.WriteString("> This chat is with the demo model. Its weights are random, so its words are random too.\n\n")
	}
	if c.System != "" {
		b.WriteString("## System prompt\n\n" + c.System + "\n\n")
	}
	assistant := "Assistant"
	if c.Model != "" {
		assistant = oneLine(c.Model)
	}
	for _, m := range c.Messages {
		who := "You"
		if m.Role == RoleAssistant {
			who = assistant
		}
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", who, strings.TrimRight(m.Content, "\n"))
		if m.Stopped {
			b.WriteString("*(stopped)*\n\n")
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
