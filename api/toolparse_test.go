package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestToolParser(t *testing.T) {
	on := toolSpec{tools: []json.RawMessage{[]byte(`{}`)}}
	tests := []struct {
		name    string
		chunks  []string
		content string
		calls   []string // name + " " + arguments
	}{
		{"plain", []string{"hello ", "world"}, "hello world", nil},
		{"one call split", []string{"ok <tool", "_call>\n{\"name\": \"f\", ", "\"arguments\": {\"a\": 1}}\n</tool_", "call> done"},
			"ok  done", []string{`f {"a": 1}`}},
		{"two calls", []string{`<tool_call>{"name":"a","arguments":{}}</tool_call><tool_call>{"name":"b","arguments":"{\"x\":2}"}</tool_call>`},
			"", []string{"a {}", `b {"x":2}`}},
		{"malformed json", []string{`<tool_call>{"name": broken</tool_call>`}, `<tool_call>{"name": broken</tool_call>`, nil},
		{"no name", []string{`<tool_call>{"arguments":{}}</tool_call>`}, `<tool_call>{"arguments":{}}</tool_call>`, nil},
		{"arguments not an object", []string{`<tool_call>{"name":"f","arguments":[1]}</tool_call>`}, `<tool_call>{"name":"f","arguments":[1]}</tool_call>`, nil},
		{"unterminated", []string{`x <tool_call>{"name":"f"`}, `x <tool_call>{"name":"f"`, nil},
		{"lookalike", []string{"a <tool", "box> b"}, "a <toolbox> b", nil},
	}
	for _, tc := range tests {
		p := newToolParser(on)
		var content strings.Builder
		var calls []string
		for _, ch := range tc.chunks {
			c, cs := p.add(ch)
			content.WriteString(c)
			for _, x := range cs {
				calls = append(calls, x.Name+" "+x.Arguments)
			}
		}
		c, cs := p.end()
		content.WriteString(c)
		for _, x := range cs {
			calls = append(calls, x.Name+" "+x.Arguments)
		}
		if content.String() != tc.content || strings.Join(calls, "|") != strings.Join(tc.calls, "|") {
			t.Errorf("%s: content %q calls %q, want %q %q", tc.name, content.String(), calls, tc.content, tc.calls)
		}
	}
	// Without tools the text is passed through untouched.
	p := newToolParser(toolSpec{})
	if c, cs := p.add(`<tool_call>{"name":"f","arguments":{}}</tool_call>`); cs != nil || !strings.HasPrefix(c, "<tool_call>") {
		t.Errorf("no tools: %q %v", c, cs)
	}
}
