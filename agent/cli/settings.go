package cli

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/ralph-temporal/ralph/agent"
)

// command is the binary of kind: RALPH_AGENT_COMMAND for the round's
// agent, the CLI's own name otherwise (a reviewer on another CLI).
func (s Settings) command(kind string, d Dialect) string {
	if kind == s.Agent && s.Command != "" {
		return s.Command
	}
	return d.Binary()
}

// CheckAll checks every CLI the settings use (the round's, the reviewer's
// and the planner's), for the start line; builtin needs no check.
func (s Settings) CheckAll(ctx context.Context) ([]Found, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var found []Found
	for i, kind := range append([]string{s.Agent, s.ReviewAgent(), s.PlanAgent()}, s.Candidates...) {
		d, ok := Lookup(kind)
		if !ok || slices.ContainsFunc(found, func(f Found) bool { return f.Dialect.Name() == kind }) {
			continue
		}
		setting := "RALPH_AGENT"
		switch {
		case i == 1:
			setting = "RALPH_REVIEW_AGENT"
		case i == 2:
			setting = "RALPH_PLAN_AGENT"
		case i > 2:
			setting = "RALPH_CANDIDATE_AGENTS"
		}
		f, err := check(ctx, setting, kind, s.command(kind, d))
		if err != nil {
			return nil, err
		}
		if d.API() == APIMessages && s.AnthropicAPIKey == "" {
			return nil, fmt.Errorf("%s=%s speaks Anthropic Messages: ANTHROPIC_API_KEY is required (the gateway forwards to ANTHROPIC_BASE_URL with it)", setting, kind)
		}
		found = append(found, f)
	}
	return found, nil
}

// Provider is the provider of kind (a RALPH_AGENT value) for sessions
// with cfg.
func (s Settings) Provider(kind string, cfg agent.Config) (agent.Provider, error) {
	d, ok := Lookup(kind)
	if !ok {
		return agent.Builtin{Config: cfg}, nil
	}
	path, err := exec.LookPath(s.command(kind, d))
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", kind, err)
	}
	p := Provider{Dialect: d, Command: path, Model: s.Model, Idle: s.Idle, Config: cfg, Upstream: cfg.BaseURL, Key: cfg.APIKey,
		MaxInflight: s.MaxInflight, MaxRequestMB: s.MaxRequestMB}
	if p.Model == "" {
		p.Model = cfg.Model
	}
	if d.API() == APIMessages {
		p.Upstream, p.Key = strings.TrimRight(s.AnthropicBaseURL, "/")+"/v1", s.AnthropicAPIKey
	}
	return p, nil
}
