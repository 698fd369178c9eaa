package gitws

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// The commit the worker writes itself is the one `git commit-tree` writes
// for the same tree, parents, message, ident and time: the same id.
func TestCommitObjectIsGitsOwn(t *testing.T) {
	dir := t.TempDir()
	testkit.Git(t, dir, "init", "-q", "--template=", ".")
	tree := testkit.Git(t, dir, "write-tree")
	one := gitCommitTree(t, dir, tree, nil, "first\n", "1700000000 +0000")
	two := gitCommitTree(t, dir, tree, []string{one}, "second\n", "1700000001 +0000")
	for _, c := range []struct {
		parents []string
		msg     string
		when    time.Time
	}{
		{nil, "root\n", time.Unix(1700000100, 0).In(time.FixedZone("", 5*3600+1800))},
		{[]string{one}, "ralph: merge task a\n\nRalph-Campaign: c\nRalph-Task: a\n", time.Unix(1700000200, 0).In(time.FixedZone("", -7*3600))},
		{[]string{one, two}, "no newline at the end", time.Unix(1700000300, 0).UTC()},
	} {
		body := commitObject(tree, c.parents, "Ralph Worker", "ralph@example.com", c.when, c.msg)
		sum := sha1.Sum(append([]byte("commit "+strconv.Itoa(len(body))+"\x00"), body...))
		want := gitCommitTree(t, dir, tree, c.parents, c.msg, strconv.FormatInt(c.when.Unix(), 10)+" "+c.when.Format("-0700"))
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("commit of %v at %s: id %s, git's %s\nours:\n%s\ngit's:\n%s", c.parents, c.when, got, want, body,
				testkit.Git(t, dir, "cat-file", "commit", want))
		}
	}
}

func gitCommitTree(t *testing.T, dir, tree string, parents []string, msg, date string) string {
	t.Helper()
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	cmd := exec.Command("git", append(args, "-F", "-")...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(msg)
	cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_NAME=Ralph Worker", "GIT_AUTHOR_EMAIL=ralph@example.com",
		"GIT_COMMITTER_NAME=Ralph Worker", "GIT_COMMITTER_EMAIL=ralph@example.com", "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git commit-tree: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// A merge in a scratch from the cache writes its commit without a git
// command; git reads it as a sound commit of both parents, the push lands
// it, and an ident git would rewrite is left to git.
func TestAScratchsMergeCommitIsWrittenInProcess(t *testing.T) {
	ctx := context.Background()
	m := newRemoteMerge(t, map[string]string{"a.txt": "a\n"})
	g, bare, line, head, tb, ref := m.g, m.bare, m.line, m.head, m.task, m.ref

	var mu sync.Mutex
	var ran []string
	stop := Trace(func(c TracedCommand) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, strings.Join(c.Args, " "))
	})
	defer stop()
	scratch := filepath.Join(t.TempDir(), "scratch")
	if err := g.ScratchFrom(ctx, scratch, bare, []ScratchRef{line.ScratchRef(), ref}); err != nil {
		t.Fatal(err)
	}
	tip, merges, conflict, err := g.MergeStack(ctx, scratch, "c", head, []TaskBranch{tb})
	if err != nil || conflict != nil || len(merges) != 1 || merges[0].Commit != tip {
		t.Fatalf("MergeStack: tip %s merges %+v conflict %+v err %v", tip, merges, conflict, err)
	}
	mu.Lock()
	for _, c := range ran {
		if strings.Contains(c, "commit-tree") {
			t.Errorf("git wrote the merge commit (%s): the worker writes it in a scratch of its own", c)
		}
	}
	mu.Unlock()
	testkit.Git(t, scratch, "fsck", "--strict", "--no-dangling", tip)
	if typ := testkit.Git(t, scratch, "cat-file", "-t", tip); typ != "commit" {
		t.Fatalf("the merge is a %s", typ)
	}
	if p := testkit.Git(t, scratch, "log", "-1", "--format=%P|%an <%ae>|%cn <%ce>", tip); p != head+" "+tb.Commit+"|"+
		g.authorName+" <"+g.authorEmail+">|"+g.authorName+" <"+g.authorEmail+">" {
		t.Fatalf("the merge's parents and idents: %q", p)
	}
	if msg := testkit.Git(t, scratch, "log", "-1", "--format=%B", tip); msg+"\n" != strings.TrimRight(MergeMessage("c", tb), "\n")+"\n" {
		t.Fatalf("the merge's message %q, want %q", msg, MergeMessage("c", tb))
	}
	if err := g.Land(ctx, scratch, line, tip, head); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, bare, "fsck", "--strict", "--no-dangling")
	if got := testkit.Git(t, bare, "rev-parse", line.Branch); got != tip {
		t.Fatalf("the remote's integration branch is at %s, want %s", got, tip)
	}

	// An author git would trim (a trailing dot) is git's to write.
	g.authorName = "Ralph W."
	if _, ok, _ := g.writeCommit(scratch, strings.Repeat("0", 40), "m\n", nil); ok {
		t.Fatal("an ident git rewrites was written in-process")
	}
	g.authorName = "Ralph W"
	if _, ok, _ := g.writeCommit(filepath.Join(t.TempDir(), "not-a-scratch"), strings.Repeat("0", 40), "m\n", nil); ok {
		t.Fatal("a repository that is not the worker's scratch was written in-process")
	}
}

// The merge step's diff stat runs beside the tip's checkout: DiffStat then
// answers with what that git command printed (the same text as one run
// after the checkout), runs no diff of its own, and ForgetScratch waits
// for it.
func TestTheMergesDiffStatRunsBesideTheCheckout(t *testing.T) {
	ctx := context.Background()
	m := newRemoteMerge(t, map[string]string{"a.txt": "a\nb\n", "README": "changed\n"})
	g, bare, line, head, tb, ref := m.g, m.bare, m.line, m.head, m.task, m.ref
	scratch := filepath.Join(t.TempDir(), "scratch")
	if err := g.ScratchFrom(ctx, scratch, bare, []ScratchRef{line.ScratchRef(), ref}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var diffs []time.Time
	var checkoutEnd time.Time
	stop := Trace(func(c TracedCommand) {
		mu.Lock()
		defer mu.Unlock()
		switch c.Args[0] {
		case "diff":
			diffs = append(diffs, time.Now())
		case "checkout":
			checkoutEnd = time.Now()
		}
	})
	tip, _, conflict, err := g.MergeStack(ctx, scratch, "c", head, []TaskBranch{tb})
	if err != nil || conflict != nil {
		t.Fatalf("MergeStack: %v %+v", err, conflict)
	}
	stat, err := g.DiffStat(ctx, scratch, head, tip)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n, end := len(diffs), checkoutEnd
	mu.Unlock()
	if n != 1 || end.IsZero() {
		t.Fatalf("%d diff commands and a checkout at %v, want one diff beside the checkout", n, end)
	}
	want, err := g.diffStat(ctx, scratch, head, tip)
	if err != nil || stat != want || !strings.Contains(stat, "2 files changed") || !strings.Contains(stat, "a.txt") {
		t.Fatalf("diff stat %q, want %q (%v)", stat, want, err)
	}
	if _, err := os.Stat(filepath.Join(scratch, "a.txt")); err != nil {
		t.Fatalf("the tip is not checked out: %v", err)
	}
	g.ForgetScratch(scratch)
	if f := g.startedStat(scratch, head, tip); f != nil {
		t.Fatal("a forgotten scratch still holds a diff stat")
	}
}

// remoteMerge is a remote whose integration branch is at main, with a task
// branch one commit past it, and the Git that merges them.
type remoteMerge struct {
	g          *Git
	bare, head string
	line       Line
	task       TaskBranch
	ref        ScratchRef
}

// newRemoteMerge makes a remoteMerge whose task commit writes edits.
func newRemoteMerge(t *testing.T, edits map[string]string) remoteMerge {
	t.Helper()
	bare, person := campaignRemote(t)
	m := remoteMerge{g: newGit(t, ModeRemote, bare), bare: bare, line: Line{URL: bare, Branch: "integration"}}
	m.head = testkit.Git(t, bare, "rev-parse", "main")
	testkit.Git(t, bare, "branch", m.line.Branch, m.head)
	m.task = TaskBranch{ID: "a", Repo: bare, Branch: "tasks/a", Go: 1}
	m.task.Commit = taskCommit(t, person, m.task.Branch, m.head, edits)
	m.ref, _ = m.task.ScratchRef()
	return m
}
