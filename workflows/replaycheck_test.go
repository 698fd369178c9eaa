package workflows_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// The SDK's replayer compares only the types of the commands a replay
// issues with the recorded events. A change to what a command carries (a
// round's workspace or budget, a timer's duration, a search attribute, the
// continue-as-new input, the result) replays cleanly there, yet moves every
// open run elsewhere under auto-upgrade. replayChecked therefore records
// every command's attributes through an interceptor and compares them with
// the recorded events.

// command is one command the replayed code issued, or one recorded event,
// reduced to what must stay the same.
type command struct {
	kind string // activity, local activity, timer, upsert, child, continue-as-new, version
	what string // comparable rendering of its attributes
	// beforeReset: recorded before the reset point of a reset run's history.
	beforeReset bool
	// cancelled: the code cancelled it; a command cancelled in the task that
	// created it never reaches history, so it may be missing there.
	cancelled func() bool
}

// commandLog collects the commands of one replay.
type commandLog struct {
	dc       converter.DataConverter
	commands []command
	versions map[string]bool
	err      error
}

func (c *commandLog) add(kind, what string, ctx workflow.Context) {
	cmd := command{kind: kind, what: what, cancelled: func() bool { return false }}
	if ctx != nil {
		cmd.cancelled = func() bool { return ctx.Err() != nil }
	}
	c.commands = append(c.commands, cmd)
}

// payloads renders values as the data converter would send them.
func (c *commandLog) payloads(args ...any) string {
	p, err := c.dc.ToPayloads(args...)
	if err != nil && c.err == nil {
		c.err = err
	}
	return renderPayloads(p)
}

// renderPayloads renders payloads as canonical JSON with zero values
// dropped: a field the code adds with its zero value (or an older history
// omitted) is no change to what the command does.
func renderPayloads(p *commonpb.Payloads) string {
	var b bytes.Buffer
	for _, pl := range p.GetPayloads() {
		var v any
		if err := json.Unmarshal(pl.GetData(), &v); err != nil {
			b.Write(pl.GetData())
		} else {
			out, _ := json.Marshal(dropZero(v))
			b.Write(out)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func dropZero(v any) any {
	switch t := v.(type) {
	case map[string]any:
		// Each key is decided alone: the order does not matter.
		//workflowcheck:ignore
		for k, x := range t {
			if x = dropZero(x); isZero(x) {
				delete(t, k)
			} else {
				t[k] = x
			}
		}
		return t
	case []any:
		for i := range t {
			t[i] = dropZero(t[i])
		}
	}
	return v
}

func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case float64:
		return t == 0
	case string:
		return t == ""
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func renderAttrs(attrs map[string]any) string {
	out, _ := json.Marshal(attrs)
	return string(out)
}

// typedValues are a search-attribute upsert's values by name.
func typedValues(updates []temporal.SearchAttributeUpdate) map[string]any {
	sa := temporal.NewSearchAttributes(updates...)
	values := map[string]any{}
	for _, a := range workflows.SearchAttributes() {
		switch a.Type {
		case "Int":
			if v, ok := sa.GetInt64(temporal.NewSearchAttributeKeyInt64(a.Name)); ok {
				values[a.Name] = v
			}
		default:
			if v, ok := sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(a.Name)); ok {
				values[a.Name] = v
			}
		}
	}
	return values
}

// changeVersionAttr is the search attribute the SDK upserts for GetVersion.
const changeVersionAttr = "TemporalChangeVersion"

type logInterceptor struct {
	interceptor.WorkerInterceptorBase
	log *commandLog
}

func (i *logInterceptor) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &logInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, log: i.log}
}

type logInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	log *commandLog
}

func (i *logInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&logOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, log: i.log})
}

type logOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	log *commandLog
}

func (o *logOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.log.add("activity", activityType+" "+o.log.payloads(args...), ctx)
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *logOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.log.add("local activity", activityType, ctx)
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *logOutbound) ExecuteChildWorkflow(ctx workflow.Context, childWorkflowType string, args ...any) workflow.ChildWorkflowFuture {
	o.log.add("child", childWorkflowType+" "+o.log.payloads(args...), ctx)
	return o.Next.ExecuteChildWorkflow(ctx, childWorkflowType, args...)
}

func (o *logOutbound) NewTimer(ctx workflow.Context, d time.Duration) workflow.Future {
	o.timer(ctx, d)
	return o.Next.NewTimer(ctx, d)
}

func (o *logOutbound) NewTimerWithOptions(ctx workflow.Context, d time.Duration, opts workflow.TimerOptions) workflow.Future {
	o.timer(ctx, d)
	return o.Next.NewTimerWithOptions(ctx, d, opts)
}

// timer logs a timer that becomes a command (a zero timer fires at once).
func (o *logOutbound) timer(ctx workflow.Context, d time.Duration) {
	if d > 0 {
		o.log.add("timer", d.String(), ctx)
	}
}

func (o *logOutbound) UpsertTypedSearchAttributes(ctx workflow.Context, updates ...temporal.SearchAttributeUpdate) error {
	o.log.add("upsert", renderAttrs(typedValues(updates)), nil)
	return o.Next.UpsertTypedSearchAttributes(ctx, updates...)
}

func (o *logOutbound) UpsertSearchAttributes(ctx workflow.Context, attrs map[string]any) error {
	o.log.add("upsert", renderAttrs(attrs), nil)
	return o.Next.UpsertSearchAttributes(ctx, attrs)
}

func (o *logOutbound) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	v := o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
	if v != workflow.DefaultVersion && !o.log.versions[changeID] {
		o.log.versions[changeID] = true
		o.log.add("version", fmt.Sprintf("%s=%d", changeID, v), nil)
	}
	return v
}

func (o *logOutbound) NewContinueAsNewError(ctx workflow.Context, wfn any, args ...any) error {
	o.log.add("continue-as-new", o.log.payloads(args...), nil)
	return o.Next.NewContinueAsNewError(ctx, wfn, args...)
}

func (o *logOutbound) NewContinueAsNewErrorWithOptions(ctx workflow.Context, opts workflow.ContinueAsNewErrorOptions, wfn any, args ...any) error {
	o.log.add("continue-as-new", o.log.payloads(args...), nil)
	return o.Next.NewContinueAsNewErrorWithOptions(ctx, opts, wfn, args...)
}

// recordedCommands are hist's events that commands made, reduced like the
// log's.
func recordedCommands(hist *historypb.History) ([]command, error) {
	dc := converter.GetDefaultDataConverter()
	var out []command
	add := func(kind, what string) { out = append(out, command{kind: kind, what: what}) }
	for _, ev := range hist.GetEvents() {
		switch {
		case ev.GetActivityTaskScheduledEventAttributes() != nil:
			a := ev.GetActivityTaskScheduledEventAttributes()
			add("activity", a.GetActivityType().GetName()+" "+renderPayloads(a.GetInput()))
		case ev.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil:
			a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes()
			add("child", a.GetWorkflowType().GetName()+" "+renderPayloads(a.GetInput()))
		case ev.GetTimerStartedEventAttributes() != nil:
			add("timer", ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration().String())
		case ev.GetUpsertWorkflowSearchAttributesEventAttributes() != nil:
			values := map[string]any{}
			for name, p := range ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields() {
				if name == changeVersionAttr {
					continue
				}
				var err error
				if string(p.GetMetadata()["type"]) == "Int" {
					var n int64
					err = dc.FromPayload(p, &n)
					values[name] = n
				} else {
					var s string
					err = dc.FromPayload(p, &s)
					values[name] = s
				}
				if err != nil {
					return nil, fmt.Errorf("event %d: search attribute %s: %w", ev.GetEventId(), name, err)
				}
			}
			if len(values) > 0 { // not the SDK's own upsert of GetVersion's changes
				add("upsert", renderAttrs(values))
			}
		case ev.GetMarkerRecordedEventAttributes() != nil:
			m := ev.GetMarkerRecordedEventAttributes()
			switch m.GetMarkerName() {
			case "LocalActivity":
				var data struct{ ActivityType string }
				if err := dc.FromPayloads(m.GetDetails()["data"], &data); err != nil {
					return nil, fmt.Errorf("event %d: local activity marker: %w", ev.GetEventId(), err)
				}
				add("local activity", data.ActivityType)
			case "Version":
				var id string
				var v workflow.Version
				if err := dc.FromPayloads(m.GetDetails()["change-id"], &id); err != nil {
					return nil, fmt.Errorf("event %d: version marker: %w", ev.GetEventId(), err)
				}
				if err := dc.FromPayloads(m.GetDetails()["version"], &v); err != nil {
					return nil, fmt.Errorf("event %d: version marker: %w", ev.GetEventId(), err)
				}
				add("version", fmt.Sprintf("%s=%d", id, v))
			}
		case ev.GetWorkflowExecutionContinuedAsNewEventAttributes() != nil:
			add("continue-as-new", renderPayloads(ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetInput()))
		case ev.GetWorkflowTaskFailedEventAttributes().GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW:
			// What came before a reset, the run it reset issued: the
			// replay issues it again, but as the reset run (resetRun).
			for i := range out {
				out[i].beforeReset = true
			}
		}
	}
	return out, nil
}

// compareCommands matches, kind by kind and in order, what the code issued
// with what history recorded. The code may issue more at the end (a history
// of a run still open, or one a reset ended), and a command it cancelled may
// be missing from history.
func compareCommands(issued, recorded []command, accepted []acceptedDifference) error {
	byKind := func(cmds []command) map[string][]command {
		m := map[string][]command{}
		for _, c := range cmds {
			m[c.kind] = append(m[c.kind], c)
		}
		return m
	}
	got, want := byKind(issued), byKind(recorded)
	for kind, rec := range want {
		iss := got[kind]
		if kind == "version" {
			if err := sameSet(iss, rec); err != nil {
				return err
			}
			continue
		}
		i := 0
		for n, r := range rec {
			for i < len(iss) && iss[i].what != r.what && iss[i].cancelled() {
				i++
			}
			if i == len(iss) {
				return fmt.Errorf("%s %d of history (%s) is not issued by the code", kind, n+1, r.what)
			}
			if iss[i].what != r.what && !r.beforeReset && !isAccepted(accepted, kind, iss[i].what, r.what) {
				return fmt.Errorf("%s %d differs from history:\n recorded: %s\n code:     %s", kind, n+1, r.what, iss[i].what)
			}
			i++
		}
	}
	return nil
}

// sameSet: the code asks for exactly the version markers history holds (the
// SDK itself accepts a marker the code no longer asks for).
func sameSet(issued, recorded []command) error {
	seen := map[string]bool{}
	for _, c := range issued {
		seen[c.what] = true
	}
	for _, r := range recorded {
		if !seen[r.what] {
			return fmt.Errorf("history records the version marker %s, which the code does not ask for (or answers otherwise)", r.what)
		}
	}
	return nil
}

// replayChecked replays hist under its recorded workflow id with wf
// registered as the Ralph workflow (and the Campaign as itself), then compares every command's
// attributes with the recorded events.
func replayChecked(hist *historypb.History, wf any, accepted ...acceptedDifference) error {
	log := &commandLog{dc: converter.GetDefaultDataConverter(), versions: map[string]bool{}}
	replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		Interceptors: []interceptor.WorkerInterceptor{&logInterceptor{log: log}},
	})
	if err != nil {
		return err
	}
	replayer.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: workflows.WorkflowName})
	replayer.RegisterWorkflowWithOptions(campaign.Campaign, workflow.RegisterOptions{Name: campaign.CampaignWorkflowName})
	started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	if err := replayer.ReplayWorkflowHistoryWithOptions(nil, hist, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: runIDOf(hist)}}); err != nil {
		return err
	}
	if log.err != nil {
		return log.err
	}
	recorded, err := recordedCommands(hist)
	if err != nil {
		return err
	}
	return compareCommands(log.commands, recorded, accepted)
}

// acceptedDifference is a reviewed difference between a recorded command
// and today's: field (a top-level key of the command's JSON) may differ in
// commands of kind.
type acceptedDifference struct {
	kind, field string
}

func isAccepted(accepted []acceptedDifference, kind, issued, recorded string) bool {
	var fields []string
	for _, a := range accepted {
		if a.kind == kind {
			fields = append(fields, a.field)
		}
	}
	return len(fields) > 0 && without(issued, fields) == without(recorded, fields)
}

// without renders a command's JSON lines with fields removed.
func without(what string, fields []string) string {
	var b strings.Builder
	for line := range strings.Lines(what) {
		prefix := ""
		if i := strings.IndexByte(line, '{'); i > 0 {
			prefix, line = line[:i], line[i:]
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			b.WriteString(prefix + line)
			continue
		}
		for _, f := range fields {
			delete(m, f)
		}
		out, _ := json.Marshal(m)
		b.WriteString(prefix + string(out) + "\n")
	}
	return b.String()
}
