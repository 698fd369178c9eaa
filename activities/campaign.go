package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/tasklist"
	"github.com/ralph-temporal/ralph/internal/toolcache"
	"github.com/ralph-temporal/ralph/report"
)

// Activities of the Campaign workflow (docs/campaigns.md).
const (
	PrepareTaskName = "PrepareTask"
	MergeTaskName   = "MergeTask"
)

// ErrTypeCampaignGit: a campaign's git step cannot work with what it was
// given (no git mode, a missing base branch, a task branch without its
// loop's commit); retrying cannot help.
const ErrTypeCampaignGit = "CampaignGit"

// ErrTypeTaskTree: the task's own tree failed its preparation (too big to
// check out, git killed or failing on it); the task is at fault, and
// retrying cannot help.
const ErrTypeTaskTree = "TaskTree"

// CampaignLine names a campaign's integration branch.
type CampaignLine struct {
	Campaign string `json:"campaign"`
	Branch   string `json:"branch"`
	Base     string `json:"base,omitempty"`
}

// CampaignTask is one task's branch and, once its loop completed, the
// commit that merges.
type CampaignTask struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
	Commit    string `json:"commit,omitempty"`
	Go        int    `json:"go"`
}

// PrepareTaskInput starts a task's go: its branch at the integration head
// (first go), or brought up to it (a later go).
type PrepareTaskInput struct {
	Line CampaignLine `json:"line"`
	Task CampaignTask `json:"task"`
	// From, for a task of a tasksFile, is where its objective is read: the
	// campaign carries no objective (docs/campaigns.md, "Capacity").
	From *TasksSource `json:"from,omitempty"`
}

// PrepareTaskOutput is where the task's loop starts.
type PrepareTaskOutput struct {
	IntegrationHead string `json:"integrationHead"`
	TaskHead        string `json:"taskHead"`
	// Conflicts are the paths committed with conflict markers.
	Conflicts []string `json:"conflicts,omitempty"`
	// Task is the task as its tasksFile states it (with From only).
	Task *tasklist.Task `json:"task,omitempty"`
}

// MergeTaskInput merges a stack of completed tasks onto the integration
// head, verifies the tip and lands it. Hold keeps a verified tip under
// HoldRef instead of landing it (approve: merge); Land, when set, lands that
// kept tip (approved) onto LandOn without merging again.
type MergeTaskInput struct {
	Line          CampaignLine   `json:"line"`
	Tasks         []CampaignTask `json:"tasks"`
	VerifyCommand string         `json:"verifyCommand"`
	Hold          bool           `json:"hold,omitempty"`
	HoldRef       string         `json:"holdRef,omitempty"`
	Land          string         `json:"land,omitempty"`
	LandOn        string         `json:"landOn,omitempty"`
	// ProtectedPaths: no merge may carry a change to these (the campaign's
	// and its tasks').
	ProtectedPaths []string `json:"protectedPaths,omitempty"`
	// Lane is a speculative lane's step (LaneMerge, LaneVerify; SPEC 41),
	// "" the whole step as before. Onto, kept on OntoRef, is the commit a
	// lane's merge stacks onto instead of the integration head (the
	// previous lane's tip); HoldRef keeps the lane's tip, Tip is the tip a
	// lane's verify checks.
	Lane    string `json:"lane,omitempty"`
	Onto    string `json:"onto,omitempty"`
	OntoRef string `json:"ontoRef,omitempty"`
	Tip     string `json:"tip,omitempty"`
	// TaskFaults: a task whose branch is missing or no longer holds its
	// commit is left out and named in Faults, and the rest merges; without
	// it (a campaign recorded before) such a task fails the whole step.
	TaskFaults bool `json:"taskFaults,omitempty"`
	// VerifyHead: no merge; the verify command runs on the integration head
	// alone (Tasks empty), as on a merged tip: outcome verified or red.
	VerifyHead bool `json:"verifyHead,omitempty"`
	// DropLanes: no merge; every lane ref of the campaign is deleted (Tasks
	// empty): the campaign ended, no lane is in flight (outcome dropped).
	DropLanes bool `json:"dropLanes,omitempty"`
}

// Merge outcomes.
const (
	MergeLanded   = "landed"   // the integration branch holds the stack
	MergeHeld     = "held"     // verified, kept for approval
	MergeConflict = "conflict" // Conflict names the task and paths
	MergeRed      = "red"      // the verify command failed on the tip
	MergeMoved    = "moved"    // the integration head moved: merge again
	// MergeRefused: the task ConflictTask did not merge though nothing
	// conflicted (Refused says why: its tree passed a bound, or git was
	// killed or failed on it); it goes back like a conflict.
	MergeRefused = "refused"
	// MergeVerified: the integration head alone passed the verify command
	// (MergeTaskInput.VerifyHead).
	MergeVerified = "verified"
	// MergeDropped: the campaign's lane refs are deleted (DropLanes).
	MergeDropped = "dropped"
)

// MergedTask is one task of a landed or held stack.
type MergedTask struct {
	ID      string `json:"id"`
	Commit  string `json:"commit"`
	Already bool   `json:"already,omitempty"`
}

// MergeTaskOutput says what became of the stack.
type MergeTaskOutput struct {
	Outcome string       `json:"outcome"`
	Head    string       `json:"head"` // the integration head after the step
	Tip     string       `json:"tip,omitempty"`
	Merged  []MergedTask `json:"merged"`
	// ConflictTask and ConflictPaths name the task that did not merge.
	ConflictTask  string   `json:"conflictTask,omitempty"`
	ConflictPaths []string `json:"conflictPaths,omitempty"`
	// Refused is why ConflictTask was refused (MergeRefused).
	Refused string `json:"refused,omitempty"`
	// Verification is the verify command's run on the tip.
	Verification *report.Verification `json:"verification,omitempty"`
	DiffStat     string               `json:"diffStat,omitempty"`
	// Faults are the tasks left out of the stack (TaskFaults), each with
	// what was wrong with its branch; Outcome is the rest's.
	Faults []TaskFault `json:"faults,omitempty"`
}

// TaskFault is a task a merge step left out: why it cannot merge.
type TaskFault struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// campaignDir is where a campaign's worker-owned files live under the
// workspace root: the scratch clone of its merges and, in local mode, its
// repository.
func campaignDir(campaign string) string { return filepath.Join("campaigns", campaign) }

// TaskWorkspace is a task's workspace, so (section 16) its branch is
// ralph/campaigns/<campaign>/tasks/<task>.
func TaskWorkspace(campaign, task string) string {
	return filepath.Join("campaigns", campaign, "tasks", task)
}

// ToolCacheLine is the tool cache line a workspace's commands start warm
// from: a campaign task's is its campaign's integration line, any other
// workspace's the plain runs' line.
func ToolCacheLine(workspace string) string {
	parts := strings.Split(filepath.ToSlash(workspace), "/")
	if len(parts) == 4 && parts[0] == "campaigns" && parts[2] == "tasks" {
		return toolcache.CampaignLine(parts[1])
	}
	return toolcache.PlainLine
}

// campaignGit is one campaign step's git: the line and where each task's
// branch lives.
type campaignGit struct {
	a       *Activities
	line    gitws.Line
	scratch string
	local   bool
}

// campaignGit prepares one campaign step's scratch repository, starting
// with the integration branch and the branches of tasks (from the worker's
// object cache: internal/gitws/cache.go).
func (a *Activities) campaignGit(ctx context.Context, in CampaignLine, scratchName string, tasks ...CampaignTask) (*campaignGit, error) {
	if a.git == nil {
		return nil, temporal.NewNonRetryableApplicationError(
			"a campaign needs RALPH_GIT=local or remote on the worker; this worker has RALPH_GIT=off", ErrTypeCampaignGit, nil)
	}
	if err := CheckWorkspace(campaignDir(in.Campaign)); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("campaign id: "+err.Error(), ErrTypeCampaignGit, nil)
	}
	dir, err := a.prepareWorkspace(filepath.Join(campaignDir(in.Campaign), scratchName))
	if err != nil {
		return nil, err
	}
	c := &campaignGit{a: a, scratch: dir, line: gitws.Line{Branch: in.Branch, Base: in.Base, URL: a.cfg.Git.Remote}}
	if a.cfg.Git.Mode == gitws.ModeLocal {
		c.local = true
		c.line.URL = filepath.Join(a.cfg.WorkspaceRoot, campaignDir(in.Campaign), "integration.git")
		if err := a.git.InitBare(ctx, c.line.URL); err != nil {
			return nil, err
		}
	}
	refs := []gitws.ScratchRef{c.line.ScratchRef()}
	for _, t := range tasks {
		if ref, ok := c.task(t).ScratchRef(); ok {
			refs = append(refs, ref)
		}
	}
	if err := a.git.ScratchFrom(ctx, dir, c.line.URL, refs); err != nil {
		c.remove(ctx)
		return nil, err
	}
	return c, nil
}

// remove deletes the step's scratch clone, on every way out of the step
// (a deferred call runs on an error, a cancel and a panic too): a merged
// tree never outlives the activity that wrote it.
func (c *campaignGit) remove(ctx context.Context) {
	c.a.git.ForgetScratch(c.scratch)
	if err := os.RemoveAll(c.scratch); err != nil {
		activity.GetLogger(ctx).Warn("Could not remove a campaign step's scratch clone", "dir", c.scratch, "error", err)
	}
}

func (c *campaignGit) task(t CampaignTask) gitws.TaskBranch {
	b := gitws.TaskBranch{ID: t.ID, Repo: c.line.URL, Branch: gitws.Branch(t.Workspace), Commit: t.Commit, Go: t.Go}
	if c.local {
		b.Repo, b.InWorkspace = filepath.Join(c.a.cfg.WorkspaceRoot, t.Workspace), true
	}
	return b
}

// keepTaskBranches copies local-mode task branches, as the queue saw them,
// into the campaign's repository, so every task's work is found beside the
// integration branch (remote-mode branches are on the remote already).
func (c *campaignGit) keepTaskBranches(ctx context.Context, tasks []gitws.TaskBranch) error {
	if !c.local {
		return nil
	}
	for _, t := range tasks {
		head, err := c.a.git.TaskHead(ctx, c.scratch, t)
		if err != nil {
			return err
		}
		if head == "" {
			continue
		}
		if err := c.a.git.Keep(ctx, c.scratch, c.line, "refs/heads/"+t.Branch, head); err != nil {
			return err
		}
	}
	return nil
}

// PrepareTask makes a task's branch ready for its next loop: on the first
// go it is created at the integration head (the integration branch itself
// created first when missing); on a later go the integration head is merged
// into it. Idempotent: a branch that already holds the head is left as is.
func (a *Activities) PrepareTask(ctx context.Context, in PrepareTaskInput) (PrepareTaskOutput, error) {
	stop := campaignHeartbeat(ctx)
	defer stop()
	if err := CheckWorkspace(in.Task.Workspace); err != nil {
		return PrepareTaskOutput{}, temporal.NewNonRetryableApplicationError("task workspace: "+err.Error(), ErrTypeBadRoundInput, nil)
	}
	lock, err := a.lockWorkspace(ctx, in.Task.Workspace, func() {})
	if err != nil {
		return PrepareTaskOutput{}, err
	}
	defer lock.release()
	// A first go on the remote expects no branch: it is not fetched (a
	// fetch of a missing ref fails and is made again without it), and the
	// push that creates it says, by its refusal, that it exists.
	firstGo := in.Task.Go <= 1 && a.cfg.Git.Mode == gitws.ModeRemote
	var fetchTasks []CampaignTask
	if !firstGo {
		fetchTasks = append(fetchTasks, in.Task)
	}
	c, err := a.campaignGit(ctx, in.Line, "prepare-"+in.Task.ID, fetchTasks...)
	if err != nil {
		return PrepareTaskOutput{}, err
	}
	defer c.remove(ctx)
	head, err := a.git.Integration(ctx, c.scratch, c.line)
	if err != nil {
		return PrepareTaskOutput{}, campaignStepError(err)
	}
	t := c.task(in.Task)
	current := ""
	if !firstGo {
		if current, err = a.git.TaskHead(ctx, c.scratch, t); err != nil {
			return PrepareTaskOutput{}, err
		}
	}
	out := PrepareTaskOutput{IntegrationHead: head, TaskHead: current}
	if in.From != nil {
		if out.Task, err = a.taskFromFile(ctx, c, *in.From, in.Task.ID); err != nil {
			return PrepareTaskOutput{}, err
		}
	}
	if firstGo {
		return a.createTaskBranch(ctx, c, t, out)
	}
	switch {
	case current == "":
		out.TaskHead = head
	case in.Task.Go <= 1:
		return out, nil // the first go's branch exists: a retried step, or a resumed campaign
	default:
		t.Commit = current
		if out.TaskHead, out.Conflicts, err = a.git.BringUp(ctx, c.scratch, in.Line.Campaign, in.Line.Branch, head, t); err != nil {
			return PrepareTaskOutput{}, taskTreeStepError(err)
		}
		if out.TaskHead == current {
			return out, nil
		}
	}
	if err := a.git.Publish(ctx, c.scratch, t, out.TaskHead, current); err != nil {
		if gitws.TreeFault(err) {
			return PrepareTaskOutput{}, taskTreeStepError(&gitws.TaskTreeError{Task: t.ID, Err: err})
		}
		return PrepareTaskOutput{}, err
	}
	return out, nil
}

// createTaskBranch is a first go's PrepareTask on the remote: the task's
// branch is created at the integration head unless it exists (a retried
// step, or a resumed campaign), which is then left as it is.
func (a *Activities) createTaskBranch(ctx context.Context, c *campaignGit, t gitws.TaskBranch, out PrepareTaskOutput) (PrepareTaskOutput, error) {
	err := a.git.Publish(ctx, c.scratch, t, out.IntegrationHead, "")
	switch {
	case err == nil:
		out.TaskHead = out.IntegrationHead
		return out, nil
	case errors.Is(err, gitws.ErrPushRejected):
		if out.TaskHead, err = a.git.TaskHead(ctx, c.scratch, t); err != nil {
			return PrepareTaskOutput{}, err
		}
		if out.TaskHead == "" {
			return PrepareTaskOutput{}, fmt.Errorf("task %s: the remote refused to create its branch %s, which it does not hold", t.ID, t.Branch)
		}
		return out, nil
	case gitws.TreeFault(err):
		return PrepareTaskOutput{}, taskTreeStepError(&gitws.TaskTreeError{Task: t.ID, Err: err})
	}
	return PrepareTaskOutput{}, err
}

// MergeTask is the merge queue's step: merge, verify in the sandbox, land
// by compare-and-swap. The integration branch moves only to a tip whose
// verify passed; a retried attempt finds what an earlier one landed and
// never merges a task twice.
func (a *Activities) MergeTask(ctx context.Context, in MergeTaskInput) (MergeTaskOutput, error) {
	stop := campaignHeartbeat(ctx)
	defer stop()
	if err := checkMergeInput(in); err != nil {
		return MergeTaskOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRoundInput, nil)
	}
	if err := checkLane(in); err != nil {
		return MergeTaskOutput{}, err
	}
	if in.Lane == LaneVerify {
		return a.verifyLane(ctx, in)
	}
	mergeWorkspace := filepath.Join(campaignDir(in.Line.Campaign), "merge")
	lock, err := a.lockWorkspace(ctx, mergeWorkspace, func() {})
	if err != nil {
		return MergeTaskOutput{}, err
	}
	defer lock.release()
	c, err := a.campaignGit(ctx, in.Line, "merge", in.Tasks...)
	if err != nil {
		return MergeTaskOutput{}, err
	}
	defer c.remove(ctx)
	head, err := a.git.Integration(ctx, c.scratch, c.line)
	if err != nil {
		return MergeTaskOutput{}, campaignStepError(err)
	}
	switch {
	case in.DropLanes:
		return a.dropLanes(ctx, c, in.Line.Campaign, head)
	case in.Land != "":
		return a.landKeptLane(ctx, c, in, head)
	case in.VerifyHead:
		return a.verifyHead(ctx, c, in, head)
	}
	tasks := make([]gitws.TaskBranch, len(in.Tasks))
	for i, t := range in.Tasks {
		tasks[i] = c.task(t)
	}
	base, err := a.mergeBase(ctx, c, in, head)
	if err != nil {
		return MergeTaskOutput{}, err
	}
	var done []gitws.Merge
	var faults []gitws.StackFault
	stack := tasks
	if in.TaskFaults {
		if done, stack, faults, err = a.git.Sift(ctx, c.scratch, base, tasks); err != nil {
			return MergeTaskOutput{}, err
		}
	}
	tip, merges, conflict := base, []gitws.Merge(nil), (*gitws.Conflict)(nil)
	if len(stack) > 0 {
		if tip, merges, conflict, err = a.git.MergeStack(ctx, c.scratch, in.Line.Campaign, base, stack); err != nil {
			return MergeTaskOutput{}, campaignStepError(err)
		}
	}
	if err := c.keepTaskBranches(ctx, tasks); err != nil {
		return MergeTaskOutput{}, err
	}
	out := MergeTaskOutput{Head: head, Tip: tip, Merged: mergedTasks(append(done, merges...)), Faults: taskFaults(faults)}
	for _, f := range faults {
		activity.GetLogger(ctx).Warn("A task's branch cannot merge: the task is left out of the stack", "task", f.Task, "reason", f.Reason)
	}
	if conflict != nil && conflict.Refused != nil {
		activity.GetLogger(ctx).Warn("A task's tree did not merge: the task goes back", "task", stack[conflict.Index].ID,
			"reason", conflict.Refused.Reason(), "error", conflict.Refused.Err)
		out.Outcome, out.ConflictTask, out.Refused = MergeRefused, stack[conflict.Index].ID,
			conflict.Refused.Reason()+": "+conflict.Refused.Err.Error()
		return out, nil
	}
	if conflict != nil {
		out.Outcome, out.ConflictTask, out.ConflictPaths = MergeConflict, stack[conflict.Index].ID, conflict.Paths
		return out, nil
	}
	if tip == base {
		out.Outcome = MergeLanded // every task was already there
		return out, nil
	}
	if in.Lane == LaneMerge {
		return a.keepLane(ctx, c, in, out, base)
	}
	return a.verifyMerge(ctx, c, in, out)
}

// checkMergeInput refuses a MergeTask input no mode fits, naming why.
func checkMergeInput(in MergeTaskInput) error {
	switch {
	case in.DropLanes && (len(in.Tasks) > 0 || in.VerifyHead || in.Land != "" || in.Hold || in.Lane != ""):
		return errors.New("MergeTask: dropLanes takes no tasks and neither merges, verifies, holds nor lands")
	case in.VerifyHead && len(in.Tasks) > 0:
		return errors.New("MergeTask: verifyHead takes no tasks (it verifies the integration head alone)")
	case in.VerifyHead && (in.Land != "" || in.Hold):
		return errors.New("MergeTask: verifyHead neither holds nor lands")
	case !in.VerifyHead && !in.DropLanes && len(in.Tasks) == 0:
		return errors.New("MergeTask needs at least one task")
	}
	return nil
}

// verifyHead runs the verify command on the integration head alone, in the
// sandbox with the protected paths, exactly as on a merged tip: the queue
// asks whether a red merge was the task's or the head's.
func (a *Activities) verifyHead(ctx context.Context, c *campaignGit, in MergeTaskInput, head string) (MergeTaskOutput, error) {
	out := MergeTaskOutput{Head: head, Tip: head, Merged: []MergedTask{}}
	if err := a.git.CheckoutHead(ctx, c.scratch, head); err != nil {
		return MergeTaskOutput{}, campaignStepError(err)
	}
	// Warm like a merge verify; the head has landed, so a passing verify's
	// writes may become the line's cache.
	v, cache, err := a.verifyTreeWarm(ctx, c.scratch, in.VerifyCommand, toolcache.CampaignLine(in.Line.Campaign), a.protectedSets(in.ProtectedPaths))
	defer func() { _ = cache.Remove() }() // a no-op once committed
	if err != nil {
		return MergeTaskOutput{}, err
	}
	out.Verification, out.Outcome = v, MergeVerified
	if !v.Passed() {
		out.Outcome = MergeRed
		return out, nil
	}
	if cache != nil {
		if _, err := cache.Commit(); err != nil {
			activity.GetLogger(ctx).Warn("Keeping the head verify's tool cache failed", "error", err)
		}
	}
	return out, nil
}

func taskFaults(faults []gitws.StackFault) []TaskFault {
	var out []TaskFault
	for _, f := range faults {
		out = append(out, TaskFault{ID: f.Task, Reason: f.Reason})
	}
	return out
}

// verifyMerge runs the verify command on the merged tip out.Tip in the
// sandbox; a passing tip is kept for approval (in.Hold) or landed.
func (a *Activities) verifyMerge(ctx context.Context, c *campaignGit, in MergeTaskInput, out MergeTaskOutput) (MergeTaskOutput, error) {
	var err error
	if out.DiffStat, err = a.git.DiffStat(ctx, c.scratch, out.Head, out.Tip); err != nil {
		return MergeTaskOutput{}, err
	}
	var cache *toolcache.Copy
	out.Verification, cache, err = a.verifyTreeWarm(ctx, c.scratch, in.VerifyCommand, toolcache.CampaignLine(in.Line.Campaign), a.protectedSets(in.ProtectedPaths))
	defer func() { _ = cache.Remove() }() // a no-op once committed
	if err != nil {
		return MergeTaskOutput{}, err
	}
	if !out.Verification.Passed() {
		out.Outcome = MergeRed
		return out, nil
	}
	if in.Hold {
		if err := a.git.Keep(ctx, c.scratch, c.line, in.HoldRef, out.Tip); err != nil {
			return MergeTaskOutput{}, err
		}
		out.Outcome = MergeHeld
		return out, nil
	}
	if out, err = a.land(ctx, c, out, out.Tip, out.Head); err == nil && out.Outcome == MergeLanded && cache != nil {
		// Only now, with its tree on the integration branch, does what the
		// verify wrote become the line's cache.
		if st, cerr := cache.Commit(); cerr != nil {
			activity.GetLogger(ctx).Warn("Could not keep the merge verify's tool cache: the next verify starts from the last one", "error", cerr)
		} else {
			activity.GetLogger(ctx).Info("Tool cache committed", "line", toolcache.CampaignLine(in.Line.Campaign), "files", st.Files, "bytes", st.Bytes)
		}
	}
	return out, err
}

// landKept lands a verified tip kept for approval, when the integration
// head is still the one it was merged onto.
func (a *Activities) landKept(ctx context.Context, c *campaignGit, in MergeTaskInput, head string) (MergeTaskOutput, error) {
	out := MergeTaskOutput{Head: head, Tip: in.Land, Merged: []MergedTask{}}
	if _, err := a.git.FetchKept(ctx, c.scratch, c.line, in.HoldRef); err != nil {
		return MergeTaskOutput{}, err
	}
	for _, t := range in.Tasks {
		out.Merged = append(out.Merged, MergedTask{ID: t.ID, Commit: in.Land})
	}
	if head == in.Land {
		out.Outcome = MergeLanded // an earlier attempt landed it
		return out, nil
	}
	if head != in.LandOn {
		out.Outcome = MergeMoved
		return out, nil
	}
	return a.land(ctx, c, out, in.Land, head)
}

func (a *Activities) land(ctx context.Context, c *campaignGit, out MergeTaskOutput, tip, head string) (MergeTaskOutput, error) {
	if err := a.git.Land(ctx, c.scratch, c.line, tip, head); err != nil {
		if errors.Is(err, gitws.ErrPushRejected) {
			out.Outcome = MergeMoved
			return out, nil
		}
		return MergeTaskOutput{}, err
	}
	out.Outcome, out.Head = MergeLanded, tip
	return out, nil
}

func mergedTasks(merges []gitws.Merge) []MergedTask {
	out := make([]MergedTask, 0, len(merges))
	for _, m := range merges {
		out = append(out, MergedTask{ID: m.Task, Commit: m.Commit, Already: m.Already})
	}
	return out
}

// verifyTreeWarm runs a verify command on a tree the worker made (a
// campaign's merged tree or head, a round candidate's) in the sandbox, with
// every protection a round's verify has: the paths the pattern sets protect
// are read-only to it and checked again after it; a run that changed one
// fails (ProtectedChanged) and the paths are restored.
// It starts from its own copy of line's warm
// tool cache (none when line is ""); the copy is returned (nil without
// one) for the caller to commit or remove.
func (a *Activities) verifyTreeWarm(ctx context.Context, dir, command, line string, protected [][]string) (*report.Verification, *toolcache.Copy, error) {
	if strings.TrimSpace(command) == "" {
		return nil, nil, temporal.NewNonRetryableApplicationError("there is no verify command", ErrTypeCampaignGit, nil)
	}
	prot, err := tools.ParseProtected(protected...)
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError("protectedPaths: "+err.Error(), ErrTypeBadRoundInput, nil)
	}
	ws, err := tools.OpenWorkspace(dir, a.cfg.Agent.ToolLimits, tools.WithSandbox(a.cfg.Agent.Sandbox), tools.WithProtected(prot),
		tools.WithToolCache(line), tools.WithStartAfter(a.git.LendSettled(dir)))
	if err != nil {
		return nil, nil, fmt.Errorf("open the tree to verify: %w", err)
	}
	defer ws.Close()
	snap, err := ws.SnapshotProtected() // also makes the protected files the command's read-only mounts
	if err != nil {
		return nil, nil, fmt.Errorf("verify %s: %w", filepath.Base(dir), err)
	}
	timeout := a.cfg.Agent.VerifyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	res, err := ws.ExecFreshHome(ctx, command, timeout, report.MaxVerificationOutput-100)
	if err != nil {
		return nil, nil, fmt.Errorf("run the verify command on %s: %w", filepath.Base(dir), err)
	}
	v := &report.Verification{Command: command, ExitCode: res.ExitCode, DurationMs: res.Duration.Milliseconds(), Output: res.Output}
	if res.TimedOut {
		v.ExitCode = -1
	}
	changed, err := ws.RestoreProtected(snap)
	if err != nil {
		_ = res.ToolCache.Remove()
		return nil, nil, fmt.Errorf("check the protected paths after the verify command: %w", err)
	}
	if len(changed) > 0 {
		activity.GetLogger(ctx).Warn("The verify command changed protected paths: it fails", "tree", filepath.Base(dir), "paths", changed)
		failProtected(v, changed)
	}
	return v, res.ToolCache, nil
}

// taskTreeStepError makes a task's tree at fault a non-retryable
// ErrTypeTaskTree: the same tree fails the same way every time.
func taskTreeStepError(err error) error {
	var tt *gitws.TaskTreeError
	if errors.As(err, &tt) {
		return temporal.NewNonRetryableApplicationError(tt.Reason()+": "+tt.Error(), ErrTypeTaskTree, nil)
	}
	return err
}

// campaignStepError makes what no retry can change non-retryable.
func campaignStepError(err error) error {
	if errors.Is(err, gitws.ErrBaseMissing) || gitws.TreeFault(err) || strings.Contains(err.Error(), "does not hold the loop's last checkpoint") {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeCampaignGit, nil)
	}
	return err
}

// campaignHeartbeat heartbeats every few seconds until stopped, so a lost
// worker's step is retried soon and a cancel reaches it.
func campaignHeartbeat(ctx context.Context) func() {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	// Stopping waits for the goroutine: no heartbeat is recorded after the
	// activity returned (the SDK's test environment races on one).
	return func() { close(done); <-exited }
}
