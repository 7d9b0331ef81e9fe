// Package chat turns chat messages into a model's prompt text. It renders the
// Jinja chat template stored in a GGUF file (tokenizer.chat_template) with
// github.com/ardanlabs/jinja, which renders the Qwen templates shipped with
// llama.cpp exactly as llama.cpp's own Jinja engine does, and falls back to
// ChatML for Qwen-family architectures when a file has no template or its
// template cannot be rendered.
package chat

import (
	"bytes"
	"encoding/json"
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
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall
	// ToolCallID and Name identify the call a "tool" turn answers.
	ToolCallID, Name string
}

// ToolCall is one function call of an assistant turn, in OpenAI's shape.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // the arguments as JSON text, as OpenAI clients send them
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
	// Tools are the function definitions offered to the model, each a JSON
	// object as the client sent it ({"type":"function","function":{...}});
	// the template receives them as tools, keys in the client's order.
	Tools []json.RawMessage
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
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		md := d.AsDict()
		md.Set("role", jinja.NewString(m.Role))
		md.Set("content", jinja.NewString(m.Content))
		if len(m.ToolCalls) > 0 {
			calls := make([]jinja.Value, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				fn := jinja.NewDict()
				fn.AsDict().Set("name", jinja.NewString(c.Name))
				fn.AsDict().Set("arguments", jinja.NewString(c.Arguments))
				call := jinja.NewDict()
				call.AsDict().Set("id", jinja.NewString(c.ID))
				call.AsDict().Set("type", jinja.NewString("function"))
				call.AsDict().Set("function", fn)
				calls[j] = call
			}
			md.Set("tool_calls", jinja.NewList(calls))
		}
		if m.ToolCallID != "" {
			md.Set("tool_call_id", jinja.NewString(m.ToolCallID))
		}
		if m.Name != "" {
			md.Set("name", jinja.NewString(m.Name))
		}
		list[i] = d
	}
	data := map[string]jinja.Value{
		"messages":              jinja.NewList(list),
		"add_generation_prompt": jinja.NewBool(opts.AddGenerationPrompt),
		"bos_token":             jinja.NewString(opts.BOS),
		"eos_token":             jinja.NewString(opts.EOS),
	}
	if len(opts.Tools) > 0 {
		tools := make([]jinja.Value, len(opts.Tools))
		for i, raw := range opts.Tools {
			v, err := orderedValue(raw)
			if err != nil {
				return "", fmt.Errorf("tool %d: %w", i, err)
			}
			tools[i] = v
		}
		data["tools"] = jinja.NewList(tools)
	}
	out, err := t.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	return out, nil
}

// orderedValue converts JSON to a template value keeping object keys in
// their order (as Python's json.loads does, so tojson renders tools as
// llama.cpp's and HuggingFace's Jinja do).
func orderedValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return jinja.Value{}, err
	}
	if dec.More() {
		return jinja.Value{}, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > 64 {
		return jinja.Value{}, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Value{}, err
				}
				d.AsDict().Set(k, v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		}
		return jinja.Value{}, fmt.Errorf("unexpected %v", t)
	default:
		return jinja.FromGoValue(t), nil
	}
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
