package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/internal/runes"
	"github.com/ralph-temporal/ralph/workflows"
)

// A campaign's capacity (docs/campaigns.md, "Capacity"): nothing it makes —
// input, answer, result, continuation — is over maxPayloadBytes, half of
// Temporal's 2 MiB payload limit. Inline tasks are bounded as sent; a
// tasksFile's objectives are read when a task's go starts, never carried.
const (
	maxPayloadBytes = 1 << 20
	// maxSkeletonBytes bounds the worst case of what every task carries
	// (its definition, counters, a commit id, its place in the queue); the
	// rest of maxPayloadBytes is for failures, held merges and settings.
	maxSkeletonBytes = maxPayloadBytes - 128<<10
	// cutFailureChars is what a finished task's failure is cut to when the
	// continuation would otherwise cross maxPayloadBytes.
	cutFailureChars = 200
)

// parseTasksFile reads the tasksFile field: exactly one of tasks and
// tasksFile is given.
func parseTasksFile(tasks, file json.RawMessage) (string, error) {
	switch {
	case isNull(file) && isNull(tasks):
		return "", inputErr(fieldTasks, "is required: a JSON array of tasks, or tasksFile naming a task file in the repository")
	case isNull(file):
		return "", nil
	case !isNull(tasks):
		return "", inputErr(fieldTasksFile, "and tasks are both given: send one")
	}
	var p string
	if err := json.Unmarshal(file, &p); err != nil {
		return "", inputErr(fieldTasksFile, "must be a JSON string: a path in the repository")
	}
	if err := activities.CheckTasksPath(p); err != nil {
		return "", inputErr(fieldTasksFile, "%v", err)
	}
	return p, nil
}

// parseInlineTasks refuses an inline list over maxPayloadBytes of JSON
// before reading it.
func parseInlineTasks(raw json.RawMessage, limits activities.Limits, existing []Task) ([]Task, error) {
	if n := len(raw); n > maxPayloadBytes {
		return nil, inputErr(fieldTasks, "is %d bytes of JSON, over the limit of %d (1 MiB): put the tasks in a file in the repository and name it with tasksFile", n, maxPayloadBytes)
	}
	return parseTasks(raw, limits, existing, limits.MaxCampaignTasks)
}

// skeletonBytes is the most task t can carry besides its failure: its
// definition with the longest phase, a commit id, large counters and its
// place in the merge queue. The part every task shares is measured once;
// a task adds its id (twice: its state and the queue) and its definition.
func skeletonBytes(t Task) int {
	n := skeletonBase + 2*len(t.ID)
	if t.Objective != "" || t.DependsOn != nil || t.VerifyCommand != "" || t.MaxRounds != nil || t.ProtectedPaths != nil {
		raw, _ := json.Marshal(t) // a task always encodes
		n += len(raw)
	}
	return n
}

// skeletonBase is what a task of an empty id and no definition carries at
// most, measured.
var skeletonBase = func() int {
	s := taskState{Phase: TaskAwaitingApproval, Go: 99, Round: 999, MergeAttempts: 99, Source: 99, Commit: strings.Repeat("0", 40)}
	running := s
	running.Phase, running.share = TaskRunning, 999999999 // a running task carries its share instead
	s.Usage.ModelCalls, s.Usage.ToolCalls, s.Usage.PromptTokens, s.Usage.CompletionTokens = 999999999, 999999999, 999999999, 999999999
	raw, _ := json.Marshal(s) // a task's state always encodes
	alt, _ := json.Marshal(running)
	return max(len(raw), len(alt)) + len(`"",`)
}()

// checkCarried refuses tasks whose worst-case carried state, with the
// tasks the campaign holds, would cross maxSkeletonBytes.
func checkCarried(existing []*taskState, tasks []Task, field string) error {
	total := 0
	for _, t := range existing {
		total += skeletonBytes(t.Task)
	}
	for _, t := range tasks {
		total += skeletonBytes(t)
	}
	if total > maxSkeletonBytes {
		return inputErr(field, "would make the campaign carry up to %d bytes of task state, over the limit of %d (1 MiB less room for failures): fewer tasks, shorter ids, dependencies or verify commands, or objectives in a tasksFile", total, maxSkeletonBytes)
	}
	return nil
}

// readTasks runs the ReadTasks activity (at the integration head) and
// checks what it read as an inline list would be, objectives by length.
// It returns the tasks without objectives and their source's number.
func (c *campaign) readTasks(ctx workflow.Context, path, field string) ([]Task, int, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: time.Minute, Summary: "read " + path,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{activities.ErrTypeCampaignGit, activities.ErrTypeTasksFile}},
	})
	var out activities.ReadTasksOutput
	if err := workflow.ExecuteActivity(actx, activities.ReadTasksName,
		activities.ReadTasksInput{Line: c.line(), Path: path}).Get(ctx, &out); err != nil {
		return nil, 0, invalidInput(fmt.Sprintf("invalid input: %s: %s", field, runes.Prefix(activityProblem(err), 2000)))
	}
	if out.FieldsSet {
		return nil, 0, invalidInput(fmt.Sprintf("invalid input: %s: %s sets campaign fields; a tasksFile holds tasks only (the input sets the campaign's fields)", field, path))
	}
	tasks, err := c.checkFileTasks(out)
	if err != nil {
		return nil, 0, invalidInput(fmt.Sprintf("%v (in %s)", err, path))
	}
	if err := checkCarried(c.tasks, tasks, field); err != nil {
		return nil, 0, invalidInput(err.Error())
	}
	c.sources = append(c.sources, out.Source)
	return tasks, len(c.sources), nil
}

// checkFileTasks validates a tasks file's tasks by the inline rules
// (internal/tasklist checked ids, objectives and the file's own
// duplicates): against the campaign's tasks, dependencies, the ceiling,
// objective lengths and each task's fields. Direct, not through JSON: 5,000
// tasks are checked within one workflow task.
func (c *campaign) checkFileTasks(out activities.ReadTasksOutput) ([]Task, error) {
	if n := len(c.tasks) + len(out.Tasks); c.limits.MaxCampaignTasks > 0 && n > c.limits.MaxCampaignTasks {
		return nil, inputErr(fieldTasks, "would make %d tasks, more than %d (RALPH_MAX_CAMPAIGN_TASKS)", n, c.limits.MaxCampaignTasks)
	}
	all := make([]Task, 0, len(c.tasks)+len(out.Tasks))
	known := make(map[string]bool, cap(all))
	for _, t := range c.tasks {
		all, known[t.Task.ID] = append(all, t.Task), true
	}
	for i, t := range out.Tasks {
		field := fmt.Sprintf("%s[%d] (%s)", fieldTasks, i, t.ID)
		if !taskIDPattern.MatchString(t.ID) || known[t.ID] {
			return nil, inputErr(field+".id", "%q is not a free task id of the campaign", t.ID)
		}
		known[t.ID] = true
		if n := out.ObjectiveChars[i]; n > c.limits.MaxObjectiveChars {
			return nil, inputErr(field+".objective", "is %d characters, over the limit of %d", n, c.limits.MaxObjectiveChars)
		}
		if n := utf8.RuneCountInString(t.VerifyCommand); n > workflows.MaxVerifyCommandChars {
			return nil, inputErr(field+".verifyCommand", "is %d characters, over the limit of %d", n, workflows.MaxVerifyCommandChars)
		}
		if t.MaxRounds != nil && *t.MaxRounds > c.limits.MaxRounds {
			return nil, inputErr(field+".maxRounds", "is %d, over the deployment's ceiling of %d", *t.MaxRounds, c.limits.MaxRounds)
		}
		if t.ProtectedPaths != nil {
			raw, _ := json.Marshal(t.ProtectedPaths) // strings always encode
			if _, err := parseProtected(raw); err != nil {
				return nil, prefixed(field, err)
			}
		}
		t.Objective = ""
		all = append(all, t)
	}
	for i, t := range out.Tasks {
		for _, d := range t.DependsOn {
			if !known[d] {
				return nil, inputErr(fmt.Sprintf("%s[%d] (%s).dependsOn", fieldTasks, i, t.ID), "names %q, which is no task of the campaign", d)
			}
		}
	}
	if cycle := plan.FindCycle(all); cycle != nil {
		return nil, inputErr(fieldDependsOn, "has a cycle: %s", strings.Join(cycle, " -> "))
	}
	return all[len(c.tasks):], nil
}

// fit cuts finished tasks' failures, oldest first, first to
// cutFailureChars and then away, then returned tasks' output tails to
// minTailChars, until the continuation is within maxPayloadBytes
// (measured): finished tasks' loops and notifications named the failures
// in full; a returned task keeps its failure for its next go.
func fit(k *CampaignContinuation) {
	size := encodedSize(k)
	for _, keep := range []int{cutFailureChars, 0} {
		for i := 0; i < len(k.Tasks) && size > maxPayloadBytes; i++ {
			t := &k.Tasks[i]
			switch t.Phase {
			case TaskBlocked, TaskFailed, TaskCancelled, TaskMerged:
				before := encodedSize(t)
				t.LastFailure = runes.Prefix(t.LastFailure, keep)
				size -= before - encodedSize(t)
			}
		}
	}
	// Then returned tasks' output tails, to the least their next go is shown.
	for i := 0; i < len(k.Tasks) && size > maxPayloadBytes; i++ {
		t := &k.Tasks[i]
		for j, e := range t.Evidence {
			if rest, ok := strings.CutPrefix(e, "output tail:\n"); ok {
				before := encodedSize(t)
				t.Evidence[j] = "output tail:\n" + strings.TrimSpace(runes.Suffix(rest, minTailChars))
				size -= before - encodedSize(t)
			}
		}
	}
}

// activityProblem is what an activity's failure says, without the SDK's
// wrapping.
func activityProblem(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}
