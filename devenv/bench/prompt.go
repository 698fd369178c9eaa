package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
)

// Prompt records the requests of a two-round run (three tool calls and a
// report per round) and measures the fixed part of a round's first request
// and the prefix stability of requests within a session.
func (h *Harness) Prompt(ctx context.Context) (Section, error) {
	sec := Section{
		Title: "5. Prompt cost",
		Intro: "The scripted model records every request of a two-round Ralph run (each round: list_files, write_file, run_command `true`, " +
			"then submit_report), sent by the real agent through go-openai. Characters are Unicode code points of the JSON as sent; " +
			"tokens are estimated as characters / 4. The fixed part of every round's first request is the system prompt and the tool " +
			"schemas; the user message carries the objective, `Round R of N` and the previous report.",
	}
	model := fakeopenai.NewServer(scaleScript(0))
	defer model.Close()
	w, err := h.StartInProc(h.Dev, "prompt", model.BaseURL(), true, nil)
	if err != nil {
		return sec, err
	}
	defer w.Stop()
	id := h.name("prompt-run")
	run, err := StartRalph(ctx, h.Dev, w.Queue, id, ralphInput{Objective: "Make `go test ./...` pass in this repository.", MaxRounds: 2})
	if err != nil {
		return sec, err
	}
	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		return sec, err
	}

	type parsed struct {
		index    int
		messages []json.RawMessage
		tools    json.RawMessage
		rest     []byte // every other field, re-encoded in key order
		raw      []byte
	}
	var reqs []parsed
	for _, r := range model.Requests() {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &fields); err != nil {
			return sec, fmt.Errorf("request %d: %w", r.Index, err)
		}
		p := parsed{index: r.Index, tools: fields["tools"], raw: r.Raw}
		if err := json.Unmarshal(fields["messages"], &p.messages); err != nil {
			return sec, fmt.Errorf("request %d messages: %w", r.Index, err)
		}
		delete(fields, "messages")
		delete(fields, "tools")
		p.rest, _ = json.Marshal(fields) // map keys are sorted
		reqs = append(reqs, p)
	}
	if len(reqs) == 0 {
		return sec, fmt.Errorf("no request recorded")
	}

	// Sessions: requests that share their first two messages (system, user).
	var order []string
	sessions := map[string][]parsed{}
	for _, p := range reqs {
		if len(p.messages) < 2 {
			return sec, fmt.Errorf("request %d has %d messages", p.index, len(p.messages))
		}
		key := string(p.messages[0]) + "\x00" + string(p.messages[1])
		if _, ok := sessions[key]; !ok {
			order = append(order, key)
		}
		sessions[key] = append(sessions[key], p)
	}
	checked, violations := 0, 0
	var firstViolation string
	for _, key := range order {
		s := sessions[key]
		slices.SortFunc(s, func(a, b parsed) int { return a.index - b.index })
		for k := 1; k < len(s); k++ {
			prev, cur := s[k-1], s[k]
			checked++
			ok := len(cur.messages) > len(prev.messages) && bytes.Equal(prev.tools, cur.tools) && bytes.Equal(prev.rest, cur.rest)
			for m := 0; ok && m < len(prev.messages); m++ {
				ok = bytes.Equal(prev.messages[m], cur.messages[m])
			}
			if !ok {
				violations++
				if firstViolation == "" {
					firstViolation = fmt.Sprintf("request %d is not an extension of request %d", cur.index, prev.index)
				}
			}
		}
	}
	crossStable := true
	first := sessions[order[0]][0]
	for _, key := range order[1:] {
		o := sessions[key][0]
		if !bytes.Equal(o.messages[0], first.messages[0]) || !bytes.Equal(o.tools, first.tools) || !bytes.Equal(o.rest, first.rest) {
			crossStable = false
		}
	}

	content := func(raw json.RawMessage) string {
		var m struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(raw, &m)
		return m.Content
	}
	chars := func(s string) int { return utf8.RuneCountInString(s) }
	row := func(t *Table, part string, n int) { t.Add(part, strconv.Itoa(n), strconv.Itoa((n+3)/4)) }

	sys := content(first.messages[0])
	cost := Table{Header: []string{"part of a round's first request", "characters", "≈ tokens (chars / 4)"}}
	row(&cost, "system prompt (text)", chars(sys))
	row(&cost, "tool schemas (the `tools` JSON, 7 tools)", utf8.RuneCount(first.tools))
	row(&cost, "**fixed part** (system prompt + tool schemas)", chars(sys)+utf8.RuneCount(first.tools))
	row(&cost, "user message, round 1 (objective of "+strconv.Itoa(chars("Make `go test ./...` pass in this repository."))+" chars, first-round line)", chars(content(first.messages[1])))
	if len(order) > 1 {
		row(&cost, "user message, round 2 (with the previous report)", chars(content(sessions[order[1]][0].messages[1])))
	}
	row(&cost, "whole first request body of round 1 (JSON bytes as sent)", len(first.raw))

	perTool := Table{Header: []string{"tool", "schema characters", "≈ tokens"}}
	var tools []json.RawMessage
	_ = json.Unmarshal(first.tools, &tools)
	for _, t := range tools {
		var def struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		_ = json.Unmarshal(t, &def)
		row(&perTool, def.Function.Name, utf8.RuneCount(t))
	}

	stable := Table{Header: []string{"check", "result"}}
	stable.Add("sessions recorded", strconv.Itoa(len(order)))
	stable.Add("requests recorded", strconv.Itoa(len(reqs)))
	stable.Add("consecutive request pairs checked within a session", strconv.Itoa(checked))
	verdict := "yes: every request repeats the previous one's messages byte for byte and only appends; tools and parameters identical"
	if violations > 0 {
		verdict = fmt.Sprintf("no: %d of %d pairs differ (%s)", violations, checked, firstViolation)
	}
	stable.Add("prefix-stable within a session", verdict)
	cross := "yes: identical system prompt, tools and parameters in every session (only the user message differs)"
	if !crossStable {
		cross = "no: the system prompt, tools or parameters differ between sessions"
	}
	stable.Add("same fixed part across sessions", cross)
	sec.Tables = []Table{cost, perTool, stable}
	sec.Notes = append(sec.Notes,
		"Prefix stability lets providers with prompt caching reuse the whole earlier conversation of a session on every call; the fixed part is also shared by every session of a deployment.")
	return sec, nil
}
