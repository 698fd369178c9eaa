package gitws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// campaignRemote is a bare repository whose main holds README, and a
// person's clone of it.
func campaignRemote(t *testing.T) (bare, person string) {
	t.Helper()
	base := t.TempDir()
	bare = filepath.Join(base, "remote.git")
	testkit.Git(t, base, "init", "-q", "--bare", "-b", "main", bare)
	person = filepath.Join(base, "person")
	testkit.Git(t, base, "clone", "-q", bare, person)
	commitAs(t, person, "person", "README", "project\n")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:main")
	return bare, person
}

// taskCommit pushes a commit writing files onto the task branch (as a
// task's loop would) and returns it.
func taskCommit(t *testing.T, person, branch, from string, files map[string]string) string {
	t.Helper()
	testkit.Git(t, person, "fetch", "-q", "origin")
	testkit.Git(t, person, "checkout", "-q", "--detach", from)
	for rel, content := range files {
		write(t, person, rel, content)
	}
	testkit.Git(t, person, "add", "-A")
	testkit.Git(t, person, "-c", "user.name=loop", "-c", "user.email=loop@localhost", "commit", "-q", "-m", "task work on "+branch)
	commit := testkit.Git(t, person, "rev-parse", "HEAD")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return commit
}

func TestCampaignMergeQueueSteps(t *testing.T) {
	ctx := context.Background()
	bare, person := campaignRemote(t)
	g := newGit(t, ModeRemote, bare)
	scratch := filepath.Join(t.TempDir(), "scratch")
	line := Line{URL: bare, Branch: "ralph/campaigns/c/integration"}
	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	head, err := g.Integration(ctx, scratch, line)
	if err != nil {
		t.Fatal(err)
	}
	if main := testkit.Git(t, bare, "rev-parse", "main"); head != main || testkit.Git(t, bare, "rev-parse", line.Branch) != main {
		t.Fatalf("integration head %s, want main %s on the remote", head, main)
	}

	// Two tasks start at the head and write the same file differently.
	tasks := map[string]TaskBranch{}
	for _, id := range []string{"one", "two"} {
		tb := TaskBranch{ID: id, Repo: bare, Branch: "ralph/campaigns/c/tasks/" + id, Go: 1}
		if err := g.Publish(ctx, scratch, tb, head, ""); err != nil {
			t.Fatal(err)
		}
		tb.Commit = taskCommit(t, person, tb.Branch, head, map[string]string{"shared.txt": "from " + id + "\n", id + ".txt": id + "\n"})
		tasks[id] = tb
	}
	tip, merges, conflict, err := g.MergeStack(ctx, scratch, "c", head, []TaskBranch{tasks["one"], tasks["two"]})
	if err != nil {
		t.Fatal(err)
	}
	if conflict == nil || conflict.Index != 1 || fmt.Sprint(conflict.Paths) != "[shared.txt]" || len(merges) != 1 {
		t.Fatalf("conflict %+v after merges %+v, want two conflicting in shared.txt", conflict, merges)
	}
	// A stale compare-and-swap is refused; the right one lands.
	if err := g.Land(ctx, scratch, line, tip, tasks["one"].Commit); !errors.Is(err, ErrPushRejected) {
		t.Fatalf("landing on a stale head: %v, want ErrPushRejected", err)
	}
	if err := g.Land(ctx, scratch, line, tip, head); err != nil {
		t.Fatal(err)
	}
	msg := testkit.Git(t, bare, "log", "-1", "--format=%B", line.Branch)
	if !strings.HasPrefix(msg, "ralph: merge task one\n") || !strings.Contains(msg, "Ralph-Campaign: c\nRalph-Task: one\n") {
		t.Fatalf("merge message %q", msg)
	}
	if parents := testkit.Git(t, bare, "log", "-1", "--format=%P", line.Branch); parents != head+" "+tasks["one"].Commit {
		t.Fatalf("merge parents %q, want the old head and the task's own commit", parents)
	}

	// Merging one again finds its merge: nothing new, the same commit.
	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	now, err := g.Integration(ctx, scratch, line)
	if err != nil {
		t.Fatal(err)
	}
	again, merges, conflict, err := g.MergeStack(ctx, scratch, "c", now, []TaskBranch{tasks["one"]})
	if err != nil || conflict != nil || again != now || len(merges) != 1 || !merges[0].Already || merges[0].Commit != tip {
		t.Fatalf("second merge of one: tip %s merges %+v conflict %+v err %v; want the landed merge %s", again, merges, conflict, err, tip)
	}

	// Two is brought up to the head: the conflict is committed with its
	// markers on the task branch, a descendant of both.
	up, paths, err := g.BringUp(ctx, scratch, "c", line.Branch, now, tasks["two"])
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Publish(ctx, scratch, tasks["two"], up, tasks["two"].Commit); err != nil {
		t.Fatal(err)
	}
	shared := testkit.Git(t, bare, "show", tasks["two"].Branch+":shared.txt")
	if fmt.Sprint(paths) != "[shared.txt]" || !strings.Contains(shared, "<<<<<<<") || !strings.Contains(shared, "from one") || !strings.Contains(shared, "from two") {
		t.Fatalf("brought up with conflicts %v; shared.txt:\n%s", paths, shared)
	}
	for _, ancestor := range []string{now, tasks["two"].Commit} {
		testkit.Git(t, bare, "merge-base", "--is-ancestor", ancestor, tasks["two"].Branch)
	}
}

func TestCampaignLocalTaskWorkspace(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	g := newGit(t, ModeLocal, "")
	repo := filepath.Join(root, "campaigns", "c", "integration.git")
	if err := g.InitBare(ctx, repo); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(root, "campaigns", "c", "merge")
	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	line := Line{URL: repo, Branch: "ralph/campaigns/c/integration"}
	head, err := g.Integration(ctx, scratch, line)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "campaigns", "c", "tasks", "a")
	tb := TaskBranch{ID: "a", Repo: ws, Branch: "ralph/campaigns/c/tasks/a", Go: 1, InWorkspace: true}
	if got, err := g.TaskHead(ctx, scratch, tb); got != "" || err != nil {
		t.Fatalf("a task workspace not made yet: head %q, %v", got, err)
	}
	if err := g.Publish(ctx, scratch, tb, head, ""); err != nil {
		t.Fatal(err)
	}
	if got := testkit.Git(t, ws, "symbolic-ref", "HEAD"); got != "refs/heads/"+tb.Branch {
		t.Fatalf("the task's workspace is on %s", got)
	}
	// The loop commits in its workspace; the merge fetches from there.
	write(t, ws, "a.txt", "a\n")
	testkit.Git(t, ws, "add", "a.txt")
	testkit.Git(t, ws, "-c", "user.name=loop", "-c", "user.email=loop@localhost", "commit", "-q", "-m", "a")
	tb.Commit = testkit.Git(t, ws, "rev-parse", "HEAD")
	tip, _, conflict, err := g.MergeStack(ctx, scratch, "c", head, []TaskBranch{tb})
	if err != nil || conflict != nil {
		t.Fatalf("merge: %v %+v", err, conflict)
	}
	if err := g.Land(ctx, scratch, line, tip, head); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(scratch, "a.txt")); err != nil {
		t.Fatalf("the merged tree lacks a.txt: %v", err)
	}
	if got := testkit.Git(t, repo, "rev-parse", line.Branch); got != tip {
		t.Fatalf("integration at %s, want %s", got, tip)
	}
}

// TestFileAtReadsATasksFileAtTheIntegrationHead: a tasks file committed on
// the base is read from the scratch clone at the integration head, whole;
// a missing file is ErrFileMissing and a file over the limit is refused
// before it is read.
func TestFileAtReadsATasksFileAtTheIntegrationHead(t *testing.T) {
	ctx := context.Background()
	bare, person := campaignRemote(t)
	tasks := "- [ ] a: " + strings.Repeat("objective ", 400) + "\n- [ ] b: second\n  after: a\n"
	commitAs(t, person, "person", "plan/tasks.md", tasks)
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:main")
	g := newGit(t, ModeRemote, bare)
	scratch := filepath.Join(t.TempDir(), "scratch")
	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	head, err := g.Integration(ctx, scratch, Line{URL: bare, Branch: "ralph/campaigns/c/integration", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.FileAt(ctx, scratch, head, "plan/tasks.md", 1<<20)
	if err != nil || string(got) != tasks {
		t.Fatalf("read %d bytes (%v), want the %d committed", len(got), err, len(tasks))
	}
	if _, err := g.FileAt(ctx, scratch, head, "plan/none.md", 1<<20); !errors.Is(err, ErrFileMissing) {
		t.Fatalf("a missing file: err = %v", err)
	}
	if _, err := g.FileAt(ctx, scratch, head, "plan/tasks.md", 100); err == nil || !strings.Contains(err.Error(), "over the limit of 100") {
		t.Fatalf("a file over the limit: err = %v", err)
	}
}
