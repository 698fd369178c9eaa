package cli

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The tool calls of the answers the gateway relays, read from the wire of
// each API, so that a submission over the report socket can be checked
// against what the model asked for (docs/security.md: a report is the model's act).

// toolCall is one tool call of a relayed answer: its name and arguments.
type toolCall struct {
	name, args string
}

// callParts gathers the tool calls of one answer as they arrive in pieces
// (by index), in order.
type callParts struct {
	order []int
	names map[int]string
	args  map[int]*strings.Builder
}

func (p *callParts) add(i int, name, args string) {
	if p.names == nil {
		p.names, p.args = map[int]string{}, map[int]*strings.Builder{}
	}
	if _, ok := p.args[i]; !ok {
		p.order = append(p.order, i)
		p.args[i] = &strings.Builder{}
	}
	if name != "" {
		p.names[i] = name
	}
	p.args[i].WriteString(args)
}

func (p *callParts) calls() []toolCall {
	var out []toolCall
	for _, i := range p.order {
		out = append(out, toolCall{name: p.names[i], args: p.args[i].String()})
	}
	return out
}

// canonicalArgs is args as compact JSON with sorted keys and numbers as
// written: two spellings of the same arguments compare equal. An empty
// text is the empty object; a text that is not JSON is itself.
func canonicalArgs(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return args
	}
	out, err := json.Marshal(v)
	if err != nil {
		return args
	}
	return string(bytes.TrimSpace(out))
}
