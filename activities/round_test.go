package activities_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

const testKey = "sk-activity-test-5c2e9a41b7d3"

var validComplete = fakeopenai.ReportArgs{Status: "complete", Summary: "Done.", Evidence: []string{"ls shows notes.txt"}}

type fixture struct {
	t    *testing.T
	srv  *fakeopenai.Server
	cfg  activities.Config
	acts *activities.Activities
	hb   *heartbeatRecorder
	env  *testsuite.TestActivityEnvironment
}

func newFixture(t *testing.T, script fakeopenai.Script, ctx context.Context, tweak func(*activities.Config)) *fixture {
	t.Helper()
	srv := fakeopenai.NewServer(script)
	t.Cleanup(srv.Close)
	base := t.TempDir()
	cfg := activities.DefaultConfig()
	cfg.WorkspaceRoot = filepath.Join(base, "workspaces")
	cfg.SessionDir = filepath.Join(base, "sessions")
	cfg.Agent.BaseURL, cfg.Agent.APIKey, cfg.Agent.Model = srv.BaseURL(), testKey, "fake-model"
	cfg.Agent.CallTimeout = 20 * time.Second
	cfg.Agent.RetryBaseDelay, cfg.Agent.RetryMaxDelay = time.Millisecond, 5*time.Millisecond
	cfg.HeartbeatInterval = 20 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	acts, err := activities.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	hb := &heartbeatRecorder{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{hb}, BackgroundActivityContext: ctx})
	acts.Register(env)
	return &fixture{t: t, srv: srv, cfg: cfg, acts: acts, hb: hb, env: env}
}

func roundInput(workspace string) activities.RoundInput {
	prev := report.Report{Status: "continue", Summary: "Started.", Evidence: []string{}, NextSteps: []string{"Finish."}, Blocker: ""}
	return activities.RoundInput{Objective: "Write notes.txt.", Round: 2, MaxRounds: 5, Workspace: workspace, Previous: &prev, MaxHandoffChars: 16384}
}

func (f *fixture) run(in activities.RoundInput) (activities.RoundOutput, error) {
	f.t.Helper()
	val, err := f.env.ExecuteActivity(activities.RunRoundName, in)
	if err != nil {
		return activities.RoundOutput{}, err
	}
	var out activities.RoundOutput
	if err := val.Get(&out); err != nil {
		f.t.Fatalf("decode output: %v", err)
	}
	return out, nil
}

// transcripts returns the transcript files of a workspace, checking that
// none contains the API key.
func (f *fixture) transcripts(workspace string) []string {
	f.t.Helper()
	files, _ := filepath.Glob(filepath.Join(f.acts.TranscriptDir(workspace), "*.jsonl"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.t.Fatal(err)
		}
		if bytes.Contains(data, []byte(testKey)) {
			f.t.Errorf("transcript %s contains the API key", file)
		}
		rel, _ := filepath.Rel(f.cfg.WorkspaceRoot, file)
		if filepath.IsLocal(rel) {
			f.t.Errorf("transcript %s lies inside the workspace root", file)
		}
	}
	return files
}

func TestRunRoundCompletesWithHeartbeatsAndTranscript(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "notes.txt", "content": "notes\n"})),
		fakeopenai.Tools(fakeopenai.CallJSON("run_command", map[string]any{"command": "sleep 0.3; ls"})),
		fakeopenai.Tools(fakeopenai.SubmitReport(validComplete)),
	}}, context.Background(), nil)
	out, err := f.run(roundInput("team/repo"))
	if err != nil {
		t.Fatalf("RunRound: %v", err)
	}
	if out.Report.Status != "complete" || out.Usage.ModelCalls != 3 || out.Usage.ToolCalls != 3 {
		t.Errorf("output = %+v", out)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(out.SessionID) {
		t.Errorf("session id = %q", out.SessionID)
	}
	if _, err := os.Stat(filepath.Join(f.cfg.WorkspaceRoot, "team", "repo", "notes.txt")); err != nil {
		t.Errorf("workspace file: %v", err)
	}
	// The previous report reached the prompt.
	if prompt := f.srv.Requests()[0].Chat.Messages[1].Content; !strings.Contains(prompt, "Round 2 of 5") || !strings.Contains(prompt, `"Finish."`) {
		t.Errorf("prompt = %q", prompt)
	}

	var sawTool bool
	for _, d := range f.hb.all() {
		if d.Round != 2 || d.Attempt != 1 || d.SessionID != out.SessionID {
			t.Errorf("heartbeat %+v does not name round 2, attempt 1, session %s", d, out.SessionID)
		}
		if d.Step == 2 && d.LastTool == "run_command" {
			sawTool = true
		}
	}
	if !sawTool {
		t.Errorf("no heartbeat during run_command at step 2: %+v", f.hb.all())
	}

	files := f.transcripts("team/repo")
	if len(files) != 1 || filepath.Base(files[0]) != "round-2-attempt-1-"+out.SessionID+".jsonl" {
		t.Fatalf("transcripts = %v", files)
	}
	kinds := transcriptKinds(t, files[0])
	for _, want := range []agent.EventKind{agent.EventSessionStart, agent.EventModelRequest, agent.EventModelResponse, agent.EventToolCall, agent.EventToolResult, agent.EventSessionEnd} {
		if kinds[want] == 0 {
			t.Errorf("transcript has no %s line (kinds %v)", want, kinds)
		}
	}
}

func transcriptKinds(t *testing.T, file string) map[agent.EventKind]int {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	kinds := map[agent.EventKind]int{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e agent.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("transcript line %q: %v", sc.Text(), err)
		}
		kinds[e.Kind]++
	}
	return kinds
}

func TestRunRoundErrorTypes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		script    fakeopenai.Script
		errType   string
		retryable bool
		requests  int
	}{
		{"401 is an ordinary child failure", fakeopenai.Script{Queue: []fakeopenai.Response{
			fakeopenai.Status(http.StatusUnauthorized, "Incorrect API key provided: "+testKey),
		}}, activities.ErrTypeChildFailed, false, 1},
		{"transient errors outlasting retries", fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
			return fakeopenai.HTMLPage(http.StatusServiceUnavailable)
		}}, activities.ErrTypeModelUnavailable, true, 3},
		{"report never valid", fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
			return fakeopenai.Tools(fakeopenai.SubmitReport(fakeopenai.ReportArgs{Status: "complete", Summary: " untrimmed", Evidence: []string{"x"}}))
		}}, activities.ErrTypeChildFailed, false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.script, context.Background(), func(c *activities.Config) { c.Agent.TransientRetries = 2 })
			_, err := f.run(roundInput("repo"))
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Fatalf("error = %v (%T), want an ApplicationError", err, err)
			}
			if appErr.Type() != tc.errType || appErr.NonRetryable() == tc.retryable {
				t.Errorf("error type %q non-retryable %v, want %q non-retryable %v", appErr.Type(), appErr.NonRetryable(), tc.errType, !tc.retryable)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error leaks the API key: %v", err)
			}
			var details activities.FailureDetails
			if err := appErr.Details(&details); err != nil || details.SessionID == "" {
				t.Errorf("details = %+v, %v", details, err)
			}
			if n := len(f.srv.Requests()); n != tc.requests {
				t.Errorf("%d model requests, want %d", n, tc.requests)
			}
			if files := f.transcripts("repo"); len(files) != 1 {
				t.Errorf("transcripts = %v, want one", files)
			}
		})
	}
}

func TestRunRoundRejectsBadInput(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{}, context.Background(), nil)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(f.cfg.WorkspaceRoot, "link")); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{"../escape", "/etc", ".", "a/../../b", "", "link/sub"} {
		_, err := f.run(roundInput(ws))
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeBadRoundInput || !appErr.NonRetryable() {
			t.Errorf("workspace %q: error = %v, want non-retryable %s", ws, err, activities.ErrTypeBadRoundInput)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a directory was created outside the root: %v", entries)
	}
	if n := len(f.srv.Requests()); n != 0 {
		t.Errorf("%d model requests for bad input", n)
	}
}

func TestRunRoundCancelStopsCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.CallJSON("run_command", map[string]any{"command": "sleep 300 & echo $! > sleep.pid; wait"})),
	}}, ctx, nil)
	pidFile := filepath.Join(f.cfg.WorkspaceRoot, "repo", "sleep.pid")
	// The pid the command printed may be a sandbox's own numbering: find
	// the process from outside while it runs.
	hostPID := make(chan int, 1)
	go func() {
		defer close(hostPID)
		for ctx.Err() == nil {
			if data, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(data), "\n") {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
					if host, err := proc.HostPID(pid, filepath.Dir(pidFile)); err == nil {
						hostPID <- host
					}
				}
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	started := time.Now()
	_, err := f.run(roundInput("repo"))
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("error = %v, want a cancellation", err)
	}
	if d := time.Since(started); d > 30*time.Second {
		t.Errorf("cancel took %s", d)
	}
	pid, ok := <-hostPID
	if !ok {
		t.Fatalf("the sleep's process was not found while it ran")
	}
	if proc.WaitGone(context.Background(), 10*time.Second, pid) != nil {
		t.Fatalf("sleep %d survived the cancel", pid)
	}
	if files := f.transcripts("repo"); len(files) != 1 {
		t.Errorf("transcripts = %v", files)
	}
}

func TestResolveLimits(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{}, context.Background(), func(c *activities.Config) { c.Limits.MaxRounds = 7 })
	val, err := f.env.ExecuteLocalActivity(f.acts.ResolveLimits)
	if err != nil {
		t.Fatal(err)
	}
	var got activities.Limits
	// Every worker since SPEC 39 records that its campaigns share budgets
	// (and since SPEC 41 that it adopts candidates locally).
	want := f.cfg.Limits
	want.CampaignShares, want.CampaignEvidence, want.CampaignHeldApart, want.CampaignQueueApart = true, true, true, true
	want.CampaignTaskFaults, want.CampaignHeadRed, want.CampaignGitBound, want.CampaignNoDrain = true, true, true, true
	want.CampaignVerifyTimes, want.CampaignGitHeartbeat, want.CampaignDropLanes, want.CandidateAdoptLocal = true, true, true, true
	if err := val.Get(&got); err != nil || !reflect.DeepEqual(got, want) || got.MaxRounds != 7 {
		t.Errorf("limits = %+v, %v; want %+v", got, err, want)
	}
}

func TestNewRejectsSessionDirInsideWorkspaceRoot(t *testing.T) {
	cfg := activities.DefaultConfig()
	base := t.TempDir()
	cfg.Agent.Model = "m"
	cfg.WorkspaceRoot = base
	cfg.SessionDir = filepath.Join(base, "sessions")
	if _, err := activities.New(cfg); err == nil || !strings.Contains(err.Error(), "must not contain one another") {
		t.Errorf("New = %v", err)
	}
	cfg.SessionDir = filepath.Join(t.TempDir(), "s")
	cfg.Agent.Model = ""
	if _, err := activities.New(cfg); err == nil || !strings.Contains(err.Error(), "model") {
		t.Errorf("New without a model = %v", err)
	}
}

// heartbeatRecorder sees every RecordHeartbeat call (the listener of the
// test environment only sees throttled ones).
type heartbeatRecorder struct {
	interceptor.WorkerInterceptorBase
	mu      sync.Mutex
	details []activities.HeartbeatDetails
}

func (r *heartbeatRecorder) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &heartbeatInbound{root: r}
	i.Next = next
	return i
}

func (r *heartbeatRecorder) all() []activities.HeartbeatDetails {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]activities.HeartbeatDetails(nil), r.details...)
}

type heartbeatInbound struct {
	interceptor.ActivityInboundInterceptorBase
	root *heartbeatRecorder
}

func (i *heartbeatInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	o := &heartbeatOutbound{root: i.root}
	o.Next = outbound
	return i.Next.Init(o)
}

type heartbeatOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	root *heartbeatRecorder
}

func (o *heartbeatOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	for _, d := range details {
		if hd, ok := d.(activities.HeartbeatDetails); ok {
			o.root.mu.Lock()
			o.root.details = append(o.root.details, hd)
			o.root.mu.Unlock()
		}
	}
	o.Next.RecordHeartbeat(ctx, details...)
}

// A retried attempt counts what the lost attempts spent, as their last
// heartbeat recorded it, so the run's usage includes every attempt.
func TestRetriedAttemptCountsEarlierAttemptsUsage(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Tools(fakeopenai.SubmitReport(validComplete))}}, context.Background(), nil)
	lost := usage.Usage{ModelCalls: 4, ToolCalls: 6, PromptTokens: 5000, CompletionTokens: 300}
	f.env.SetHeartbeatDetails(activities.HeartbeatDetails{Round: 2, Attempt: 1, Usage: lost})
	out, err := f.run(roundInput("retried"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Usage.ModelCalls != lost.ModelCalls+1 || out.Usage.PromptTokens <= lost.PromptTokens || out.Usage.ToolCalls != lost.ToolCalls+1 {
		t.Fatalf("usage = %+v, want the lost attempt's %+v plus this attempt's", out.Usage, lost)
	}
}

// A deferred round returns (no error) with its usage and model, writes no
// checkpoint, and in git mode the next session of the round (attempt 1
// again) finds what the deferred session wrote.
func TestRunRoundDeferredKeepsTheWorkspace(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "wip.txt", "content": "half\n"})),
		fakeopenai.RateLimited("75"),
		fakeopenai.Tools(fakeopenai.CallJSON("read_file", map[string]string{"path": "wip.txt"})),
		fakeopenai.Tools(fakeopenai.SubmitReport(validComplete)),
	}}, context.Background(), func(c *activities.Config) { c.Git.Mode = "local" })
	in := roundInput("deferred")
	in.Deferrable = true
	out, err := f.run(in)
	if err != nil {
		t.Fatalf("a deferred round failed: %v", err)
	}
	if out.Deferred == nil || out.Deferred.Reason != activities.DeferRateLimited || out.Deferred.RetryAfterSeconds != 75 ||
		out.Usage.ModelCalls != 1 || out.Model != "fake-model" || out.Checkpoint != nil || out.FirstRequestTokens == 0 {
		t.Fatalf("output = %+v (deferred %+v)", out, out.Deferred)
	}
	out, err = f.run(in)
	if err != nil || out.Deferred != nil || out.Report.Status != "complete" || out.Checkpoint == nil {
		t.Fatalf("the round's next session: %+v, %v", out, err)
	}
	// The read_file result the model got is what the deferred session wrote.
	reqs := f.srv.Requests()
	last := reqs[len(reqs)-1].Chat.Messages
	if got := last[len(last)-1].Content; !strings.Contains(got, "half") {
		t.Fatalf("the next session read %q, want the deferred session's wip.txt", got)
	}
}
