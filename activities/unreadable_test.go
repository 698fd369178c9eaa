package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/readable"
)

// walkRootEnv names the tree the test binary, started again as an
// unprivileged uid, walks as the worker does (see TestMain).
const walkRootEnv = "RALPH_TEST_UNPRIVILEGED_WALK"

// unprivilegedUID is the uid the walking process runs as (the sandbox's default).
const unprivilegedUID = 65534

func TestMain(m *testing.M) {
	if root := os.Getenv(walkRootEnv); root != "" {
		os.Exit(walkAsWorker(root, os.Stdout))
	}
	os.Exit(m.Run())
}

// mappedFailure is how a round reports a failed step to Temporal.
type mappedFailure struct {
	Type         string
	NonRetryable bool
	Message      string
}

func mapFailure(err error) mappedFailure {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return mappedFailure{Message: fmt.Sprintf("not an application error: %v", err)}
	}
	return mappedFailure{Type: appErr.Type(), NonRetryable: appErr.NonRetryable(), Message: appErr.Message()}
}

// walkAsWorker fingerprints root as a round does and writes what the round
// step and the session would report, as JSON: {"step": ..., "session": ...},
// or {} when the walk succeeded.
func walkAsWorker(root string, out io.Writer) int {
	_, err := gitws.FilesFingerprint(context.Background(), root)
	got := map[string]mappedFailure{}
	if err != nil {
		w := &workspaceRound{round: gitws.Round{Round: 3}}
		got["step"] = mapFailure(w.stepError(context.Background(), err, FailureDetails{}))
		got["session"] = mapFailure((&Activities{}).roundError(context.Background(), err, 3, FailureDetails{}))
	}
	if err := json.NewEncoder(out).Encode(got); err != nil {
		return 1
	}
	return 0
}

// A walk error that names a directory fails the round without retries, in
// the workspace steps and in the session alike, naming the path.
func TestUnreadableDirectoryFailsTheRoundNonRetryably(t *testing.T) {
	err := fmt.Errorf("snapshot the protected paths: %w", readable.Unreadable("/ws/team/secret", syscall.EACCES))
	w := &workspaceRound{round: gitws.Round{Round: 4}}
	for name, got := range map[string]error{
		"step":    w.stepError(context.Background(), err, FailureDetails{SessionID: "s"}),
		"session": (&Activities{}).roundError(context.Background(), err, 4, FailureDetails{SessionID: "s"}),
	} {
		m := mapFailure(got)
		if m.Type != ErrTypeChildFailed || !m.NonRetryable || !strings.Contains(m.Message, "/ws/team/secret") {
			t.Errorf("%s: %+v, want a non-retryable %s naming /ws/team/secret", name, m, ErrTypeChildFailed)
		}
	}
}

// For real: a worker that is not root walks a workspace where a command
// left a 0111 directory (its own: made readable, walk succeeds) and one
// where a directory belongs to someone else with mode 0700 (cannot be made
// readable: the round fails non-retryably naming it).
func TestUnprivilegedWalkMakesReadableOrFailsNamingThePath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test starts the walk as uid 65534 and must run as root (as CI does)")
	}
	base := t.TempDir()
	bin := filepath.Join(base, "activities.test")
	copyExecutable(t, os.Args[0], bin)
	chown := func(path string, mode os.FileMode, uid int) {
		t.Helper()
		if err := os.Chown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	chown(filepath.Dir(base), 0o755, 0) // t.TempDir's parent is private to root too
	chown(base, 0o755, 0)

	own := filepath.Join(base, "own")
	hidden := filepath.Join(own, "sub")
	mustMkdirFile(t, hidden, "f")
	chown(own, 0o755, unprivilegedUID)
	chown(hidden, 0o111, unprivilegedUID)
	if got := walkAs(t, bin, own); len(got) != 0 {
		t.Errorf("walk of a tree the worker owns = %+v, want success", got)
	}
	if fi, err := os.Stat(hidden); err != nil || fi.Mode().Perm() != 0o511 {
		t.Errorf("the hidden directory is %v (%v), want 0511 (u+rx added)", fi.Mode().Perm(), err)
	}

	foreign := filepath.Join(base, "foreign")
	locked := filepath.Join(foreign, "locked")
	mustMkdirFile(t, locked, "f")
	chown(foreign, 0o755, unprivilegedUID)
	chown(locked, 0o700, 0)
	want := mappedFailure{Type: ErrTypeChildFailed, NonRetryable: true}
	for name, m := range walkAs(t, bin, foreign) {
		if m.Type != want.Type || m.NonRetryable != want.NonRetryable || !strings.Contains(m.Message, locked) {
			t.Errorf("%s: %+v, want a non-retryable %s naming %s", name, m, want.Type, locked)
		}
	}
	if got := walkAs(t, bin, foreign); len(got) != 2 {
		t.Errorf("failures = %+v, want the step's and the session's", got)
	}
}

func walkAs(t *testing.T, bin, root string) map[string]mappedFailure {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = []string{walkRootEnv + "=" + root}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("walk as uid %d: %v (%s)", unprivilegedUID, err, out)
	}
	got := map[string]mappedFailure{}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("walk output %q: %v", out, err)
	}
	return got
}

func mustMkdirFile(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyExecutable copies the test binary where uid 65534 may run it (the
// build directory is private to root).
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
