// Package chat turns chat messages into a model's prompt text. It renders the
// Jinja chat template stored in a GGUF file (tokenizer.chat_template) with
// github.com/ardanlabs/jinja, which renders the Qwen templates shipped with
// llama.cpp exactly as llama.cpp's own Jinja engine does, and falls back to
// ChatML for Qwen-family architectures when a file has no template or its
// template cannot be rendered.
package chat

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Message is one chat turn.
type Message struct {
	Role    string // "system", "user", "assistant", "tool"
	Content string
}

// Options are the template inputs other than the messages.
type Options struct {
	// AddGenerationPrompt ends the prompt with the opening of an assistant
	// turn (add_generation_prompt).
	AddGenerationPrompt bool
	// BOS and EOS are the texts of the model's BOS and EOS tokens
	// (bos_token, eos_token).
	BOS, EOS string
	// Logger receives a record saying which template was used; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Source says how a prompt was produced.
type Source string

// Sources of a rendered prompt.
const (
	SourceTemplate Source = "template" // the file's Jinja template
	SourceChatML   Source = "chatml"   // the built-in ChatML format
)

// ErrNoTemplate is returned for a model that has no usable chat template and
// no built-in format.
var ErrNoTemplate = errors.New("no usable chat template")

// Render produces the prompt text for msgs. template is the file's
// tokenizer.chat_template (may be empty) and arch its general.architecture.
func Render(template, arch string, msgs []Message, opts Options) (string, error) {
	out, src, err := render(template, arch, msgs, opts)
	if err != nil {
		return "", err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Debug("chat prompt rendered", "source", src, "arch", arch, "messages", len(msgs))
	return out, nil
}

// Which reports the source Render will use for a model, rendering a sample
// conversation with its template, and logs it: call it once when a model is
// loaded. The error is the template's failure (for a Qwen-family arch, which
// falls back to ChatML, it is logged as a warning and nil is returned).
func Which(template, arch string, log *slog.Logger) (Source, error) {
	if log == nil {
		log = slog.Default()
	}
	sample := []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}, {Role: "assistant", Content: "a"}, {Role: "user", Content: "u"}}
	_, terr := renderTemplate(template, sample, Options{AddGenerationPrompt: true})
	if terr == nil {
		log.Info("chat template: using the model's Jinja template", "arch", arch)
		return SourceTemplate, nil
	}
	if !chatMLArch(arch) {
		return "", fmt.Errorf("chat template for %s: %w", arch, terr)
	}
	log.Warn("chat template: using ChatML", "arch", arch, "reason", terr)
	return SourceChatML, nil
}

func render(template, arch string, msgs []Message, opts Options) (string, Source, error) {
	out, terr := renderTemplate(template, msgs, opts)
	if terr == nil {
		return out, SourceTemplate, nil
	}
	if !chatMLArch(arch) {
		return "", "", fmt.Errorf("chat template for %s: %w", arch, terr)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if errors.Is(terr, ErrNoTemplate) {
		log.Info("chat template: the model has none, using ChatML", "arch", arch)
	} else {
		log.Warn("chat template failed, using ChatML", "arch", arch, "err", terr)
	}
	return ChatML(msgs, opts.AddGenerationPrompt), SourceChatML, nil
}

func renderTemplate(template string, msgs []Message, opts Options) (string, error) {
	if strings.TrimSpace(template) == "" {
		return "", ErrNoTemplate
	}
	t, err := jinja.Compile(template)
	if err != nil {
		return "", fmt.Errorf("compile: %w", err)
	}
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := t.Render(map[string]any{
		"messages":              list,
		"add_generation_prompt": opts.AddGenerationPrompt,
		"bos_token":             opts.BOS,
		"eos_token":             opts.EOS,
	})
	if err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	return out, nil
}

// chatMLArch reports whether arch belongs to the Qwen family, whose models
// are trained on ChatML.
func chatMLArch(arch string) bool {
	return strings.HasPrefix(arch, "qwen")
}

// ChatML formats msgs as llama.cpp's built-in "chatml" template does:
// "<|im_start|>role\ncontent<|im_end|>\n" per message, then
// "<|im_start|>assistant\n" when a generation prompt is asked for.
func ChatML(msgs []Message, addGenerationPrompt bool) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|im_start|>")
		b.WriteString(m.Role)
		b.WriteByte('\n')
		b.WriteString(m.Content)
		b.WriteString("<|im_end|>\n")
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}
