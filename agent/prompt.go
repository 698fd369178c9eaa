package agent

import (
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/report"
)

// The round prompt holds only: a fresh worker, the immutable objective,
// "Round R of N", the workspace as the source of truth, the previous report
// (or a first-round line), the report rules, the ban on starting another
// Ralph loop, an operator's guidance when there is some, and the bounds
// the worker has to plan with (including that a complete report is checked
// when a verify command applies). Nothing else
// from earlier rounds enters. The system prompt depends on the deployment
// only, so it stays byte-identical across sessions (prompt caches).

// emptyAnswerText stands in for an answer with neither text nor tool calls,
// so the echoed assistant turn is never empty.
const emptyAnswerText = "(empty answer)"

type systemData struct{ MaxHandoffChars int }

type roundData struct {
	Round, MaxRounds  int
	Objective         string
	Previous          string
	ModelCalls        int
	RoundTime         string
	CommandTimeout    string
	MaxCommandTimeout string
	ContextTokens     int
	VerifyCommand     string
	Guidance          string
	CampaignObjective string
	// Candidate of Candidates: the round runs several fresh agents.
	Candidate, Candidates int
}

// boundsData is the round's identity and bounds, shared by the worker's
// and the reviewer's prompts.
func (r *round) boundsData() roundData {
	d := roundData{
		Round: r.req.Round, MaxRounds: r.req.MaxRounds, Objective: r.req.Objective,
		ModelCalls: r.cfg.MaxModelCalls, ContextTokens: r.cfg.ContextTokens, VerifyCommand: r.req.VerifyCommand,
		CommandTimeout: humanDuration(r.limits.CommandTimeout), MaxCommandTimeout: humanDuration(r.limits.MaxCommandTimeout),
	}
	if !r.req.Deadline.IsZero() {
		d.RoundTime = humanDuration(r.req.Deadline.Sub(r.started))
	}
	return d
}

func (r *round) roundPrompt() (string, error) {
	d := r.boundsData()
	if r.req.Previous != nil {
		prev, err := report.Indented(*r.req.Previous)
		if err != nil {
			return "", fmt.Errorf("render the previous report: %w", err)
		}
		d.Previous = prev
	}
	d.Guidance = r.req.Guidance
	d.CampaignObjective = r.req.CampaignObjective
	d.Candidate, d.Candidates = r.req.Candidate, r.req.Candidates
	return render(textRound, d)
}

// initialMessages are the role's system prompt, which depends on the
// deployment only, and its first user message.
func (r *round) initialMessages() ([]openai.ChatCompletionMessage, error) {
	sys, err := render(r.role.texts().system, systemData{MaxHandoffChars: r.req.handoffCap()})
	if err != nil {
		return nil, err
	}
	user, err := r.role.prompt(r)
	if err != nil {
		return nil, err
	}
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: sys},
		{Role: openai.ChatMessageRoleUser, Content: user},
	}, nil
}

// humanDuration is d rounded to whole seconds (milliseconds under a
// second), as a model reads it best.
func humanDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
