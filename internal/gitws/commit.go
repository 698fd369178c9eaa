package gitws

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// summaryCap bounds the summary in a checkpoint's first line, in code points.
const summaryCap = 72

// Trailer keys of checkpoint commits: scripts read them with
// git log --format='%(trailers:key=Ralph-Round,valueonly)'.
const (
	TrailerWorkflowID = "Ralph-Workflow-Id"
	TrailerRound      = "Ralph-Round"
	TrailerSession    = "Ralph-Session"
	TrailerStatus     = "Ralph-Status"
	TrailerAttempt    = "Ralph-Attempt"
)

// Round identifies the round (and attempt) a step belongs to.
type Round struct {
	WorkflowID string
	// Workspace is the workspace's name under the root (the remote branch
	// is ralph/<Workspace>).
	Workspace string
	Round     int
	MaxRounds int
	Attempt   int
	// Checkpoint is the last checkpoint the workflow accepted ("" before
	// the first, or from histories that predate it): a HEAD past it with
	// later rounds of this workflow means the run was rewound.
	Checkpoint string
	// Rewound: the workflow was rewound to Checkpoint's round, so the first
	// attempt restores it whatever HEAD and the work tree hold (what they
	// held is saved on the rewind ref).
	Rewound bool
}

// Handoff is what the round's valid report says, for the commit message.
type Handoff struct {
	SessionID string
	Status    string
	Summary   string
}

// Checkpoint is the commit a round ended with; Commit == Parent when the
// round changed nothing.
type Checkpoint struct {
	Commit       string
	Parent       string
	FilesChanged int
	Insertions   int
	Deletions    int
}

var spaces = regexp.MustCompile(`\s+`)

// oneLine folds any whitespace run (line breaks included) into one space.
func oneLine(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }

// cut keeps at most n code points of s, the last being '…' when it cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// CheckpointMessage is a checkpoint commit's message: the first line
// "ralph: round R/N <status>: <summary>", the full summary when the first
// line had to cut it, and the Ralph-* trailers.
func CheckpointMessage(r Round, h Handoff) string {
	summary := oneLine(h.Summary)
	var b strings.Builder
	fmt.Fprintf(&b, "ralph: round %d/%d %s: %s\n\n", r.Round, r.MaxRounds, oneLine(h.Status), cut(summary, summaryCap))
	if cut(summary, summaryCap) != summary || summary != strings.TrimSpace(h.Summary) {
		b.WriteString(strings.TrimSpace(h.Summary) + "\n\n")
	}
	fmt.Fprintf(&b, "%s: %s\n%s: %d\n%s: %s\n%s: %s\n",
		TrailerWorkflowID, oneLine(r.WorkflowID), TrailerRound, r.Round,
		TrailerSession, oneLine(h.SessionID), TrailerStatus, oneLine(h.Status))
	return b.String()
}

// abandonedMessage describes a commit of a lost attempt's leftovers.
func abandonedMessage(workflowID string, round, attempt int) string {
	return fmt.Sprintf("ralph: round %d attempt %d abandoned: what the lost attempt left uncommitted\n\n%s: %s\n%s: %d\n%s: %d\n",
		round, attempt, TrailerWorkflowID, oneLine(workflowID), TrailerRound, round, TrailerAttempt, attempt)
}

// commitTree writes a commit of tree with the given parents (none for a
// root commit) authored and committed by the configured author. Plumbing
// only: no hook, no editor, no signing program.
func (g *Git) commitTree(ctx context.Context, dir, tree, message string, parents ...string) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	args = append(args, "-F", "-")
	out, err := g.run(ctx, dir, cmdOpts{stdin: message, env: []string{
		"GIT_AUTHOR_NAME=" + g.authorName, "GIT_AUTHOR_EMAIL=" + g.authorEmail,
		"GIT_COMMITTER_NAME=" + g.authorName, "GIT_COMMITTER_EMAIL=" + g.authorEmail,
	}}, args...)
	if err != nil {
		return "", fmt.Errorf("write a commit: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// setRef points ref at commit (old, when set, must be its current value).
func (g *Git) setRef(ctx context.Context, dir, ref, commit, old string) error {
	args := []string{"update-ref", "-m", "ralph checkpoint", ref, commit}
	if old != "" {
		args = append(args, old)
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, args...); err != nil {
		return fmt.Errorf("point %s at %s: %w", ref, commit, err)
	}
	return nil
}

var shortstat = regexp.MustCompile(`(\d+) (files? changed|insertions?\(\+\)|deletions?\(-\))`)

// stats counts the files, inserted and deleted lines between two commits.
func (g *Git) stats(ctx context.Context, dir, from, to string, cp *Checkpoint) error {
	out, err := g.run(ctx, dir, cmdOpts{}, "diff-tree", "-r", "--no-renames", "--shortstat", from, to)
	if err != nil {
		return fmt.Errorf("count the changes of %s: %w", to, err)
	}
	for _, m := range shortstat.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		switch {
		case strings.HasPrefix(m[2], "file"):
			cp.FilesChanged = n
		case strings.HasPrefix(m[2], "insertion"):
			cp.Insertions = n
		default:
			cp.Deletions = n
		}
	}
	return nil
}
