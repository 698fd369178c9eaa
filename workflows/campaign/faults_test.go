package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/runes"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// loops plays task loops that take minutes[task] (1 unless named) and
// complete, recording each go's start time and the report it began from.
type loops struct {
	mu      sync.Mutex
	minutes map[string]int
	begin   time.Time
	started map[string]time.Duration // by the go's workflow id
	back    map[string]*report.Report
}

func newLoops(env *testsuite.TestWorkflowEnvironment, minutes map[string]int) *loops {
	l := &loops{minutes: minutes, started: map[string]time.Duration{}, back: map[string]*report.Report{}}
	onLoop(env, l.child)
	return l
}

func (l *loops) child(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, start *workflows.TaskStart) (*workflows.Result, error) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	task := strings.Split(id, "/")[1]
	l.mu.Lock()
	if l.begin.IsZero() {
		l.begin = workflow.Now(ctx)
	}
	l.started[id], l.back[id] = workflow.Now(ctx).Sub(l.begin), start.PreviousReport
	minutes := max(l.minutes[task], 1)
	l.mu.Unlock()
	if err := workflow.Sleep(ctx, time.Duration(minutes)*time.Minute); err != nil {
		return nil, err
	}
	return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Checkpoint: &activities.Checkpoint{Commit: id + "@1"}}, nil
}

// notifications records the campaign's notification events.
func notifications(env *testsuite.TestWorkflowEnvironment, mu *sync.Mutex, events *[]activities.NotifyInput) {
	onNotify(env, func(in activities.NotifyInput) {
		mu.Lock()
		defer mu.Unlock()
		*events = append(*events, in)
	})
}

func statusAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, at time.Duration, into *CampaignStatus) {
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.StatusQueryName)
		if err == nil {
			err = v.Get(into)
		}
		if err != nil {
			t.Error(err)
		}
	}, at)
}

// TestOneBadBranchInABatchOfFour (SPEC 39, "one task's fault is one
// task's"): while z's merge takes ten minutes the four other loops end and
// queue, and merge as one batch; c's branch was deleted. With CampaignTaskFaults c alone goes back (one merge attempt,
// its next go told what was wrong) and a, b and d land from that same
// step; c lands on its second go. A campaign recorded before the flag asks
// for no faults: the step fails and every task of the batch fails with it.
func TestOneBadBranchInABatchOfFour(t *testing.T) {
	for _, faults := range []bool{true, false} {
		t.Run(fmt.Sprintf("taskFaults=%v", faults), func(t *testing.T) {
			limits := queueApartLimits()
			limits.CampaignTaskFaults = faults
			env := newCampaignEnv(limits)
			l := newLoops(env, map[string]int{"z": 1, "a": 2, "b": 2, "c": 2, "d": 2})
			var mu sync.Mutex
			var calls [][]string
			merge := func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
				mu.Lock()
				defer mu.Unlock()
				var ids []string
				out := activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: fmt.Sprintf("head-%d", len(calls)+1)}
				for _, task := range in.Tasks {
					ids = append(ids, fmt.Sprintf("%s@%d", task.ID, task.Go))
				}
				for _, task := range in.Tasks {
					switch {
					case task.ID != "c" || task.Go > 1:
						out.Merged = append(out.Merged, activities.MergedTask{ID: task.ID, Commit: "m-" + task.ID})
					case !in.TaskFaults:
						calls = append(calls, ids)
						return activities.MergeTaskOutput{}, temporal.NewNonRetryableApplicationError(
							"task c: its branch ralph/campaigns/camp/tasks/c does not hold the loop's last checkpoint", activities.ErrTypeCampaignGit, nil)
					default:
						out.Faults = append(out.Faults, activities.TaskFault{ID: "c", Reason: "its branch ralph/campaigns/camp/tasks/c is missing (deleted?)"})
					}
				}
				calls = append(calls, ids)
				return out, nil
			}
			onMerge(env, merge)
			env.OnActivity(activities.MergeTaskName, mock.Anything, mock.Anything).After(10 * time.Minute).Return(merge)
			in := `{"tasks":[{"id":"z","objective":"z"},{"id":"a","objective":"a"},{"id":"b","objective":"b"},{"id":"c","objective":"c"},{"id":"d","objective":"d"}],` +
				`"verifyCommand":"check","maxParallel":5,"mergeBatch":4}`
			res := runCampaign(t, env, in)
			phases := map[string]string{}
			for _, task := range res.Tasks {
				phases[task.ID] = task.Phase + " " + task.MergeCommit
			}
			t.Logf("merge steps %v; result %s %v", calls, res.Status, phases)
			if len(calls) < 2 || fmt.Sprint(calls[0]) != "[z@1]" || len(calls[1]) != 4 || !slices.Contains(calls[1], "c@1") {
				t.Fatalf("merge steps %v, want z's, then one of the four tasks", calls)
			}
			if !faults {
				for _, task := range res.Tasks[1:] {
					if task.Phase != TaskFailed || !strings.Contains(task.LastFailure, "task c: its branch") {
						t.Fatalf("before CampaignTaskFaults: %+v, want every task failed on c's branch", res.Tasks)
					}
				}
				return
			}
			if res.Status != CampaignComplete || len(calls) != 3 || fmt.Sprint(calls[2]) != "[c@2]" ||
				fmt.Sprint(phases) != "map[a:merged m-a b:merged m-b c:merged m-c d:merged m-d z:merged m-z]" {
				t.Fatalf("merge steps %v; result %+v", calls, res)
			}
			back := l.back["camp/c/2"]
			if back == nil || !strings.Contains(back.Summary, "(attempt 1 of 3)") || !strings.Contains(back.Summary, "ralph/campaigns/camp/tasks/c is missing") {
				t.Fatalf("c's second go began from %+v", back)
			}
			for _, id := range []string{"camp/a/2", "camp/b/2", "camp/d/2", "camp/z/2"} {
				if _, again := l.started[id]; again {
					t.Fatalf("%s ran: a task beside the faulted one went back (%v)", id, l.started)
				}
			}
		})
	}
}

// redHead plays an integration head that fails the verify command on its
// own until fixed: every merge onto it is red, and so is the head alone.
type redHead struct {
	mu           sync.Mutex
	red          bool
	output       string
	headVerifies int
	merges       []string
}

func (h *redHead) merge(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := &report.Verification{Command: in.VerifyCommand, Output: "ok"}
	if h.red {
		v.ExitCode, v.Output = 2, h.output
	}
	out := activities.MergeTaskOutput{Head: fmt.Sprintf("head-%d", len(h.merges)), Verification: v}
	if in.VerifyHead {
		h.headVerifies++
		out.Outcome, out.Tip = activities.MergeVerified, out.Head
		if h.red {
			out.Outcome = activities.MergeRed
		}
		return out, nil
	}
	if h.red {
		out.Outcome = activities.MergeRed
		return out, nil
	}
	for _, task := range in.Tasks {
		h.merges = append(h.merges, task.ID)
		out.Merged = append(out.Merged, activities.MergedTask{ID: task.ID, Commit: "m-" + task.ID})
	}
	out.Outcome, out.Head = activities.MergeLanded, fmt.Sprintf("head-%d", len(h.merges))
	return out, nil
}

// TestRedHeadPausesTheQueue (SPEC 39, "a red head is nobody's task"): a's
// merge fails the verify command and so does the integration head alone:
// the queue pauses (phase paused, pauseReason head-red, the verify's output
// in pauseOutput cut at its start, a paused notification), a goes back to
// the queue's front with no merge attempt charged, and loops go on (c
// starts while paused; b's finished loop waits in the queue). resume while
// the head is still red checks it again and stays paused (notified again);
// resume after it turned green lands a, then b and c, on their first go.
func TestRedHeadPausesTheQueue(t *testing.T) {
	limits := queueApartLimits()
	limits.CampaignHeadRed, limits.CampaignEvidence = true, true
	limits.NotifyEvents = []string{EventPaused, EventReturned}
	env := newCampaignEnv(limits)
	l := newLoops(env, map[string]int{"a": 1, "b": 30, "c": 30})
	h := &redHead{red: true, output: strings.Repeat("compiling module\n", 200) + "FAIL: TestHead (broken on the integration branch)"}
	onMerge(env, h.merge)
	var mu sync.Mutex
	var events []activities.NotifyInput
	notifications(env, &mu, &events)
	var paused, stillRed CampaignStatus
	var aPaused TaskStatus
	statusAt(t, env, 40*time.Minute, &paused)
	env.RegisterDelayedCallback(func() { aPaused = campaignTask(t, env, "a") }, 40*time.Minute)
	first := sendUpdate(env, 45*time.Minute, workflows.UpdateResume)
	statusAt(t, env, 50*time.Minute, &stillRed)
	env.RegisterDelayedCallback(func() {
		h.mu.Lock()
		h.red = false // someone fixed the integration branch
		h.mu.Unlock()
	}, 60*time.Minute)
	second := sendUpdate(env, 61*time.Minute, workflows.UpdateResume)
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"},{"id":"c","objective":"c"}],"verifyCommand":"check","maxParallel":1}`
	res := runCampaign(t, env, in)
	t.Logf("paused: %s %s, %d chars of output, counts %v; loops started %v; head verifies %d; merges %v; %d events",
		paused.Phase, paused.PauseReason, len(paused.PauseOutput), paused.Counts, l.started, h.headVerifies, h.merges, len(events))
	wantOutput := runes.Suffix(h.output, 2000)
	if paused.Phase != workflows.PhasePaused || paused.PauseReason != PauseHeadRed || paused.PauseOutput != wantOutput ||
		len([]rune(paused.PauseOutput)) != 2000 {
		t.Fatalf("status while paused: phase %s, reason %q, output %d chars", paused.Phase, paused.PauseReason, len(paused.PauseOutput))
	}
	if aPaused.Phase != TaskQueued || aPaused.MergeAttempts != 0 || aPaused.LastFailure != "" || paused.Counts[TaskQueued] != 2 || paused.Counts[TaskRunning] != 1 {
		t.Fatalf("while paused: a %+v, counts %v", aPaused, paused.Counts)
	}
	// The head's verify is a verify of the queue, naming no task.
	last := paused.Verifies[len(paused.Verifies)-1]
	if paused.VerifyCount != 2 || paused.VerifyFailed != 2 || len(last.Tasks) != 0 || last.ExitCode != 2 {
		t.Fatalf("verifies while paused: %d (%d failed), last %+v", paused.VerifyCount, paused.VerifyFailed, last)
	}
	// Loops go on: c started at 31 minutes, with the queue paused since 1.
	if l.started["camp/c"] != 31*time.Minute {
		t.Fatalf("loops started %v: c should start while the queue is paused", l.started)
	}
	if first.rejected != nil || first.failed != nil || stillRed.Phase != workflows.PhasePaused || stillRed.PauseReason != PauseHeadRed {
		t.Fatalf("resume on a red head: %+v; then status %s %q", first, stillRed.Phase, stillRed.PauseReason)
	}
	if second.rejected != nil || res.Status != CampaignComplete || fmt.Sprint(h.merges) != "[a b c]" || h.headVerifies != 3 {
		t.Fatalf("resume on a green head: %+v; result %s, merges %v, head verifies %d", second, res.Status, h.merges, h.headVerifies)
	}
	for id := range l.started {
		if strings.Count(id, "/") > 1 {
			t.Fatalf("%s ran: a task went back for the head's failure (%v)", id, l.started)
		}
	}
	if len(events) != 2 {
		t.Fatalf("notifications %+v, want two paused (the pause, and the resume that found the head still red)", events)
	}
	for _, e := range events {
		if e.Event != EventPaused || !strings.Contains(e.Text, "head-red") || !strings.Contains(e.Text, "broken on the integration branch") {
			t.Fatalf("notification %+v", e)
		}
	}
	if events[0].Seq == events[1].Seq {
		t.Fatalf("both pauses notified with seq %d: one would be dropped as a duplicate", events[0].Seq)
	}
}

// TestPrepareFailingPastTheBoundPauses (SPEC 39, "never retries for
// ever"): PrepareTask keeps failing on git (the remote unreachable); it is
// retried for RALPH_MERGE_RETRY_MINUTES, then the campaign pauses
// (pauseReason git, the step and its error in pauseOutput, one paused
// notification) with the task waiting where it was (go 0, not failed), and
// no attempt after the bound. resume starts the same go, which merges.
func TestPrepareFailingPastTheBoundPauses(t *testing.T) {
	limits := queueApartLimits()
	limits.CampaignGitBound, limits.MergeRetryMinutes = true, 30
	limits.NotifyEvents = []string{EventPaused}
	env := newCampaignEnv(limits)
	l := newLoops(env, nil)
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: "h2", Merged: []activities.MergedTask{{ID: "a", Commit: "m"}}}, nil
	})
	var mu sync.Mutex
	var events []activities.NotifyInput
	notifications(env, &mu, &events)
	var attempts []time.Duration
	broken := true
	var start time.Time
	env.OnActivity(activities.PrepareTaskName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.PrepareTaskInput) (activities.PrepareTaskOutput, error) {
			mu.Lock()
			defer mu.Unlock()
			if start.IsZero() {
				start = env.Now()
			}
			if broken {
				attempts = append(attempts, env.Now().Sub(start))
				return activities.PrepareTaskOutput{}, errors.New("fetch from origin: could not resolve host")
			}
			return activities.PrepareTaskOutput{IntegrationHead: "h", TaskHead: "h"}, nil
		}).After(4 * time.Minute) // each attempt hangs on the network a while
	var retrying, paused CampaignStatus
	var aPaused TaskStatus
	var attemptsAtPause int
	statusAt(t, env, 25*time.Minute, &retrying)
	statusAt(t, env, 2*time.Hour, &paused)
	env.RegisterDelayedCallback(func() {
		aPaused = campaignTask(t, env, "a")
		mu.Lock()
		attemptsAtPause, broken = len(attempts), false
		mu.Unlock()
	}, 2*time.Hour)
	resume := sendUpdate(env, 2*time.Hour+time.Minute, workflows.UpdateResume)
	res := runCampaign(t, env, `{"tasks":[{"id":"a","objective":"a"}],"verifyCommand":"check"}`)
	t.Logf("%d attempts, the last at %s; paused %s %q: %q", len(attempts), attempts[len(attempts)-1], paused.Phase, paused.PauseReason, paused.PauseOutput)
	if paused.Phase != workflows.PhasePaused || paused.PauseReason != PauseGit ||
		!strings.Contains(paused.PauseOutput, "preparing task a kept failing for 30 minutes") || !strings.Contains(paused.PauseOutput, "could not resolve host") {
		t.Fatalf("status while paused: %+v", paused)
	}
	if retrying.Phase != workflows.PhaseRunning || retrying.Counts[TaskRunning] != 1 {
		t.Fatalf("status while retrying: %s %v", retrying.Phase, retrying.Counts)
	}
	if aPaused.Phase != TaskWaiting || aPaused.Go != 0 || aPaused.WorkflowID != "" || aPaused.LastFailure != "" {
		t.Fatalf("a while paused: %+v, want waiting at go 0", aPaused)
	}
	// Fewer than the test environment's own cap of 10: the bound ended them.
	if attemptsAtPause < 5 || attemptsAtPause >= 10 || attemptsAtPause != len(attempts) || attempts[len(attempts)-1] > 30*time.Minute {
		t.Fatalf("%d attempts by the pause (%d in all), the last at %s: want retries within 30 minutes only", attemptsAtPause, len(attempts), attempts[len(attempts)-1])
	}
	if resume.rejected != nil || res.Status != CampaignComplete || res.Tasks[0].Phase != TaskMerged {
		t.Fatalf("resume %+v; result %+v", resume, res)
	}
	if _, ok := l.started["camp/a"]; !ok || len(l.started) != 1 {
		t.Fatalf("loops %v, want a's first go only", l.started)
	}
	if len(events) != 1 || events[0].Event != EventPaused || !strings.Contains(events[0].Text, "git") {
		t.Fatalf("notifications %+v", events)
	}
}

// TestApprovedLandingPastTheBoundPauses: the landing of an approved merge
// keeps failing on git; it is retried for RALPH_MERGE_RETRY_MINUTES (not
// for ever, not failing the task), then the campaign pauses (pauseReason
// git naming the landing) with the task queued and still approved; resume
// lands the kept tip without merging or asking again.
func TestApprovedLandingPastTheBoundPauses(t *testing.T) {
	limits := queueApartLimits()
	limits.CampaignHeldApart, limits.CampaignGitBound, limits.MergeRetryMinutes = true, true, 30
	limits.NotifyEvents = []string{EventPaused}
	env := newCampaignEnv(limits)
	newLoops(env, nil)
	var mu sync.Mutex
	broken, holds := true, 0
	var lands []time.Duration
	var start time.Time
	merge := func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		if in.Land == "" {
			holds++
			return activities.MergeTaskOutput{Outcome: activities.MergeHeld, Head: "h", Tip: "tip-a", DiffStat: " a.txt | 1 +",
				Verification: &report.Verification{Command: in.VerifyCommand}}, nil
		}
		if start.IsZero() {
			start = env.Now()
		}
		lands = append(lands, env.Now().Sub(start))
		if broken {
			return activities.MergeTaskOutput{}, errors.New("push to origin: could not resolve host")
		}
		return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: in.Land, Tip: in.Land,
			Merged: []activities.MergedTask{{ID: "a", Commit: in.Land}}}, nil
	}
	onMerge(env, merge)
	var events []activities.NotifyInput
	notifications(env, &mu, &events)
	env.OnActivity(activities.MergeTaskName, mock.Anything, mock.Anything).After(4 * time.Minute).Return(merge)
	approve := sendUpdate(env, 10*time.Minute, workflows.UpdateApprove, TaskRequest{Task: "a"})
	var paused CampaignStatus
	var aPaused TaskStatus
	var landsAtPause int
	statusAt(t, env, 2*time.Hour, &paused)
	env.RegisterDelayedCallback(func() {
		aPaused = campaignTask(t, env, "a")
		mu.Lock()
		landsAtPause, broken = len(lands), false
		mu.Unlock()
	}, 2*time.Hour)
	resume := sendUpdate(env, 2*time.Hour+time.Minute, workflows.UpdateResume)
	res := runCampaign(t, env, `{"tasks":[{"id":"a","objective":"a"}],"verifyCommand":"check","approve":"merge"}`)
	t.Logf("%d landing attempts by the pause, the last at %s; paused %q: %q", landsAtPause, lands[landsAtPause-1], paused.PauseReason, paused.PauseOutput)
	if approve.rejected != nil || approve.failed != nil || paused.Phase != workflows.PhasePaused || paused.PauseReason != PauseGit ||
		!strings.Contains(paused.PauseOutput, "landing task a's approved merge kept failing for 30 minutes") {
		t.Fatalf("approve %+v; status while paused: %+v", approve, paused)
	}
	if aPaused.Phase != TaskQueued || aPaused.LastFailure != "" || aPaused.MergeAttempts != 0 {
		t.Fatalf("a while paused: %+v", aPaused)
	}
	if landsAtPause < 5 || landsAtPause >= 10 || lands[landsAtPause-1] > 30*time.Minute {
		t.Fatalf("%d landing attempts by the pause, the last at %s: want retries within 30 minutes only", landsAtPause, lands[landsAtPause-1])
	}
	if resume.rejected != nil || res.Status != CampaignComplete || res.Tasks[0].MergeCommit != "tip-a" || holds != 1 || len(lands) != landsAtPause+1 {
		t.Fatalf("resume %+v; result %+v; %d holds, %d landings", resume, res, holds, len(lands))
	}
	if len(events) != 1 || events[0].Event != EventPaused {
		t.Fatalf("notifications %+v", events)
	}
}

// TestHeadRedPauseCrossesContinueAsNew: a campaign paused head-red (and
// then by an operator, which an operator may still do) that continues as
// new carries both pauses (reason, output, the held-back task at the
// queue's front, no merge attempt charged) into its next run.
func TestHeadRedPauseCrossesContinueAsNew(t *testing.T) {
	limits := queueApartLimits()
	limits.CampaignHeadRed = true
	env := newCampaignEnv(limits)
	newLoops(env, nil)
	h := &redHead{red: true, output: "FAIL: TestHead"}
	onMerge(env, h.merge)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 30*time.Minute)
	pause := sendUpdate(env, 31*time.Minute, workflows.UpdatePause) // an operator's pause on top wakes the main loop
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(`{"tasks":[{"id":"a","objective":"a"}],"verifyCommand":"check"}`), (*CampaignContinuation)(nil))
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want the campaign to continue as new, got %v", err)
	}
	var k CampaignContinuation
	if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &k); err != nil {
		t.Fatal(err)
	}
	if pause.rejected != nil || k.PauseReason != PauseHeadRed || k.PauseOutput != "FAIL: TestHead" || !k.Paused || fmt.Sprint(k.Queue) != "[a]" ||
		k.Tasks[0].Phase != TaskQueued || k.Tasks[0].MergeAttempts != 0 || h.headVerifies != 1 {
		t.Fatalf("carried %+v (head verified %d times)", k, h.headVerifies)
	}
}
