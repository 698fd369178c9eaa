package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/activities"
)

// stepTimes are the candidates benchmark's steps, by name, over every
// round measured at one candidate count.
type stepTimes map[string][]time.Duration

func (s stepTimes) add(name string, d time.Duration) { s[name] = append(s[name], d) }

// The round's steps as the history shows them, in table order. The round
// is the first candidate's scheduling to the next round's; "between rounds"
// is the workflow's own turn after the round's last activity.
var historySteps = []string{
	"dispatch: a candidate's RunRound scheduled → started (slowest of the round)",
	"RunRound started → completed (slowest candidate)",
	"candidates: first scheduled → last completed",
	"completions' spread: first candidate completed → last",
	"choice: last candidate completed → AdoptCandidate scheduled",
	"AdoptCandidate scheduled → completed",
	"between rounds: the round's last activity completed → next round scheduled",
	"round: first scheduled → next round's first scheduled",
}

// The worker's own steps of a round attempt (its "Round steps" log line),
// in order; a plain round has no edits, tree nor score.
var workerSteps = []string{"lock", "prepare", "edits", "tree", "session", "keep", "score"}

var workerStepNames = map[string]string{
	"lock":    "worker: open the attempt and take the workspace lock",
	"prepare": "worker: prepare the workspace (git)",
	"edits":   "worker: commit the workspace's edits, trade its lock for the candidate's",
	"tree":    "worker: the candidate's repository (StartCandidate)",
	"session": "worker: the session (sandbox, model calls, hand-off)",
	"keep":    "worker: commit the hand-off (a candidate: checkpoint, ref, diff stat)",
	"score":   "worker: score it (RALPH_CANDIDATE_SCORE)",
}

// activitySpan is one activity's schedule as the history records it.
type activitySpan struct {
	kind                          string
	task                          int64 // the workflow task that scheduled it
	scheduled, started, completed time.Time
}

// historySpans reads a run's activities from its history, in scheduling order.
func historySpans(ctx context.Context, c client.Client, id string) ([]*activitySpan, error) {
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	byID := map[int64]*activitySpan{}
	var spans []*activitySpan
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			s := &activitySpan{kind: a.GetActivityType().GetName(), task: a.GetWorkflowTaskCompletedEventId(), scheduled: ev.GetEventTime().AsTime()}
			byID[ev.GetEventId()] = s
			spans = append(spans, s)
			continue
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			if s := byID[a.GetScheduledEventId()]; s != nil {
				s.started = ev.GetEventTime().AsTime()
			}
			continue
		}
		if s := byID[closedScheduledID(ev)]; s != nil {
			s.completed = ev.GetEventTime().AsTime()
		}
	}
	return spans, nil
}

// closedScheduledID is the scheduled event of the activity ev closes (0: none).
func closedScheduledID(ev *historypb.HistoryEvent) int64 {
	switch {
	case ev.GetActivityTaskCompletedEventAttributes() != nil:
		return ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
	case ev.GetActivityTaskFailedEventAttributes() != nil:
		return ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
	case ev.GetActivityTaskCanceledEventAttributes() != nil:
		return ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()
	case ev.GetActivityTaskTimedOutEventAttributes() != nil:
		return ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()
	}
	return 0
}

// roundOfSpans is one round: its RunRounds (scheduled by one workflow task)
// and what followed until the next round.
type roundOfSpans struct {
	runs  []*activitySpan
	adopt *activitySpan
	last  time.Time // the round's last activity completed
}

// addHistorySteps splits a run's history into rounds and adds each
// complete round's steps to st.
func addHistorySteps(st stepTimes, spans []*activitySpan) {
	var rounds []*roundOfSpans
	for _, s := range spans {
		switch {
		case s.kind == activities.RunRoundName && (len(rounds) == 0 || rounds[len(rounds)-1].runs[0].task != s.task):
			rounds = append(rounds, &roundOfSpans{runs: []*activitySpan{s}})
		case s.kind == activities.RunRoundName:
			r := rounds[len(rounds)-1]
			r.runs = append(r.runs, s)
		case s.kind == activities.AdoptCandidateName && len(rounds) > 0:
			rounds[len(rounds)-1].adopt = s
		}
	}
	for i, r := range rounds {
		var dispatch, run []time.Duration
		var done []time.Time
		for _, s := range r.runs {
			dispatch, run, done = append(dispatch, s.started.Sub(s.scheduled)), append(run, s.completed.Sub(s.started)), append(done, s.completed)
		}
		first, last := slices.MinFunc(done, time.Time.Compare), slices.MaxFunc(done, time.Time.Compare)
		st.add(historySteps[0], slices.Max(dispatch))
		st.add(historySteps[1], slices.Max(run))
		st.add(historySteps[2], last.Sub(r.runs[0].scheduled))
		st.add(historySteps[3], last.Sub(first))
		r.last = last
		if r.adopt != nil {
			st.add(historySteps[4], r.adopt.scheduled.Sub(last))
			st.add(historySteps[5], r.adopt.completed.Sub(r.adopt.scheduled))
			r.last = r.adopt.completed
		}
		if i+1 < len(rounds) {
			st.add(historySteps[6], rounds[i+1].runs[0].scheduled.Sub(r.last))
			st.add(historySteps[7], rounds[i+1].runs[0].scheduled.Sub(r.runs[0].scheduled))
		}
	}
}

// addWorkerSteps adds every "Round steps" line of a worker's JSON log.
func addWorkerSteps(st stepTimes, logPath string) error {
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["msg"] != "Round steps" {
			continue
		}
		for _, name := range workerSteps {
			if v, ok := line[name+"Ms"].(float64); ok {
				st.add(workerStepNames[name], time.Duration(v*float64(time.Millisecond)))
			}
		}
	}
	return sc.Err()
}

// stepsTable is a row per step: its p50 (min–max) at each count.
func stepsTable(counts []int, byCount map[int]stepTimes) Table {
	tbl := Table{Header: []string{"step"}}
	for _, k := range counts {
		tbl.Header = append(tbl.Header, strconv.Itoa(k)+" candidate(s): ms p50 (min–max)")
	}
	names := slices.Clone(historySteps)
	for _, s := range workerSteps {
		names = append(names, workerStepNames[s])
	}
	for _, name := range names {
		row, seen := []string{name}, false
		for _, k := range counts {
			xs := byCount[k][name]
			if len(xs) == 0 {
				row = append(row, "–")
				continue
			}
			row, seen = append(row, spread(xs)), true
		}
		if seen {
			tbl.Add(row...)
		}
	}
	return tbl
}
