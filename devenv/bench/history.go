package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// Temporal server v1.29 default history limits (dynamic config).
const (
	historyCountError      = 50 * 1024        // limit.historyCount.error
	historySizeError       = 50 * 1024 * 1024 // limit.historySize.error
	historyCountWarn       = 10 * 1024        // limit.historyCount.warn
	historySizeWarn        = 10 * 1024 * 1024 // limit.historySize.warn
	historyCountSuggestCAN = 4 * 1024         // limit.historyCount.suggestContinueAsNew
	historySizeSuggestCAN  = 4 * 1024 * 1024  // limit.historySize.suggestContinueAsNew
	blobSizeError          = 2 * 1024 * 1024  // limit.blobSize.error (one payload)
)

// historyScenario is one kind of run whose history is measured.
type historyScenario struct {
	name      string
	tag       string // in the objective; tells the model which report to send
	objective string
	report    fakeopenai.ReportArgs
}

// maxReport is a continue report whose compact JSON is exactly maxChars code
// points, its summary made of unit.
func maxReport(unit string, maxChars int) (fakeopenai.ReportArgs, error) {
	r := report.Report{Status: report.StatusContinue, Summary: "", Evidence: []string{}, NextSteps: []string{"keep going"}}
	base, err := report.Size(r)
	if err != nil {
		return fakeopenai.ReportArgs{}, err
	}
	r.Summary = strings.Repeat(unit, maxChars-base)
	if n, err := report.Size(r); err != nil || n != maxChars {
		return fakeopenai.ReportArgs{}, fmt.Errorf("max report has %d code points, want %d (%v)", n, maxChars, err)
	}
	return fakeopenai.ReportArgs{Status: r.Status, Summary: r.Summary, Evidence: r.Evidence, NextSteps: r.NextSteps}, nil
}

// maxObjective is an objective of exactly maxChars code points.
func maxObjective(prefix, unit string, maxChars int) string {
	n := maxChars - len([]rune(prefix))
	return prefix + strings.Repeat(unit, n)
}

// History measures events and bytes per round and per workflow run for a
// small-report run and for runs at the size caps (objective and handoff),
// then sets the largest run (RoundsPerRun rounds) against Temporal's limits.
// Its steps: build the scenarios, run each and read its history chain,
// write the tables.
func (h *Harness) History(ctx context.Context) (Section, error) {
	lim := activities.DefaultLimits()
	sec := Section{
		Title: "6. History size per round and per run",
		Intro: fmt.Sprintf("Ralph runs of 20 rounds with default settings (RALPH_ROUNDS_PER_RUN=%d: a continue-as-new after round %d) "+
			"on an in-process worker, dev server, in three shapes: a small report (~100 characters) and a short objective; "+
			"then the size caps: a %d-code-point objective and a report whose compact JSON is exactly %d code points, first in "+
			"ASCII, then in 4-byte UTF-8 characters (the worst case in bytes). Events and bytes per run are the server's own accounting "+
			"(DescribeWorkflowExecution: HistoryLength, HistorySizeBytes), which its limits are checked against; per round is the "+
			"marginal cost of one more round (the events from one round's ActivityTaskScheduled to the next one's, protobuf size).",
			lim.RoundsPerRun, lim.RoundsPerRun, lim.MaxObjectiveChars, lim.MaxHandoffChars),
	}
	scenarios, err := historyScenarios(lim)
	if err != nil {
		return sec, err
	}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		obj := req.Prompt()
		for _, s := range scenarios {
			if strings.Contains(obj, s.tag) {
				return fakeopenai.Tools(fakeopenai.SubmitReport(s.report))
			}
		}
		return submitContinue("unknown scenario")
	}})
	defer model.Close()
	w, err := h.StartInProc(h.Dev, "history", model.BaseURL(), true, nil)
	if err != nil {
		return sec, err
	}
	defer w.Stop()

	runs := Table{Header: []string{"scenario", "workflow run", "rounds", "events", "bytes", "ended by"}}
	per := Table{Header: []string{"scenario", "events / round", "bytes / round", "largest run: rounds", "events", "bytes",
		"headroom to 50K events", "headroom to 50 MB", "rounds that would fit in 50 MB"}}
	for _, s := range scenarios {
		h.logf("history: %s", s.name)
		chain, err := h.historyRun(ctx, w.Queue, s)
		if err != nil {
			return sec, err
		}
		addHistoryRows(&runs, &per, s.name, chain)
	}
	sec.Tables = []Table{per, runs}
	sec.Notes = append(sec.Notes,
		fmt.Sprintf("Temporal's defaults: the run fails at %d events or %d MiB (limit.historyCount.error, limit.historySize.error), warns at %d events / %d MiB, "+
			"and suggests continue-as-new at %d events / %d MiB, which Ralph also honours at a round boundary; one payload may be at most %d MiB (limit.blobSize.error).",
			historyCountError, historySizeError>>20, historyCountWarn, historySizeWarn>>20, historyCountSuggestCAN, historySizeSuggestCAN>>20, blobSizeError>>20),
		"A round's bytes are dominated by its activity input (objective + previous report) and result (report); the 4-byte rows are the worst case the caps allow.",
		"\"largest run\" is the biggest single workflow run of the chain, i.e. what RALPH_ROUNDS_PER_RUN (or the server's continue-as-new suggestion) keeps a history to.")
	return sec, nil
}

// historyRounds is the length of every measured run.
const historyRounds = 20

// historyScenarios are the three shapes: a small report, then the caps in
// ASCII and in 4-byte UTF-8.
func historyScenarios(lim activities.Limits) ([]historyScenario, error) {
	small := fakeopenai.ReportArgs{Status: "continue", Summary: "Added the parser and its tests; two edge cases remain.",
		Evidence: []string{}, NextSteps: []string{"handle empty input", "handle CRLF line endings"}}
	asciiReport, err := maxReport("a", lim.MaxHandoffChars)
	if err != nil {
		return nil, err
	}
	wideReport, err := maxReport("𝄞", lim.MaxHandoffChars)
	if err != nil {
		return nil, err
	}
	return []historyScenario{
		{name: "small report, short objective", tag: "[hist-small]", objective: "[hist-small] Make `go test ./...` pass.", report: small},
		{name: "caps, ASCII", tag: "[hist-ascii]", objective: maxObjective("[hist-ascii] ", "a", lim.MaxObjectiveChars), report: asciiReport},
		{name: "caps, 4-byte UTF-8", tag: "[hist-wide]", objective: maxObjective("[hist-wide] ", "𝄞", lim.MaxObjectiveChars), report: wideReport},
	}, nil
}

// historyRun runs scenario s to its end and returns its history chain.
func (h *Harness) historyRun(ctx context.Context, queue string, s historyScenario) ([]RunHistory, error) {
	id := h.name("history-run")
	run, err := StartRalph(ctx, h.Dev, queue, id, ralphInput{Objective: s.objective, MaxRounds: historyRounds})
	if err != nil {
		return nil, err
	}
	firstRunID := run.GetRunID() // Get follows continue-as-new and moves GetRunID on
	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	return Chain(ctx, h.Dev, id, firstRunID)
}

// roundSpans are the indexes of rh's RunRound scheduled events.
func roundSpans(rh RunHistory) []int {
	var sched []int
	for j, ev := range rh.Events {
		if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
			ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activities.RunRoundName {
			sched = append(sched, j)
		}
	}
	return sched
}

// endedBy names rh's last event, shortened ("CONTINUED_AS_NEW").
func endedBy(rh RunHistory) string {
	n := len(rh.Events)
	if n == 0 {
		return "?"
	}
	end := strings.TrimPrefix(rh.Events[n-1].GetEventType().String(), "EVENT_TYPE_")
	return strings.TrimPrefix(end, "WORKFLOW_EXECUTION_")
}

// addHistoryRows adds a row per workflow run of chain to runs, and the
// scenario's per-round costs and its largest run against the limits to per.
func addHistoryRows(runs, per *Table, name string, chain []RunHistory) {
	var roundEvents, roundBytes []int
	var largest RunHistory
	largestRounds := 0
	for i, rh := range chain {
		sched := roundSpans(rh)
		for k := 0; k+1 < len(sched); k++ {
			b := 0
			for _, ev := range rh.Events[sched[k]:sched[k+1]] {
				b += ev.Size()
			}
			roundEvents = append(roundEvents, sched[k+1]-sched[k])
			roundBytes = append(roundBytes, b)
		}
		runs.Add(name, strconv.Itoa(i+1), strconv.Itoa(len(sched)), strconv.FormatInt(rh.Length, 10), strconv.FormatInt(rh.SizeBytes, 10), endedBy(rh))
		if len(sched) > largestRounds {
			largest, largestRounds = rh, len(sched)
		}
	}
	ev, by := medianInt(roundEvents), medianInt(roundBytes)
	fixedBytes := largest.SizeBytes - int64(largestRounds*by)
	fit := "n/a"
	if by > 0 {
		fit = strconv.FormatInt((historySizeError-fixedBytes)/int64(by), 10)
	}
	per.Add(name, strconv.Itoa(ev), strconv.Itoa(by), strconv.Itoa(largestRounds),
		strconv.FormatInt(largest.Length, 10), strconv.FormatInt(largest.SizeBytes, 10),
		fmt.Sprintf("%.0f×", float64(historyCountError)/float64(largest.Length)),
		fmt.Sprintf("%.0f×", float64(historySizeError)/float64(largest.SizeBytes)), fit)
}

func medianInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int(nil), xs...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[(len(s)-1)/2]
}
