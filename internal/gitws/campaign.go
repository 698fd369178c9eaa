package gitws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A campaign's git steps (the Campaign workflow's PrepareTask and MergeTask
// activities): the worker's own git in a scratch clone the worker owns,
// outside every sandbox, like a round's checkpoint steps. The integration
// branch only ever moves forward, by compare-and-swap on its previous head.

// Refs of a campaign's scratch clone.
const (
	scratchIntegrationRef = "refs/ralph/integration"
	scratchTaskRefPrefix  = "refs/ralph/tasks/"
	scratchOutRef         = "refs/ralph/out"
	// CampaignRefPrefix holds what a campaign keeps besides its branches
	// (merges awaiting approval), on the integration branch's repository.
	CampaignRefPrefix = "refs/ralph/campaigns/"
)

// ErrBaseMissing: the campaign's base branch is not in its repository.
var ErrBaseMissing = errors.New("base branch not found")

// Line is where a campaign's integration branch lives.
type Line struct {
	// URL is the remote (remote mode) or the campaign's bare repository
	// (local mode).
	URL string
	// Branch is the integration branch; Base the branch it starts from (""
	// for the repository's default branch).
	Branch string
	Base   string
}

// TaskBranch is one task's branch and the commit of it to merge.
type TaskBranch struct {
	ID string
	// Repo holds the branch: the remote, or in local mode the task's own
	// workspace, where its loop commits.
	Repo   string
	Branch string
	// Commit is the task loop's last checkpoint, the commit that merges.
	Commit string
	// Go is the task's loop number, for the merge message.
	Go int
	// InWorkspace: Repo is the task's workspace (local mode), which is no
	// repository until the task's first go.
	InWorkspace bool
	// Head is the branch's head when the step fetched it already (Sift),
	// so MergeStack does not fetch it again; "" to fetch.
	Head string
}

// Merge is one task merged onto the stack's tip.
type Merge struct {
	Task   string
	Commit string
	// Already: the integration branch held this task's commit before.
	Already bool
}

// Conflict is a task that did not merge: the paths git left conflicting,
// or (Refused) why its tree was refused or failed to merge without any.
type Conflict struct {
	Index   int
	Paths   []string
	Refused *TaskTreeError
}

// Scratch makes dir an empty repository of the worker's (a fresh one each
// time: whatever an earlier merge's verify command left there never reaches
// a later one).
func (g *Git) Scratch(ctx context.Context, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear the scratch clone %s: %w", dir, err)
	}
	// What `git init --template=` writes, without a git command: the
	// directory is the worker's and was empty a moment ago. Only the
	// directories git needs to see a repository (objects, refs) and the
	// pack directory the cache's packs go in: git makes the others when it
	// writes there, and each mkdir costs (SPEC 41, the queue's cost).
	gitDir := filepath.Join(dir, ".git")
	for _, d := range []string{"objects/pack", "refs"} {
		if err := os.MkdirAll(filepath.Join(gitDir, d), 0o755); err != nil {
			return fmt.Errorf("create the scratch clone %s: %w", dir, err)
		}
	}
	for name, content := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": scratchConfig} {
		if err := os.WriteFile(filepath.Join(gitDir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("initialise the scratch clone: %w", err)
		}
	}
	return nil
}

// scratchConfig is a scratch repository's configuration: git init's.
const scratchConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"

// InitBare creates the bare repository of a local-mode campaign at dir
// unless it exists, reading the worker's attributes (NeutralAttributes).
func (g *Git) InitBare(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return neutralizeAttributes(dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the campaign repository %s: %w", dir, err)
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "init", "-q", "--bare", "--template=", "."); err != nil {
		return fmt.Errorf("initialise the campaign repository: %w", err)
	}
	// Pushes and fetches run no command in it; its own attributes are
	// the worker's all the same.
	return neutralizeAttributes(dir)
}

// fetch copies ref of repo into the scratch ref into and returns its commit;
// "" when repo has no such ref.
func (g *Git) fetch(ctx context.Context, dir, repo, ref, into string) (string, error) {
	if commit, ok := g.prefetched(dir, repo, ref, into); ok {
		return commit, nil // ScratchFrom brought it with the scratch
	}
	out, err := g.run(ctx, dir, cmdOpts{}, "ls-remote", "--", repo, ref)
	if err != nil {
		return "", fmt.Errorf("list %s of %s: %w", ref, RedactURL(repo), err)
	}
	if strings.TrimSpace(out) == "" {
		return "", nil
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
		"--", repo, "+"+ref+":"+into); err != nil {
		return "", fmt.Errorf("fetch %s from %s: %w", ref, RedactURL(repo), err)
	}
	return g.resolve(ctx, dir, into)
}

// defaultBranch is the ref the repository's HEAD names ("" when none).
func (g *Git) defaultBranch(ctx context.Context, dir, repo string) (string, error) {
	out, err := g.run(ctx, dir, cmdOpts{}, "ls-remote", "--symref", "--", repo, "HEAD")
	if err != nil {
		return "", fmt.Errorf("list %s: %w", RedactURL(repo), err)
	}
	for _, line := range strings.Split(out, "\n") {
		left, name, ok := strings.Cut(line, "\t")
		if ok && name == "HEAD" && strings.HasPrefix(left, "ref: ") {
			return strings.TrimPrefix(left, "ref: "), nil
		}
	}
	return "", nil
}

// Integration fetches the integration branch into the scratch clone dir and
// returns its head, creating the branch first (from Base, the default
// branch, or an empty first commit) when the repository lacks it.
func (g *Git) Integration(ctx context.Context, dir string, l Line) (string, error) {
	head, err := g.fetch(ctx, dir, l.URL, "refs/heads/"+l.Branch, scratchIntegrationRef)
	if err != nil || head != "" {
		return head, err
	}
	source := ""
	if l.Base != "" {
		source = "refs/heads/" + l.Base
	} else if source, err = g.defaultBranch(ctx, dir, l.URL); err != nil {
		return "", err
	}
	if source != "" {
		head, err = g.fetch(ctx, dir, l.URL, source, scratchIntegrationRef)
		if err != nil {
			return "", err
		}
	}
	if head == "" && l.Base != "" {
		return "", fmt.Errorf("%w: %q is not a branch of %s", ErrBaseMissing, l.Base, RedactURL(l.URL))
	}
	if head == "" {
		tree, err := g.emptyTree(ctx, dir)
		if err != nil {
			return "", err
		}
		if head, err = g.commitTree(ctx, dir, tree, "ralph: campaign initialised\n"); err != nil {
			return "", err
		}
	}
	if err := g.pushCAS(ctx, dir, l.URL, head, "refs/heads/"+l.Branch, ""); err != nil {
		if !errors.Is(err, ErrPushRejected) {
			return "", err
		}
		// Another attempt created it first: take what it holds.
		return g.fetch(ctx, dir, l.URL, "refs/heads/"+l.Branch, scratchIntegrationRef)
	}
	return head, g.setRef(ctx, dir, scratchIntegrationRef, head, "")
}

// pushCAS points ref of repo at commit only when it still is old ("": only
// when it does not exist); ErrPushRejected otherwise.
func (g *Git) pushCAS(ctx context.Context, dir, repo, commit, ref, old string) error {
	out, err := g.run(ctx, dir, cmdOpts{}, "push", "--porcelain", "--no-verify",
		"--force-with-lease="+ref+":"+old, "--", repo, commit+":"+ref)
	if err == nil {
		return nil
	}
	var ge *gitError
	if errors.As(err, &ge) {
		for _, line := range strings.Split(out+"\n"+ge.output, "\n") {
			if strings.HasPrefix(line, "!\t") || strings.Contains(line, "stale info") || strings.Contains(line, "[rejected]") {
				return fmt.Errorf("%w by %s: %s", ErrPushRejected, RedactURL(repo), redactText(strings.TrimSpace(line), repo))
			}
		}
	}
	return fmt.Errorf("push %s to %s: %w", ref, RedactURL(repo), err)
}

// TaskHead fetches a task's branch into the scratch clone and returns its
// head ("" when the branch does not exist yet).
func (g *Git) TaskHead(ctx context.Context, dir string, t TaskBranch) (string, error) {
	if t.InWorkspace {
		if _, err := os.Lstat(filepath.Join(t.Repo, ".git")); errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
	}
	return g.fetch(ctx, dir, t.Repo, "refs/heads/"+t.Branch, scratchTaskRefPrefix+t.ID)
}

// ScratchRef is the integration branch as a scratch starts with it.
func (l Line) ScratchRef() ScratchRef {
	return ScratchRef{Repo: l.URL, Ref: "refs/heads/" + l.Branch, Into: scratchIntegrationRef}
}

// ScratchRef is the task's branch as a scratch starts with it (false: a
// local-mode task's workspace is no repository yet).
func (t TaskBranch) ScratchRef() (ScratchRef, bool) {
	if t.InWorkspace {
		if _, err := os.Lstat(filepath.Join(t.Repo, ".git")); err != nil {
			return ScratchRef{}, false
		}
	}
	return ScratchRef{Repo: t.Repo, Ref: "refs/heads/" + t.Branch, Into: scratchTaskRefPrefix + t.ID}, true
}

// Publish points the task's branch at commit (a descendant of old, or a new
// branch when old is ""). A task branch on the remote moves by
// compare-and-swap; a local-mode task's branch is its workspace's checked
// out branch, which is reset to commit.
func (g *Git) Publish(ctx context.Context, dir string, t TaskBranch, commit, old string) error {
	if !t.InWorkspace {
		return g.pushCAS(ctx, dir, t.Repo, commit, "refs/heads/"+t.Branch, old)
	}
	if err := g.setRef(ctx, dir, scratchOutRef, commit, ""); err != nil {
		return err
	}
	if err := os.MkdirAll(t.Repo, 0o755); err != nil {
		return fmt.Errorf("create the task's workspace: %w", err)
	}
	if err := g.ensureRepo(ctx, t.Repo); err != nil {
		return err
	}
	if err := g.checkRepo(ctx, t.Repo); err != nil {
		return err
	}
	branch := "refs/heads/" + t.Branch
	if _, err := g.run(ctx, t.Repo, cmdOpts{}, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--update-head-ok",
		"--recurse-submodules=no", "--", dir, "+"+scratchOutRef+":"+branch); err != nil {
		return fmt.Errorf("bring %s into the task's workspace: %w", shortID(commit), err)
	}
	if _, err := g.run(ctx, t.Repo, cmdOpts{}, "symbolic-ref", "HEAD", branch); err != nil {
		return fmt.Errorf("check out %s: %w", t.Branch, err)
	}
	return g.resetTo(ctx, t.Repo, commit)
}

// MergeMessage is the merge commit's message: first line and trailers
// name the campaign and the task, so a merge is found again by its task.
func MergeMessage(campaign string, t TaskBranch) string {
	return fmt.Sprintf("ralph: merge task %s\n\nRalph-Campaign: %s\nRalph-Task: %s\nRalph-Go: %d\n", t.ID, campaign, t.ID, t.Go)
}

// StackFault is a task Sift left out of a stack: its branch is missing or
// no longer holds its loop's last checkpoint (deleted or force-pushed).
type StackFault struct {
	Task   string
	Reason string
}

// Sift sorts a stack's tasks before it merges. First, a task whose commit
// head holds already is merged (an earlier try landed it and its answer was
// lost): whatever its branch became, it is never failed. Then a task whose
// branch is missing or no longer holds its commit is a fault, left out. The
// rest is returned to merge, each with the head its branch was fetched at.
func (g *Git) Sift(ctx context.Context, dir, head string, tasks []TaskBranch) (done []Merge, rest []TaskBranch, faults []StackFault, err error) {
	for _, t := range tasks {
		if t.Commit != "" && g.isAncestor(ctx, dir, t.Commit, head) {
			m, err := g.already(ctx, dir, head, t)
			if err != nil {
				return nil, nil, nil, err
			}
			done = append(done, m)
			continue
		}
		got, err := g.TaskHead(ctx, dir, t)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case t.Commit == "":
			faults = append(faults, StackFault{Task: t.ID, Reason: "no checkpoint commit to merge"})
		case got == "":
			faults = append(faults, StackFault{Task: t.ID, Reason: fmt.Sprintf("its branch %s is missing (deleted?)", t.Branch)})
		case got != t.Commit && !g.isAncestor(ctx, dir, t.Commit, got):
			faults = append(faults, StackFault{Task: t.ID, Reason: fmt.Sprintf(
				"its branch %s is at %s, which no longer holds the loop's last checkpoint %s (force-pushed or reset?)", t.Branch, shortID(got), shortID(t.Commit))})
		default:
			t.Head = got
			rest = append(rest, t)
		}
	}
	return done, rest, faults, nil
}

// already is the merge of t's commit that tip holds: its first-parent merge
// commit, else tip itself (the commit came in another way).
func (g *Git) already(ctx context.Context, dir, tip string, t TaskBranch) (Merge, error) {
	commit, err := g.mergeOf(ctx, dir, tip, t.Commit)
	if err != nil {
		return Merge{}, err
	}
	if commit == "" {
		commit = tip
	}
	return Merge{Task: t.ID, Commit: commit, Already: true}, nil
}

// MergeStack merges each task's commit, in order, onto head with
// --no-ff in the scratch clone dir (the tasks' own commits stay as they
// were) and returns the stack's tip and each merge. A task whose commit the
// tip already holds is done and not merged again (checked first, so a task
// that landed is never failed for what its branch became). On the first task that
// conflicts it stops and returns that conflict (the tip is the merges
// before it); likewise on a task whose merge is refused or fails without
// conflicting paths (Conflict.Refused: its tree passed a workspace bound,
// or git was killed or failed on it), which is the task's fault.
func (g *Git) MergeStack(ctx context.Context, dir, campaign, head string, tasks []TaskBranch) (string, []Merge, *Conflict, error) {
	if err := g.checkTree(ctx, dir, head, "the integration head "+shortID(head)); err != nil {
		return "", nil, nil, err
	}
	tip := head
	var merges []Merge
	for i, t := range tasks {
		early := g.mergedAlready(ctx, dir, tip, t)
		if early.already {
			m, err := g.already(ctx, dir, tip, t)
			if err != nil {
				return "", nil, nil, err
			}
			merges = append(merges, m)
			continue
		}
		got := t.Head
		if got == "" {
			var err error
			if got, err = g.TaskHead(ctx, dir, t); err != nil {
				return "", nil, nil, err
			}
		}
		if got == "" || got != t.Commit && !g.isAncestor(ctx, dir, t.Commit, got) {
			return "", nil, nil, fmt.Errorf("task %s: its branch %s does not hold the loop's last checkpoint %s", t.ID, t.Branch, shortID(t.Commit))
		}
		// The merge is written in the object store alone (merge-tree, then
		// commit-tree with both parents: what `git merge --no-ff` commits);
		// only the stack's final tip is checked out, for the verify.
		what := fmt.Sprintf("the merge of task %s's commit %s onto %s", t.ID, shortID(t.Commit), shortID(tip))
		tree, paths, err := early.tree, early.paths, early.err
		if !early.merged {
			tree, paths, err = g.mergeTree(ctx, dir, tip, t.Commit)
		}
		if err == nil {
			err = g.checkTree(ctx, dir, tree, what)
		}
		if err != nil {
			// The task's tree is refused, or git failed on it: that is the
			// task's, sent back like a conflict; the worker's own failures
			// stay errors.
			var tt *TaskTreeError
			if errors.As(taskTreeError(ctx, t.ID, err), &tt) {
				return tip, merges, &Conflict{Index: i, Refused: tt}, nil
			}
			return "", nil, nil, fmt.Errorf("merge task %s: %w", t.ID, err)
		}
		if len(paths) > 0 {
			return tip, merges, &Conflict{Index: i, Paths: paths}, nil
		}
		if tip, err = g.commitTree(ctx, dir, tree, MergeMessage(campaign, t), tip, t.Commit); err != nil {
			return "", nil, nil, fmt.Errorf("merge task %s: %w", t.ID, err)
		}
		g.inBounds.alias(tree, tip)
		g.wrote.add(tip, tree)
		merges = append(merges, Merge{Task: t.ID, Commit: tip})
	}
	if tip != head {
		g.startStat(ctx, dir, head, tip) // the step asks for it next
		if err := g.checkoutScratch(ctx, dir, tip); err != nil {
			return "", nil, nil, fmt.Errorf("check out the merged tip %s: %w", shortID(tip), err)
		}
	}
	return tip, merges, nil, nil
}

// earlyMerge is what mergedAlready learnt: whether the task's commit is in
// tip's history, and the merge it computed on the way (merged), if any.
type earlyMerge struct {
	already, merged bool
	tree            string
	paths           []string
	err             error
}

// mergedAlready says whether t's commit is in tip's history. When the
// worker wrote tip it knows tip's tree, and when the scratch came with the
// task's branch at that commit it holds its objects: the task's merge is
// computed first, and only a merge that gives tip's tree back asks git
// about the history.
func (g *Git) mergedAlready(ctx context.Context, dir, tip string, t TaskBranch) earlyMerge {
	if t.Commit == "" {
		return earlyMerge{}
	}
	tipTree, ok := g.wrote.tree(tip)
	if ok && !t.InWorkspace {
		// The task's objects are in the scratch only when it came with them.
		head, found := g.peekPrefetched(dir, t.Repo, "refs/heads/"+t.Branch, scratchTaskRefPrefix+t.ID)
		ok = found && head == t.Commit
	}
	if !ok || t.InWorkspace {
		return earlyMerge{already: g.isAncestor(ctx, dir, t.Commit, tip)}
	}
	e := earlyMerge{merged: true}
	e.tree, e.paths, e.err = g.mergeTree(ctx, dir, tip, t.Commit)
	if e.err == nil && len(e.paths) == 0 && e.tree == tipTree {
		e.already = g.isAncestor(ctx, dir, t.Commit, tip)
	}
	return e
}

// mergeTree computes the merge of commit onto base in the object store
// (git merge-tree, the ort strategy `git merge` uses) and returns the tree
// it wrote, conflict markers included, and the conflicting paths.
func (g *Git) mergeTree(ctx context.Context, dir, base, commit string) (string, []string, error) {
	out, err := g.run(ctx, dir, cmdOpts{}, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", base, commit)
	var ge *gitError
	if err != nil && !(errors.As(err, &ge) && ge.exitCode == 1) { // 1: it conflicts, the tree is still written
		return "", nil, fmt.Errorf("compute the merge of %s onto %s: %w", shortID(commit), shortID(base), err)
	}
	fields := strings.Split(out, "\x00")
	if len(fields[0]) < 40 {
		return "", nil, fmt.Errorf("compute the merge of %s onto %s: git merge-tree printed %q", shortID(commit), shortID(base), runesPrefix(out, 200))
	}
	var paths []string
	for _, p := range fields[1:] {
		if p != "" {
			paths = append(paths, p)
		}
	}
	if err != nil && len(paths) == 0 {
		return "", nil, fmt.Errorf("compute the merge of %s onto %s: %w", shortID(commit), shortID(base), err)
	}
	return fields[0], paths, nil
}

// CheckoutHead checks the integration head out in the scratch clone dir
// (within the workspace bounds), for a merge or a verify of the head alone.
func (g *Git) CheckoutHead(ctx context.Context, dir, head string) error {
	if err := g.checkTree(ctx, dir, head, "the integration head "+shortID(head)); err != nil {
		return err
	}
	if err := g.checkoutScratch(ctx, dir, head); err != nil {
		return fmt.Errorf("check out the integration head %s: %w", shortID(head), err)
	}
	return nil
}

// mergeOf finds the first-parent commit of tip that merged commit ("" when
// commit came in another way, e.g. a fast-forward someone pushed).
func (g *Git) mergeOf(ctx context.Context, dir, tip, commit string) (string, error) {
	out, err := g.run(ctx, dir, cmdOpts{}, "rev-list", "--first-parent", "--parents", tip)
	if err != nil {
		return "", fmt.Errorf("walk the integration branch: %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		for _, p := range fields[min(2, len(fields)):] {
			if p == commit || g.isAncestor(ctx, dir, commit, p) {
				return fields[0], nil
			}
		}
	}
	return "", nil
}

// conflicted lists the paths an interrupted merge left unmerged.
func (g *Git) conflicted(ctx context.Context, dir string) ([]string, error) {
	out, err := g.run(ctx, dir, cmdOpts{}, "diff", "--name-only", "--diff-filter=U", "-z")
	if err != nil {
		return nil, fmt.Errorf("list the conflicting paths: %w", err)
	}
	var paths []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// BringUp merges head into the task's commit in the scratch clone, so the
// task's next loop starts from both and its next merge is a fast one. A
// conflict is committed with its markers as they stand (the paths are
// returned), so the loop only has to edit files.
func (g *Git) BringUp(ctx context.Context, dir, campaign, integration, head string, t TaskBranch) (string, []string, error) {
	if _, err := g.TaskHead(ctx, dir, t); err != nil {
		return "", nil, err
	}
	if err := g.checkTree(ctx, dir, t.Commit, fmt.Sprintf("task %s's commit %s", t.ID, shortID(t.Commit))); err != nil {
		return "", nil, taskTreeError(ctx, t.ID, err)
	}
	if g.isAncestor(ctx, dir, head, t.Commit) {
		return t.Commit, nil, nil
	}
	tree, conflicts, err := g.mergeTree(ctx, dir, t.Commit, head)
	if err == nil {
		err = g.checkTree(ctx, dir, tree, fmt.Sprintf("task %s brought onto %s", t.ID, shortID(head)))
	}
	if err != nil {
		return "", nil, taskTreeError(ctx, t.ID, err)
	}
	msg := fmt.Sprintf("ralph: bring task %s onto %s\n\nRalph-Campaign: %s\nRalph-Task: %s\n", t.ID, integration, campaign, t.ID)
	if len(conflicts) == 0 {
		// A clean merge needs no work tree: its commit is what `git merge
		// --no-ff` would write.
		commit, err := g.commitTree(ctx, dir, tree, msg, t.Commit, head)
		return commit, nil, err
	}
	// Conflicts are committed as the work tree holds them after `git
	// merge`, markers and all.
	if _, err := g.run(ctx, dir, cmdOpts{}, "checkout", "-q", "--detach", "--force", t.Commit); err != nil {
		return "", nil, taskTreeError(ctx, t.ID, fmt.Errorf("check out task %s at %s: %w", t.ID, shortID(t.Commit), err))
	}
	_, err = g.run(ctx, dir, cmdOpts{env: g.identity()}, "merge", "-q", "--no-ff", "--no-edit", "-m", msg, head)
	if err == nil {
		commit, err := g.head(ctx, dir)
		return commit, nil, err
	}
	if TreeFault(err) {
		return "", nil, taskTreeError(ctx, t.ID, err)
	}
	paths, perr := g.conflicted(ctx, dir)
	if perr != nil {
		return "", nil, errors.Join(fmt.Errorf("merge %s into task %s: %w", integration, t.ID, err), perr)
	}
	if len(paths) == 0 {
		return "", nil, taskTreeError(ctx, t.ID, fmt.Errorf("merge %s into task %s: %w", integration, t.ID, err))
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "add", "-A", "--", "."); err != nil {
		return "", nil, fmt.Errorf("stage the conflict markers: %w", err)
	}
	msg = fmt.Sprintf("ralph: bring task %s onto %s (conflicts in %s)\n\nRalph-Campaign: %s\nRalph-Task: %s\n",
		t.ID, integration, strings.Join(paths, ", "), campaign, t.ID)
	if _, err := g.run(ctx, dir, cmdOpts{env: g.identity()}, "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return "", nil, fmt.Errorf("commit the conflict markers: %w", err)
	}
	commit, err := g.head(ctx, dir)
	return commit, paths, err
}

// Land moves the integration branch from old to tip (a descendant of old);
// ErrPushRejected when its head is no longer old.
func (g *Git) Land(ctx context.Context, dir string, l Line, tip, old string) error {
	return g.pushCAS(ctx, dir, l.URL, tip, "refs/heads/"+l.Branch, old)
}

// Keep stores commit under ref of the campaign's repository (a verified
// merge awaiting approval), so any worker can land it later.
func (g *Git) Keep(ctx context.Context, dir string, l Line, ref, commit string) error {
	if _, err := g.run(ctx, dir, cmdOpts{}, "push", "--porcelain", "--no-verify", "--force", "--", l.URL, commit+":"+ref); err != nil {
		return fmt.Errorf("keep %s on %s: %w", shortID(commit), ref, err)
	}
	return nil
}

// FetchKept fetches a kept commit back into the scratch clone.
func (g *Git) FetchKept(ctx context.Context, dir string, l Line, ref string) (string, error) {
	return g.fetch(ctx, dir, l.URL, ref, scratchOutRef)
}

// DiffStat is git's --stat summary of what tip changes beyond base.
func (g *Git) DiffStat(ctx context.Context, dir, base, tip string) (string, error) {
	if f := g.startedStat(dir, base, tip); f != nil {
		select {
		case <-f.done:
			return f.out, f.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return g.diffStat(ctx, dir, base, tip)
}

func (g *Git) diffStat(ctx context.Context, dir, base, tip string) (string, error) {
	out, err := g.run(ctx, dir, cmdOpts{}, "diff", "--no-ext-diff", "--no-textconv", "--no-color", "--stat=100", "--no-renames", base, tip, "--")
	if err != nil {
		return "", fmt.Errorf("diff %s..%s: %w", shortID(base), shortID(tip), err)
	}
	return CutChange(strings.TrimRight(out, "\n"), 4000), nil
}

// identity is the author and committer of the worker's own commits.
func (g *Git) identity() []string {
	return []string{
		"GIT_AUTHOR_NAME=" + g.authorName, "GIT_AUTHOR_EMAIL=" + g.authorEmail,
		"GIT_COMMITTER_NAME=" + g.authorName, "GIT_COMMITTER_EMAIL=" + g.authorEmail,
	}
}

func shortID(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// ErrFileMissing: the commit holds no such file.
var ErrFileMissing = errors.New("no such file")

// FileAt returns the content of path (relative to the repository's top) in
// commit of the scratch clone dir (fetched there by Integration), refusing a
// file over limit bytes before reading it.
func (g *Git) FileAt(ctx context.Context, dir, commit, path string, limit int64) ([]byte, error) {
	object := commit + ":" + path
	size, err := g.run(ctx, dir, cmdOpts{}, "cat-file", "-s", "--end-of-options", object)
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) && ge.exitCode == 128 {
			return nil, fmt.Errorf("%w: %s at %s", ErrFileMissing, path, shortID(commit))
		}
		return nil, fmt.Errorf("size of %s at %s: %w", path, shortID(commit), err)
	}
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(size), &n); err != nil {
		return nil, fmt.Errorf("size of %s at %s: %q", path, shortID(commit), size)
	}
	if n > limit {
		return nil, fmt.Errorf("%s at %s is %d bytes, over the limit of %d", path, shortID(commit), n, limit)
	}
	out, err := g.run(ctx, dir, cmdOpts{}, "cat-file", "blob", "--end-of-options", object)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, shortID(commit), err)
	}
	return []byte(out), nil
}

// CheckoutCommit checks commit (fetched into the scratch clone dir) out
// detached, within the tree bounds: a campaign planner's view of the
// integration head. A tree over the bounds is a *TreeTooBigError.
func (g *Git) CheckoutCommit(ctx context.Context, dir, commit, what string) error {
	if err := g.checkTree(ctx, dir, commit, what); err != nil {
		return err
	}
	if err := g.checkoutScratch(ctx, dir, commit); err != nil {
		return fmt.Errorf("check out %s at %s: %w", what, shortID(commit), err)
	}
	return nil
}
