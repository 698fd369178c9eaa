package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// campaignSettings is a campaign's validated input with every default
// resolved; it never changes after the start.
type campaignSettings struct {
	ID               string `json:"id"`
	Base             string `json:"base,omitempty"`
	Branch           string `json:"branch"`
	MaxParallel      int    `json:"maxParallel"`
	VerifyCommand    string `json:"verifyCommand"`
	MaxMergeAttempts int    `json:"maxMergeAttempts"`
	MergeBatch       int    `json:"mergeBatch"`
	// MergeLanes above 1: speculative lanes; 0 is one lane (a campaign
	// from before lanes, or mergeLanes 1).
	MergeLanes     int      `json:"mergeLanes,omitempty"`
	Approve        string   `json:"approve"`
	ProtectedPaths []string `json:"protectedPaths,omitempty"`
	TasksFile      string   `json:"tasksFile,omitempty"`
	// Objective and MaxWaves: a planning campaign (SPEC 40, waves.go).
	Objective string `json:"objective,omitempty"`
	MaxWaves  int    `json:"maxWaves,omitempty"`
}

// maxFailureChars cuts a task's carried failure.
const maxFailureChars = 2000

// taskState is everything the campaign knows of one task. What crosses
// continue-as-new is bounded (docs/campaigns.md, "Capacity"): a task of a
// tasksFile carries its definition without the objective (Source names the
// file the objective is read from when a go starts), an inline task all of it;
// then phase, counters, commit ids and a failure cut at 2,000 characters.
// The report a returned task's next go starts from is written again from
// the failure when that go starts, never carried.
type taskState struct {
	Task          Task
	Source        int // 1-based index of the campaign's tasks files; 0: inline
	Phase         string
	Go            int
	Round         int
	WorkflowID    string // derived from the id and the go
	Commit        string // the loop's last checkpoint, once it completed
	MergeCommit   string
	MergeAttempts int
	LastFailure   string
	Usage         usage.Usage
	DiffStat      string
	// Held is a verified merge commit awaiting approval, HeldOn the
	// integration head it was merged onto.
	Held   string
	HeldOn string
	// Evidence is what a returned task's next go is shown besides its
	// failure (the verify's exit code and output tail, or the conflicting
	// paths); carried only until that go starts.
	Evidence []string
	// preparing: the go's branch is prepared and its loop not started yet;
	// a stop or guidance sent meanwhile is kept here and delivered when the
	// loop starts (never carried: a continue-as-new waits for preparations).
	preparing    bool
	keptGuidance []string
	keptStop     *workflows.StopRequest
	// share is the tokens reserved for the go when it started (0: none);
	// carried with a running task.
	share int
	// carried: the task's loop runs, started by an earlier run of the
	// campaign (CampaignNoDrain): no child future here, its end comes by
	// its report or watchCarried.
	carried bool
	// approved: a held merge was approved and waits in the queue to land.
	approved bool
}

// carriedTask is a task's state as continue-as-new carries it: a JSON array
// (no field names repeated 5,000 times). Def is the task's definition (a
// file task's without its objective), null when it is the id alone.
type carriedTask struct {
	ID, Phase                    string
	Go, Round, MergeAttempts     int
	Commit, MergeCommit, Failure string
	Usage                        [4]int
	Source                       int
	Def                          *Task
	DiffStat, Held, HeldOn       string
	Evidence                     []string
	Share                        int
}

func (t taskState) MarshalJSON() ([]byte, error) {
	u := t.Usage
	commit := t.Commit
	if t.Phase == TaskMerged {
		commit = "" // the merge commit holds it
	}
	var def *Task
	if d := t.Task; d.Objective != "" || d.DependsOn != nil || d.VerifyCommand != "" || d.MaxRounds != nil || d.ProtectedPaths != nil {
		def = &d
	}
	fields := []any{t.Task.ID, t.Phase, t.Go, t.Round, t.MergeAttempts, commit, t.MergeCommit, t.LastFailure,
		[4]int{u.ModelCalls, u.ToolCalls, u.PromptTokens, u.CompletionTokens}, t.Source, def, t.DiffStat, t.Held, t.HeldOn, t.Evidence}
	if t.share > 0 && t.Phase == TaskRunning { // a loop carried running keeps its share
		fields = append(fields, t.share)
	}
	return json.Marshal(fields)
}

// legacyTaskState is the object form an earlier build carried.
type legacyTaskState struct {
	Task          Task           `json:"task"`
	Phase         string         `json:"phase"`
	Go            int            `json:"go"`
	Round         int            `json:"round"`
	Commit        string         `json:"commit,omitempty"`
	MergeCommit   string         `json:"mergeCommit,omitempty"`
	MergeAttempts int            `json:"mergeAttempts"`
	LastFailure   string         `json:"lastFailure,omitempty"`
	Usage         usage.Usage    `json:"usage"`
	DiffStat      string         `json:"diffStat,omitempty"`
	Held          string         `json:"held,omitempty"`
	HeldOn        string         `json:"heldOn,omitempty"`
	Back          *report.Report `json:"back,omitempty"`
}

func (t *taskState) UnmarshalJSON(data []byte) error {
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		var l legacyTaskState
		if err := json.Unmarshal(trimmed, &l); err != nil {
			return err
		}
		*t = taskState{Task: l.Task, Phase: l.Phase, Go: l.Go, Round: l.Round, Commit: l.Commit, MergeCommit: l.MergeCommit,
			MergeAttempts: l.MergeAttempts, LastFailure: l.LastFailure, Usage: l.Usage, DiffStat: l.DiffStat, Held: l.Held, HeldOn: l.HeldOn}
		return nil
	}
	var c carriedTask
	fields := []any{&c.ID, &c.Phase, &c.Go, &c.Round, &c.MergeAttempts, &c.Commit, &c.MergeCommit, &c.Failure,
		&c.Usage, &c.Source, &c.Def, &c.DiffStat, &c.Held, &c.HeldOn, &c.Evidence, &c.Share}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if len(raw) == len(fields)-2 {
		raw = append(raw, json.RawMessage("null")) // before evidence was carried
	}
	if len(raw) == len(fields)-1 {
		raw = append(raw, json.RawMessage("0")) // no share carried
	}
	if len(raw) != len(fields) {
		return fmt.Errorf("a carried task has %d fields, want %d", len(raw), len(fields))
	}
	for i, r := range raw {
		if err := json.Unmarshal(r, fields[i]); err != nil {
			return fmt.Errorf("a carried task's field %d: %w", i, err)
		}
	}
	*t = taskState{Source: c.Source, Phase: c.Phase, Go: c.Go, Round: c.Round,
		Commit: c.Commit, MergeCommit: c.MergeCommit, MergeAttempts: c.MergeAttempts, LastFailure: c.Failure,
		Usage:    usage.Usage{ModelCalls: c.Usage[0], ToolCalls: c.Usage[1], PromptTokens: c.Usage[2], CompletionTokens: c.Usage[3]},
		DiffStat: c.DiffStat, Held: c.Held, HeldOn: c.HeldOn, Evidence: c.Evidence, share: c.Share}
	if c.Def != nil {
		t.Task = *c.Def
	}
	t.Task.ID = c.ID
	return nil
}

// workflowID is the task's loop for its current go: <campaign>/<task>, a
// later go <campaign>/<task>/<go>.
func workflowID(campaign string, t *taskState) string {
	if t.Go == 0 {
		return ""
	}
	return goWorkflowID(campaign, t.Task.ID, t.Go)
}

func goWorkflowID(campaign, task string, n int) string {
	if n <= 1 {
		return campaign + "/" + task
	}
	return fmt.Sprintf("%s/%s/%d", campaign, task, n)
}
