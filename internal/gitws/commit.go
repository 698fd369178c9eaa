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
	// DiffStat is git's --stat summary of the change from Parent, filled
	// only for a candidate's commit (FinishCandidate), from the command
	// that counts the lines.
	DiffStat string
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
// only: no hook, no editor, no signing program. In a scratch of the
// worker's the worker writes the object itself (writeCommit).
func (g *Git) commitTree(ctx context.Context, dir, tree, message string, parents ...string) (string, error) {
	if id, ok, err := g.writeCommit(dir, tree, message, parents); ok {
		return id, err
	}
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

// stats counts the files, inserted and deleted lines between two commits,
// under the worker's neutral attributes (a tree's "-diff" or "binary" hides
// no line). A file git still finds binary by its bytes (a NUL in its first
// 8,000 bytes, or over core.bigFileThreshold) has no lines git counts: its
// size in bytes counts instead, never fewer than its lines, so a change made
// to look binary never looks smaller (the candidates' "smaller diff").
//
// withStat also fills cp.DiffStat: git prints --stat after the NUL-ended
// numstat records of the same command, so a candidate needs no second diff.
func (g *Git) stats(ctx context.Context, dir, from, to string, cp *Checkpoint, withStat bool) error {
	args := []string{"diff-tree", "-r", "--no-renames", "--no-ext-diff", "--no-textconv", "--numstat", "-z"}
	if withStat {
		args = append(args, "--no-color", "--stat=100")
	}
	out, err := g.run(ctx, dir, cmdOpts{}, append(args, from, to)...)
	if err != nil {
		return fmt.Errorf("count the changes of %s: %w", to, err)
	}
	binary := map[string]bool{}
	*cp = Checkpoint{Commit: cp.Commit, Parent: cp.Parent}
	records := strings.Split(out, "\x00")
	if withStat {
		// The last field, after the last record's NUL, is the --stat text.
		last := len(records) - 1
		cp.DiffStat = CutChange(strings.TrimRight(records[last], "\n"), 4000)
		records = records[:last]
	}
	for _, rec := range records {
		added, rest, ok1 := strings.Cut(rec, "\t")
		deleted, path, ok2 := strings.Cut(rest, "\t")
		if !ok1 || !ok2 {
			continue
		}
		cp.FilesChanged++
		if added == "-" && deleted == "-" {
			binary[path] = true
			continue
		}
		a, aerr := strconv.Atoi(added)
		d, derr := strconv.Atoi(deleted)
		if aerr != nil || derr != nil {
			return fmt.Errorf("count the changes of %s: unexpected numstat record %q", to, rec)
		}
		cp.Insertions += a
		cp.Deletions += d
	}
	if len(binary) == 0 {
		return nil
	}
	return g.binaryStats(ctx, dir, from, to, binary, cp)
}

// binaryStats adds the sizes of the binary files' old and new blobs to the
// deletions and insertions.
func (g *Git) binaryStats(ctx context.Context, dir, from, to string, binary map[string]bool, cp *Checkpoint) error {
	out, err := g.run(ctx, dir, cmdOpts{}, "diff-tree", "-r", "--no-renames", "--raw", "--no-abbrev", "-z", from, to)
	if err != nil {
		return fmt.Errorf("list the binary changes of %s: %w", to, err)
	}
	// Records: ":<mode> <mode> <old> <new> <status>" NUL <path> NUL.
	var ids []string
	var added []bool
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(fields[i])
		if len(meta) != 5 || !binary[fields[i+1]] {
			continue
		}
		for j, id := range meta[2:4] {
			// A blob only: a gitlink names another repository's commit.
			if mode := strings.TrimPrefix(meta[j], ":"); strings.HasPrefix(mode, "10") && strings.Trim(id, "0") != "" {
				ids, added = append(ids, id), append(added, j == 1)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sizes, err := g.run(ctx, dir, cmdOpts{stdin: strings.Join(ids, "\n") + "\n"}, "cat-file", "--batch-check=%(objectsize)")
	if err != nil {
		return fmt.Errorf("size the binary changes of %s: %w", to, err)
	}
	lines := strings.Fields(sizes)
	if len(lines) != len(ids) {
		return fmt.Errorf("size the binary changes of %s: %d sizes for %d blobs", to, len(lines), len(ids))
	}
	for i, l := range lines {
		n, err := strconv.Atoi(l)
		if err != nil {
			return fmt.Errorf("size the binary changes of %s: %q", to, l)
		}
		if added[i] {
			cp.Insertions += n
		} else {
			cp.Deletions += n
		}
	}
	return nil
}
