package agent

import "context"

// Provider runs rounds under the round contract (docs/rounds.md): one fresh
// session in req.Workspace, given only what req holds, that ends with a
// valid report (for req.Review, a verdict) or an error of one of the kinds
// RunSession lists. A provider emits its events to obs, session_start first
// and session_end last, fills Result.Usage in every case, and leaves no
// change to a protected path behind.
//
// The activities call a round through this seam; Builtin is the provider of
// this package. Another one (a coding-agent CLI run as a subprocess, say,
// its report arriving through a tool of its own) implements the same
// contract beside it.
type Provider interface {
	Run(ctx context.Context, req Request, obs Observer) (Result, error)
}

// Builtin is the agent of this package: the model called over an
// OpenAI-compatible API with Config, the workspace tools run in-process.
type Builtin struct {
	Config Config
}

// Run runs one session: RunSession with b.Config, as a worker or, when req
// carries a Review, as the reviewer.
func (b Builtin) Run(ctx context.Context, req Request, obs Observer) (Result, error) {
	return RunSession(ctx, b.Config, req, obs)
}
