package gitws

import (
	"context"
	"errors"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bareRemote makes a bare repository whose default branch main holds one
// commit with README.
func bareRemote(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	bare := filepath.Join(base, "remote.git")
	testkit.Git(t, base, "init", "-q", "--bare", "-b", "main", bare)
	seed := filepath.Join(base, "seed")
	testkit.Git(t, base, "clone", "-q", bare, seed)
	write(t, seed, "README", "project\n")
	testkit.Git(t, seed, "add", "README")
	testkit.Git(t, seed, "commit", "-q", "-m", "seed")
	testkit.Git(t, seed, "push", "-q", "origin", "HEAD:main")
	return bare
}

func TestRemoteRoundsMoveTheBranchAcrossWorkers(t *testing.T) {
	bare := bareRemote(t)
	main := testkit.Git(t, bare, "rev-parse", "main")
	a, b := newGit(t, ModeRemote, bare), newGit(t, ModeRemote, bare)
	dirA, dirB := workspace(t, "ws"), workspace(t, "ws")

	// Round 1 on worker A: the branch is created from main.
	p1 := prepare(t, a, dirA, round(1, 1))
	if p1.Base != main || !exists(dirA, "README") {
		t.Fatalf("round 1 did not start from main: %+v", p1)
	}
	write(t, dirA, "one.txt", "1\n")
	cp1 := checkpoint(t, a, dirA, p1, round(1, 1), handoff("continue", "one"))
	if got := testkit.Git(t, bare, "rev-parse", "ralph/ws"); got != cp1.Commit {
		t.Fatalf("remote branch = %s, want round 1's %s", got, cp1.Commit)
	}
	if cp1.Parent != main {
		t.Fatalf("round 1's parent = %s, want main %s", cp1.Parent, main)
	}

	// Round 2 on worker B, a fresh clone on another root.
	p2 := prepare(t, b, dirB, round(2, 1))
	if p2.Base != cp1.Commit || !exists(dirB, "one.txt") {
		t.Fatalf("round 2 on B did not start from round 1: %+v", p2)
	}
	if b := testkit.Git(t, dirB, "symbolic-ref", "HEAD"); b != "refs/heads/ralph/ws" {
		t.Fatalf("B's HEAD = %s", b)
	}
	write(t, dirB, "two.txt", "2\n")
	cp2 := checkpoint(t, b, dirB, p2, round(2, 1), handoff("continue", "two"))

	// Round 3 back on A: a fetch into the existing clone.
	p3 := prepare(t, a, dirA, round(3, 1))
	if p3.Base != cp2.Commit || !exists(dirA, "two.txt") || p3.Abandoned != "" {
		t.Fatalf("round 3 on A did not fetch round 2: %+v", p3)
	}
	cp3 := checkpoint(t, a, dirA, p3, round(3, 1), handoff("complete", "nothing to add"))
	if cp3.Commit != cp2.Commit {
		t.Fatalf("an unchanged round moved the branch: %+v", cp3)
	}
	if n := testkit.Git(t, bare, "rev-list", "--count", "main..ralph/ws"); n != "2" {
		t.Fatalf("branch holds %s round commits, want 2", n)
	}
	if testkit.Git(t, bare, "rev-parse", "main") != main {
		t.Fatal("the default branch moved")
	}
	// The URL is never stored in the workspace's repository.
	for _, dir := range []string{dirA, dirB} {
		data, _ := os.ReadFile(filepath.Join(dir, ".git", "config"))
		if strings.Contains(string(data), bare) {
			t.Fatalf("%s/.git/config names the remote:\n%s", dir, data)
		}
	}
}

func TestRemoteEmptyRepositoryStartsFromAnEmptyCommit(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "empty.git")
	testkit.Git(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	g := newGit(t, ModeRemote, bare)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	if p.Base == "" || testkit.Git(t, dir, "ls-tree", "HEAD") != "" {
		t.Fatalf("prepared = %+v", p)
	}
	write(t, dir, "f", "x\n")
	cp := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "f"))
	if testkit.Git(t, bare, "rev-parse", "ralph/ws") != cp.Commit || testkit.Git(t, bare, "rev-parse", "ralph/ws^") != p.Base {
		t.Fatal("the branch does not hold the empty first commit and round 1")
	}
}

func TestRemotePushRejectedByAConcurrentPush(t *testing.T) {
	bare := bareRemote(t)
	a, b := newGit(t, ModeRemote, bare), newGit(t, ModeRemote, bare)
	dirA, dirB := workspace(t, "ws"), workspace(t, "ws")
	pa := prepare(t, a, dirA, round(1, 1))
	pb := prepare(t, b, dirB, Round{WorkflowID: "other-run", Workspace: "ws", Round: 1, MaxRounds: 5, Attempt: 1})
	write(t, dirA, "a.txt", "a\n")
	write(t, dirB, "b.txt", "b\n")
	cpA := checkpoint(t, a, dirA, pa, round(1, 1), handoff("continue", "a"))

	rb := Round{WorkflowID: "other-run", Workspace: "ws", Round: 1, MaxRounds: 5, Attempt: 1}
	cpB, _, err := b.Checkpoint(context.Background(), dirB, pb, rb, handoff("continue", "b"))
	if !errors.Is(err, ErrPushRejected) {
		t.Fatalf("the second push returned %v, want ErrPushRejected", err)
	}
	if cpB.Commit == "" || !strings.Contains(err.Error(), cpB.Commit) {
		t.Fatalf("the message %q does not name the local commit %s", err, cpB.Commit)
	}
	kept := "refs/ralph/unpushed/other-run/round-1-attempt-1"
	if !strings.Contains(err.Error(), kept) || testkit.Git(t, dirB, "rev-parse", kept) != cpB.Commit {
		t.Fatalf("the rejected commit is not kept on %s: %v", kept, err)
	}
	if testkit.Git(t, bare, "rev-parse", "ralph/ws") != cpA.Commit {
		t.Fatal("the rejected push changed the branch")
	}
}

func TestRemoteLeftoversOfALostAttemptAreSavedInTheClone(t *testing.T) {
	bare := bareRemote(t)
	a, b := newGit(t, ModeRemote, bare), newGit(t, ModeRemote, bare)
	dirA, dirB := workspace(t, "ws"), workspace(t, "ws")

	// Worker A dies in round 2, attempt 1, leaving a file; worker B runs
	// attempt 2 and round 3.
	prepare(t, a, dirA, round(2, 1))
	write(t, dirA, "lost.txt", "half\n")
	p := prepare(t, b, dirB, round(2, 2))
	if exists(dirB, "lost.txt") {
		t.Fatal("B sees A's leftovers")
	}
	write(t, dirB, "done.txt", "d\n")
	cp := checkpoint(t, b, dirB, p, round(2, 2), handoff("continue", "done"))

	// A comes back for round 3: its leftovers go to the ref of the attempt
	// that left them, and it starts from the branch.
	p3 := prepare(t, a, dirA, round(3, 1))
	want := "refs/ralph/abandoned/wf-1/round-2-attempt-1"
	if p3.Abandoned != want || p3.Base != cp.Commit {
		t.Fatalf("prepared = %+v, want leftovers on %s and base %s", p3, want, cp.Commit)
	}
	if testkit.Git(t, dirA, "show", want+":lost.txt") != "half" || exists(dirA, "lost.txt") || !exists(dirA, "done.txt") {
		t.Fatal("A's leftovers were not saved or the tree not reset to the branch")
	}
}

func TestRemoteURLCredentialsNeverShow(t *testing.T) {
	secretURL := "https://ralph-user:s3cr3t-t0ken@127.0.0.1:1/repo.git?access_token=q-s3cr3t"
	g := newGit(t, ModeRemote, secretURL)
	dir := workspace(t, "ws")
	_, err := g.Prepare(context.Background(), dir, round(1, 1))
	if err == nil {
		t.Fatal("a fetch from a closed port succeeded")
	}
	for _, secret := range []string{"s3cr3t-t0ken", "q-s3cr3t", "ralph-user"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error shows %q: %v", secret, err)
		}
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1/repo.git") {
		t.Fatalf("the error does not say which remote failed: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{secretURL, "https://REDACTED@127.0.0.1:1/repo.git?REDACTED"},
		{"https://example.com/r.git", "https://example.com/r.git"},
		{"ssh://git@example.com/r.git", "ssh://REDACTED@example.com/r.git"},
		{"git@example.com:team/r.git", "REDACTED@example.com:team/r.git"},
		{"/srv/git/r.git", "/srv/git/r.git"},
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := redactText("fatal: unable to access 'https://u:p@h/x/': refused", ""); strings.Contains(got, "u:p") {
		t.Errorf("redactText kept credentials: %q", got)
	}
	cfg := Config{Mode: ModeRemote, Remote: "-uhttps://u:tok@h/x", Author: DefaultAuthor}
	if err := cfg.Validate(); err == nil || strings.Contains(err.Error(), "tok") {
		t.Fatalf("validate = %v", err)
	}
}

func TestRemoteBadWorkspaceName(t *testing.T) {
	g := newGit(t, ModeRemote, bareRemote(t))
	dir := workspace(t, "ws")
	_, err := g.Prepare(context.Background(), dir, Round{WorkflowID: "w", Workspace: "bad..name", Round: 1, MaxRounds: 1, Attempt: 1})
	if !errors.Is(err, ErrBadWorkspaceName) {
		t.Fatalf("err = %v", err)
	}
}

// The worker's own git configuration applies to its steps (here a URL
// rewrite given the way CI systems pass credentials and settings).
func TestRemoteUsesTheWorkersGitConfiguration(t *testing.T) {
	bare := bareRemote(t)
	alias := "https://git.example.invalid/team/repo.git"
	// The worker's own ~/.gitconfig; the environment is allowlisted, so
	// git configuration passed in GIT_CONFIG_* variables does not reach it.
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[url \""+bare+"\"]\n\tinsteadOf = "+alias+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newGit(t, ModeRemote, alias)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, "f.txt", "x\n")
	cp := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "f"))
	if testkit.Git(t, bare, "rev-parse", "ralph/ws") != cp.Commit {
		t.Fatal("the push did not go through the worker's URL rewrite")
	}
}

// A remote that accepts the connection and never answers: a cancel kills
// the waiting git (its connection closes) and the step returns the cancel.
func TestCancelKillsAHangingGit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted, closed := make(chan struct{}), make(chan struct{})
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		close(accepted)
		defer conn.Close()
		_, _ = io.Copy(io.Discard, conn) // returns when git's end closes
		close(closed)
	}()
	g := newGit(t, ModeRemote, "git://"+ln.Addr().String()+"/repo.git")
	dir := workspace(t, "ws")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := g.Prepare(ctx, dir, round(1, 1))
		errc <- err
	}()
	// Cancel once git is connected and hanging, however long that takes.
	select {
	case err := <-errc:
		t.Fatalf("prepare returned before the cancel: %v", err)
	case <-accepted:
	case <-time.After(time.Minute):
		t.Fatal("git never connected to the hanging server")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("prepare = %v, want the cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("prepare did not return after the cancel")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the git process still holds its connection after the cancel")
	}
}
