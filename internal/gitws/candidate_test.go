package gitws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// Two candidates of round 2 start from the workspace's checkpoint plus a
// person's uncommitted edit, each in its own repository; both are kept on
// refs, the chosen one becomes the workspace and its ref goes.
func TestCandidatesLocal(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	write(t, dir, "person.txt", "edited between rounds\n")
	base, err := g.CommitEdits(ctx, dir, r2, "", "")
	if err != nil || base == p.Base {
		t.Fatalf("commit edits: %s (%v), want a commit past %s", base, err, p.Base)
	}
	cands := filepath.Join(t.TempDir(), "candidates")
	var commits []string
	for k, content := range []string{"first\n", "second\n"} {
		cdir := filepath.Join(cands, string(rune('a'+k)))
		if err := g.StartCandidate(ctx, dir, cdir, base); err != nil {
			t.Fatal(err)
		}
		if !exists(cdir, "person.txt") || !exists(cdir, "one.txt") {
			t.Fatalf("candidate %d does not start from the base", k+1)
		}
		if _, err := os.Stat(filepath.Join(cdir, ".git", "objects", "info", "alternates")); err == nil {
			t.Fatalf("candidate %d borrows the workspace's objects", k+1)
		}
		if cfg, _ := os.ReadFile(filepath.Join(cdir, ".git", "config")); strings.Contains(string(cfg), dir) {
			t.Fatalf("candidate %d's config names the workspace's path:\n%s", k+1, cfg)
		}
		write(t, cdir, "answer.txt", content)
		ref := CandidateRef(r2.WorkflowID, 2, k+1)
		cp, _, err := g.FinishCandidate(ctx, dir, cdir, base, ref, r2, handoff("continue", "candidate"))
		if err != nil {
			t.Fatal(err)
		}
		if cp.Parent != base || cp.Insertions != 1 || testkit.Git(t, dir, "rev-parse", ref) != cp.Commit {
			t.Fatalf("candidate %d: %+v, ref %s", k+1, cp, testkit.Git(t, dir, "rev-parse", ref))
		}
		commits = append(commits, cp.Commit)
	}
	if testkit.Git(t, dir, "rev-parse", "HEAD") != base || exists(dir, "answer.txt") {
		t.Fatal("a candidate touched the workspace")
	}
	chosen := CandidateRef(r2.WorkflowID, 2, 2)
	for range 2 { // adopting again changes nothing
		if err := g.Adopt(ctx, dir, r2, base, commits[1], chosen); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "answer.txt"))
	if testkit.Git(t, dir, "rev-parse", "HEAD") != commits[1] || string(got) != "second\n" {
		t.Fatalf("workspace at %s holding %q, want candidate 2", testkit.Git(t, dir, "rev-parse", "HEAD"), got)
	}
	refs := testkit.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", CandidateRefPrefix)
	if want := CandidateRef(r2.WorkflowID, 2, 1) + " " + commits[0]; refs != want {
		t.Fatalf("candidate refs %q, want only the other one: %q", refs, want)
	}
	if err := g.Adopt(ctx, dir, r2, base, commits[0], CandidateRef(r2.WorkflowID, 2, 1)); !errors.Is(err, ErrWorkspaceMoved) {
		t.Fatalf("adopting a second candidate: %v, want ErrWorkspaceMoved", err)
	}
}

// In remote mode candidates are kept on the remote and the adopted one
// moves the remote branch.
func TestCandidatesRemote(t *testing.T) {
	ctx := context.Background()
	bare, _ := campaignRemote(t)
	g := newGit(t, ModeRemote, bare)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	cdir := startCandidate(t, g, dir, p.Base)
	write(t, cdir, "x.txt", "x\n")
	ref := CandidateRef("wf-1", 1, 1)
	cp, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, ref, round(1, 1), handoff("continue", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if testkit.Git(t, bare, "rev-parse", ref) != cp.Commit {
		t.Fatal("the candidate is not kept on the remote")
	}
	if err := g.Adopt(ctx, dir, round(1, 1), p.Base, cp.Commit, ref); err != nil {
		t.Fatal(err)
	}
	if testkit.Git(t, bare, "rev-parse", Branch("ws")) != cp.Commit {
		t.Fatal("the remote branch did not move to the adopted candidate")
	}
	if out := testkit.Git(t, bare, "for-each-ref", CandidateRefPrefix); out != "" {
		t.Fatalf("the adopted candidate's ref is still on the remote: %s", out)
	}
}

// A candidate that marks its change "-diff" (and sets core.bigFileThreshold
// so low every file would be binary) still counts its 2,000 lines, and the
// reviewer's change holds them; a file made binary with a NUL byte counts
// its bytes, never fewer than its lines.
func TestCandidateHidesNoLines(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	cdir := startCandidate(t, g, dir, p.Base)
	var lines strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&lines, "added line %d\n", i)
	}
	write(t, cdir, ".gitattributes", "* -diff\n")
	write(t, cdir, "big.txt", lines.String())
	testkit.Git(t, cdir, "config", "core.bigFileThreshold", "1")
	cp, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, CandidateRef("wf-1", 2, 1), r2, handoff("continue", "hidden"))
	if err != nil {
		t.Fatal(err)
	}
	if cp.Insertions != 2001 || cp.FilesChanged != 2 {
		t.Errorf("the candidate counts %d inserted lines in %d files, want 2,001 in 2", cp.Insertions, cp.FilesChanged)
	}
	change, err := g.Change(ctx, dir, p.Base, cp.Commit, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(change, "+added line 0\n") || !strings.Contains(change, "+added line 1999\n") || strings.Contains(change, "Binary files") {
		t.Errorf("the reviewer's change does not show the patch:\n%s", CutChange(change, 600))
	}
	// The stat that came with the counts is git diff --stat's, byte for byte.
	if stat, err := g.DiffStat(ctx, dir, p.Base, cp.Commit); err != nil || !strings.Contains(cp.DiffStat, "big.txt        | 2000 +") || cp.DiffStat != stat {
		t.Errorf("the candidate's diff stat (%v):\n%s\ngit diff --stat:\n%s", err, cp.DiffStat, stat)
	}

	// The same lines behind a NUL byte: binary to git, counted by size.
	cdir2 := startCandidate(t, g, dir, p.Base)
	write(t, cdir2, "big.dat", "\x00"+lines.String())
	cp2, _, err := g.FinishCandidate(ctx, dir, cdir2, p.Base, CandidateRef("wf-1", 2, 2), r2, handoff("continue", "binary"))
	if err != nil {
		t.Fatal(err)
	}
	if stat, err := g.DiffStat(ctx, dir, p.Base, cp2.Commit); err != nil || !strings.Contains(cp2.DiffStat, "big.dat | Bin 0 -> ") || cp2.DiffStat != stat {
		t.Errorf("the binary candidate's diff stat (%v):\n%s\ngit diff --stat:\n%s", err, cp2.DiffStat, stat)
	}
	if cp2.Insertions != 1+len(lines.String()) {
		t.Errorf("the NUL-prefixed file counts %d, want its %d bytes", cp2.Insertions, 1+len(lines.String()))
	}
	change, err = g.Change(ctx, dir, p.Base, cp2.Commit, 1<<20)
	if err != nil || !strings.Contains(change, "+added line 1999\n") {
		t.Errorf("the reviewer's change of a NUL-prefixed file (%v):\n%s", err, CutChange(change, 600))
	}
	// Deleting it counts its bytes as deleted; a new binary file its own.
	cdir3 := startCandidate(t, g, dir, cp2.Commit)
	if err := os.Remove(filepath.Join(cdir3, "big.dat")); err != nil {
		t.Fatal(err)
	}
	write(t, cdir3, "small.dat", "\x00abc")
	cp3, _, err := g.FinishCandidate(ctx, dir, cdir3, cp2.Commit, CandidateRef("wf-1", 2, 3), r2, handoff("continue", "deleted"))
	if err != nil {
		t.Fatal(err)
	}
	if cp3.Deletions != 1+len(lines.String()) || cp3.Insertions != 4 || cp3.FilesChanged != 2 {
		t.Errorf("deleting the binary file counts %+v, want %d bytes deleted and 4 inserted in 2 files", cp3, 1+len(lines.String()))
	}
}

// A candidate's clone holds the round's base and nothing else: no object
// of a sibling candidate or of an abandoned attempt, no host path of the
// workspace anywhere in its .git.
func TestCandidateHoldsOnlyItsOwn(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	// A lost attempt left work behind, saved on an abandoned ref.
	write(t, dir, "lost.txt", "the lost attempt's secret\n")
	r2b := r2
	r2b.Attempt = 2
	pb := prepare(t, g, dir, r2b)
	if pb.AbandonedCommit == "" {
		t.Fatal("the lost attempt's leftovers were not saved")
	}
	cands := filepath.Join(t.TempDir(), "candidates")
	sibling := filepath.Join(cands, "1")
	if err := g.StartCandidate(ctx, dir, sibling, p.Base); err != nil {
		t.Fatal(err)
	}
	write(t, sibling, "mine.txt", "sibling's work\n")
	cp1, _, err := g.FinishCandidate(ctx, dir, sibling, p.Base, CandidateRef("wf-1", 2, 1), r2b, handoff("continue", "one"))
	if err != nil {
		t.Fatal(err)
	}
	siblingBlob := testkit.Git(t, dir, "rev-parse", cp1.Commit+":mine.txt")

	cdir := filepath.Join(cands, "2")
	if err := g.StartCandidate(ctx, dir, cdir, p.Base); err != nil {
		t.Fatal(err)
	}
	if testkit.Git(t, cdir, "rev-parse", "HEAD") != p.Base || !exists(cdir, "one.txt") {
		t.Fatal("the candidate does not start at the base")
	}
	for what, id := range map[string]string{"the sibling's commit": cp1.Commit, "the sibling's blob": siblingBlob,
		"the abandoned attempt's commit": pb.AbandonedCommit} {
		cmd := exec.Command("git", "cat-file", "-e", id)
		cmd.Dir = cdir
		if err := cmd.Run(); err == nil {
			t.Errorf("the candidate's repository holds %s %s", what, id)
		}
	}
	if n := testkit.Git(t, cdir, "rev-list", "--all", "--count"); n != "2" {
		t.Errorf("the candidate's repository holds %s commits, want the base's 2", n)
	}
	// Its .git names the workspace's path nowhere (no reflog, origin,
	// FETCH_HEAD or alternates).
	err = filepath.WalkDir(filepath.Join(cdir, ".git"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(dir)) || bytes.Contains(data, []byte(filepath.Base(cands))) {
			t.Errorf("%s names a host path:\n%s", path, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"objects/info/alternates", "logs", "FETCH_HEAD"} {
		if exists(cdir, filepath.Join(".git", rel)) {
			t.Errorf("the candidate's .git holds %s", rel)
		}
	}
	// Its work still comes back to the workspace and can be adopted.
	write(t, cdir, "two.txt", "candidate two\n")
	cp2, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, CandidateRef("wf-1", 2, 2), r2b, handoff("continue", "two"))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Adopt(ctx, dir, r2b, p.Base, cp2.Commit, CandidateRef("wf-1", 2, 2)); err != nil {
		t.Fatal(err)
	}
	assertBytes(t, "the workspace after adopting", filepath.Join(dir, "two.txt"), "candidate two\n")
}

// A candidate's commit is made in the workspace repository, from the
// worker's copy of the candidate's index: five commands (add, write-tree,
// diff-tree, commit-tree, update-ref), where a commit in the candidate's
// own repository and a fetch into the workspace's took nine ("config"
// reading the clone's config, two rev-parse, the fetch with its
// upload-pack and pack-objects). No command runs in the candidate's
// repository: its HEAD stays at the base and it holds no commit of its
// own. The commands are counted by a git on PATH that logs each
// subcommand before running git.
func TestFinishCandidateGitCommands(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	cdir := startCandidate(t, g, dir, p.Base)
	write(t, cdir, "answer.txt", "forty-two\n")
	write(t, cdir, "name with space.txt", "x\n")

	gitCommands := logGitCommands(t)

	ref := CandidateRef(r2.WorkflowID, 2, 1)
	cp, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, ref, r2, handoff("continue", "counted"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := gitCommands()
	want := []string{"add", "write-tree", "diff-tree", "commit-tree", "update-ref"}
	if strings.Join(cmds, " ") != strings.Join(want, " ") {
		t.Errorf("git commands keeping a candidate: %v, want %v", cmds, want)
	}
	if got := testkit.Git(t, dir, "rev-parse", ref); got != cp.Commit || cp.FilesChanged != 2 || testkit.Git(t, dir, "rev-parse", cp.Commit+"^") != p.Base {
		t.Errorf("the workspace keeps %s on %s, the candidate committed %s (%+v)", got, ref, cp.Commit, cp)
	}
	if !strings.Contains(cp.DiffStat, "answer.txt          | 1 +") || !strings.Contains(cp.DiffStat, "2 files changed, 2 insertions(+)") {
		t.Errorf("the candidate's diff stat:\n%s", cp.DiffStat)
	}
	if head := testkit.Git(t, cdir, "rev-parse", "HEAD"); head != p.Base {
		t.Errorf("the candidate's repository moved to %s, want it left at the base %s", head, p.Base)
	}
	if err := exec.Command("git", "-C", cdir, "cat-file", "-e", cp.Commit).Run(); err == nil {
		t.Errorf("the candidate's repository holds the commit %s the worker made in the workspace's", cp.Commit)
	}
	if idx, _ := filepath.Glob(filepath.Join(g.cacheRoot, candidatesDirName, "index-*")); len(idx) != 0 {
		t.Errorf("the worker's copies of candidate indexes outlive the commit: %v", idx)
	}
}

// What a candidate does to its own repository cannot steer the worker's
// commit of its tree: a .git replaced by a link to the workspace's git
// directory (which would let the clone's git read or write the workspace
// repository) changes nothing; the commit holds
// the files as they are, a file rewritten with the same size right after
// the checkout included (git's racily clean entries), and the workspace's
// HEAD and work tree stay where they were.
func TestFinishCandidateIgnoresTheClonesGitDir(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	cdir := startCandidate(t, g, dir, p.Base)
	write(t, cdir, "one.txt", "ROUND 1\n") // it held "round 1\n": the same size
	write(t, cdir, "new.txt", "new\n")
	if err := os.RemoveAll(filepath.Join(cdir, ".git")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, ".git"), filepath.Join(cdir, ".git")); err != nil {
		t.Fatal(err)
	}
	ref := CandidateRef(r2.WorkflowID, 2, 1)
	cp, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, ref, r2, handoff("continue", "tampered"))
	if err != nil {
		t.Fatal(err)
	}
	if got := testkit.Git(t, dir, "ls-tree", "-r", "--name-only", cp.Commit); got != "new.txt\none.txt" {
		t.Errorf("the candidate's commit holds %q, want new.txt and one.txt", got)
	}
	if got := testkit.Git(t, dir, "show", cp.Commit+":one.txt"); got != "ROUND 1" {
		t.Errorf("one.txt in the candidate's commit = %q, want the rewritten ROUND 1", got)
	}
	if head := testkit.Git(t, dir, "rev-parse", "HEAD"); head != p.Base || exists(dir, "new.txt") {
		t.Errorf("the workspace moved to %s or got the candidate's file", head)
	}
	if st := testkit.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("the workspace's index or tree changed:\n%s", st)
	}
}

// logGitCommands puts a git on PATH that logs each command's subcommand
// (after any -c pairs) before running the real git; the returned function
// reads what was logged so far.
func logGitCommands(t *testing.T) func() []string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, logPath := t.TempDir(), filepath.Join(t.TempDir(), "git.log")
	script := "#!/bin/sh\nfor a; do case $a in -c) skip=1;; *) if [ -n \"$skip\" ]; then skip=; else echo \"$a\" >>" + logPath +
		"; break; fi;; esac; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		logged, err := os.ReadFile(logPath)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		return strings.Fields(string(logged))
	}
}

// Given the work tree's id the attempt just took, CommitEdits commits a
// person's edit without staging the work tree again: the commit holds the
// edit and no "add" runs.
func TestCommitEditsReusesTheFingerprint(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	write(t, dir, "person.txt", "edited between rounds\n")
	tree, err := g.WorkTree(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	gitCommands := logGitCommands(t)
	base, err := g.CommitEdits(ctx, dir, r2, "", tree)
	if err != nil {
		t.Fatal(err)
	}
	if cmds := strings.Join(gitCommands(), " "); strings.Contains(cmds, "add") || strings.Contains(cmds, "write-tree") {
		t.Errorf("CommitEdits staged the work tree again: %s", cmds)
	}
	if base == p.Base || testkit.Git(t, dir, "rev-parse", "HEAD") != base || testkit.Git(t, dir, "rev-parse", base+"^{tree}") != tree ||
		testkit.Git(t, dir, "show", base+":person.txt") != "edited between rounds" {
		t.Errorf("CommitEdits made %s (HEAD %s), want a commit of tree %s past %s holding the edit", base,
			testkit.Git(t, dir, "rev-parse", "HEAD"), tree, p.Base)
	}
}

// Adopting a candidate this worker committed runs three commands: one
// update-ref transaction (HEAD's branch from the base to the commit, git
// checking it is still at the base, and the ref dropped), reset and clean
// (its tree was summed when it was committed). Adopting again finds HEAD
// moved already, drops the ref and, the index being at the commit, resets
// nothing: an edit made since stays. The next round's CommitEdits, given HEAD and the work
// tree, reads the adopted commit's tree from memory: no command at all
// when nobody edited. The workspace bounds are on, so a sum would show as
// ls-tree.
func TestAdoptGitCommands(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Mode, cfg.MaxTreeBytes, cfg.MaxTreeFiles = ModeLocal, 1<<30, 100000
	g, err := New(cfg, filepath.Join(t.TempDir(), "empty-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	cdir := startCandidate(t, g, dir, p.Base)
	write(t, cdir, "answer.txt", "forty-two\n")
	ref := CandidateRef(r2.WorkflowID, 2, 1)
	cp, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, ref, r2, handoff("continue", "adopted"))
	if err != nil {
		t.Fatal(err)
	}
	gitCommands := logGitCommands(t)
	for range 2 { // the second time: nothing to move, the ref already gone
		if err := g.Adopt(ctx, dir, r2, p.Base, cp.Commit, ref); err != nil {
			t.Fatal(err)
		}
	}
	if cmds, want := strings.Join(gitCommands(), " "), "update-ref reset clean update-ref rev-parse update-ref diff-index"; cmds != want {
		t.Errorf("git commands adopting a candidate twice: %s, want %s", cmds, want)
	}
	if testkit.Git(t, dir, "rev-parse", "HEAD") != cp.Commit || testkit.Git(t, dir, "for-each-ref", CandidateRefPrefix) != "" {
		t.Fatalf("after adopting: HEAD %s, candidate refs %q", testkit.Git(t, dir, "rev-parse", "HEAD"), testkit.Git(t, dir, "for-each-ref", CandidateRefPrefix))
	}
	assertBytes(t, "the adopted answer", filepath.Join(dir, "answer.txt"), "forty-two\n")

	tree := testkit.Git(t, dir, "rev-parse", "HEAD^{tree}")
	before := len(gitCommands())
	base, err := g.CommitEdits(ctx, dir, round(3, 1), cp.Commit, tree)
	if err != nil || base != cp.Commit {
		t.Fatalf("CommitEdits with nothing edited: %s (%v), want the adopted %s", base, err, cp.Commit)
	}
	if cmds := gitCommands()[before:]; len(cmds) != 0 {
		t.Errorf("CommitEdits with nothing edited ran %v", cmds)
	}
}

// An adoption that stopped after moving HEAD's branch, before its reset,
// is finished by the next attempt: the index and work tree reach the
// commit (not left at the base, where the next round would take the base's
// files for a person's edits). An edit made after a whole adoption stays
// when it is adopted again.
func TestAdoptFinishesAnInterruptedAdoption(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	cdir := startCandidate(t, g, dir, p.Base)
	write(t, cdir, "answer.txt", "forty-two\n")
	ref := CandidateRef(r2.WorkflowID, 2, 1)
	cp, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, ref, r2, handoff("continue", "adopted"))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, dir, "update-ref", "HEAD", cp.Commit, p.Base) // the first attempt's transaction, and no reset
	if err := g.Adopt(ctx, dir, r2, p.Base, cp.Commit, ref); err != nil {
		t.Fatal(err)
	}
	assertBytes(t, "the adopted answer", filepath.Join(dir, "answer.txt"), "forty-two\n")
	if st := testkit.Git(t, dir, "status", "--porcelain"); st != "" || testkit.Git(t, dir, "for-each-ref", CandidateRefPrefix) != "" {
		t.Fatalf("after finishing the adoption: status %q, candidate refs %q", st, testkit.Git(t, dir, "for-each-ref", CandidateRefPrefix))
	}
	write(t, dir, "answer.txt", "a person's edit\n")
	if err := g.Adopt(ctx, dir, r2, p.Base, cp.Commit, ref); err != nil {
		t.Fatal(err)
	}
	assertBytes(t, "a person's edit after the adoption", filepath.Join(dir, "answer.txt"), "a person's edit\n")
}

// A candidate that commits in its own repository hands off its tree: the
// kept commit's parent is the round's base (a fast-forward for the
// adoption), and the candidate's own commits stay in its clone.
func TestFinishCandidateKeepsTheTreeNotTheClonesCommits(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	cdir := startCandidate(t, g, dir, p.Base)
	write(t, cdir, "committed.txt", "committed by the candidate\n")
	testkit.Git(t, cdir, "add", "committed.txt")
	testkit.Git(t, cdir, "-c", "user.name=m", "-c", "user.email=m@x", "commit", "-q", "-m", "the candidate's own commit")
	own := testkit.Git(t, cdir, "rev-parse", "HEAD")
	write(t, cdir, "loose.txt", "not committed\n")
	cp, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, CandidateRef(r2.WorkflowID, 2, 1), r2, handoff("continue", "committed"))
	if err != nil {
		t.Fatal(err)
	}
	if parent := testkit.Git(t, dir, "rev-parse", cp.Commit+"^"); parent != p.Base || cp.FilesChanged != 2 {
		t.Errorf("the kept commit's parent is %s (%+v), want the base %s and both files", parent, cp, p.Base)
	}
	if got := testkit.Git(t, dir, "ls-tree", "--name-only", cp.Commit); !strings.Contains(got, "committed.txt") || !strings.Contains(got, "loose.txt") {
		t.Errorf("the kept commit holds %q", got)
	}
	if err := exec.Command("git", "-C", dir, "cat-file", "-e", own).Run(); err == nil {
		t.Errorf("the workspace got the candidate's own commit %s", own)
	}
}

// startCandidate starts a candidate of dir at base in a new directory and
// returns the directory.
func startCandidate(t *testing.T, g *Git, dir, base string) string {
	t.Helper()
	cdir := filepath.Join(t.TempDir(), "cand")
	if err := g.StartCandidate(context.Background(), dir, cdir, base); err != nil {
		t.Fatal(err)
	}
	return cdir
}
