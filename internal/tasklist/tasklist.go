// Package tasklist reads a campaign's task file: a JSON or YAML task list (a
// bare array of tasks, or an object with "tasks" and campaign fields) or a
// Markdown checklist. The starter reads one from disk, the Campaign
// workflow's ReadTasks activity from the repository (input tasksFile); both
// read it here, so a file means the same to each.
package tasklist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Every problem is reported as file:line so a long list is fixed in one pass.

// Task is one entry of a campaign's task list: an objective that becomes an
// ordinary Ralph run on its own branch. ProtectedPaths add to the
// campaign's own for this task's loop and merge.
type Task struct {
	ID             string   `json:"id"`
	Objective      string   `json:"objective"`
	DependsOn      []string `json:"dependsOn,omitempty"`
	VerifyCommand  string   `json:"verifyCommand,omitempty"`
	MaxRounds      *int     `json:"maxRounds,omitempty"`
	ProtectedPaths []string `json:"protectedPaths,omitempty"`
}

// Fields are a task file's campaign fields besides its tasks.
type Fields struct {
	Base             string
	Branch           string
	MaxParallel      *int
	VerifyCommand    string
	MaxMergeAttempts *int
	MergeBatch       *int
	Approve          string
	MaxTokens        *int
	MaxMinutes       *int
	ProtectedPaths   []string
}

// File is a task file as read and checked.
type File struct {
	Fields Fields
	Tasks  []Task
}

// Empty says the file set no campaign field (tasks only).
func (f Fields) Empty() bool {
	return f.Base == "" && f.Branch == "" && f.MaxParallel == nil && f.VerifyCommand == "" && f.MaxMergeAttempts == nil &&
		f.MergeBatch == nil && f.Approve == "" && f.MaxTokens == nil && f.MaxMinutes == nil && f.ProtectedPaths == nil
}

// taskIDPattern is a task id (docs/campaigns.md).
var taskIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidID reports whether id is a task id: a path segment and a ref
// component as is (docs/campaigns.md).
func ValidID(id string) bool { return taskIDPattern.MatchString(id) }

// CheckTask applies the rules every task meets wherever it comes from (a
// file, a planner's plan): its id is a task id and it has an objective.
func CheckTask(t Task) error {
	switch {
	case !ValidID(t.ID):
		return fmt.Errorf("task id %q must be lower-case letters, digits and '-', starting with a letter or digit, at most 63 characters", t.ID)
	case strings.TrimSpace(t.Objective) == "":
		return fmt.Errorf("task %q has no objective", t.ID)
	}
	return nil
}

// fileError is a problem at a line of a task file.
type fileError struct {
	path string
	line int
	msg  string
}

func (e *fileError) Error() string {
	if e.line <= 0 {
		return e.path + ": " + e.msg
	}
	return fmt.Sprintf("%s:%d: %s", e.path, e.line, e.msg)
}

// listedTask is a task and the line it starts at.
type listedTask struct {
	Task
	line int
}

// taskList is a task file as read, before its tasks are checked.
type taskList struct {
	path     string
	campaign Fields // its fields besides the tasks
	tasks    []listedTask
	// done are the ids of a checklist's checked items.
	done map[string]bool
}

// Read reads and checks a task file: its campaign fields and its tasks.
// withinFile: every dependency names a task of the file (a start);
// otherwise it may name a task the campaign already has (add-tasks).
func Read(path string, data []byte, withinFile bool) (File, error) {
	l, err := parseTaskFile(path, data)
	if err != nil {
		return File{}, err
	}
	return l.check(withinFile)
}

// parseTaskFile reads a task file's content by its format: the extension
// decides, else the content (JSON opens with [ or {, a checklist has items).
func parseTaskFile(path string, data []byte) (taskList, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return parseJSONTasks(path, data)
	case ".yaml", ".yml":
		return parseYAMLTasks(path, data)
	case ".md", ".markdown":
		return parseMarkdownTasks(path, data)
	}
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{'):
		return parseJSONTasks(path, data)
	case checklistItem.Match(data):
		return parseMarkdownTasks(path, data)
	}
	return parseYAMLTasks(path, data)
}

// parseJSONTasks checks the JSON syntax (naming the line of an error), then
// reads the structure as YAML, which JSON is, to keep every node's line.
func parseJSONTasks(path string, data []byte) (taskList, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return taskList{}, &fileError{path, lineAt(data, se.Offset), "invalid JSON: " + se.Error()}
		}
		return taskList{}, &fileError{path, 0, "invalid JSON: " + err.Error()}
	}
	return parseYAMLTasks(path, data)
}

func lineAt(data []byte, offset int64) int {
	return bytes.Count(data[:min(int(offset), len(data))], []byte("\n")) + 1
}

func parseYAMLTasks(path string, data []byte) (taskList, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return taskList{}, &fileError{path, 0, "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return taskList{}, &fileError{path, 0, "is empty: want a list of tasks, or an object with \"tasks\""}
	}
	t := treeReader{list: taskList{path: path}}
	t.campaign(doc.Content[0])
	if t.err != nil {
		return taskList{}, t.err
	}
	return t.list, nil
}

// treeReader walks a YAML (or JSON) tree, keeping the first problem.
type treeReader struct {
	list taskList
	err  error
}

func (t *treeReader) fail(n *yaml.Node, format string, args ...any) {
	if t.err == nil {
		t.err = &fileError{t.list.path, n.Line, fmt.Sprintf(format, args...)}
	}
}

// campaign reads the top node: a bare list of tasks, or the campaign object.
func (t *treeReader) campaign(n *yaml.Node) {
	in := &t.list.campaign
	switch n.Kind {
	case yaml.SequenceNode:
		t.list.tasks = t.tasks(n)
		return
	case yaml.MappingNode:
	default:
		t.fail(n, "want a list of tasks, or an object with \"tasks\"")
		return
	}
	seen := false
	t.fields(n, "campaign field", func(key string, v *yaml.Node) bool {
		switch key {
		case "tasks":
			seen = true
			t.list.tasks = t.tasks(v)
		case "base":
			in.Base = t.text(v, key)
		case "branch":
			in.Branch = t.text(v, key)
		case "verifyCommand":
			in.VerifyCommand = t.text(v, key)
		case "approve":
			in.Approve = t.text(v, key)
		case "maxParallel":
			in.MaxParallel = t.count(v, key)
		case "maxMergeAttempts":
			in.MaxMergeAttempts = t.count(v, key)
		case "mergeBatch":
			in.MergeBatch = t.count(v, key)
		case "maxTokens":
			in.MaxTokens = t.count(v, key)
		case "maxMinutes":
			in.MaxMinutes = t.count(v, key)
		case "protectedPaths":
			in.ProtectedPaths = t.strings(v, key)
		default:
			return false
		}
		return true
	}, "tasks, base, branch, maxParallel, verifyCommand, maxMergeAttempts, mergeBatch, approve, maxTokens, maxMinutes, protectedPaths")
	if !seen {
		t.fail(n, "the object has no \"tasks\" list")
	}
}

// fields calls take for each key of mapping n; an unknown key (take
// returns false) is an error naming the keys that are known.
func (t *treeReader) fields(n *yaml.Node, what string, take func(key string, v *yaml.Node) bool, known string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !take(k.Value, v) {
			t.fail(k, "unknown %s %q (want %s)", what, k.Value, known)
		}
	}
}

func (t *treeReader) tasks(n *yaml.Node) []listedTask {
	if n.Kind != yaml.SequenceNode {
		t.fail(n, "\"tasks\" must be a list of tasks")
		return nil
	}
	if len(n.Content) == 0 {
		t.fail(n, "the task list is empty")
	}
	out := make([]listedTask, 0, len(n.Content))
	for i, tn := range n.Content {
		out = append(out, listedTask{t.task(tn, i+1), tn.Line})
	}
	return out
}

func (t *treeReader) task(n *yaml.Node, index int) Task {
	var task Task
	if n.Kind != yaml.MappingNode {
		t.fail(n, "task %d must be an object with id and objective", index)
		return task
	}
	t.fields(n, fmt.Sprintf("field of task %d", index), func(key string, v *yaml.Node) bool {
		switch key {
		case "id":
			task.ID = t.text(v, key)
		case "objective":
			task.Objective = t.text(v, key)
		case "verifyCommand":
			task.VerifyCommand = t.text(v, key)
		case "maxRounds":
			task.MaxRounds = t.count(v, key)
		case "dependsOn":
			task.DependsOn = t.ids(v)
		case "protectedPaths":
			task.ProtectedPaths = t.strings(v, key)
		default:
			return false
		}
		return true
	}, "id, objective, dependsOn, verifyCommand, maxRounds, protectedPaths")
	return task
}

func (t *treeReader) text(n *yaml.Node, key string) string {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		t.fail(n, "%q must be a string", key)
		return ""
	}
	return n.Value
}

func (t *treeReader) count(n *yaml.Node, key string) *int {
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil || v < 1 {
		t.fail(n, "%q must be a positive whole number, got %q", key, n.Value)
		return nil
	}
	return &v
}

func (t *treeReader) strings(n *yaml.Node, key string) []string {
	if n.Kind != yaml.SequenceNode {
		t.fail(n, "%q must be a list of strings", key)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, v := range n.Content {
		out = append(out, t.text(v, key))
	}
	return out
}

func (t *treeReader) ids(n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode {
		t.fail(n, "\"dependsOn\" must be a list of task ids")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, v := range n.Content {
		out = append(out, t.text(v, "dependsOn"))
	}
	return out
}

// A checklist item at the top level: "- [ ] id: objective" ("*" also
// starts an item; "[x]" marks it done).
var (
	checklistItem = regexp.MustCompile(`(?m)^[-*] \[[ xX]\] `)
	itemLine      = regexp.MustCompile(`^[-*] \[([ xX])\] (.*)$`)
	afterLine     = regexp.MustCompile(`^after:\s*(.*)$`)
)

// parseMarkdownTasks reads a checklist: each unchecked top-level item is a
// task "id: objective"; an indented "after: a, b" line under it names its
// dependencies. Checked items are done: skipped, and dependencies on them
// dropped. Every other line is ignored.
func parseMarkdownTasks(path string, data []byte) (taskList, error) {
	l := taskList{path: path, done: map[string]bool{}}
	current := -1 // the unchecked item indented lines belong to
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		n := i + 1
		if m := itemLine.FindStringSubmatch(line); m != nil {
			id, objective, ok := strings.Cut(m[2], ":")
			id, objective = strings.TrimSpace(id), strings.TrimSpace(objective)
			if !ok || id == "" {
				return taskList{}, &fileError{path, n, fmt.Sprintf("a task item is \"- [ ] id: objective\", got %q", line)}
			}
			if m[1] != " " {
				l.done[id], current = true, -1
				continue
			}
			l.tasks = append(l.tasks, listedTask{Task{ID: id, Objective: objective}, n})
			current = len(l.tasks) - 1
			continue
		}
		indented := strings.TrimLeft(line, " \t")
		if indented == line {
			if indented != "" {
				current = -1 // any other top-level line ends the item
			}
			continue
		}
		m := afterLine.FindStringSubmatch(strings.TrimPrefix(indented, "- "))
		if m == nil || current < 0 {
			continue
		}
		t := &l.tasks[current]
		if len(t.DependsOn) > 0 {
			return taskList{}, &fileError{path, n, fmt.Sprintf("task %q has a second \"after:\" line (name every dependency on one)", t.ID)}
		}
		for _, dep := range strings.Split(m[1], ",") {
			if dep = strings.TrimSpace(dep); dep == "" {
				return taskList{}, &fileError{path, n, fmt.Sprintf("\"after:\" of task %q has an empty dependency (want \"after: a, b\")", t.ID)}
			}
			t.DependsOn = append(t.DependsOn, dep)
		}
	}
	if len(l.tasks) == 0 {
		return taskList{}, &fileError{path, 0, "has no unchecked task item (\"- [ ] id: objective\")"}
	}
	return l, nil
}

// check applies the task rules the workflow applies, naming the line: ids
// (the pattern of docs/campaigns.md, unique), objectives, dependencies.
func (l taskList) check(withinFile bool) (File, error) {
	at := map[string]int{}
	for _, t := range l.tasks {
		if ValidID(t.ID) && at[t.ID] > 0 {
			return File{}, &fileError{l.path, t.line, fmt.Sprintf("task id %q is already used at line %d", t.ID, at[t.ID])}
		}
		if err := CheckTask(t.Task); err != nil {
			return File{}, &fileError{l.path, t.line, err.Error()}
		}
		at[t.ID] = t.line
	}
	in := File{Fields: l.campaign}
	for _, t := range l.tasks {
		task := t.Task
		task.DependsOn = nil
		for _, dep := range t.DependsOn {
			switch {
			case l.done[dep]:
				continue // a checked item: already done
			case dep == t.ID:
				return File{}, &fileError{l.path, t.line, fmt.Sprintf("task %q depends on itself", t.ID)}
			case withinFile && at[dep] == 0:
				return File{}, &fileError{l.path, t.line, fmt.Sprintf("task %q depends on %q, which is not a task of the file", t.ID, dep)}
			}
			task.DependsOn = append(task.DependsOn, dep)
		}
		in.Tasks = append(in.Tasks, task)
	}
	return in, nil
}
