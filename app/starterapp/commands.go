package starterapp

import (
	"context"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// This file declares the starter's commands once: their names, flags, usage
// text and exit codes. Parsing (args.go), --help and the generated reference
// (Reference, kept equal to docs/reference.md by a test) all read it.
//
// To add a command: add a commandDecl to commands (its flags, the exit codes
// it can return, and the method that runs it), then regenerate the docs:
//
//	go test ./app/starterapp -run TestReferenceDocs -update

// Exit codes: a stable contract scripts depend on (docs/reference.md#exit-codes).
const (
	ExitComplete      = 0
	ExitFailed        = 1
	ExitUsage         = 2
	ExitBlocked       = 3
	ExitBudgetLimited = 4
	ExitStopped       = 5
	ExitPartial       = 6
	ExitCancelled     = 130
)

// exitDecl is one exit code: its name, the run outcome it reports (if any)
// and what it means.
type exitDecl struct {
	code    int
	name    string
	outcome string // the workflow result status that exits with code
	meaning string
}

// exitCodes lists every exit code of the starter, in the order of
// docs/reference.md#exit-codes.
var exitCodes = []exitDecl{
	{ExitComplete, "complete", report.OutcomeComplete, "the run completed"},
	{ExitBlocked, "blocked", report.OutcomeBlocked, "the run is blocked; the result names the blocker"},
	{ExitBudgetLimited, "budget-limited", report.OutcomeBudgetLimited, "the run hit a budget; the result names which one"},
	{ExitStopped, "stopped", report.OutcomeStopped, "an operator stopped the run"},
	{ExitPartial, "partial", campaign.CampaignPartial, "the campaign ended with some tasks merged and others blocked or failed (campaign only)"},
	{ExitFailed, "failed", "", "the run failed, or the starter could not do what it was asked (the error says why)"},
	{ExitCancelled, "cancelled", "", "the run was cancelled"},
	{ExitUsage, "bad usage", "", "an unknown command or flag, or a missing or invalid value"},
}

// ExitCode maps a run outcome to the starter's exit code.
func ExitCode(status string) (int, bool) {
	for _, e := range exitCodes {
		if e.outcome != "" && e.outcome == status {
			return e.code, true
		}
	}
	return ExitFailed, false
}

// ExitMeaning says what an exit code of the starter means ("" when it is
// not one of them).
func ExitMeaning(code int) string {
	if e, ok := exitDecls(code); ok {
		return e.meaning
	}
	return ""
}

func exitDecls(code int) (exitDecl, bool) {
	for _, e := range exitCodes {
		if e.code == code {
			return e, true
		}
	}
	return exitDecl{}, false
}

// flagDecl is one command-specific flag. Exactly one of text, on and count
// says where its value goes.
type flagDecl struct {
	name  string
	usage string
	text  func(*command) *string
	on    func(*command) *bool
	// count is a positive whole number, checked after parsing so the error
	// names the flag the way settings errors do.
	count func(*command) *int
}

// exitUse is an exit code a command returns, with what it means for that
// command ("" for the code's general meaning).
type exitUse struct {
	code int
	when string
}

// commandDecl is one starter command.
type commandDecl struct {
	name    string
	summary string // the line in the command list
	detail  string // the paragraph of --help and the reference
	// starts: it starts a run (objective flags, no workflow id argument);
	// otherwise it addresses an existing run.
	starts bool
	flags  []flagDecl
	exits  []exitUse
	exec   func(s *session, ctx context.Context) int
	// check completes and checks the parsed command (nil: nothing to check).
	check func(c *command, fs *flag.FlagSet, stdin io.Reader) error
	// campaign: the command starts or addresses a campaign, named by --id
	// (--workspace does not apply: each task has its own).
	campaign bool
}

// Subcommands.
const (
	cmdRun    = "run"
	cmdStart  = "start"
	cmdStatus = "status"
	cmdCancel = "cancel"
	cmdResult = "result"
	cmdStop   = "stop"
	cmdPause  = "pause"
	cmdResume = "resume"
	cmdRewind = "rewind"
	cmdExtend = "extend"

	cmdCampaign       = "campaign"
	cmdCampaignStatus = "campaign-status"
	cmdApprove        = "approve"
	cmdReject         = "reject"
	cmdAddTasks       = "add-tasks"
	cmdGuide          = "guide"
)

// Values of --if-running.
const (
	ifRunningFail   = "fail"
	ifRunningAttach = "attach"
)

// Flags every command has besides the connection flags of config.
var addressFlags = []flagDecl{
	{name: "workflow-id", usage: "workflow id (default ralph-<workspace>)", text: func(c *command) *string { return &c.workflowID }},
	{name: "workspace", usage: "workspace, relative to the worker's workspace root", text: func(c *command) *string { return &c.workspace }},
}

// Flags of the commands that start a run.
var startFlags = []flagDecl{
	{name: "objective", usage: "the immutable objective of the run (required, or --objective-file)", text: func(c *command) *string { return &c.objective }},
	{name: "objective-file", usage: "read the objective from this file ('-' for stdin)", text: func(c *command) *string { return &c.objectiveFile }},
	{name: "verify", usage: "command that must pass (exit 0) before a complete report is accepted (default: the worker's RALPH_VERIFY_COMMAND)", text: func(c *command) *string { return &c.verify }},
	{name: "max-rounds", usage: "lower round cap for this run (default: the worker's ceiling)", count: func(c *command) *int { return &c.maxRounds }},
	{name: "max-tokens", usage: "token budget of the run, prompt + completion (default: the worker's RALPH_MAX_RUN_TOKENS)", count: func(c *command) *int { return &c.maxTokens }},
	{name: "max-minutes", usage: "wall-clock budget of the run in minutes (default: the worker's RALPH_MAX_RUN_MINUTES)", count: func(c *command) *int { return &c.maxMinutes }},
	{name: "candidates", usage: "fresh agents each round runs at once, the verified one chosen (default: the worker's RALPH_CANDIDATES; more than 1 needs RALPH_GIT local or remote)", count: func(c *command) *int { return &c.candidates }},
	{name: "allow-no-worker", usage: "start even when no worker polls the task queue (the run waits for one)", on: func(c *command) *bool { return &c.allowNoWorker }},
	{name: "if-running", usage: "when a run with this workflow id is open: fail (default), or attach to it (Update-with-Start), so a retried job never starts a second loop", text: func(c *command) *string { return &c.ifRunning }},
}

// Flags of the campaign commands.
var (
	idFlag = flagDecl{name: "id", usage: "the campaign's workflow id (the same as --workflow-id)", text: func(c *command) *string { return &c.id }}
	// taskFlag names the campaign task approve and reject address; without
	// it they address a Ralph run waiting for approval.
	taskFlag  = flagDecl{name: "task", usage: "the campaign task waiting for approval (leave it out for a Ralph run waiting for approval)", text: func(c *command) *string { return &c.task }}
	tasksFlag = flagDecl{name: "tasks", usage: "the task file: JSON or YAML (a list of tasks, or an object with \"tasks\" and campaign fields) or a Markdown checklist (- [ ] id: objective, an indented after: a, b line); see docs/campaigns.md", text: func(c *command) *string { return &c.tasksFile }}
)

// campaignFlags are the flags of `starter campaign`: each overrides the
// task file's field of the same meaning.
var campaignFlags = []flagDecl{
	idFlag, tasksFlag,
	{name: "objective", usage: "instead of --tasks: the campaign's objective, which planners split into waves of tasks (see docs/campaigns.md, Planning waves)", text: func(c *command) *string { return &c.objective }},
	{name: "max-waves", usage: "with --objective: at most this many waves (default 5, at most the worker's RALPH_MAX_WAVES)", count: func(c *command) *int { return &c.maxWaves }},
	{name: "parallel", usage: "at most this many task loops at once (maxParallel; default 2, at most the worker's RALPH_MAX_CAMPAIGN_PARALLEL)", count: func(c *command) *int { return &c.parallel }},
	{name: "verify", usage: "the command the merged tree must pass before the integration branch moves, and each task's default verify command (default: the worker's RALPH_VERIFY_COMMAND)", text: func(c *command) *string { return &c.verify }},
	{name: "approve", usage: "merge: each verified merge waits for `starter approve` or `starter reject` (default none); with --objective also plan (each wave's plan waits) or plan,merge", text: func(c *command) *string { return &c.approveMode }},
	{name: "batch", usage: "merge up to this many queued tasks as one stack, verified once at its tip (mergeBatch; default 1)", count: func(c *command) *int { return &c.batch }},
	{name: "lanes", usage: "verify up to this many prefixes of the merge queue at once, landing them in queue order (mergeLanes; default 1, at most the worker's RALPH_MAX_MERGE_LANES)", count: func(c *command) *int { return &c.lanes }},
	{name: "max-merge-attempts", usage: "failed merges before a task is blocked (default 3)", count: func(c *command) *int { return &c.mergeAttempts }},
	{name: "base", usage: "the branch the integration branch starts from (default: the remote's default branch)", text: func(c *command) *string { return &c.base }},
	{name: "branch", usage: "the integration branch (default ralph/campaigns/<id>/integration)", text: func(c *command) *string { return &c.branch }},
	{name: "max-tokens", usage: "token budget of the whole campaign, every task's ceiling (default: the worker's RALPH_MAX_RUN_TOKENS)", count: func(c *command) *int { return &c.maxTokens }},
	{name: "max-minutes", usage: "wall-clock budget of the whole campaign in minutes (default: the worker's RALPH_MAX_RUN_MINUTES)", count: func(c *command) *int { return &c.maxMinutes }},
	{name: "allow-no-worker", usage: "start even when no worker polls the task queue (the campaign waits for one)", on: func(c *command) *bool { return &c.allowNoWorker }},
	{name: "if-running", usage: "when a campaign with this id is open: fail (default), or attach to it and follow it", text: func(c *command) *string { return &c.ifRunning }},
	{name: "json", usage: "print the campaign result as JSON instead of the result text", on: func(c *command) *bool { return &c.jsonOut }},
}

var jsonFlag = flagDecl{name: "json", usage: "print the workflow result as JSON instead of the result text", on: func(c *command) *bool { return &c.jsonOut }}

// outcomeExits are the exit codes of a command that waits for a run's result.
func outcomeExits(cancelled string) []exitUse {
	return []exitUse{{ExitComplete, ""}, {ExitBlocked, ""}, {ExitBudgetLimited, ""}, {ExitStopped, ""},
		{ExitFailed, ""}, {ExitCancelled, cancelled}, {ExitUsage, ""}}
}

// attachRefused is the usage exit of the commands that start a run.
const attachRefused = "bad usage: an unknown command or flag, a missing or invalid value, or (--if-running attach) a run open under the workflow id with another objective, workspace, maxRounds, verify command or budget (the fields are named)"

// updateExits are the exit codes of an operator update.
var updateExits = []exitUse{
	{ExitComplete, "the run accepted the update (its status is printed)"},
	{ExitFailed, "the run refused the update (the reason is printed), has closed, or does not exist"},
	{ExitUsage, ""},
}

// commands is every starter command, in the order --help lists them.
var commands = []commandDecl{
	{
		name:    cmdRun,
		summary: "start a Ralph run and follow it in the foreground: round-by-round progress, then the result text; Ctrl-C cancels the run and waits until the running round has stopped",
		detail: "Starts a run and follows it: one line per round on stderr, then the result text on stdout. " +
			"The first Ctrl-C cancels the workflow and waits until the running round has stopped; a second one stops waiting.",
		starts: true,
		flags:  append(append([]flagDecl{}, startFlags...), jsonFlag),
		// The last of outcomeExits is the usage exit: here attach refusals too.
		exits: append(outcomeExits("the run was cancelled (Ctrl-C), or a second Ctrl-C stopped waiting")[:6:6], exitUse{ExitUsage, attachRefused}),
		exec:  func(s *session, ctx context.Context) int { return s.run(ctx, true) },
		check: checkStart,
	},
	{
		name:    cmdStart,
		summary: "start a Ralph run in the background and print its workflow id",
		detail:  "Starts a run and prints its workflow id on stdout; the run goes on without the starter.",
		starts:  true,
		flags:   startFlags,
		exits: []exitUse{{ExitComplete, "the run started (with --if-running attach: or an open run was joined; its status is printed)"},
			{ExitFailed, "the run did not start (no worker polls the task queue, a run with that id is open, or the server refused)"},
			{ExitUsage, attachRefused}},
		exec:  func(s *session, ctx context.Context) int { return s.run(ctx, false) },
		check: checkStart,
	},
	{
		name:    cmdStatus,
		summary: "print the run's status query (JSON)",
		detail:  "Prints the run's status query as JSON on stdout (a query needs a worker polling the run's task queue).",
		exits:   []exitUse{{ExitComplete, "the status is printed"}, {ExitFailed, "no such run, or the query failed"}, {ExitUsage, ""}},
		exec:    (*session).status,
	},
	{
		name:    cmdCancel,
		summary: "cancel a run and wait until it has closed (--no-wait to return at once)",
		detail:  "Cancels the run and waits until it has closed (its running round stops first). If the run finishes before the cancel takes effect, the starter prints its result and exits with its outcome.",
		flags: []flagDecl{{name: "no-wait", usage: "return once the cancel is requested instead of waiting for the run to close",
			on: func(c *command) *bool { return &c.noWait }}},
		exits: []exitUse{{ExitComplete, "the run is cancelled and closed (with --no-wait: the cancel is requested), or it completed before the cancel took effect"},
			{ExitBlocked, ""}, {ExitBudgetLimited, ""}, {ExitStopped, ""},
			{ExitFailed, "no such run, the run is not running, or it failed"}, {ExitUsage, ""}},
		exec: (*session).cancel,
	},
	{
		name:    cmdResult,
		summary: "wait for a run to close and print its result text",
		detail:  "Waits for the run to close and prints its result text on stdout. Ctrl-C stops waiting; the run keeps running.",
		flags:   []flagDecl{jsonFlag},
		exits:   outcomeExits("the run was cancelled, or Ctrl-C stopped waiting"),
		exec:    (*session).result,
	},
	{
		name:    cmdStop,
		summary: "end a run gracefully after its running round (--reason); exit 0 when accepted",
		detail:  "Sends the stop update: the running round finishes, then the run ends with result status stopped (a complete or blocked from that round wins).",
		flags: []flagDecl{{name: "reason", usage: "why the run is stopped (kept in the result)",
			text: func(c *command) *string { return &c.reason }}},
		exits: updateExits,
		exec: func(s *session, ctx context.Context) int {
			return s.control(ctx, workflows.UpdateStop, workflows.StopRequest{Reason: s.cmd.reason})
		},
	},
	{
		name:    cmdPause,
		summary: "hold a run before its next round (the running round finishes)",
		detail:  "Sends the pause update: no new round starts until resume; the running round is not interrupted.",
		exits:   updateExits,
		exec:    func(s *session, ctx context.Context) int { return s.control(ctx, workflows.UpdatePause) },
	},
	{
		name:    cmdResume,
		summary: "let a paused run go on",
		detail:  "Sends the resume update: a paused run starts its next round.",
		exits:   updateExits,
		exec:    func(s *session, ctx context.Context) int { return s.control(ctx, workflows.UpdateResume) },
	},
	{
		name:    cmdExtend,
		summary: "raise a running run's budgets (--max-rounds, --max-tokens, --max-minutes); never lowers them",
		detail: "Sends the extend update: the round cap, token budget or time budget named is raised (never lowered) " +
			"within the worker's ceilings; a paused or waiting run can be extended. The time budget still counts from the run's start.",
		flags: []flagDecl{
			{name: "max-rounds", usage: "the new round cap (at least the run's, at most the worker's RALPH_MAX_ROUNDS)", count: func(c *command) *int { return &c.maxRounds }},
			{name: "max-tokens", usage: "the new token budget (at least the run's)", count: func(c *command) *int { return &c.maxTokens }},
			{name: "max-minutes", usage: "the new time budget in minutes from the run's start (at least the run's)", count: func(c *command) *int { return &c.maxMinutes }},
		},
		exits: updateExits,
		exec: func(s *session, ctx context.Context) int {
			return s.control(ctx, workflows.UpdateExtend, workflows.ExtendRequest{
				MaxRounds: s.cmd.maxRounds, MaxTokens: s.cmd.maxTokens, MaxMinutes: s.cmd.maxMinutes})
		},
		check: checkExtend,
	},
	{
		name:    cmdGuide,
		summary: "give a run's next round the operator's guidance (--text; on a campaign --task, or every running loop)",
		detail: "Sends the guide update: the next round's prompt carries the text once, under \"Guidance from the operator\" " +
			"(at most 4000 code points; texts sent before that round are joined). On a campaign, --task names the task whose loop " +
			"gets it; without --task every running loop does. The status shows the guidance pending, then the round that received it.",
		flags: []flagDecl{
			{name: "text", usage: "the guidance (required)", text: func(c *command) *string { return &c.text }},
			{name: "task", usage: "on a campaign: the task whose loop gets the guidance (default: every running loop)", text: func(c *command) *string { return &c.task }},
		},
		exits: updateExits,
		exec: func(s *session, ctx context.Context) int {
			return s.control(ctx, workflows.UpdateGuide, campaign.CampaignGuideRequest{Task: s.cmd.task, Text: s.cmd.text})
		},
		check: checkGuide,
	},
	{
		name:    cmdRewind,
		summary: "reset a run to just after round K's report (--round K): it goes on at round K+1 with K's report as the handoff",
		detail: "Resets the run (a Temporal reset, the reason recorded) to just after round K's report was accepted: " +
			"the run goes on at round K+1 with round K's report as the handoff and its budgets as they were then, except that its usage keeps what the run spent since (the time deadline never moves); " +
			"updates sent after that point are not reapplied. In git modes the next round first restores the workspace to " +
			"round K's checkpoint and saves what was there on refs/ralph/abandoned/<workflow id>/rewind-<n>. " +
			"K must be between 1 and the current round minus 1, and in the current run of the workflow (a round before the " +
			"last continue-as-new is refused, naming the rounds that can be rewound).",
		flags: []flagDecl{
			{name: "round", usage: "the round whose report the run goes back to (1 <= K < the current round)", count: func(c *command) *int { return &c.round }},
			{name: "reason", usage: "why the run is rewound (recorded with the reset)", text: func(c *command) *string { return &c.reason }},
			{name: "keep-workspace", usage: "rewind a run without git checkpoints (RALPH_GIT=off): its state goes back, its files stay as they are", on: func(c *command) *bool { return &c.keepWorkspace }},
		},
		exits: []exitUse{{ExitComplete, "the run was reset; the new run id is printed"},
			{ExitFailed, "no such run, or the reset failed"},
			{ExitUsage, "--round missing or outside the rounds that can be rewound (the message names them), or the run keeps no git checkpoints (RALPH_GIT=off) and --keep-workspace is not given"}},
		exec: (*session).rewind,
	},
	{
		name:    cmdCampaign,
		summary: "start a campaign from a task file (--tasks) or an objective (--objective) and follow it: one live line per task, then the result; Ctrl-C cancels it",
		detail: "Starts a Campaign (the workflow id is --id, default campaign-<task file name>): every task becomes a Ralph loop on its own branch, merged one at a time into the integration branch. " +
			"With --objective instead of --tasks (the id defaults to campaign-<the objective's first words>), planners split the objective into waves of tasks; each wave's plan is printed (one line per task, its dependencies) before its loops' lines. " +
			"It shows one line per task (id, phase, go, round, merge attempts, the merge commit or the last failure), redrawn in place on a terminal and printed when it changes otherwise, then the result on stdout. " +
			"The first Ctrl-C cancels the campaign (every running round stops); a second one stops waiting. See docs/campaigns.md.",
		starts:   true,
		campaign: true,
		flags:    campaignFlags,
		exits: []exitUse{{ExitComplete, "every task merged (with --objective: a planner found the objective met and the head passed the verify command)"},
			{ExitBlocked, "with --objective: a planner reported the objective blocked"}, {ExitPartial, ""}, {ExitBudgetLimited, "the campaign hit its budget"},
			{ExitStopped, "an operator stopped the campaign"}, {ExitFailed, ""},
			{ExitCancelled, "the campaign was cancelled (Ctrl-C), or a second Ctrl-C stopped waiting"}, {ExitUsage, "a bad flag, or a task file that cannot be read (the message names the file, the line and what is wrong)"}},
		exec:  (*session).startCampaign,
		check: checkCampaign,
	},
	{
		name:     cmdCampaignStatus,
		summary:  "print a campaign's status: one line per task (--json: the status query as JSON)",
		detail:   "Queries the campaign's status and prints its phase, integration branch and head, then one line per task; with --json the status query's answer as JSON.",
		campaign: true,
		flags: []flagDecl{idFlag, {name: "json", usage: "print the status query's answer as JSON",
			on: func(c *command) *bool { return &c.jsonOut }}},
		exits: []exitUse{{ExitComplete, "the status is printed"}, {ExitFailed, "no such campaign, or the query failed"}, {ExitUsage, ""}},
		exec:  (*session).campaignStatus,
	},
	{
		name:    cmdApprove,
		summary: "approve a campaign task's verified merge (--id, --task), a campaign wave's plan, or a Ralph run's complete waiting for approval",
		detail: "With --task, sends the campaign the approve update for that task: its merge, verified and held, lands on the integration branch. " +
			"Without --task, sends the approve update with no task: a planning campaign's wave plan awaiting approval runs (with --tasks FILE, the file's tasks run instead, checked as a plan is); a Ralph run waiting for approval ends complete.",
		flags: []flagDecl{idFlag, taskFlag, {name: "tasks", usage: "a planning campaign's wave plan is replaced by this task file's tasks (tasks only)", text: func(c *command) *string { return &c.tasksFile }}},
		exits: updateExits,
		exec:  (*session).approve,
		check: func(c *command, _ *flag.FlagSet, _ io.Reader) error {
			if c.tasksFile == "" {
				return nil
			}
			if c.task != "" {
				return usagef("--tasks replaces a wave's plan: leave out --task")
			}
			in, err := readTasksFlag(c, false)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(in, campaign.CampaignInput{Tasks: in.Tasks}) {
				return usagef("--tasks %s: a plan's replacement holds tasks only, no campaign fields", c.tasksFile)
			}
			c.campaign = &in
			return nil
		},
	},
	{
		name:    cmdReject,
		summary: "reject a campaign task's held merge (--task) or a Ralph run's complete, with --reason",
		detail: "With --task, sends the campaign the reject update: the task goes back to a loop with the reason as its failure. " +
			"Without --task, a planning campaign's wave plan awaiting approval is planned again with the reason as guidance, and a Ralph run waiting for approval the reject update: its next round starts with the reason as guidance.",
		flags: []flagDecl{idFlag, taskFlag, {name: "reason", usage: "why (required): what the next loop must change",
			text: func(c *command) *string { return &c.reason }}},
		exits: updateExits,
		exec:  (*session).reject,
		check: func(c *command, _ *flag.FlagSet, _ io.Reader) error {
			if strings.TrimSpace(c.reason) == "" {
				return usagef("reject needs --reason: what the next loop must change")
			}
			return nil
		},
	},
	{
		name:     cmdAddTasks,
		summary:  "add tasks to an open campaign from a task file (--tasks)",
		detail:   "Reads the task file (tasks only; a dependency may name a task the campaign already has) and sends the campaign the add-tasks update, which checks them as a start does.",
		campaign: true,
		flags:    []flagDecl{idFlag, tasksFlag},
		exits:    updateExits,
		exec:     (*session).addTasks,
		check:    checkAddTasks,
	},
}

// lookupCommand finds a command by name.
func lookupCommand(name string) (commandDecl, bool) {
	for _, d := range commands {
		if d.name == name {
			return d, true
		}
	}
	return commandDecl{}, false
}

// commandList is the command names as a sentence: "run, start … or resume".
func commandList() string {
	names := make([]string, len(commands))
	for i, d := range commands {
		names[i] = d.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// synopsis is the command's usage line.
func (d commandDecl) synopsis() string {
	if d.starts {
		return "starter " + d.name + " [flags]"
	}
	return "starter " + d.name + " [flags] [workflow-id]"
}

// flagSet registers every flag of the command on a new flag set: the
// connection flags of config, the address flags and the command's own.
// Text flags write into c; count flags into counts, checked after parsing.
func (d commandDecl) flagSet(c *command, counts map[string]*string) (*flag.FlagSet, *config.StarterFlags) {
	fs := flag.NewFlagSet("starter "+d.name, flag.ContinueOnError)
	shared := config.NewStarterFlags(fs)
	for _, f := range append(append([]flagDecl{}, addressFlags...), d.flags...) {
		switch {
		case f.text != nil:
			fs.StringVar(f.text(c), f.name, "", f.usage)
		case f.on != nil:
			fs.BoolVar(f.on(c), f.name, false, f.usage)
		case f.count != nil:
			counts[f.name] = new(string)
			fs.StringVar(counts[f.name], f.name, "", f.usage)
		default:
			panic("starter flag " + f.name + " has no value")
		}
	}
	return fs, shared
}

// topUsage is `starter --help`.
func topUsage() string {
	var b strings.Builder
	b.WriteString("Usage: starter <command> [flags]\n\nCommands:\n")
	width := 0
	for _, d := range commands {
		width = max(width, len(d.name))
	}
	for _, d := range commands {
		lines := wrap(d.summary, 74-width)
		fmt.Fprintf(&b, "  %-*s %s\n", width, d.name, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "  %-*s %s\n", width, "", l)
		}
	}
	b.WriteString("\n")
	for _, l := range wrap(startingText, 76) {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n")
	for _, l := range wrap(connectionText(), 76) {
		b.WriteString(l + "\n")
	}
	b.WriteString("\nExit codes:\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "  %-4d %s: %s\n", e.code, e.name, e.meaning)
	}
	b.WriteString("\nRun 'starter <command> --help' for the flags and exit codes of a command.\n")
	return b.String()
}

const startingText = "Start a run with --objective (or --objective-file) and --workspace; the " +
	"workflow id defaults to ralph-<workspace>. Address an existing run with " +
	"--workflow-id, --workspace, or the id as the only argument."

func connectionText() string {
	return fmt.Sprintf("Connection: the standard TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, "+
		"TEMPORAL_TLS_* variables (or --address, --namespace). Settings: RALPH_TASK_QUEUE (default %s), "+
		"RALPH_MAX_RESULT_CHARS (default %d), %s (the workers' key file, when they encrypt payloads).",
		config.DefaultTaskQueue, config.DefaultMaxResultChars, config.EnvEncryptionKeyFile)
}

// usageHead is `starter <command> --help` up to the flags, which the flag
// set prints after it.
func (d commandDecl) usageHead() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n", d.synopsis())
	for _, l := range wrap(d.detail, 76) {
		b.WriteString(l + "\n")
	}
	b.WriteString("\nExit codes:\n")
	for _, u := range d.exits {
		fmt.Fprintf(&b, "  %-4d %s\n", u.code, d.exitText(u))
	}
	b.WriteString("\nFlags:\n")
	return b.String()
}

// exitText is what code means for the command.
func (d commandDecl) exitText(u exitUse) string {
	e, ok := exitDecls(u.code)
	if !ok {
		panic(fmt.Sprintf("starter command %s declares exit code %d, which is not in exitCodes", d.name, u.code))
	}
	if u.when != "" {
		return u.when
	}
	return e.name + ": " + e.meaning
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// Reference renders the commands, their flags and the exit codes as
// Markdown: the block between the starter markers in docs/reference.md.
func Reference() string {
	var b strings.Builder
	b.WriteString("`starter <command> [flags]`: " + md(startingText+" "+connectionText()) + "\n\n")
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, d := range commands {
		fmt.Fprintf(&b, "| [`%s`](#starter-%s) | %s |\n", d.name, d.name, md(d.summary))
	}
	b.WriteString("\nFlags of every command (flags may also follow the workflow id):\n\n")
	common := commandDecl{name: "common"}
	fs, _ := common.flagSet(&command{}, map[string]*string{})
	b.WriteString(flagTable(fs, nil))
	b.WriteString("\nExit codes:\n\n| code | name | meaning |\n|---|---|---|\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "| %d | %s | %s |\n", e.code, e.name, md(e.meaning))
	}
	for _, d := range commands {
		fmt.Fprintf(&b, "\n### starter %s\n\n`%s`\n\n%s\n", d.name, d.synopsis(), md(d.detail))
		if own := d.flags; len(own) > 0 {
			names := make(map[string]bool, len(own))
			for _, f := range own {
				names[f.name] = true
			}
			fs, _ := d.flagSet(&command{}, map[string]*string{})
			b.WriteString("\n" + flagTable(fs, names))
		}
		b.WriteString("\n| exit | meaning |\n|---|---|\n")
		for _, u := range d.exits {
			fmt.Fprintf(&b, "| %d | %s |\n", u.code, md(d.exitText(u)))
		}
	}
	return b.String()
}

// flagTable is a Markdown table of the flags of fs (only those in names,
// when names is not nil), in the order of the flag set (by name).
func flagTable(fs *flag.FlagSet, names map[string]bool) string {
	var b strings.Builder
	b.WriteString("| flag | meaning |\n|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		if names != nil && !names[f.Name] {
			return
		}
		arg := " value"
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			arg = ""
		}
		fmt.Fprintf(&b, "| `--%s%s` | %s |\n", f.Name, arg, md(f.Usage))
	})
	return b.String()
}

// md escapes what Markdown would read as a table cell's end, a tag or
// emphasis in plain text.
func md(s string) string {
	return strings.NewReplacer("|", "\\|", "<", "\\<", "*", "\\*").Replace(s)
}
