package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/tasklist"
)

// ReadTasksName reads a campaign's tasksFile from its repository.
const ReadTasksName = "ReadTasks"

// ErrTypeTasksFile: the tasks file is missing, too large, or not a task
// list (the message names the file and line); retrying cannot help.
const ErrTypeTasksFile = "TasksFile"

// Bounds of a tasks file: what is read, and what the activity answers
// (the workflow carries no objective; half of Temporal's payload limit).
const (
	MaxTasksFileBytes   = 64 << 20
	MaxReadTasksPayload = 1 << 20
)

// TasksSource is a tasks file at one commit: where a task's objective is
// read again when its go starts.
type TasksSource struct {
	Commit string `json:"commit"`
	Path   string `json:"path"`
}

// ReadTasksInput names the file; At is the commit to read it at ("": the
// integration head, the branch created from base when it is missing).
type ReadTasksInput struct {
	Line CampaignLine `json:"line"`
	Path string       `json:"path"`
	At   string       `json:"at,omitempty"`
}

// ReadTasksOutput is the task list without its objectives (each task's
// objective length instead), and the commit it was read at.
type ReadTasksOutput struct {
	Source         TasksSource     `json:"source"`
	Tasks          []tasklist.Task `json:"tasks"`
	ObjectiveChars []int           `json:"objectiveChars"`
	// FieldsSet: the file also set campaign fields, which a tasksFile may
	// not (the input sets them).
	FieldsSet bool `json:"fieldsSet,omitempty"`
}

// CheckTasksPath refuses a tasksFile path that is not a clean path inside
// the repository.
func CheckTasksPath(p string) error {
	switch {
	case p == "":
		return errors.New("is empty")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is absolute: name a path inside the repository", p)
	case path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || p == "..":
		return fmt.Errorf("%q is not a clean path inside the repository", p)
	case strings.ContainsAny(p, "\x00:"):
		return fmt.Errorf("%q holds a character git cannot name a file by (NUL or ':')", p)
	}
	return nil
}

// ReadTasks reads and checks a tasks file at the integration head (or At),
// as the starter reads one (internal/tasklist), and answers its tasks
// without their objectives.
func (a *Activities) ReadTasks(ctx context.Context, in ReadTasksInput) (ReadTasksOutput, error) {
	stop := campaignHeartbeat(ctx)
	defer stop()
	f, src, err := a.readTaskFile(ctx, in.Line, in.Path, in.At, "read-tasks")
	if err != nil {
		return ReadTasksOutput{}, err
	}
	return TasksOutput(f, src)
}

// TasksOutput is ReadTasks' answer for a read file: its tasks without their
// objectives, refused when even that is over MaxReadTasksPayload.
func TasksOutput(f tasklist.File, src TasksSource) (ReadTasksOutput, error) {
	out := ReadTasksOutput{Source: src, Tasks: make([]tasklist.Task, 0, len(f.Tasks)), FieldsSet: !f.Fields.Empty()}
	for _, t := range f.Tasks {
		out.ObjectiveChars = append(out.ObjectiveChars, utf8.RuneCountInString(t.Objective))
		t.Objective = ""
		out.Tasks = append(out.Tasks, t)
	}
	if raw, _ := json.Marshal(out); len(raw) > MaxReadTasksPayload {
		return ReadTasksOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s: its tasks without their objectives are %d bytes of JSON, over the limit of %d (1 MiB): shorten verify commands, dependencies or ids",
			src.Path, len(raw), MaxReadTasksPayload), ErrTypeTasksFile, nil)
	}
	return out, nil
}

// readTaskFile fetches the integration branch, reads path at at (or the
// head) and parses it as a task file; add-tasks may depend on tasks the
// campaign holds, so dependencies are checked by the workflow.
func (a *Activities) readTaskFile(ctx context.Context, line CampaignLine, p, at, scratch string) (tasklist.File, TasksSource, error) {
	if err := CheckTasksPath(p); err != nil {
		return tasklist.File{}, TasksSource{}, temporal.NewNonRetryableApplicationError("tasksFile "+err.Error(), ErrTypeTasksFile, nil)
	}
	c, err := a.campaignGit(ctx, line, scratch)
	if err != nil {
		return tasklist.File{}, TasksSource{}, err
	}
	head, err := a.git.Integration(ctx, c.scratch, c.line)
	if err != nil {
		return tasklist.File{}, TasksSource{}, campaignStepError(err)
	}
	if at == "" {
		at = head
	}
	data, err := a.git.FileAt(ctx, c.scratch, at, p, MaxTasksFileBytes)
	if err != nil {
		if errors.Is(err, gitws.ErrFileMissing) {
			return tasklist.File{}, TasksSource{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("tasksFile %q is not in the repository at %s (commit %s)", p, line.Branch, at), ErrTypeTasksFile, nil)
		}
		return tasklist.File{}, TasksSource{}, err
	}
	f, err := tasklist.Read(p, data, false)
	if err != nil {
		return tasklist.File{}, TasksSource{}, temporal.NewNonRetryableApplicationError("tasksFile "+err.Error(), ErrTypeTasksFile, nil)
	}
	return f, TasksSource{Commit: at, Path: p}, nil
}

// taskFromFile is one task of a tasks file as it was read: its objective
// and definition, read again when the task's go starts.
func (a *Activities) taskFromFile(ctx context.Context, c *campaignGit, src TasksSource, id string) (*tasklist.Task, error) {
	data, err := a.git.FileAt(ctx, c.scratch, src.Commit, src.Path, MaxTasksFileBytes)
	if err != nil {
		return nil, err
	}
	f, err := tasklist.Read(src.Path, data, false)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("tasksFile "+err.Error(), ErrTypeTasksFile, nil)
	}
	for i := range f.Tasks {
		if f.Tasks[i].ID == id {
			return &f.Tasks[i], nil
		}
	}
	return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tasksFile %s at %s no longer lists task %q", src.Path, src.Commit, id), ErrTypeTasksFile, nil)
}
