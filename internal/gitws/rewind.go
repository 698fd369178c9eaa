package gitws

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// RewindRef names where a rewind saves what the workspace held: the rounds
// after the checkpoint the run went back to, and uncommitted changes.
func RewindRef(workflowID string, n int) string {
	return fmt.Sprintf("%s%s/rewind-%d", AbandonedRefPrefix, refComponent(workflowID), n)
}

// rewind restores dir to r.Checkpoint when the work tree's HEAD holds
// checkpoints of this workflow's later rounds: the run was reset (starter
// rewind) to an earlier round, and the workflow hands the round the
// checkpoint it holds. What HEAD and the work tree held is saved on the
// next RewindRef first, so nothing is lost. A HEAD without later rounds of
// this workflow (a person's own commits) is left alone, unless the workflow
// says it was rewound (r.Rewound, first attempt): then even a HEAD at the
// checkpoint with a changed work tree is the abandoned round's partial work.
func (g *Git) rewind(ctx context.Context, dir, head string, r Round) (ref, commit string, err error) {
	told := r.Rewound && r.Attempt <= 1
	if r.Checkpoint == "" || head == "" || (head == r.Checkpoint && !told) {
		return "", "", nil
	}
	if ok, err := g.holdsLaterRounds(ctx, dir, head, r, told); err != nil || !ok {
		return "", "", err
	}
	tree, err := g.WorkTree(ctx, dir)
	if err != nil {
		return "", "", err
	}
	headTree, err := g.treeOf(ctx, dir, head)
	if err != nil {
		return "", "", err
	}
	if head == r.Checkpoint && tree == headTree {
		return "", "", nil // rewound, and nothing was left to abandon
	}
	commit = head
	if tree != headTree {
		msg := fmt.Sprintf("ralph: rewound to round %d's checkpoint: what the work tree held uncommitted\n\n%s: %s\n%s: %d\n",
			r.Round-1, TrailerWorkflowID, oneLine(r.WorkflowID), TrailerRound, r.Round)
		if commit, err = g.commitTree(ctx, dir, tree, msg, head); err != nil {
			return "", "", err
		}
	}
	if ref, err = g.nextRewindRef(ctx, dir, r.WorkflowID); err != nil {
		return "", "", err
	}
	if err := g.setRef(ctx, dir, ref, commit, ""); err != nil {
		return "", "", err
	}
	if err := g.resetTo(ctx, dir, r.Checkpoint); err != nil {
		return "", "", err
	}
	return ref, commit, nil
}

// holdsLaterRounds reports whether head descends from r.Checkpoint and,
// unless the workflow told it was rewound, holds checkpoints of this
// workflow's later rounds. A checkpoint the repository lacks is an error.
func (g *Git) holdsLaterRounds(ctx context.Context, dir, head string, r Round, told bool) (bool, error) {
	if c, err := g.resolve(ctx, dir, r.Checkpoint); err != nil {
		return false, err
	} else if c == "" {
		return false, fmt.Errorf("the run's checkpoint %s is not in the workspace repository", r.Checkpoint)
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "merge-base", "--is-ancestor", r.Checkpoint, head); err != nil {
		var ge *gitError
		if errors.As(err, &ge) && ge.exitCode == 1 {
			return false, nil // HEAD went elsewhere: not a rewind of this run
		}
		return false, err
	}
	if told {
		return true, nil
	}
	later, err := g.run(ctx, dir, cmdOpts{}, "log", "--format=%H", "--fixed-strings",
		"--grep="+TrailerWorkflowID+": "+oneLine(r.WorkflowID), r.Checkpoint+".."+head)
	if err != nil {
		return false, fmt.Errorf("list the rounds after checkpoint %s: %w", r.Checkpoint, err)
	}
	return strings.TrimSpace(later) != "", nil
}

// nextRewindRef is the first RewindRef of workflowID no earlier rewind took.
func (g *Git) nextRewindRef(ctx context.Context, dir, workflowID string) (string, error) {
	existing, err := g.run(ctx, dir, cmdOpts{}, "for-each-ref", "--format=%(refname)",
		AbandonedRefPrefix+refComponent(workflowID)+"/")
	if err != nil {
		return "", fmt.Errorf("list the abandoned refs: %w", err)
	}
	n := 1
	for _, name := range strings.Fields(existing) {
		var k int
		if _, err := fmt.Sscanf(name[strings.LastIndex(name, "/")+1:], "rewind-%d", &k); err == nil && k >= n {
			n = k + 1
		}
	}
	return RewindRef(workflowID, n), nil
}
