// Package cli runs a round's fresh agent as a coding-agent CLI (Claude
// Code, Codex, opencode) in the round's sandbox: the second implementation
// of the round contract beside agent.Builtin (docs/agents.md). The CLI
// reports through the worker's own MCP tool (report.go, served by the
// worker's binary in a helper mode, helper.go) and reaches the model only
// through the worker's gateway (gateway.go), which holds the provider key.
// A CLI is one Dialect (one file: claude.go, codex.go, opencode.go) and
// the API it speaks (api.go).
package cli

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// Values of RALPH_AGENT and RALPH_REVIEW_AGENT.
const (
	Builtin    = "builtin"
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Opencode   = "opencode"
)

// DefaultIdle is RALPH_AGENT_IDLE_SECONDS's default: a CLI silent this long
// (no model request, no report call) gets its continuation.
const DefaultIdle = 600 * time.Second

// Settings are the deployment's agent-provider settings.
type Settings struct {
	// Agent is the provider of every round (RALPH_AGENT); Review of every
	// review (RALPH_REVIEW_AGENT, empty: Agent); Plan of every campaign
	// wave's planner (RALPH_PLAN_AGENT, empty: Agent).
	Agent, Review, Plan string
	// Command overrides the CLI binary (RALPH_AGENT_COMMAND).
	Command string
	// Model is the model the CLI asks for (RALPH_AGENT_MODEL; empty: RALPH_MODEL).
	Model string
	// Idle is RALPH_AGENT_IDLE_SECONDS.
	Idle time.Duration
	// AnthropicBaseURL and AnthropicAPIKey are the upstream of a CLI
	// speaking Anthropic Messages (claude-code).
	AnthropicBaseURL, AnthropicAPIKey string
	// Candidates are the providers cycled over a round's candidates
	// (RALPH_CANDIDATE_AGENTS): every CLI among them is checked at start.
	Candidates []string
	// MaxInflight is RALPH_AGENT_MAX_INFLIGHT, MaxRequestMB
	// RALPH_AGENT_MAX_REQUEST_MB (the gateway's bounds, docs/security.md).
	MaxInflight, MaxRequestMB int
}

// DefaultSettings: the builtin session, CLIs idle for DefaultIdle at most.
func DefaultSettings() Settings {
	return Settings{Agent: Builtin, Idle: DefaultIdle, AnthropicBaseURL: "https://api.anthropic.com",
		MaxInflight: DefaultMaxInflight, MaxRequestMB: DefaultMaxRequestMB}
}

// Kinds lists every value of RALPH_AGENT.
func Kinds() []string {
	return append([]string{Builtin}, slices.Sorted(maps.Keys(dialects))...)
}

// ReviewAgent is the provider of reviews.
func (s Settings) ReviewAgent() string {
	if s.Review == "" {
		return s.Agent
	}
	return s.Review
}

// PlanAgent is the provider of campaign planners.
func (s Settings) PlanAgent() string {
	if s.Plan == "" {
		return s.Agent
	}
	return s.Plan
}

// Validate checks the values (not the machine: see Check).
func (s Settings) Validate() error {
	checks := []struct{ name, value string }{{"RALPH_AGENT", s.Agent}, {"RALPH_REVIEW_AGENT", s.Review}, {"RALPH_PLAN_AGENT", s.Plan}}
	for _, c := range s.Candidates {
		checks = append(checks, struct{ name, value string }{"RALPH_CANDIDATE_AGENTS", c})
	}
	for _, v := range checks {
		if v.value == "" && (v.name == "RALPH_REVIEW_AGENT" || v.name == "RALPH_PLAN_AGENT") {
			continue
		}
		if !slices.Contains(Kinds(), v.value) {
			return fmt.Errorf("%s=%q: must be one of %s", v.name, v.value, strings.Join(Kinds(), ", "))
		}
	}
	if s.Idle <= 0 {
		return fmt.Errorf("RALPH_AGENT_IDLE_SECONDS must be positive, got %s", s.Idle)
	}
	if s.MaxInflight < 1 {
		return fmt.Errorf("RALPH_AGENT_MAX_INFLIGHT must be at least 1, got %d", s.MaxInflight)
	}
	if s.MaxRequestMB < 1 {
		return fmt.Errorf("RALPH_AGENT_MAX_REQUEST_MB must be at least 1, got %d", s.MaxRequestMB)
	}
	return nil
}

// API names the model API a CLI speaks (the gateway serves it).
type API string

// The APIs of the CLIs.
const (
	APIChat      API = "openai-chat"        // POST /v1/chat/completions, streamed
	APIResponses API = "openai-responses"   // POST /v1/responses, streamed
	APIMessages  API = "anthropic-messages" // POST /v1/messages, streamed
)

// Dialect is what differs between CLIs: how one is found, checked and
// started headless with a private configuration, and which API it speaks.
// Adding a CLI is one file holding its Dialect (registered in init) and,
// when it speaks a new API, that API in api.go.
type Dialect interface {
	// Name is its RALPH_AGENT value.
	Name() string
	// Binary is the command found on PATH unless RALPH_AGENT_COMMAND is set.
	Binary() string
	// Tested is the range of versions the project tested.
	Tested() Range
	// API is the model API it speaks.
	API() API
	// Invocation writes the CLI's private configuration under a.Home and
	// returns the command line and the environment of one run (a.Continue:
	// the continuation of the same session).
	Invocation(a Attempt) (argv, env []string, err error)
}

// Attempt is what a Dialect needs to start a CLI once.
type Attempt struct {
	Command string // the binary
	Home    string // private HOME and configuration root, removed afterwards
	Model   string
	// GatewayURL is the gateway's base URL (ending in /v1) as the CLI sees
	// it, and Token the attempt's credential for it.
	GatewayURL, Token string
	// ReportCommand starts the MCP server of the report tool (stdio).
	ReportCommand []string
	// ReportTool is the finishing tool's name (submit_report or submit_review).
	ReportTool string
	Continue   bool
	// home is Home opened when the worker made it; everything the worker
	// writes there is reached from it (owner_unix.go), owned by uid:gid.
	home     *os.File
	uid, gid int
}

// dialects holds every CLI, by name.
var dialects = map[string]Dialect{}

func register(d Dialect) { dialects[d.Name()] = d }

// Lookup is the Dialect named name.
func Lookup(name string) (Dialect, bool) {
	d, ok := dialects[name]
	return d, ok
}
