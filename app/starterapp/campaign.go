package starterapp

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/names"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// campaignIDPattern: a campaign id is one path segment (its tasks'
// workspaces are campaigns/<id>/tasks/<task>) and part of branch names.
var campaignIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// maxCampaignIDBytes leaves room in a file name for what follows the id.
const maxCampaignIDBytes = 200

// resolveCampaignID: a campaign is named by --id (or --workflow-id, or the
// argument); a start defaults to campaign-<task file name>.
func resolveCampaignID(cmd *command, d commandDecl) error {
	if cmd.workspace != "" {
		return usagef("--workspace does not apply to %s: a campaign's tasks have their own workspaces (campaigns/<id>/tasks/<task id>); name the campaign with --id", d.name)
	}
	cmd.workflowID = strings.TrimSpace(cmd.workflowID)
	if cmd.workflowID == "" && !d.starts {
		return usagef("which campaign? give --id")
	}
	if cmd.workflowID == "" {
		if cmd.tasksFile == "" {
			return usagef("--tasks is required: the task file (JSON, YAML or a Markdown checklist)")
		}
		base := strings.TrimSuffix(filepath.Base(cmd.tasksFile), filepath.Ext(cmd.tasksFile))
		cmd.workflowID = names.Shorten("campaign-"+names.Sanitize(base, '-'), maxCampaignIDBytes)
	}
	id := cmd.workflowID
	if d.starts && (!campaignIDPattern.MatchString(id) || id == "." || id == ".." || len(id) > maxCampaignIDBytes) {
		return usagef("--id %q: a campaign id is letters, digits, '.', '_' and '-' (one path segment, not . or ..), at most %d bytes", id, maxCampaignIDBytes)
	}
	return nil
}

// checkCampaign reads the task file and applies the flags over its fields.
func checkCampaign(cmd *command, fs *flag.FlagSet, _ io.Reader) error {
	in, err := readTasksFlag(cmd, true)
	if err != nil {
		return err
	}
	if flagSet(fs, "verify") && strings.TrimSpace(cmd.verify) == "" {
		return usagef("--verify must not be blank (leave it out to use the task file's or the worker's)")
	}
	switch cmd.approveMode {
	case "", workflows.ApproveNone, campaign.ApproveMerge:
	default:
		return usagef("--approve must be %s or %s, got %q", campaign.ApproveMerge, workflows.ApproveNone, cmd.approveMode)
	}
	switch cmd.ifRunning {
	case "", ifRunningFail, ifRunningAttach:
	default:
		return usagef("--if-running must be %s or %s, got %q", ifRunningAttach, ifRunningFail, cmd.ifRunning)
	}
	for _, f := range []struct {
		value string
		dst   *string
	}{{strings.TrimSpace(cmd.verify), &in.VerifyCommand}, {cmd.approveMode, &in.Approve}, {cmd.base, &in.Base}, {cmd.branch, &in.Branch}} {
		if f.value != "" {
			*f.dst = f.value
		}
	}
	for _, f := range []struct {
		value int
		dst   **int
	}{{cmd.parallel, &in.MaxParallel}, {cmd.batch, &in.MergeBatch}, {cmd.mergeAttempts, &in.MaxMergeAttempts},
		{cmd.maxTokens, &in.MaxTokens}, {cmd.maxMinutes, &in.MaxMinutes}} {
		if f.value > 0 {
			n := f.value
			*f.dst = &n
		}
	}
	cmd.campaign = &in
	return nil
}

// checkAddTasks reads the task file, which holds tasks only.
func checkAddTasks(cmd *command, _ *flag.FlagSet, _ io.Reader) error {
	in, err := readTasksFlag(cmd, false)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(in, campaign.CampaignInput{Tasks: in.Tasks}) {
		return usagef("--tasks %s: add-tasks takes tasks only; the campaign's fields (base, branch, maxParallel, …) are set when it starts", cmd.tasksFile)
	}
	cmd.campaign = &in
	return nil
}

func readTasksFlag(cmd *command, withinFile bool) (campaign.CampaignInput, error) {
	if cmd.tasksFile == "" {
		return campaign.CampaignInput{}, usagef("--tasks is required: the task file (JSON, YAML or a Markdown checklist)")
	}
	data, err := os.ReadFile(cmd.tasksFile)
	if err != nil {
		return campaign.CampaignInput{}, usagef("--tasks: %v", err)
	}
	in, err := readTaskFile(cmd.tasksFile, data, withinFile)
	if err != nil {
		return campaign.CampaignInput{}, &usageError{msg: err.Error()}
	}
	return in, nil
}

// startCampaign starts the Campaign workflow and follows it to its result.
func (s *session) startCampaign(ctx context.Context) int {
	cmd := s.cmd
	if !s.workerReady(ctx) {
		return ExitFailed
	}
	opts := client.StartWorkflowOptions{
		ID:                                       cmd.workflowID,
		TaskQueue:                                cmd.cfg.TaskQueue,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            fmt.Sprintf("Ralph campaign: %d tasks", len(cmd.campaign.Tasks)),
	}
	if cmd.ifRunning == ifRunningAttach {
		// The open campaign is joined, not restarted: the file's tasks are
		// not sent to it (add-tasks does that).
		opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
		opts.WorkflowExecutionErrorWhenAlreadyStarted = false
	}
	run, err := s.c.ExecuteWorkflow(ctx, opts, campaign.CampaignWorkflowName, *cmd.campaign)
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			s.errorf("a campaign with id %q is already open (run id %s), so this start was refused. Follow it with --if-running attach, see it with `starter campaign-status --id %s`, add tasks with `starter add-tasks --id %s --tasks FILE`, or stop it with `starter stop %s`",
				cmd.workflowID, started.RunId, cmd.workflowID, cmd.workflowID, cmd.workflowID)
			return ExitFailed
		}
		s.errorf("start campaign %q: %v", cmd.workflowID, err)
		return ExitFailed
	}
	s.infof("campaign %s (run %s) on task queue %s: %d tasks; Ctrl-C cancels it", run.GetID(), run.GetRunID(), cmd.cfg.TaskQueue, len(cmd.campaign.Tasks))
	return s.followCampaign(ctx, run.GetID())
}

// followCampaign polls the status into live task lines until the campaign
// closes; the first signal cancels it, a second one stops waiting.
func (s *session) followCampaign(ctx context.Context, id string) int {
	done := make(chan error, 1)
	var res campaign.CampaignResult
	go func() { done <- s.awaitInto(ctx, id, &res) }()
	p := &campaignPrinter{out: s.Stderr, term: s.term, live: isTerminal(s.term), last: map[string]string{}}
	t := time.NewTicker(s.PollInterval)
	defer t.Stop()
	cancelled := false
	for {
		select {
		case err := <-done:
			if st, qerr := s.queryCampaign(ctx, id); qerr == nil {
				p.update(st)
			}
			if err != nil {
				return s.report(id, outcome{err: err}, cancelled)
			}
			return s.printCampaignResult(res)
		case <-t.C:
			if st, err := s.queryCampaign(ctx, id); err == nil {
				p.update(st)
			}
		case sig := <-s.Signals:
			if cancelled {
				s.errorf("stopped waiting (%v again); campaign %s is still being cancelled: check it with `starter campaign-status --id %s`", sig, id, id)
				return ExitCancelled
			}
			cancelled = true
			s.infof("%v: cancelling campaign %s; waiting for its running rounds to stop (press Ctrl-C again to stop waiting)", sig, id)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := s.c.CancelWorkflow(cctx, id, ""); err != nil && !isNotFound(err) {
				s.errorf("cancel campaign %s: %v", id, err)
			}
			cancel()
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// maxTasksShown: a campaign of at most this many tasks shows one line per
// task; a larger one shows the status summary's listed tasks and counts.
const maxTasksShown = 200

// queryCampaign is the status summary, every task listed (the tasks query,
// paged) when the campaign is small enough to show one line per task. An
// earlier worker's status lists every task already.
func (s *session) queryCampaign(ctx context.Context, id string) (campaign.CampaignStatus, error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st campaign.CampaignStatus
	v, err := s.c.QueryWorkflow(qctx, id, "", workflows.StatusQueryName)
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil || st.Total <= len(st.Tasks) || st.Total > maxTasksShown {
		return st, err
	}
	var all []campaign.TaskStatus
	for after := ""; ; {
		var page campaign.TasksPage
		v, err := s.c.QueryWorkflow(qctx, id, "", campaign.QueryTasks, campaign.TasksRequest{After: after})
		if err == nil {
			err = v.Get(&page)
		}
		if err != nil {
			return st, nil // the summary's list stands
		}
		all = append(all, page.Tasks...)
		if after = page.Next; after == "" {
			break
		}
	}
	st.Tasks, st.Unlisted = all, 0
	return st, nil
}

// printCampaignResult prints the result (text or JSON) and exits by its status.
func (s *session) printCampaignResult(res campaign.CampaignResult) int {
	if s.cmd.jsonOut {
		if err := writeJSON(s.Stdout, res); err != nil {
			s.errorf("encode the result: %v", err)
			return ExitFailed
		}
	} else {
		merged := 0
		for _, t := range res.Tasks {
			if t.Phase == campaign.TaskMerged {
				merged++
			}
		}
		fmt.Fprintf(s.Stdout, "Campaign %s: %s, %d of %d tasks merged into %s at %s\n",
			s.cmd.workflowID, res.Status, merged, len(res.Tasks), res.IntegrationBranch, short(res.Head))
		for _, t := range res.Tasks {
			fmt.Fprintln(s.Stdout, "  "+taskLine(campaign.TaskStatus{ID: t.ID, Phase: t.Phase, MergeCommit: t.MergeCommit, LastFailure: t.LastFailure}, false))
		}
		s.infof("%s", usageLine(res.Usage))
	}
	code, ok := ExitCode(res.Status)
	if !ok {
		s.errorf("unknown campaign outcome %q", res.Status)
	}
	return code
}

// campaignStatus prints the status query: lines, or the answer as JSON.
func (s *session) campaignStatus(ctx context.Context) int {
	id := s.cmd.workflowID
	st, err := s.queryCampaign(ctx, id)
	if err != nil {
		if isNotFound(err) {
			s.errorf("no campaign with id %q in namespace %s", id, s.namespace)
			return ExitFailed
		}
		s.errorf("status query on campaign %s failed: %v%s", id, err, s.describeHint(ctx, id))
		return ExitFailed
	}
	if s.cmd.jsonOut {
		if err := writeJSON(s.Stdout, st); err != nil {
			s.errorf("encode the status: %v", err)
			return ExitFailed
		}
		return ExitComplete
	}
	for _, l := range campaignLines(st) {
		fmt.Fprintln(s.Stdout, l)
	}
	return ExitComplete
}

// Without --task, approve and reject address a Ralph run (docs/operators.md):
// approve sends {}, reject {"reason"}.
type ralphReject struct {
	Reason string `json:"reason"`
}

func (s *session) approve(ctx context.Context) int {
	if s.cmd.task == "" {
		return s.send(ctx, workflows.UpdateApprove, struct{}{})
	}
	return s.send(ctx, workflows.UpdateApprove, campaign.TaskRequest{Task: s.cmd.task})
}

func (s *session) reject(ctx context.Context) int {
	if s.cmd.task == "" {
		return s.send(ctx, workflows.UpdateReject, ralphReject{Reason: s.cmd.reason})
	}
	return s.send(ctx, workflows.UpdateReject, campaign.RejectRequest{Task: s.cmd.task, Reason: s.cmd.reason})
}

func (s *session) addTasks(ctx context.Context) int {
	return s.send(ctx, campaign.UpdateAddTasks, campaign.AddTasksRequest{Tasks: s.cmd.campaign.Tasks})
}

// send sends an update whose answer the starter prints as it comes.
func (s *session) send(ctx context.Context, name string, arg any) int {
	var answer json.RawMessage
	if !s.update(ctx, name, &answer, arg) {
		return ExitFailed
	}
	what := "workflow " + s.cmd.workflowID
	if s.cmd.task != "" {
		what += " task " + s.cmd.task
	}
	s.infof("%s accepted by %s", name, what)
	if len(answer) > 0 && string(answer) != "null" {
		if err := writeJSON(s.Stdout, answer); err != nil {
			s.errorf("encode the answer: %v", err)
			return ExitFailed
		}
	}
	return ExitComplete
}

// campaignPrinter shows one line per task: on a terminal the block is
// redrawn in place; otherwise a line is printed when it changes. The lines
// go to out (printable); the cursor moves go to term (out when nil).
type campaignPrinter struct {
	out   io.Writer
	term  io.Writer
	live  bool
	drawn int               // lines of the block last drawn (live)
	last  map[string]string // line last printed per key (not live)
}

func (p *campaignPrinter) update(st campaign.CampaignStatus) {
	lines := campaignLines(st)
	if p.live {
		term := p.term
		if term == nil {
			term = p.out
		}
		if p.drawn > 0 {
			fmt.Fprintf(term, "\x1b[%dA", p.drawn)
		}
		for _, l := range lines {
			fmt.Fprint(term, "\x1b[2K")
			fmt.Fprintln(p.out, l)
		}
		p.drawn = len(lines)
		return
	}
	for i, l := range lines {
		key := "campaign"
		if i > 0 {
			key = st.Tasks[i-1].ID
		}
		if p.last[key] != l {
			p.last[key] = l
			fmt.Fprintln(p.out, l)
		}
	}
}

// campaignLines is a status as a header line and one line per task.
func campaignLines(st campaign.CampaignStatus) []string {
	total := max(st.Total, len(st.Tasks))
	head := fmt.Sprintf("campaign %s: %d of %d merged into %s at %s", st.Phase, st.Merged, total, st.IntegrationBranch, short(st.Head))
	if rest := total - len(st.Tasks); rest > 0 {
		head += fmt.Sprintf(" (%d tasks not shown: starter campaign-status --json, or the tasks query)", rest)
	}
	if st.StopRequested {
		head += " (stop requested)"
	}
	if st.PauseReason != "" {
		head += " (" + oneLine(clip(st.PauseReason+": "+lastLine(st.PauseOutput), 160)) + "; fix it, then starter resume)"
	}
	if st.Outcome != "" {
		head += ", " + st.Outcome
	}
	lines := []string{head}
	for _, t := range st.Tasks {
		lines = append(lines, "  "+taskLine(t, true))
	}
	return lines
}

// lastLine is s's last line that is not blank (a verify output's verdict).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, " \t\r\n"), "\n")
	return lines[len(lines)-1]
}

// taskLine is one task: id, phase, go, round, merge attempts, then the
// merge commit or the last failure.
func taskLine(t campaign.TaskStatus, counters bool) string {
	line := fmt.Sprintf("%-20s %-17s", t.ID, t.Phase)
	if counters {
		line += fmt.Sprintf(" go %d round %d merges %d", t.Go, t.Round, t.MergeAttempts)
	}
	switch {
	case t.MergeCommit != "":
		line += " " + short(t.MergeCommit)
	case t.LastFailure != "":
		line += " " + oneLine(clip(t.LastFailure, 100))
	}
	return strings.TrimRight(line, " ")
}

// short is a commit's abbreviation as git log shows it.
func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	if commit == "" {
		return "(none yet)"
	}
	return commit
}
