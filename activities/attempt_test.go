package activities

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// Every failure before the session, in either activity, maps the same way:
// a cancel stays a cancel carrying what the earlier attempts spent, typed
// errors pass, anything else is a retryable RoundError carrying it too, so
// a last attempt failing there does not drop the run's usage.
func TestOpeningFailuresMapAlikeInBothActivities(t *testing.T) {
	const ws = "repo"
	cases := []struct {
		name string
		// arrange breaks the opening; it may return a cleanup.
		arrange func(t *testing.T, a *Activities) func()
		// cancel cancels the attempt (as the server does) at its first
		// heartbeat.
		cancel bool
		// errType is the ApplicationError's type; "" wants a CanceledError.
		errType      string
		nonRetryable bool
		// carries: the error carries the earlier attempts' usage.
		carries bool
	}{
		{"the workspace leads outside the root", func(t *testing.T, a *Activities) func() {
			mustSymlink(t, t.TempDir(), filepath.Join(a.cfg.WorkspaceRoot, ws))
			return nil
		}, false, ErrTypeBadRoundInput, true, false},
		{"a file stands where the workspace goes", func(t *testing.T, a *Activities) func() {
			mustWrite(t, filepath.Join(a.cfg.WorkspaceRoot, ws))
			return nil
		}, false, ErrTypeRoundError, false, true},
		{"the lock is held until the attempt is cancelled", func(t *testing.T, a *Activities) func() {
			held, err := a.lockWorkspace(context.Background(), ws, nil)
			if err != nil {
				t.Fatal(err)
			}
			return held.release
		}, true, "", false, true},
		{"the transcript directory cannot be made", func(t *testing.T, a *Activities) func() {
			mustWrite(t, a.TranscriptDir(ws))
			return nil
		}, false, ErrTypeRoundError, false, true},
	}
	lost := usage.Usage{ModelCalls: 3, ToolCalls: 2, PromptTokens: 900, CompletionTokens: 40}
	for _, tc := range cases {
		for _, act := range []struct {
			name  string
			input any
		}{
			{RunRoundName, RoundInput{Objective: "x", Round: 2, MaxRounds: 3, Workspace: ws, MaxHandoffChars: 100}},
			{ReviewCompletionName, ReviewInput{Objective: "x", Round: 2, MaxRounds: 3, Workspace: ws, MaxHandoffChars: 100,
				Report: report.Report{Status: report.StatusComplete, Summary: "Done.", Evidence: []string{"e"}}}},
		} {
			t.Run(tc.name+"/"+act.name, func(t *testing.T) {
				a := newOpeningActivities(t)
				if cleanup := tc.arrange(t, a); cleanup != nil {
					defer cleanup()
				}
				// A bound on a test that would otherwise wait on the lock.
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				ctx, stop := context.WithTimeout(ctx, 30*time.Second)
				defer stop()
				var suite testsuite.WorkflowTestSuite
				env := suite.NewTestActivityEnvironment()
				env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
				env.SetHeartbeatDetails(HeartbeatDetails{Round: 2, Attempt: 1, Usage: lost})
				if tc.cancel {
					env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) {
						cancel(temporal.NewCanceledError())
					})
				}
				a.Register(env)
				_, err := env.ExecuteActivity(act.name, act.input)
				details, ok := openingFailure(t, err, tc.errType, tc.nonRetryable)
				if tc.carries && (!ok || details.Usage != lost || details.SessionID == "") {
					t.Errorf("details = %+v (present %v), want the session's id and the earlier usage %+v", details, ok, lost)
				}
				if files, _ := filepath.Glob(filepath.Join(a.TranscriptDir(ws), "*.jsonl")); len(files) != 0 {
					t.Errorf("a session started: %v", files)
				}
			})
		}
	}
}

// openingFailure checks err's kind (errType "": a cancel) and returns the
// FailureDetails it carries, if any.
func openingFailure(t *testing.T, err error, errType string, nonRetryable bool) (FailureDetails, bool) {
	t.Helper()
	var details FailureDetails
	if errType == "" {
		var canceled *temporal.CanceledError
		if !errors.As(err, &canceled) {
			t.Fatalf("error = %v (%T), want a cancel", err, err)
		}
		return details, canceled.HasDetails() && canceled.Details(&details) == nil
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != errType || appErr.NonRetryable() != nonRetryable {
		t.Fatalf("error = %v, want %s (non-retryable %v)", err, errType, nonRetryable)
	}
	return details, appErr.HasDetails() && appErr.Details(&details) == nil
}

// newOpeningActivities is a worker whose model is never reached: every
// case fails before the session.
func newOpeningActivities(t *testing.T) *Activities {
	t.Helper()
	base := t.TempDir()
	cfg := DefaultConfig()
	cfg.Agent.Model, cfg.Agent.BaseURL = "m", "http://127.0.0.1:1/v1"
	cfg.WorkspaceRoot, cfg.SessionDir = filepath.Join(base, "w"), filepath.Join(base, "s")
	cfg.HeartbeatInterval = 20 * time.Millisecond
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("not a directory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
