package gitws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrPushRejected: the remote refused the checkpoint (another worker or a
// person pushed to the branch first, or a server-side rule declined it).
var ErrPushRejected = errors.New("push rejected")

// attemptMarker (in .git, never in the work tree) records which attempt
// last prepared this clone, so leftovers found later are saved under the
// name of the attempt that left them.
const attemptMarker = "ralph-attempt.json"

type marker struct {
	WorkflowID string `json:"workflowId"`
	Round      int    `json:"round"`
	Attempt    int    `json:"attempt"`
}

func (g *Git) prepareRemote(ctx context.Context, dir string, r Round) (Prepared, error) {
	branch := Branch(r.Workspace)
	if _, err := g.run(ctx, dir, cmdOpts{}, "check-ref-format", "refs/heads/"+branch); err != nil {
		return Prepared{}, fmt.Errorf("%w: %q", ErrBadWorkspaceName, branch)
	}
	base, onBranch, err := g.fetchBase(ctx, dir, branch)
	if err != nil {
		return Prepared{}, err
	}
	head, err := g.head(ctx, dir)
	if err != nil {
		return Prepared{}, err
	}
	if base == "" {
		// An empty remote: the first round starts from an empty commit (or
		// from what this clone already holds, if it was pushed nowhere yet).
		if head != "" {
			base = head
		} else if base, err = g.firstCommit(ctx, dir); err != nil {
			return Prepared{}, err
		}
		head = base
	}
	wf, round, attempt := g.leftoverOwner(dir, r)
	ref := AbandonedRef(wf, round, attempt)
	p := Prepared{Base: base}
	if onBranch {
		p.BranchHead = base
	}
	saved, err := g.saveLeftovers(ctx, dir, head, ref, wf, round, attempt)
	if err != nil {
		return Prepared{}, err
	}
	if saved == "" && head != "" && head != base && !g.isAncestor(ctx, dir, head, base) {
		// A clean tree on a commit the branch lacks (killed between commit
		// and push): keep that commit.
		if err := g.setRef(ctx, dir, ref, head, ""); err != nil {
			return Prepared{}, err
		}
		saved = head
	}
	if saved != "" {
		p.Abandoned, p.AbandonedCommit = ref, saved
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "symbolic-ref", "HEAD", "refs/heads/"+branch); err != nil {
		return Prepared{}, fmt.Errorf("check out %s: %w", branch, err)
	}
	if err := g.resetTo(ctx, dir, base); err != nil {
		return Prepared{}, err
	}
	if err := writeMarker(dir, r); err != nil {
		return Prepared{}, err
	}
	return p, nil
}

// leftoverOwner names the attempt whose leftovers a clone may hold: the
// lost attempt (attempt - 1) on a retry, else the attempt the clone's marker
// names, else attempt 0 of this round (found before its first attempt).
func (g *Git) leftoverOwner(dir string, r Round) (string, int, int) {
	if r.Attempt > 1 {
		return r.WorkflowID, r.Round, r.Attempt - 1
	}
	data, err := readGitFile(dir, attemptMarker)
	var m marker
	if err == nil && json.Unmarshal(data, &m) == nil && m.WorkflowID != "" && m.Round > 0 && m.Attempt > 0 {
		return m.WorkflowID, m.Round, m.Attempt
	}
	return r.WorkflowID, r.Round, 0
}

func writeMarker(dir string, r Round) error {
	data, err := json.Marshal(marker{WorkflowID: r.WorkflowID, Round: r.Round, Attempt: r.Attempt})
	if err != nil {
		return err
	}
	if err := writeGitFile(dir, attemptMarker, data); err != nil {
		return fmt.Errorf("record the attempt in the clone: %w", err)
	}
	return nil
}

// The worker's own files under .git are opened through an os.Root on .git
// and without following a final link: a link planted there (after the
// last check) leads nowhere outside .git, and never to the link's target.

func writeGitFile(dir, name string, data []byte) error {
	root, err := os.OpenRoot(filepath.Join(dir, ".git"))
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readGitFile(dir, name string) ([]byte, error) {
	f, err := openGitFile(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// openGitFile opens .git/name for reading: no link followed, and a FIFO or
// device is refused (opened non-blocking, then checked) instead of read.
func openGitFile(dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(filepath.Join(dir, ".git"))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrUnsafeRepo, filepath.Join(dir, ".git", name))
	}
	return f, nil
}

func clearMarker(dir string) error {
	if err := os.Remove(filepath.Join(dir, ".git", attemptMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear the attempt record: %w", err)
	}
	return nil
}

// fetchBase fetches the branch (or, before its first round, the remote's
// default branch) into upstreamRef and returns its commit; "" when the
// remote has neither. The URL is passed on each command and never stored in
// the workspace's .git, where the model could read it.
func (g *Git) fetchBase(ctx context.Context, dir, branch string) (base string, onBranch bool, err error) {
	out, err := g.run(ctx, dir, cmdOpts{}, "ls-remote", "--symref", "--", g.cfg.Remote, "HEAD", "refs/heads/"+branch)
	if err != nil {
		return "", false, fmt.Errorf("list the remote %s: %w", RedactURL(g.cfg.Remote), err)
	}
	branchRef := "refs/heads/" + branch
	hasBranch, defaultRef := false, ""
	for _, line := range strings.Split(out, "\n") {
		left, name, ok := strings.Cut(line, "\t")
		switch {
		case !ok:
		case name == branchRef && !strings.HasPrefix(left, "ref:"):
			hasBranch = true
		case name == "HEAD" && strings.HasPrefix(left, "ref: "):
			defaultRef = strings.TrimPrefix(left, "ref: ")
		}
	}
	source := defaultRef
	if hasBranch {
		source = branchRef
	}
	if source == "" {
		return "", false, nil
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
		"--", g.cfg.Remote, "+"+source+":"+upstreamRef); err != nil {
		var ge *gitError
		if errors.As(err, &ge) && !hasBranch && strings.Contains(ge.output, "couldn't find remote ref") {
			return "", false, nil // an empty default branch
		}
		return "", false, fmt.Errorf("fetch %s from %s: %w", source, RedactURL(g.cfg.Remote), err)
	}
	base, err = g.resolve(ctx, dir, upstreamRef)
	return base, hasBranch, err
}

func (g *Git) isAncestor(ctx context.Context, dir, a, b string) bool {
	_, err := g.run(ctx, dir, cmdOpts{}, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// push sends commit to the branch; only a fast-forward is accepted, which
// is what serialises workers that share no storage.
func (g *Git) push(ctx context.Context, dir, commit, branch string) error {
	out, err := g.run(ctx, dir, cmdOpts{}, "push", "--porcelain", "--no-verify", "--", g.cfg.Remote, commit+":refs/heads/"+branch)
	if err == nil {
		return g.setRef(ctx, dir, upstreamRef, commit, "")
	}
	var ge *gitError
	if errors.As(err, &ge) {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "!\t") {
				return fmt.Errorf("%w by %s: %s", ErrPushRejected, RedactURL(g.cfg.Remote), redactText(strings.TrimSpace(line), g.cfg.Remote))
			}
		}
	}
	return fmt.Errorf("push to %s: %w", RedactURL(g.cfg.Remote), err)
}
