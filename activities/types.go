// Package activities holds the Temporal adapters of a Ralph worker: resolving
// the deployment limits (recorded in history) and running one round as one
// fresh agent session. The names and types here are a stable contract between
// the workflow, the worker and histories already recorded.
package activities

import (
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// Stable activity names: recorded in every history, so never rename them.
const (
	ResolveLimitsName    = "ResolveLimits"
	RunRoundName         = "RunRound"
	ReviewCompletionName = "ReviewCompletion"
	PlanWaveName         = "PlanWave"
)

// Application error types raised by RunRound.
const (
	// ErrTypeChildFailed: the round ended without a valid report in an
	// ordinary way (bad request, auth, bounds spent, report never valid).
	// Non-retryable: the workflow fails with RoundFailed.
	ErrTypeChildFailed = "ChildFailed"
	// ErrTypeModelUnavailable: transient model errors outlasted the in-activity
	// retries. Retryable by the activity retry policy (a fresh session).
	ErrTypeModelUnavailable = "ModelUnavailable"
	// ErrTypeBadRoundInput: the workflow sent something this worker cannot
	// act on (for example a workspace that escapes the root). Non-retryable.
	ErrTypeBadRoundInput = "BadRoundInput"
	// ErrTypeRoundError: anything else that ended an attempt (disk, git,
	// the harness). Retryable; it carries FailureDetails like the others, so
	// what the attempts spent is never lost with the error.
	ErrTypeRoundError = "RoundError"
)

// Limits are the deployment-owned bounds of a run. The workflow resolves them
// once through ResolveLimits, so they are recorded in history and a replay
// never depends on the current worker's configuration.
type Limits struct {
	// MaxRounds is both the default and the ceiling of a run's round cap.
	MaxRounds         int `json:"maxRounds"`
	MaxHandoffChars   int `json:"maxHandoffChars"`
	MaxObjectiveChars int `json:"maxObjectiveChars"`
	// RoundTimeoutSeconds bounds one attempt of one round (StartToClose).
	RoundTimeoutSeconds int `json:"roundTimeoutSeconds"`
	// HeartbeatTimeoutSeconds bounds the silence of a running round before
	// Temporal counts it lost and retries it. Cancellation does not wait for
	// it: the round heartbeats every second (and soon after every model
	// answer) and the worker does not throttle that, so a cancel arrives with
	// the next heartbeat.
	HeartbeatTimeoutSeconds int `json:"heartbeatTimeoutSeconds"`
	// RoundAttempts bounds the attempts of one round (infrastructure failures only).
	RoundAttempts int `json:"roundAttempts"`
	// RoundsPerRun is how many rounds one workflow run executes before it
	// continues as new, keeping each history small.
	RoundsPerRun int `json:"roundsPerRun"`
	// VerifyCommand is the deployment's verify command (RALPH_VERIFY_COMMAND),
	// used when the run's input names none; empty means none.
	VerifyCommand string `json:"verifyCommand,omitempty"`
	// MaxRunTokens and MaxRunMinutes are the ceilings (and defaults) of a run's
	// token and time budgets; 0 means the deployment sets none.
	MaxRunTokens  int `json:"maxRunTokens,omitempty"`
	MaxRunMinutes int `json:"maxRunMinutes,omitempty"`
	// MaxIdleRounds ends a run after that many consecutive continue rounds
	// that left the workspace unchanged; 0 (histories from before the idle
	// budget) means no idle budget.
	MaxIdleRounds int `json:"maxIdleRounds,omitempty"`
	// SearchAttributes turns the Ralph* search attribute upserts on.
	SearchAttributes bool `json:"searchAttributes,omitempty"`
	// ProtectedPaths are the deployment's protected-path patterns
	// (RALPH_PROTECTED_PATHS); none in histories from before them.
	ProtectedPaths []string `json:"protectedPaths,omitempty"`
	// Review turns the independent reviewer on for runs whose input does
	// not say (RALPH_REVIEW); false in histories from before it.
	Review bool `json:"review,omitempty"`
	// MaxWaitMinutes caps one durable wait after a deferred round;
	// MaxDeferrals bounds one round's consecutive deferrals. Both 0 (histories
	// from before deferrals): rounds never defer, provider limits fail them
	// as before.
	MaxWaitMinutes int `json:"maxWaitMinutes,omitempty"`
	MaxDeferrals   int `json:"maxDeferrals,omitempty"`
	// MaxPauseHours ends a run paused longer (stopped); 0 (histories from
	// before it) means a pause has no end.
	MaxPauseHours int `json:"maxPauseHours,omitempty"`
	// UpgradeOnTargetChange: the run is pinned (RALPH_VERSIONING_BEHAVIOR=
	// pinned on a versioned worker) and continues as new onto a changed
	// target version at a round boundary, a pause or a wait; false in
	// histories from before it and for auto-upgrade runs.
	UpgradeOnTargetChange bool `json:"upgradeOnTargetChange,omitempty"`
	// CampaignShares: a campaign hands each loop a share of its remaining
	// token budget (remaining divided by the loops that will run at once),
	// never the whole; set by every worker since, recorded with the limits
	// so a campaign started before it keeps handing out the whole.
	CampaignShares bool `json:"campaignShares,omitempty"`
	// CampaignEvidence: a returned task's report names the failure in one
	// sentence and carries the verify's exit code and output tail (or the
	// conflicting paths) in its evidence; recorded like CampaignShares.
	CampaignEvidence bool `json:"campaignEvidence,omitempty"`
	// CampaignHeldApart: a campaign's merge awaiting approval waits beside
	// the queue (other tasks start, run and merge), notifies, ends on the
	// approval timeout or a stop; recorded like CampaignShares.
	CampaignHeldApart bool `json:"campaignHeldApart,omitempty"`
	// CampaignQueueApart: a campaign's merge queue runs in a coroutine
	// beside its main loop (SPEC 39), so loops start and end and updates
	// are answered while a merge and its verify run; recorded like
	// CampaignShares so a campaign started before it keeps its commands.
	CampaignQueueApart bool `json:"campaignQueueApart,omitempty"`
	// CampaignTaskFaults: a task of a merge stack whose branch is missing
	// or no longer holds its commit is sent back alone and the rest lands
	// (else the whole step failed); recorded like CampaignShares.
	CampaignTaskFaults bool `json:"campaignTaskFaults,omitempty"`
	// CampaignHeadRed: a single task's red merge has the queue verify the
	// integration head alone; a red head pauses the queue (head-red)
	// charging no merge attempt; recorded like CampaignShares.
	CampaignHeadRed bool `json:"campaignHeadRed,omitempty"`
	// CampaignGitBound: PrepareTask and the landing of an approved merge
	// retry for MergeRetryMinutes too, then pause the queue (pauseReason
	// git) as a merge does; recorded like CampaignShares.
	CampaignGitBound bool `json:"campaignGitBound,omitempty"`
	// CampaignNoDrain: a campaign continues as new without waiting for its
	// running loops (SPEC 39, loops outlive a run): they are started
	// abandoned, tell the campaign when they end, and the continuation
	// carries them; recorded like CampaignShares so a campaign started
	// before it keeps cancelling its loops at the move and draining them.
	CampaignNoDrain bool `json:"campaignNoDrain,omitempty"`
	// CampaignVerifyTimes: each verify record of a campaign's queue has its
	// start and duration; recorded like CampaignShares, since the records
	// cross continue-as-new.
	CampaignVerifyTimes bool `json:"campaignVerifyTimes,omitempty"`
	// CampaignGitHeartbeat: a campaign's git steps (prepare, merge, lanes)
	// use HeartbeatTimeoutSeconds, as rounds do, instead of a fixed minute,
	// so a lost worker's merge is retried as soon as a round would be.
	CampaignGitHeartbeat bool `json:"campaignGitHeartbeat,omitempty"`
	// CampaignDropLanes: a campaign that used lanes ends with a MergeTask
	// step deleting its leftover lane refs (MergeTaskInput.DropLanes);
	// recorded like CampaignShares, since it adds a step to the history.
	CampaignDropLanes bool `json:"campaignDropLanes,omitempty"`
	// CandidateAdoptLocal: a round's chosen candidate is adopted by a local
	// activity, in the workflow task that chose it, instead of an activity
	// of its own (a dispatch and a workflow task fewer per round; SPEC 41's
	// 3-candidate round). Recorded like CampaignShares, so a run started
	// before it replays its AdoptCandidate activities.
	CandidateAdoptLocal bool `json:"candidateAdoptLocal,omitempty"`
	// Git is the worker's RALPH_GIT when checkpoints are on ("" when off):
	// a campaign needs local or remote.
	Git string `json:"git,omitempty"`
	// MaxCampaignParallel and MaxCampaignTasks are the ceilings of a
	// campaign's maxParallel and of its task list.
	MaxCampaignParallel int `json:"maxCampaignParallel,omitempty"`
	MaxCampaignTasks    int `json:"maxCampaignTasks,omitempty"`
	// MergeRetryMinutes is how long a campaign's merge step retries a git
	// failure that is not the task's before the queue pauses; 0 (histories
	// from before it) retries without end.
	MergeRetryMinutes int `json:"mergeRetryMinutes,omitempty"`
	// MaxMergeLanes is the ceiling of a campaign's mergeLanes (speculative
	// lanes, SPEC 41); 0 in histories from before lanes: one lane.
	MaxMergeLanes int `json:"maxMergeLanes,omitempty"`
	// MaxWaves is the ceiling of a planned campaign's maxWaves
	// (RALPH_MAX_WAVES), MaxWaveTasks of one wave's plan
	// (RALPH_MAX_WAVE_TASKS); 0 in histories from before planning.
	MaxWaves     int `json:"maxWaves,omitempty"`
	MaxWaveTasks int `json:"maxWaveTasks,omitempty"`
	// Approve is the approval mode of runs whose input does not say
	// (RALPH_APPROVE: none, complete, rounds:N); "" is none.
	Approve string `json:"approve,omitempty"`
	// ApprovalTimeoutHours ends an approval wait (stopped); 0: no end.
	ApprovalTimeoutHours int `json:"approvalTimeoutHours,omitempty"`
	// NotifyEvents are the events the workflow sends to the worker's
	// RALPH_NOTIFY_URL (none when no URL is configured); the URL itself
	// is never here.
	NotifyEvents []string `json:"notifyEvents,omitempty"`
	// Candidates is how many fresh agents a round runs when the input does
	// not say (RALPH_CANDIDATES), MaxCandidates its ceiling; 0 in histories
	// from before candidates (one agent). CandidateAgents and
	// CandidateModels are cycled over a round's candidates (empty: the
	// worker's RALPH_AGENT and RALPH_MODEL); CandidateScore "verify" runs
	// the verify command on unfinished candidates to rank them.
	Candidates      int      `json:"candidates,omitempty"`
	MaxCandidates   int      `json:"maxCandidates,omitempty"`
	CandidateAgents []string `json:"candidateAgents,omitempty"`
	CandidateModels []string `json:"candidateModels,omitempty"`
	CandidateScore  string   `json:"candidateScore,omitempty"`
	// CandidateDefaultAgent (RALPH_AGENT) and CandidateDefaultModels (the
	// model of each provider a candidate may run, when
	// RALPH_CANDIDATE_MODELS names none) are what a running candidate of
	// the worker's defaults shows in status; set by ResolveLimits on a
	// worker that can run candidates, absent in histories from before them.
	CandidateDefaultAgent  string            `json:"candidateDefaultAgent,omitempty"`
	CandidateDefaultModels map[string]string `json:"candidateDefaultModels,omitempty"`
}

// Deferrals reports whether rounds may end as deferred under these limits.
func (l Limits) Deferrals() bool { return l.MaxDeferrals > 0 && l.MaxWaitMinutes > 0 }

// DefaultLimits are the deployment defaults of a run.
func DefaultLimits() Limits {
	return Limits{
		MaxRounds:               256,
		MaxHandoffChars:         agent.DefaultMaxHandoffChars,
		MaxObjectiveChars:       32768,
		RoundTimeoutSeconds:     3600,
		HeartbeatTimeoutSeconds: 20,
		RoundAttempts:           10,
		RoundsPerRun:            16,
		MaxIdleRounds:           3,
		SearchAttributes:        true,
		MaxWaitMinutes:          360,
		MaxDeferrals:            50,
		MaxPauseHours:           168,
		MaxCampaignParallel:     8,
		MaxCampaignTasks:        5000,
		MergeRetryMinutes:       30,
		MaxMergeLanes:           8,
		MaxWaves:                20,
		MaxWaveTasks:            30,
		Candidates:              1,
		MaxCandidates:           4,
	}
}

// RoundInput is everything one fresh session receives.
type RoundInput struct {
	Objective string `json:"objective"`
	Round     int    `json:"round"`
	MaxRounds int    `json:"maxRounds"`
	// Workspace is relative to the worker's workspace root.
	Workspace string `json:"workspace"`
	// Previous is the last accepted report, nil in round 1.
	Previous        *report.Report `json:"previous"`
	MaxHandoffChars int            `json:"maxHandoffChars"`
	// VerifyCommand, when set, must pass before a complete report is accepted.
	VerifyCommand string `json:"verifyCommand,omitempty"`
	// TokenBudget is what is left of the run's token budget (0: none).
	TokenBudget int `json:"tokenBudget,omitempty"`
	// RunDeadline is when the run's time budget ends (zero: none).
	RunDeadline time.Time `json:"runDeadline,omitzero"`
	// Checkpoint is the commit of the last checkpoint the workflow accepted
	// (git modes; "" before the first). A workspace whose HEAD holds later
	// rounds of this run was rewound: the round restores this checkpoint.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Rewound: the run was rewound (starter rewind) to just after the round
	// whose checkpoint this is; the round's first attempt restores it even
	// when HEAD is already there, saving what the work tree holds.
	Rewound bool `json:"rewound,omitempty"`
	// ProtectedPaths are pattern sets (the deployment's, the run's), each
	// evaluated on its own; a path any set protects is protected.
	ProtectedPaths [][]string `json:"protectedPaths,omitempty"`
	// Deferrable: provider limits end the round as deferred (RoundOutput.Deferred)
	// instead of failing it.
	Deferrable bool `json:"deferrable,omitempty"`
	// Guidance is an operator's text (the guide update, or a rejection's
	// reason) that this round's prompt carries under its own heading.
	Guidance string `json:"guidance,omitempty"`
	// CampaignObjective is a planned campaign's objective, rendered as
	// context under its own heading beside the task's objective.
	CampaignObjective string `json:"campaignObjective,omitempty"`
	// Candidate makes this attempt one of the round's candidates: it works
	// a clone of the workspace at the round's base, not the workspace.
	Candidate *CandidateSpec `json:"candidate,omitempty"`
}

// Reasons of a deferred round.
const (
	DeferRateLimited = agent.DeferRateLimited
	DeferQuota       = agent.DeferQuota
	DeferUnavailable = agent.DeferUnavailable
)

// Deferred says the provider said "not now": the round ended early without a
// report and the workflow runs it again after a durable wait.
type Deferred struct {
	// Reason: rate-limited, quota or unavailable.
	Reason string `json:"reason"`
	// RetryAfterSeconds is the delay the provider gave (0: none given).
	RetryAfterSeconds int `json:"retryAfterSeconds"`
}

// RoundOutput is what a round returns: a report the agent already validated
// (the workflow validates it again), the round's usage and its session id.
type RoundOutput struct {
	Report    report.Report `json:"report"`
	Usage     usage.Usage   `json:"usage"`
	SessionID string        `json:"sessionId"`
	// Verification is the passing verify command run of a complete report.
	Verification *report.Verification `json:"verification,omitempty"`
	// Checkpoint is the round's git commit when git checkpoints are on.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// WorkspaceChanged compares the workspace's fingerprint before and after
	// the session (the idle budget counts rounds without a change).
	WorkspaceChanged bool `json:"workspaceChanged"`
	// Restored lists the protected paths the session restored ([] if none;
	// absent in histories from before protected paths).
	Restored []string `json:"restored"`
	// Model is the model that produced the report (on a deferral: the model
	// in use when the session deferred).
	Model string `json:"model,omitempty"`
	// FirstRequestTokens is the prompt tokens of the session's first request
	// (0: not reported); the workflow's token budget keeps at least that
	// much for a round to start.
	FirstRequestTokens int `json:"firstRequestTokens,omitempty"`
	// Deferred is set instead of a report when the round was deferred;
	// Usage is then what the deferred session spent.
	Deferred *Deferred `json:"deferred,omitempty"`
	// BudgetForced names the run budget that forced the session's hand-off:
	// tokens or time ("" when no budget did). Such a round is the run's last.
	BudgetForced string `json:"budgetForced,omitempty"`
	// Candidate is what a candidate attempt adds (nil for a plain round).
	Candidate *CandidateWork `json:"candidate,omitempty"`
}

// budgetForced maps a session's forced bound to the run budget behind it.
func budgetForced(bound string) string {
	switch bound {
	case agent.BoundTokenBudget:
		return report.LimitTokens
	case agent.BoundRunTime:
		return report.LimitTime
	}
	return ""
}

// ReviewInput is what an independent reviewer checks: the accepted
// completion of Round and, in git modes, the run's change from BaseCommit
// to the completing Commit.
type ReviewInput struct {
	Objective    string               `json:"objective"`
	Round        int                  `json:"round"`
	MaxRounds    int                  `json:"maxRounds"`
	Workspace    string               `json:"workspace"`
	Report       report.Report        `json:"report"`
	Verification *report.Verification `json:"verification,omitempty"`
	BaseCommit   string               `json:"baseCommit,omitempty"`
	Commit       string               `json:"commit,omitempty"`
	// MaxHandoffChars bounds the review and the handoff a revise becomes.
	MaxHandoffChars int       `json:"maxHandoffChars"`
	TokenBudget     int       `json:"tokenBudget,omitempty"`
	RunDeadline     time.Time `json:"runDeadline,omitzero"`
	// Deferrable: provider limits end the review as deferred
	// (ReviewOutput.Deferred) instead of failing it, as a round's do.
	Deferrable bool `json:"deferrable,omitempty"`
	// Candidates, when set, make the review a choice between a round's
	// candidates (none completed): the reviewer names one
	// (report.VerdictChoose); Report and Commit are then unused.
	Candidates []ReviewCandidate `json:"candidates,omitempty"`
}

// ReviewCandidate is what a choosing reviewer sees of one candidate.
type ReviewCandidate struct {
	Number   int           `json:"number"`
	Agent    string        `json:"agent,omitempty"`
	Model    string        `json:"model,omitempty"`
	Report   report.Report `json:"report"`
	DiffStat string        `json:"diffStat,omitempty"`
}

// ReviewOutput is the reviewer's verdict, its usage and its session id.
type ReviewOutput struct {
	Review    report.Review `json:"review"`
	Usage     usage.Usage   `json:"usage"`
	SessionID string        `json:"sessionId"`
	// Deferred is set instead of a review when the provider said "not now";
	// Usage is then what the deferred session spent.
	Deferred *Deferred `json:"deferred,omitempty"`
}

// Checkpoint is the commit a round ended with (Commit == Parent when the
// round changed nothing).
type Checkpoint struct {
	Commit       string `json:"commit"`
	Parent       string `json:"parent"`
	FilesChanged int    `json:"filesChanged"`
	Insertions   int    `json:"insertions"`
	Deletions    int    `json:"deletions"`
}

// HeartbeatDetails show where a running round is, in the UI and in `describe`.
type HeartbeatDetails struct {
	Round     int    `json:"round"`
	Attempt   int    `json:"attempt"`
	SessionID string `json:"sessionId"`
	Step      int    `json:"step"`
	LastTool  string `json:"lastTool"`
	// ContextTokens is the size of the session's last model request.
	ContextTokens int `json:"contextTokens"`
	// StreamedTokens estimates the answer streamed so far by the model call
	// in flight (0 between calls); FirstTokenMs is how long that call waited
	// for its first token.
	StreamedTokens int   `json:"streamedTokens,omitempty"`
	FirstTokenMs   int64 `json:"firstTokenMs,omitempty"`
	// Usage is what this round's attempts have spent so far, earlier
	// attempts included: a retried attempt reads it back from the last
	// heartbeat, so the run counts every attempt that reported usage.
	Usage usage.Usage `json:"usage"`
}

// PlanWaveInput is one wave's planning round (SPEC 40): a fresh planner on
// a read-only checkout of the integration head at Head, seeing only the
// objective, the last wave's report and a person's rejection reason.
type PlanWaveInput struct {
	Line      CampaignLine `json:"line"`
	Wave      int          `json:"wave"`
	Objective string       `json:"objective"`
	Head      string       `json:"head"`
	// Report is the last wave's report (nil for the first wave).
	Report *plan.WaveReport `json:"report,omitempty"`
	// Guidance is a person's reason for rejecting the wave's last plan.
	Guidance string     `json:"guidance,omitempty"`
	Rules    plan.Rules `json:"rules"`
	// Agent and Model choose the planner's provider (RALPH_PLAN_AGENT,
	// RALPH_PLAN_MODEL; empty: the round's).
	Agent           string    `json:"agent,omitempty"`
	Model           string    `json:"model,omitempty"`
	MaxHandoffChars int       `json:"maxHandoffChars"`
	TokenBudget     int       `json:"tokenBudget,omitempty"`
	RunDeadline     time.Time `json:"runDeadline,omitzero"`
}

// PlanWaveOutput is the planner's validated plan and what it spent.
type PlanWaveOutput struct {
	Plan      plan.Plan   `json:"plan"`
	Usage     usage.Usage `json:"usage"`
	SessionID string      `json:"sessionId"`
	Provider  string      `json:"provider,omitempty"`
	Model     string      `json:"model,omitempty"`
}
