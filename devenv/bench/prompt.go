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

// promptObjective is the objective of the recorded run.
const promptObjective = "Make `go test ./...` pass in this repository."

// Prompt records the requests of a two-round run (three tool calls and a
// report per round) and measures the fixed part of a round's first request
// and the prefix stability of requests within a session. Its steps: record
// the run, parse its requests, group them by session, check their prefixes,
// write the tables.
func (h *Harness) Prompt(ctx context.Context) (Section, error) {
	sec := Section{
		Title: "5. Prompt cost",
		Intro: "The scripted model records every request of a two-round Ralph run (each round: list_files, write_file, run_command `true`, " +
			"then submit_report), sent by the real agent through go-openai. Characters are Unicode code points of the JSON as sent; " +
			"tokens are estimated as characters / 4. The fixed part of every round's first request is the system prompt and the tool " +
			"schemas; the user message carries the objective, `Round R of N` and the previous report.",
	}
	recorded, err := h.recordPromptRun(ctx)
	if err != nil {
		return sec, err
	}
	reqs, err := parseRequests(recorded)
	if err != nil {
		return sec, err
	}
	sessions, err := groupSessions(reqs)
	if err != nil {
		return sec, err
	}
	sec.Tables = []Table{sessions.costTable(), sessions.perToolTable(), sessions.stabilityTable(len(reqs))}
	sec.Notes = append(sec.Notes,
		"Prefix stability lets providers with prompt caching reuse the whole earlier conversation of a session on every call; the fixed part is also shared by every session of a deployment.")
	return sec, nil
}

// recordPromptRun runs the two rounds against a recording scripted model
// and returns what it received.
func (h *Harness) recordPromptRun(ctx context.Context) ([]fakeopenai.Request, error) {
	model := fakeopenai.NewServer(scaleScript(0))
	defer model.Close()
	w, err := h.StartInProc(h.Dev, "prompt", model.BaseURL(), true, nil)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	run, err := StartRalph(ctx, h.Dev, w.Queue, h.name("prompt-run"), ralphInput{Objective: promptObjective, MaxRounds: 2})
	if err != nil {
		return nil, err
	}
	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		return nil, err
	}
	return model.Requests(), nil
}

// parsedRequest is one chat request as sent, split into its parts.
type parsedRequest struct {
	index    int
	messages []json.RawMessage
	tools    json.RawMessage
	rest     []byte // every other field, re-encoded in key order
	raw      []byte
}

func parseRequests(recorded []fakeopenai.Request) ([]parsedRequest, error) {
	var reqs []parsedRequest
	for _, r := range recorded {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &fields); err != nil {
			return nil, fmt.Errorf("request %d: %w", r.Index, err)
		}
		p := parsedRequest{index: r.Index, tools: fields["tools"], raw: r.Raw}
		if err := json.Unmarshal(fields["messages"], &p.messages); err != nil {
			return nil, fmt.Errorf("request %d messages: %w", r.Index, err)
		}
		delete(fields, "messages")
		delete(fields, "tools")
		p.rest, _ = json.Marshal(fields) // map keys are sorted
		reqs = append(reqs, p)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("no request recorded")
	}
	return reqs, nil
}

// promptSessions are the recorded requests by session, in the order the
// sessions started, each session's in the order sent.
type promptSessions [][]parsedRequest

// groupSessions groups requests that share their first two messages
// (system, user) into one session.
func groupSessions(reqs []parsedRequest) (promptSessions, error) {
	var order []string
	byKey := map[string][]parsedRequest{}
	for _, p := range reqs {
		if len(p.messages) < 2 {
			return nil, fmt.Errorf("request %d has %d messages", p.index, len(p.messages))
		}
		key := string(p.messages[0]) + "\x00" + string(p.messages[1])
		if _, ok := byKey[key]; !ok {
			order = append(order, key)
		}
		byKey[key] = append(byKey[key], p)
	}
	var out promptSessions
	for _, key := range order {
		s := byKey[key]
		slices.SortFunc(s, func(a, b parsedRequest) int { return a.index - b.index })
		out = append(out, s)
	}
	return out, nil
}

// extends reports whether cur repeats prev byte for byte and only appends.
func extends(prev, cur parsedRequest) bool {
	ok := len(cur.messages) > len(prev.messages) && bytes.Equal(prev.tools, cur.tools) && bytes.Equal(prev.rest, cur.rest)
	for m := 0; ok && m < len(prev.messages); m++ {
		ok = bytes.Equal(prev.messages[m], cur.messages[m])
	}
	return ok
}

// prefixChecks counts the consecutive pairs within each session, those
// that are no extension, and names the first of them.
func (ss promptSessions) prefixChecks() (checked, violations int, first string) {
	for _, s := range ss {
		for k := 1; k < len(s); k++ {
			checked++
			if !extends(s[k-1], s[k]) {
				violations++
				if first == "" {
					first = fmt.Sprintf("request %d is not an extension of request %d", s[k].index, s[k-1].index)
				}
			}
		}
	}
	return checked, violations, first
}

// crossStable reports whether every session's first request has the first
// session's system prompt, tools and parameters.
func (ss promptSessions) crossStable() bool {
	first := ss[0][0]
	for _, s := range ss[1:] {
		o := s[0]
		if !bytes.Equal(o.messages[0], first.messages[0]) || !bytes.Equal(o.tools, first.tools) || !bytes.Equal(o.rest, first.rest) {
			return false
		}
	}
	return true
}

func messageContent(raw json.RawMessage) string {
	var m struct {
		Content string `json:"content"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Content
}

// addSize adds a row of n characters and its token estimate.
func addSize(t *Table, part string, n int) { t.Add(part, strconv.Itoa(n), strconv.Itoa((n+3)/4)) }

// costTable is the size of each part of a round's first request.
func (ss promptSessions) costTable() Table {
	first := ss[0][0]
	chars := utf8.RuneCountInString
	sys := messageContent(first.messages[0])
	cost := Table{Header: []string{"part of a round's first request", "characters", "≈ tokens (chars / 4)"}}
	addSize(&cost, "system prompt (text)", chars(sys))
	addSize(&cost, "tool schemas (the `tools` JSON, 7 tools)", utf8.RuneCount(first.tools))
	addSize(&cost, "**fixed part** (system prompt + tool schemas)", chars(sys)+utf8.RuneCount(first.tools))
	addSize(&cost, "user message, round 1 (objective of "+strconv.Itoa(chars(promptObjective))+" chars, first-round line)", chars(messageContent(first.messages[1])))
	if len(ss) > 1 {
		addSize(&cost, "user message, round 2 (with the previous report)", chars(messageContent(ss[1][0].messages[1])))
	}
	addSize(&cost, "whole first request body of round 1 (JSON bytes as sent)", len(first.raw))
	return cost
}

// perToolTable is the size of each tool's schema.
func (ss promptSessions) perToolTable() Table {
	perTool := Table{Header: []string{"tool", "schema characters", "≈ tokens"}}
	var tools []json.RawMessage
	_ = json.Unmarshal(ss[0][0].tools, &tools)
	for _, t := range tools {
		var def struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		_ = json.Unmarshal(t, &def)
		addSize(&perTool, def.Function.Name, utf8.RuneCount(t))
	}
	return perTool
}

// stabilityTable says whether requests are prefix-stable within a session
// and share their fixed part across sessions.
func (ss promptSessions) stabilityTable(requests int) Table {
	checked, violations, firstViolation := ss.prefixChecks()
	stable := Table{Header: []string{"check", "result"}}
	stable.Add("sessions recorded", strconv.Itoa(len(ss)))
	stable.Add("requests recorded", strconv.Itoa(requests))
	stable.Add("consecutive request pairs checked within a session", strconv.Itoa(checked))
	verdict := "yes: every request repeats the previous one's messages byte for byte and only appends; tools and parameters identical"
	if violations > 0 {
		verdict = fmt.Sprintf("no: %d of %d pairs differ (%s)", violations, checked, firstViolation)
	}
	stable.Add("prefix-stable within a session", verdict)
	cross := "yes: identical system prompt, tools and parameters in every session (only the user message differs)"
	if !ss.crossStable() {
		cross = "no: the system prompt, tools or parameters differ between sessions"
	}
	stable.Add("same fixed part across sessions", cross)
	return stable
}
