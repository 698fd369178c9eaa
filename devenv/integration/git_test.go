package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
)

// Markers of the git tests: a lost attempt's file must never reach a later
// session's model.
const (
	lostMarker   = "LOST-ATTEMPT-CONTENT-4be1"
	personMarker = "A-PERSONS-EDIT-90c2"
)

// roundOutputs decodes every completed RunRound of a workflow, in order.
func roundOutputs(t *testing.T, e *env, id string) []activities.RoundOutput {
	t.Helper()
	var outs []activities.RoundOutput
	iter := e.client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatalf("read history of %s: %v", id, err)
		}
		attrs := ev.GetActivityTaskCompletedEventAttributes()
		if attrs == nil {
			continue
		}
		var out activities.RoundOutput
		if err := converter.GetDefaultDataConverter().FromPayloads(attrs.GetResult(), &out); err != nil {
			t.Fatalf("decode a RunRound result: %v", err)
		}
		outs = append(outs, out)
	}
	return outs
}

// commitsWithTrailers lists rev's commits oldest first as
// "<commit> <Ralph-Workflow-Id> <Ralph-Round> <Ralph-Session> <Ralph-Status>",
// skipping commits without a Ralph-Round trailer.
func commitsWithTrailers(t *testing.T, dir, rev string) []string {
	t.Helper()
	out := testkit.Git(t, dir, "log", "--reverse", "--format=%H %(trailers:key=Ralph-Workflow-Id,valueonly,separator=) %(trailers:key=Ralph-Round,valueonly,separator=) %(trailers:key=Ralph-Session,valueonly,separator=) %(trailers:key=Ralph-Status,valueonly,separator=)", rev)
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 5 {
			rows = append(rows, line)
		}
	}
	return rows
}

// writeRounds: every round writes round-<R>.txt; round `last` completes.
func writeRounds(last int) func(tn turn) fakeopenai.Response {
	return func(tn turn) fakeopenai.Response {
		r := tn.Round()
		if tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": fmt.Sprintf("round-%d.txt", r), "content": fmt.Sprintf("round %d\n", r)})
		}
		if r == last {
			return submit(completeArgs(fmt.Sprintf("round %d finished", r), fmt.Sprintf("round-%d.txt exists", r)))
		}
		return submit(continueArgs(fmt.Sprintf("round %d wrote its file", r), "write the next file"))
	}
}

func TestRealStackGitLocalCommitPerRound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(writeRounds(3)), "RALPH_GIT=local")
	e.startWorker()
	id := "git-local-rounds"
	res, err := e.result(e.start(id, `{"objective":"write three files","workspace":"gitlocal"}`))
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v", res)
	}
	dir := filepath.Join(e.root, "gitlocal")
	outs := roundOutputs(t, e, id)
	rows := commitsWithTrailers(t, dir, "HEAD")
	if len(outs) != 3 || len(rows) != 3 {
		t.Fatalf("RunRound results %d, checkpoint commits %d (%v), want 3 each", len(outs), len(rows), rows)
	}
	st := e.status(id)
	for i, out := range outs {
		cp := out.Checkpoint
		if cp == nil {
			t.Fatalf("round %d has no checkpoint: %+v", i+1, out)
		}
		want := fmt.Sprintf("%s %s %d %s %s", cp.Commit, id, i+1, st.Rounds[i].SessionID, out.Report.Status)
		if rows[i] != want || !out.WorkspaceChanged {
			t.Fatalf("round %d: checkpoint %+v changed=%v, commit row %q, want %q", i+1, cp, out.WorkspaceChanged, rows[i], want)
		}
		if i > 0 && cp.Parent != outs[i-1].Checkpoint.Commit {
			t.Fatalf("round %d's parent %s is not round %d's commit", i+1, cp.Parent, i)
		}
		if cp.FilesChanged != 1 || cp.Insertions != 1 {
			t.Fatalf("round %d stats = %+v", i+1, cp)
		}
		subject := testkit.Git(t, dir, "log", "-1", "--format=%s", cp.Commit)
		if !strings.HasPrefix(subject, fmt.Sprintf("ralph: round %d/10 %s: round %d ", i+1, out.Report.Status, i+1)) {
			t.Fatalf("round %d subject = %q", i+1, subject)
		}
	}
	if head := testkit.Git(t, dir, "rev-parse", "HEAD"); head != outs[2].Checkpoint.Commit {
		t.Fatalf("HEAD %s is not the last round's checkpoint %s", head, outs[2].Checkpoint.Commit)
	}
	if who := testkit.Git(t, dir, "log", "-1", "--format=%an <%ae>"); who != "Ralph <ralph@localhost>" {
		t.Fatalf("author = %q", who)
	}
	if st := testkit.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("work tree not clean after the run: %q", st)
	}
	e.noKeyAnywhere(id)
}

func TestRealStackGitLocalKilledAttemptSavedOnAbandonedRef(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() == 0:
			return tool("write_file", map[string]string{"path": "base.txt", "content": "base\n"})
		case tn.Round() == 1:
			return submit(continueArgs("wrote base", "extend it"))
		case tn.Session == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo " + lostMarker + " > lost.txt; " + longCommand})
		case tn.Session == 1:
			return fakeopenai.Text("the lost session must never get here")
		case tn.Step() == 0:
			return tool("list_files", map[string]string{})
		case tn.Step() == 1:
			if strings.Contains(tn.LastToolOutput(), "lost.txt") || !strings.Contains(tn.LastToolOutput(), "base.txt") {
				return fakeopenai.Text("the workspace is not the last checkpoint")
			}
			return tool("write_file", map[string]string{"path": "done.txt", "content": "done\n"})
		default:
			return submit(completeArgs("finished from the checkpoint", "done.txt written"))
		}
	}), "RALPH_GIT=local", "RALPH_HEARTBEAT_TIMEOUT_SECONDS=2")
	first := e.startWorker()
	id := "git-local-crash"
	run := e.start(id, `{"objective":"survive a crash","workspace":"gitcrash"}`)
	dir := filepath.Join(e.root, "gitcrash")
	pids := waitForPIDs(t, filepath.Join(dir, "pids.txt"), 2)
	e.startWorker()
	first.kill(t)
	assertGone(t, pids, "commands of the killed worker")

	res, err := e.result(run)
	if err != nil {
		t.Fatalf("run failed after the crash: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v", res)
	}
	ref := "refs/ralph/abandoned/" + id + "/round-2-attempt-1"
	if got := testkit.Git(t, dir, "show", ref+":lost.txt"); got != lostMarker {
		t.Fatalf("%s:lost.txt = %q", ref, got)
	}
	outs := roundOutputs(t, e, id)
	if len(outs) != 2 || testkit.Git(t, dir, "rev-parse", ref+"^") != outs[0].Checkpoint.Commit {
		t.Fatalf("the abandoned commit does not follow round 1's checkpoint (outputs %+v)", outs)
	}
	if files := testkit.Git(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); files != "base.txt\ndone.txt" {
		t.Fatalf("HEAD holds %q, want base.txt and done.txt only", files)
	}
	if _, err := os.Stat(filepath.Join(dir, "lost.txt")); err == nil {
		t.Fatal("lost.txt is back in the work tree")
	}
	for _, req := range e.model.Requests() {
		lostSession := strings.Contains(string(req.Raw), "echo "+lostMarker)
		if req.Round() == 2 && !lostSession && strings.Contains(string(req.Raw), "lost.txt") {
			t.Fatal("the fresh session's model saw the lost attempt's file")
		}
		if req.Round() == 2 && strings.Contains(string(req.Raw), "workspace is not the last checkpoint") {
			t.Fatal("the fresh session did not start from the last checkpoint")
		}
	}
}

func TestRealStackGitLocalPersonsEditLandsInTheNextCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			return tool("list_files", map[string]string{})
		}
		if tn.Step() == 1 {
			name := "work-1.txt"
			if strings.Contains(tn.LastToolOutput(), "HUMAN.md") {
				name = "work-2.txt"
			}
			return tool("write_file", map[string]string{"path": name, "content": "w\n"})
		}
		return submit(completeArgs("wrote a file", "a work file exists"))
	}), "RALPH_GIT=local")
	e.startWorker()
	if _, err := e.result(e.start("edit-run-1", `{"objective":"write","workspace":"gitedit"}`)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.root, "gitedit")
	first := testkit.Git(t, dir, "rev-parse", "HEAD")
	// Between rounds a person edits the workspace without committing.
	if err := os.WriteFile(filepath.Join(dir, "HUMAN.md"), []byte(personMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.result(e.start("edit-run-2", `{"objective":"write","workspace":"gitedit"}`)); err != nil {
		t.Fatal(err)
	}
	outs := roundOutputs(t, e, "edit-run-2")
	if len(outs) != 1 || outs[0].Checkpoint == nil || outs[0].Checkpoint.Parent != first {
		t.Fatalf("second run's outputs = %+v", outs)
	}
	changed := testkit.Git(t, dir, "diff-tree", "-r", "--name-only", "--no-commit-id", first, "HEAD")
	if !strings.Contains(changed, "HUMAN.md") || !strings.Contains(changed, "work-") {
		t.Fatalf("the next commit changes %q, want the person's HUMAN.md and the round's file", changed)
	}
	if testkit.Git(t, dir, "show", "HEAD:HUMAN.md") != personMarker {
		t.Fatal("the person's edit is not in the commit")
	}
	if id := testkit.Git(t, dir, "log", "-1", "--format=%(trailers:key=Ralph-Workflow-Id,valueonly,separator=)"); id != "edit-run-2" {
		t.Fatalf("HEAD's workflow id = %q", id)
	}
	// The session saw the person's edit in the workspace.
	saw := false
	for _, req := range e.model.Requests() {
		saw = saw || strings.Contains(string(req.Raw), "HUMAN.md")
	}
	if !saw {
		t.Fatal("no session saw HUMAN.md")
	}
}

// bareRepo makes a bare repository whose main branch holds README.
func bareRepo(t *testing.T) (bare, clone string) {
	t.Helper()
	base := t.TempDir()
	bare = filepath.Join(base, "remote.git")
	testkit.Git(t, base, "init", "-q", "--bare", "-b", "main", bare)
	clone = filepath.Join(base, "person")
	testkit.Git(t, base, "clone", "-q", bare, clone)
	if err := os.WriteFile(filepath.Join(clone, "README"), []byte("project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, clone, "add", "README")
	testkit.Git(t, clone, "commit", "-q", "-m", "seed")
	testkit.Git(t, clone, "push", "-q", "origin", "HEAD:main")
	return bare, clone
}

func TestRealStackGitRemoteWorkersWithoutSharedStorage(t *testing.T) {
	t.Parallel()
	bare, _ := bareRepo(t)
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 2 && tn.Session == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo " + lostMarker + " > lost.txt; " + longCommand})
		case tn.Round() == 2 && tn.Session == 1:
			return fakeopenai.Text("the lost session must never get here")
		case tn.Round() == 2 && tn.Step() == 0:
			return tool("list_files", map[string]string{})
		case tn.Round() == 2 && tn.Step() == 1:
			out := tn.LastToolOutput()
			if strings.Contains(out, "lost.txt") || !strings.Contains(out, "round-1.txt") || !strings.Contains(out, "README") {
				return fakeopenai.Text("the workspace is not the branch head")
			}
			return tool("write_file", map[string]string{"path": "round-2.txt", "content": "round 2\n"})
		case tn.Round() == 2:
			return submit(continueArgs("round 2 wrote its file", "finish"))
		default:
			return writeRounds(3)(tn)
		}
	}), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare, "RALPH_HEARTBEAT_TIMEOUT_SECONDS=2")
	// Two hosts: each worker has its own workspace root and session dir.
	hosts := []string{t.TempDir(), t.TempDir()}
	var workers []*process
	for _, h := range hosts {
		workers = append(workers, e.startWorker("RALPH_WORKSPACE_ROOT="+filepath.Join(h, "workspaces"), "RALPH_SESSION_DIR="+filepath.Join(h, "sessions")))
	}
	id := "git-remote-hosts"
	run := e.start(id, `{"objective":"write three files","workspace":"shared"}`)

	// Find the host running round 2's first session and kill it.
	victim := -1
	if err := wait.For(context.Background(), 90*time.Second, 50*time.Millisecond, func(context.Context) error {
		for i, h := range hosts {
			if _, err := os.Stat(filepath.Join(h, "workspaces", "shared", "pids.txt")); err == nil {
				victim = i
			}
		}
		if victim < 0 {
			return errors.New("round 2 did not start on either worker")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pids := waitForPIDs(t, filepath.Join(hosts[victim], "workspaces", "shared", "pids.txt"), 2)
	workers[victim].kill(t)
	assertGone(t, pids, "commands of the killed worker")

	res, err := e.result(run)
	if err != nil {
		t.Fatalf("run failed after the crash: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v", res)
	}
	rows := commitsWithTrailers(t, bare, "main..ralph/shared")
	outs := roundOutputs(t, e, id)
	if len(rows) != 3 || len(outs) != 3 {
		t.Fatalf("branch commits %v, RunRound results %d: want one commit per completed round (3)", rows, len(outs))
	}
	for i, row := range rows {
		if f := strings.Fields(row); f[0] != outs[i].Checkpoint.Commit || f[1] != id || f[2] != fmt.Sprint(i+1) {
			t.Fatalf("branch commit %d = %q, want round %d's checkpoint %s", i+1, row, i+1, outs[i].Checkpoint.Commit)
		}
	}
	if files := testkit.Git(t, bare, "ls-tree", "-r", "--name-only", "ralph/shared"); files != "README\nround-1.txt\nround-2.txt\nround-3.txt" {
		t.Fatalf("the branch holds %q", files)
	}
	if testkit.Git(t, bare, "rev-parse", "ralph/shared") != outs[2].Checkpoint.Commit {
		t.Fatal("the branch head is not the last checkpoint")
	}
	for _, req := range e.model.Requests() {
		if strings.Contains(string(req.Raw), "workspace is not the branch head") {
			t.Fatal("the retried session did not start from the branch head")
		}
	}
	for _, h := range hosts {
		data, _ := os.ReadFile(filepath.Join(h, "workspaces", "shared", ".git", "config"))
		if strings.Contains(string(data), bare) {
			t.Fatal("the remote URL was stored in a workspace repository")
		}
	}
}

func TestRealStackGitRemoteRejectedPushFailsTheRound(t *testing.T) {
	t.Parallel()
	bare, person := bareRepo(t)
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:ralph/race")
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			// Someone else pushes to the branch while the round works.
			testkit.Git(t, person, "commit", "-q", "--allow-empty", "-m", "concurrent push")
			testkit.Git(t, person, "push", "-q", "origin", "HEAD:ralph/race")
			return tool("write_file", map[string]string{"path": "mine.txt", "content": "mine\n"})
		}
		return submit(continueArgs("wrote mine", "more"))
	}), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare)
	e.startWorker()
	_, err := e.result(e.start("git-remote-race", `{"objective":"race","workspace":"race"}`))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != "RoundFailed" {
		t.Fatalf("err = %v, want RoundFailed", err)
	}
	dir := filepath.Join(e.root, "race")
	kept := testkit.Git(t, dir, "rev-parse", "refs/ralph/unpushed/git-remote-race/round-1-attempt-1")
	if !strings.Contains(err.Error(), kept) || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("the failure %q does not name the kept commit %s", err, kept)
	}
	if testkit.Git(t, dir, "show", kept+":mine.txt") != "mine" {
		t.Fatal("the kept commit lacks the round's work")
	}
	if testkit.Git(t, bare, "rev-parse", "ralph/race") != testkit.Git(t, person, "rev-parse", "HEAD") {
		t.Fatal("the rejected push moved the branch")
	}
}
