package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/engine"
	"github.com/strata-llm/strata/engine/grammar"
	"github.com/strata-llm/strata/engine/sample"
	"github.com/strata-llm/strata/engine/tokenizer"
)

// Tool calls: the tools go through the model's chat template, and the
// model's <tool_call>{"name": …, "arguments": {…}}</tool_call> blocks (the
// Qwen family's format) come back as OpenAI tool_calls. A block that does
// not parse is returned as plain content.

const (
	toolOpen  = "<tool_call>"
	toolClose = "</tool_call>"
)

// toolCall is a parsed call.
type toolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text of an object
}

// toolSpec is what a request says about tools.
type toolSpec struct {
	tools  []json.RawMessage // rendered through the template (nil: none)
	forced string            // "" auto; "*" any tool; else the function's name
	names  []string
}

// parseTools validates tools and tool_choice (OpenAI's shapes).
func parseTools(tools []json.RawMessage, choice json.RawMessage) (toolSpec, error) {
	var ts toolSpec
	if len(tools) > 128 {
		return ts, protocol.Errorf(protocol.CodeBadRequest, "more than 128 tools")
	}
	for i, raw := range tools {
		var t struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return ts, protocol.Errorf(protocol.CodeBadRequest, "tools[%d]: %v", i, err)
		}
		if t.Type != "function" || t.Function.Name == "" {
			return ts, protocol.Errorf(protocol.CodeBadRequest, "tools[%d]: want {\"type\":\"function\",\"function\":{\"name\":...}}", i)
		}
		ts.names = append(ts.names, t.Function.Name)
	}
	ts.tools = tools
	choice = bytes.TrimSpace(choice)
	if len(choice) == 0 || string(choice) == "null" {
		return ts, nil
	}
	var s string
	if json.Unmarshal(choice, &s) == nil {
		switch s {
		case "auto":
		case "none":
			ts.tools = nil
		case "required":
			if len(tools) == 0 {
				return ts, protocol.Errorf(protocol.CodeBadRequest, "tool_choice required without tools")
			}
			ts.forced = "*"
		default:
			return ts, protocol.Errorf(protocol.CodeBadRequest, "tool_choice %q: want auto, none, required or a function", s)
		}
		return ts, nil
	}
	var c struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(choice, &c); err != nil || c.Type != "function" {
		return ts, protocol.Errorf(protocol.CodeBadRequest, "tool_choice: want auto, none, required or {\"type\":\"function\",\"function\":{\"name\":...}}")
	}
	found := false
	for _, n := range ts.names {
		found = found || n == c.Function.Name
	}
	if !found {
		return ts, protocol.Errorf(protocol.CodeBadRequest, "tool_choice names %q, which is not among the tools", c.Function.Name)
	}
	ts.forced = c.Function.Name
	return ts, nil
}

// apply puts the tools into req; a forced call starts the reply with
// <tool_call> and constrains the JSON that follows to a call of the
// allowed function(s) with arguments matching its parameters schema.
func (ts toolSpec) apply(req *engine.Request) error {
	req.Tools = ts.tools
	if ts.forced == "" || ts.tools == nil {
		return nil
	}
	if req.Constraint != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "a forced tool call cannot be combined with response_format")
	}
	var names []any
	args := json.RawMessage(`{"type":"object"}`)
	for i, raw := range ts.tools {
		if ts.forced != "*" && ts.names[i] != ts.forced {
			continue
		}
		names = append(names, ts.names[i])
		var t struct {
			Function struct {
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		json.Unmarshal(raw, &t)
		if (ts.forced != "*" || len(ts.tools) == 1) && len(t.Function.Parameters) > 0 {
			if _, err := grammar.Compile(t.Function.Parameters); err == nil {
				args = t.Function.Parameters
			}
		}
	}
	schema := fmt.Sprintf(`{"type":"object","properties":{"name":{"enum":%s},"arguments":%s},"required":["name","arguments"]}`, mustJSON(names), args)
	sch, err := grammar.Compile([]byte(schema))
	if err != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "tool call schema: %v", err)
	}
	req.Prefill = toolOpen + "\n"
	req.Constraint = func(v *tokenizer.Tokenizer) (sample.Constraint, error) { return sch.NewConstraint(v) }
	return nil
}

// toolParser splits streamed text into content and tool calls, holding
// back text that may be the start of a <tool_call> block.
type toolParser struct {
	on     bool // tools were offered: look for calls
	buf    string
	inCall bool
	n      int // calls so far
}

func newToolParser(ts toolSpec) *toolParser {
	p := &toolParser{on: ts.tools != nil}
	if ts.forced != "" && ts.tools != nil {
		p.inCall = true // the prompt ended with <tool_call>
	}
	return p
}

// add takes generated text and returns the content that can be sent and
// the calls completed.
func (p *toolParser) add(text string) (string, []toolCall) {
	if !p.on {
		return text, nil
	}
	p.buf += text
	var content strings.Builder
	var calls []toolCall
	for {
		if p.inCall {
			j := strings.Index(p.buf, toolClose)
			if j < 0 {
				break
			}
			body := p.buf[:j]
			p.buf = p.buf[j+len(toolClose):]
			p.inCall = false
			if c, ok := p.parse(body); ok {
				calls = append(calls, c)
			} else {
				content.WriteString(toolOpen + body + toolClose)
			}
			continue
		}
		i := strings.Index(p.buf, toolOpen)
		if i >= 0 {
			content.WriteString(p.buf[:i])
			p.buf = p.buf[i+len(toolOpen):]
			p.inCall = true
			continue
		}
		hold := 0
		for k := min(len(toolOpen)-1, len(p.buf)); k > 0; k-- {
			if strings.HasSuffix(p.buf, toolOpen[:k]) {
				hold = k
				break
			}
		}
		content.WriteString(p.buf[:len(p.buf)-hold])
		p.buf = p.buf[len(p.buf)-hold:]
		break
	}
	return content.String(), calls
}

// end returns what is left: an unfinished block is parsed if it is a
// complete call (a forced call ends when its JSON does), else it is content.
func (p *toolParser) end() (string, []toolCall) {
	if !p.on {
		return "", nil
	}
	rest := p.buf
	p.buf = ""
	if p.inCall {
		p.inCall = false
		if c, ok := p.parse(rest); ok {
			return "", []toolCall{c}
		}
		return toolOpen + rest, nil
	}
	return rest, nil
}

func (p *toolParser) parse(body string) (toolCall, bool) {
	var c struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&c); err != nil || c.Name == "" || dec.More() {
		return toolCall{}, false
	}
	args := bytes.TrimSpace(c.Arguments)
	if len(args) == 0 {
		args = []byte("{}")
	}
	var s string
	if json.Unmarshal(args, &s) == nil { // arguments given as a JSON string
		args = []byte(s)
	}
	var obj map[string]any
	if json.Unmarshal(args, &obj) != nil {
		return toolCall{}, false
	}
	p.n++
	return toolCall{ID: newID("call_"), Name: c.Name, Arguments: string(args)}, true
}

// oaToolCalls renders calls in OpenAI's shape; index is the first call's.
func oaToolCalls(calls []toolCall, index int, stream bool) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		m := map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		if stream {
			m["index"] = index + i
		}
		out[i] = m
	}
	return out
}
