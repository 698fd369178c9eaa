package starterapp

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// rewind resets the run to just after round K's report was accepted: the
// workflow task that completed after round K's activity. Replaying up to
// there restores the loop's state after round K (report, usage, counters);
// the workflow then schedules round K+1, whose activity restores the
// workspace to round K's checkpoint in git modes.
func (s *session) rewind(ctx context.Context) int {
	id, k := s.cmd.workflowID, s.cmd.round
	if k == 0 {
		s.errorf("rewind needs --round K (1 <= K < the run's current round)")
		return ExitUsage
	}
	d, err := s.c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		if isNotFound(err) {
			s.errorf("no workflow with id %q in namespace %s", id, s.namespace)
		} else {
			s.errorf("describe workflow %s: %v", id, err)
		}
		return ExitFailed
	}
	runID := d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	rr, err := s.roundsOf(ctx, id, runID)
	if err != nil {
		s.errorf("read the history of workflow %s: %v", id, err)
		return ExitFailed
	}
	rounds, current := rr.points, rr.current
	if current < 2 {
		s.errorf("--round %d: no round of workflow %s can be rewound yet (it is at round %d; a rewind goes back to a round before the current one)", k, id, current)
		return ExitUsage
	}
	if k >= current {
		s.errorf("--round %d: must be between 1 and %d (workflow %s is at round %d)", k, current-1, id, current)
		return ExitUsage
	}
	point, ok := rounds[k]
	if !ok {
		var ks []int
		for r := range rounds {
			if r < current {
				ks = append(ks, r)
			}
		}
		slices.Sort(ks)
		if len(ks) == 0 {
			s.errorf("--round %d: round %d ran before the run's last continue-as-new; no round of the current run can be rewound yet", k, k)
		} else {
			s.errorf("--round %d: round %d ran before the run's last continue-as-new; rounds %d-%d of the current run can be rewound", k, k, ks[0], ks[len(ks)-1])
		}
		return ExitUsage
	}
	if !rr.checkpointed && !s.cmd.keepWorkspace {
		s.errorf("--round %d: workflow %s keeps no git checkpoints (its worker runs with RALPH_GIT=off), so a rewind cannot restore round %d's files: "+
			"the workspace would keep the later rounds' work under round %d's report. Pass --keep-workspace to rewind the run's state and keep the files as they are", k, id, k, k)
		return ExitUsage
	}
	reason := s.cmd.reason
	if reason == "" {
		reason = fmt.Sprintf("starter rewind --round %d", k)
	} else {
		reason = fmt.Sprintf("starter rewind --round %d: %s", k, reason)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A run pinned to a build whose workers are gone answers no query and
	// its reset run would wait for that build for ever: it moves to the
	// current version first (the run and, below, its reset run).
	gone, err := s.strandedRun(rctx, d.RawResponse.GetWorkflowExecutionInfo())
	if err == nil && gone != nil {
		err = s.pinTo(rctx, id, runID, gone.to)
	}
	if err != nil {
		s.errorf("rewind workflow %s: %v", id, err)
		return ExitFailed
	}
	spent, err := s.spentBefore(rctx, id, runID, d.RawResponse.GetPendingActivities())
	if err != nil {
		s.errorf("rewind workflow %s: %v", id, err)
		return ExitFailed
	}
	resp, err := s.c.ResetWorkflowExecution(rctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 s.namespace,
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID},
		Reason:                    reason,
		WorkflowTaskFinishEventId: point,
		RequestId:                 uuid.NewString(),
		// The run comes back in the state it had after round K: updates
		// and signals sent later are not applied again. (The field is
		// deprecated in favour of exclude types, but servers from 1.2x on
		// honour it and it says "none" in one word.)
		//lint:ignore SA1019 see above
		ResetReapplyType: enumspb.RESET_REAPPLY_TYPE_NONE,
	})
	if err != nil {
		s.errorf("reset workflow %s to after round %d: %v", id, k, err)
		return ExitFailed
	}
	// Servers up to 1.29 refuse a signal as a post-reset operation, so it
	// follows the reset at once, before anything else that can fail: the
	// reset run waits for it before its first round, and what the rewound
	// rounds spent would otherwise be lost.
	if err := s.c.SignalWorkflow(rctx, id, resp.GetRunId(), workflows.SignalRewound, workflows.RewoundSignal{Round: k, Usage: spent}); err != nil {
		s.errorf("workflow %s was rewound, but what it spent after round %d (%d tokens) could not be handed to it: %v", id, k, spent.Tokens(), err)
		return ExitFailed
	}
	if gone != nil {
		if err := s.pinTo(rctx, id, resp.GetRunId(), gone.to); err != nil {
			s.errorf("workflow %s was rewound, but its reset run stays pinned to %s, which no worker polls: %v", id, versionName(gone.from), err)
			return ExitFailed
		}
		s.infof("workflow %s was pinned to %s, which no worker polls: moved it to the current version %s "+
			"(a pinned versioning override; `temporal workflow update-options --workflow-id %s --versioning-override-behavior unspecified` removes it)",
			id, versionName(gone.from), versionName(gone.to), id)
	}
	s.infof("workflow %s rewound to just after round %d (reset at event %d of run %s); it goes on at round %d", id, k, point, runID, k+1)
	fmt.Fprintln(s.Stdout, resp.GetRunId())
	return ExitComplete
}

// runRounds is what a rewind reads from a run's history: for each round
// whose report was accepted in it, the workflow task completed right after
// its activity (the reset point); the latest round the run started; and
// whether that round was handed a git checkpoint (git modes).
type runRounds struct {
	points       map[int]int64
	current      int
	checkpointed bool
}

func (s *session) roundsOf(ctx context.Context, id, runID string) (runRounds, error) {
	scheduled := map[int64]int{} // activity scheduled event id → round
	completed := map[int]bool{}
	points := map[int]int64{}
	var waiting []int // completed rounds waiting for their workflow task
	current, checkpointed := 0, false
	iter := s.c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return runRounds{}, err
		}
		switch {
		case ev.GetActivityTaskScheduledEventAttributes() != nil:
			a := ev.GetActivityTaskScheduledEventAttributes()
			if a.GetActivityType().GetName() != activities.RunRoundName {
				continue
			}
			var in activities.RoundInput
			if err := s.dc.FromPayloads(a.GetInput(), &in); err != nil {
				return runRounds{}, fmt.Errorf("decode the input of event %d: %w", ev.GetEventId(), err)
			}
			scheduled[ev.GetEventId()] = in.Round
			if in.Round >= current {
				current, checkpointed = in.Round, in.Checkpoint != ""
			}
		case ev.GetActivityTaskCompletedEventAttributes() != nil:
			if r, ok := scheduled[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]; ok {
				completed[r] = true
				waiting = append(waiting, r)
			}
		case ev.GetWorkflowTaskCompletedEventAttributes() != nil:
			for _, r := range waiting {
				points[r] = ev.GetEventId()
			}
			waiting = nil
		}
	}
	if current == 0 {
		// A continued run that has not scheduled its first round yet.
		var st workflows.Status
		if v, err := s.c.QueryWorkflow(ctx, id, runID, workflows.StatusQueryName); err == nil && v.Get(&st) == nil {
			current = st.Round
		}
		// No round of this run to read: nothing here can be rewound (the
		// round check refuses), so the git check does not apply.
		checkpointed = true
	}
	return runRounds{points: points, current: current, checkpointed: checkpointed}, nil
}

// spentBefore is what the run spent before the reset: its status usage
// plus what a running round's last heartbeat reported.
func (s *session) spentBefore(ctx context.Context, id, runID string, pending []*workflowpb.PendingActivityInfo) (usage.Usage, error) {
	v, err := s.c.QueryWorkflow(ctx, id, runID, workflows.StatusQueryName)
	var st workflows.Status
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		return usage.Usage{}, fmt.Errorf("read what the run spent (status query; a worker must be polling): %w", err)
	}
	spent := st.Usage
	for _, p := range pending {
		var hb activities.HeartbeatDetails
		if p.GetActivityType().GetName() == activities.RunRoundName && p.GetHeartbeatDetails() != nil &&
			s.dc.FromPayloads(p.GetHeartbeatDetails(), &hb) == nil {
			spent = spent.Add(hb.Usage)
		}
	}
	return spent, nil
}
