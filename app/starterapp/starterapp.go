// Package starterapp is the Ralph starter binary: start a run (foreground
// with progress, or background), and status, cancel and result for an
// existing run. starter/main.go is a thin wrapper.
package starterapp

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/traces"
	"github.com/ralph-temporal/ralph/internal/codec"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// App is one starter invocation's environment.
type App struct {
	Env    config.Env
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Signals delivers SIGINT/SIGTERM; the first cancels a foreground run,
	// the second stops waiting.
	Signals <-chan os.Signal
	// PollInterval is how often a foreground run queries its status.
	PollInterval time.Duration
	// DialTimeout bounds connecting to the server.
	DialTimeout time.Duration

	// term is Stderr as given, for the campaign's live block to move the
	// cursor on; Main routes Stdout and Stderr through printableWriter.
	term io.Writer
}

// Main runs one command line and returns the exit code. What it prints
// holds no control character but newline and tab (printableWriter).
func (a *App) Main(args []string) int {
	p := *a
	p.term = a.Stderr
	p.Stdout, p.Stderr = &printableWriter{w: a.Stdout}, &printableWriter{w: a.Stderr}
	return p.main(args)
}

func (a *App) main(args []string) int {
	if a.PollInterval <= 0 {
		a.PollInterval = 500 * time.Millisecond
	}
	if a.DialTimeout <= 0 {
		a.DialTimeout = 10 * time.Second
	}
	cmd, err := parseArgs(args, a.Env, a.Stdin, a.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitComplete
	}
	if err != nil {
		fmt.Fprintf(a.Stderr, "starter: %v\n", err)
		return ExitUsage
	}

	opts, err := config.ClientOptions(a.Env, cmd.cfg.Connection)
	if err != nil {
		fmt.Fprintf(a.Stderr, "starter: %v\n", err)
		return ExitUsage
	}
	// The SDK logs through slog, quietly: the starter talks to people.
	opts.Logger = tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(a.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	ctx := context.Background()
	tp, err := traces.Start(ctx, cmd.cfg.Tracing)
	if err != nil {
		fmt.Fprintf(a.Stderr, "starter: %v\n", err)
		return ExitUsage
	}
	if tp != nil {
		ti, err := tp.ClientInterceptor()
		if err != nil {
			fmt.Fprintf(a.Stderr, "starter: %v\n", err)
			return ExitFailed
		}
		opts.Interceptors = append(opts.Interceptors, ti)
		// Flushed at exit: the starter's spans (its root span last) reach
		// the collector before the process ends.
		defer func() {
			if err := tp.Shutdown(context.Background()); err != nil {
				fmt.Fprintf(a.Stderr, "starter: warning: flushing traces: %v\n", err)
			}
		}()
	}
	// The command's span is the root of its trace: for run and start, the
	// trace the workflow, its rounds and their model and tool calls join.
	ctx, span := tp.Options().Start(ctx, "starter "+cmd.name)
	code := a.connected(ctx, cmd, opts)
	span.SetAttributes(attribute.Int("ralph.exit_code", code))
	if cmd.workflowID != "" {
		span.SetAttributes(attribute.String("temporalWorkflowID", cmd.workflowID))
	}
	if code == ExitFailed || code == ExitUsage {
		span.SetStatus(codes.Error, fmt.Sprintf("exit code %d", code))
	}
	span.End()
	return code
}

// connected runs cmd on a client dialled with opts.
func (a *App) connected(ctx context.Context, cmd command, opts client.Options) int {
	dctx, cancel := context.WithTimeout(ctx, a.DialTimeout)
	c, err := config.Dial(dctx, opts, a.Env)
	cancel()
	if err != nil {
		fmt.Fprintf(a.Stderr, "starter: %v\n", err)
		return ExitFailed
	}
	defer c.Close()

	dc := opts.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	s := &session{App: a, c: c, cmd: cmd, address: opts.HostPort, namespace: opts.Namespace, dc: dc}
	d, _ := lookupCommand(cmd.name)
	return d.exec(s, ctx)
}

// session is one connected command.
type session struct {
	*App
	c         client.Client
	cmd       command
	address   string
	namespace string
	// dc decodes payloads the way the client encodes them (rewind reads
	// round inputs from history).
	dc converter.DataConverter
}

func (s *session) errorf(format string, args ...any) {
	fmt.Fprintf(s.Stderr, "starter: "+format+"\n", args...)
}

func (s *session) infof(format string, args ...any) {
	fmt.Fprintf(s.Stderr, format+"\n", args...)
}

// run starts the workflow; in the foreground it follows it to the end.
func (s *session) run(ctx context.Context, foreground bool) int {
	cmd := s.cmd
	tq := cmd.cfg.TaskQueue
	if !s.workerReady(ctx) {
		return ExitFailed
	}

	opts := client.StartWorkflowOptions{
		ID:        cmd.workflowID,
		TaskQueue: tq,
		// Two loops never work one workspace at once: a second start on an
		// open id fails, a closed id may be reused.
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            staticSummary(cmd.objective),
	}
	if cmd.ifRunning == ifRunningAttach {
		return s.attach(ctx, opts, foreground)
	}
	run, err := s.c.ExecuteWorkflow(ctx, opts, workflows.WorkflowName, cmd.input())
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			s.errorf("a run with workflow id %q is already open (run id %s), so this start was refused: two loops never share a workspace. Join it with --if-running attach, follow it with `starter status %s`, wait with `starter result %s`, or stop it with `starter cancel %s`",
				cmd.workflowID, started.RunId, cmd.workflowID, cmd.workflowID, cmd.workflowID)
			return ExitFailed
		}
		s.errorf("start workflow %q: %v", cmd.workflowID, err)
		return ExitFailed
	}
	if !foreground {
		fmt.Fprintln(s.Stdout, run.GetID())
		s.infof("started workflow %s (run %s) on task queue %s; follow it with `starter status %s` or `starter result %s`",
			run.GetID(), run.GetRunID(), tq, run.GetID(), run.GetID())
		return ExitComplete
	}
	s.infof("started workflow %s (run %s) on task queue %s; Ctrl-C cancels the run", run.GetID(), run.GetRunID(), tq)
	return s.follow(ctx, run.GetID(), run.GetRunID(), true, true)
}

// workerReady checks that a worker can take a new run on the task queue
// (or that --allow-no-worker was given); false: it said why not.
func (s *session) workerReady(ctx context.Context) bool {
	tq := s.cmd.cfg.TaskQueue
	pollers, err := s.takers(ctx, tq)
	switch {
	case err != nil:
		s.errorf("warning: could not check task queue %q for workers: %v", tq, err)
	case pollers.takers == 0 && !s.cmd.allowNoWorker:
		s.errorf("%s: start one (`worker`, or `worker --demo` without a model key), or pass --allow-no-worker to queue the run until one starts",
			noTakerMessage(pollers, tq, s.namespace, s.address))
		return false
	case pollers.takers == 0:
		s.errorf("warning: %s; the run waits until one does", noTakerMessage(pollers, tq, s.namespace, s.address))
	}
	return true
}

// attach starts the run, or joins the one open under its workflow id, in
// one call (Update-with-Start with the describe update), so a retried job
// never starts a second loop. The run then is followed (foreground) or its
// id and status are printed.
func (s *session) attach(ctx context.Context, opts client.StartWorkflowOptions, foreground bool) int {
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	opts.WorkflowExecutionErrorWhenAlreadyStarted = false
	op := s.c.NewWithStartWorkflowOperation(opts, workflows.WorkflowName, s.cmd.input())
	h, err := s.c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: workflows.UpdateDescribe,
			WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	var st workflows.Status
	if err == nil {
		err = h.Get(ctx, &st)
	}
	var run client.WorkflowRun
	if err == nil {
		run, err = op.Get(ctx)
	}
	if err != nil {
		s.errorf("start or join workflow %q: %v", opts.ID, err)
		return ExitFailed
	}
	what := "joined the open"
	if st.Phase == workflows.PhaseStarting {
		what = "started"
	} else if differ := attachDiffers(s.cmd.input(), opts.ID, st); len(differ) > 0 {
		s.errorf("workflow %s (run %s) is open with another %s than asked, so this run was not joined: "+
			"wait for it (`starter result %s`) or stop it (`starter cancel %s`), or start the new run under another id "+
			"(--workflow-id, or another --workspace)", opts.ID, run.GetRunID(), strings.Join(differ, ", "), opts.ID, opts.ID)
		return ExitUsage
	}
	s.infof("%s workflow %s (run %s, phase %s, round %d) on task queue %s", what, run.GetID(), run.GetRunID(), st.Phase, st.Round, opts.TaskQueue)
	if foreground {
		return s.follow(ctx, run.GetID(), run.GetRunID(), true, true)
	}
	fmt.Fprintln(s.Stdout, run.GetID())
	if err := writeJSON(s.Stdout, st); err != nil {
		s.errorf("encode the status: %v", err)
		return ExitFailed
	}
	return ExitComplete
}

// noTakerMessage says why no worker can take a new run on tq.
func noTakerMessage(q queuePollers, tq, namespace, address string) string {
	if q.all > 0 && q.current != "" {
		return fmt.Sprintf("%d worker(s) poll task queue %q (namespace %s at %s), but none of the deployment's current version %s, where new runs go: "+
			"start workers of that build, or make a polling version current (temporal worker deployment set-current-version)", q.all, tq, namespace, address, q.current)
	}
	if q.all > 0 {
		return fmt.Sprintf("%d versioned worker(s) poll task queue %q (namespace %s at %s), but their deployment has no current version, so no worker takes a new run: "+
			"make one current (temporal worker deployment set-current-version)", q.all, tq, namespace, address)
	}
	return fmt.Sprintf("no worker is polling task queue %q (namespace %s at %s)", tq, namespace, address)
}

// staticSummary is the run's one-line summary in the Temporal UI.
func staticSummary(objective string) string {
	line := strings.TrimSpace(objective)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i]) + " …"
	}
	return "Ralph: " + clip(line, 200)
}

// clip bounds s to n code points with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return runes.Prefix(s, n-1) + "…"
}

// outcome is how a run closed.
type outcome struct {
	result *workflows.Result
	err    error // the workflow's failure, cancellation or termination
}

// follow waits for the run to close. With progress it polls the status query
// and prints round-by-round lines. With cancelOnSignal the first signal
// cancels the workflow and keeps waiting for it to close, a second one stops
// waiting; without it a signal just stops waiting.
func (s *session) follow(ctx context.Context, id, runID string, progress, cancelOnSignal bool) int {
	done := make(chan outcome, 1)
	go func() { done <- s.await(ctx, id) }()

	var p *progressPrinter
	var tick <-chan time.Time
	if progress {
		p = &progressPrinter{out: s.Stderr, started: time.Now(), taskQueue: s.cmd.cfg.TaskQueue, workflowID: id}
		t := time.NewTicker(s.PollInterval)
		defer t.Stop()
		tick = t.C
		s.poll(ctx, id, &runID, p)
	}
	cancelled := false
	for {
		select {
		case o := <-done:
			if p != nil {
				s.poll(ctx, id, &runID, p)
			}
			return s.report(id, o, cancelled)
		case <-tick:
			s.poll(ctx, id, &runID, p)
		case sig := <-s.Signals:
			if !cancelOnSignal {
				s.errorf("stopped waiting (%v); workflow %s keeps running", sig, id)
				return ExitCancelled
			}
			if cancelled {
				s.errorf("stopped waiting (%v again); workflow %s is still being cancelled: check it with `starter status %s`", sig, id, id)
				return ExitCancelled
			}
			cancelled = true
			s.infof("%v: cancelling workflow %s; waiting for the running round to stop (press Ctrl-C again to stop waiting)", sig, id)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := s.c.CancelWorkflow(cctx, id, "")
			cancel()
			if err != nil && !isNotFound(err) {
				s.errorf("cancel workflow %s: %v", id, err)
			}
		}
	}
}

// await waits for the run to close, following continue-as-new, and rides
// out a server that is briefly unreachable (runs survive server restarts).
func (s *session) await(ctx context.Context, id string) outcome {
	var res workflows.Result
	if err := s.awaitInto(ctx, id, &res); err != nil {
		return outcome{err: err}
	}
	return outcome{result: &res}
}

// awaitInto waits for the workflow's result (a run's or a campaign's) as
// await does; the error is how it closed otherwise.
func (s *session) awaitInto(ctx context.Context, id string, res any) error {
	const patience = 2 * time.Minute
	var lostSince time.Time
	for {
		err := s.c.GetWorkflow(ctx, id, "").Get(ctx, res)
		if err == nil || isWorkflowOutcome(err) || codec.IsDecodeError(err) || ctx.Err() != nil {
			return err
		}
		if lostSince.IsZero() {
			lostSince = time.Now()
			s.errorf("lost the connection to the Temporal server at %s (%v); still waiting for workflow %s", s.address, err, id)
		}
		if time.Since(lostSince) > patience {
			return fmt.Errorf("the Temporal server at %s stayed unreachable for %s: %w", s.address, patience, err)
		}
		time.Sleep(2 * time.Second)
	}
}

// isWorkflowOutcome tells a closed workflow's error from a transport error.
func isWorkflowOutcome(err error) bool {
	var wee *temporal.WorkflowExecutionError
	var canceled *temporal.CanceledError
	var app *temporal.ApplicationError
	var term *temporal.TerminatedError
	var timeout *temporal.TimeoutError
	var notFound *serviceerror.NotFound
	return errors.As(err, &wee) || errors.As(err, &canceled) || errors.As(err, &app) ||
		errors.As(err, &term) || errors.As(err, &timeout) || errors.As(err, &notFound)
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// report prints how the run closed and returns the exit code.
func (s *session) report(id string, o outcome, cancelRequested bool) int {
	if o.result != nil {
		if cancelRequested {
			s.infof("workflow %s finished before the cancel took effect", id)
		}
		return s.printResult(*o.result)
	}
	err := o.err
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		s.infof("workflow %s was cancelled; it closed after its running round stopped", id)
		return ExitCancelled
	}
	if isNotFound(err) {
		s.errorf("no workflow with id %q in namespace %s", id, s.namespace)
		return ExitFailed
	}
	fmt.Fprintln(s.Stderr, report.Truncate(FailureText(id, err), s.cmd.cfg.MaxResultChars))
	return ExitFailed
}

// printResult prints the result text (or JSON) and maps the outcome to the
// exit code.
func (s *session) printResult(res workflows.Result) int {
	code, ok := ExitCode(res.Status)
	if s.cmd.jsonOut {
		if err := writeJSON(s.Stdout, res); err != nil {
			s.errorf("encode the result: %v", err)
			return ExitFailed
		}
	} else {
		o := report.Outcome{Status: res.Status, Rounds: res.RoundsStarted, Limit: res.Limit,
			Verification: res.Verification, Report: res.Report, Review: res.Review}
		if res.Reason != nil {
			o.Reason = *res.Reason
		}
		text, err := report.ResultText(o, s.cmd.cfg.MaxResultChars)
		if err != nil {
			s.errorf("render the result: %v", err)
			return ExitFailed
		}
		fmt.Fprintln(s.Stdout, text)
		s.infof("%s", usageLine(res.Usage))
	}
	if !ok {
		s.errorf("unknown outcome %q", res.Status)
		return ExitFailed
	}
	return code
}

// usageLine is what a run spent, its estimate apart (usage.estimated).
func usageLine(u usage.Usage) string {
	line := fmt.Sprintf("usage: %d model calls, %d tool calls, %d prompt tokens, %d completion tokens",
		u.ModelCalls, u.ToolCalls, u.PromptTokens, u.CompletionTokens)
	if e := u.Estimated; e != (usage.Counts{}) {
		line += fmt.Sprintf(" as reported; estimated without a provider's figure: %d model calls, %d prompt tokens, %d completion tokens",
			e.ModelCalls, e.PromptTokens, e.CompletionTokens)
	}
	return line
}

// writeJSON prints v as indented JSON without HTML escaping.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// FailureText describes a failed run for people: the failure type, its
// message and, for RoundFailed / InvalidReport, the failed round and the
// last accepted handoff.
func FailureText(id string, err error) string {
	var b strings.Builder
	var app *temporal.ApplicationError
	var term *temporal.TerminatedError
	var timeout *temporal.TimeoutError
	switch {
	case errors.As(err, &app):
		fmt.Fprintf(&b, "Run %s failed: %s: %s", id, typeOr(app.Type()), app.Message())
		switch app.Type() {
		case workflows.ErrTypeRoundFailed:
			var d workflows.RoundFailedDetails
			if app.HasDetails() && app.Details(&d) == nil {
				fmt.Fprintf(&b, "\nFailed round: %d", d.FailedRound)
				writeHandoff(&b, d.LastHandoff)
			}
		case workflows.ErrTypeInvalidReport:
			var d workflows.InvalidReportDetails
			if app.HasDetails() && app.Details(&d) == nil {
				fmt.Fprintf(&b, "\nRound: %d\nProblem: %s", d.Round, d.Problem)
				writeHandoff(&b, d.LastHandoff)
			}
		}
	case errors.As(err, &term):
		fmt.Fprintf(&b, "Run %s was terminated: %v", id, err)
	case errors.As(err, &timeout):
		fmt.Fprintf(&b, "Run %s timed out: %v", id, err)
	default:
		fmt.Fprintf(&b, "Run %s failed: %v", id, err)
	}
	return b.String()
}

func typeOr(t string) string {
	if t == "" {
		return "error"
	}
	return t
}

func writeHandoff(b *strings.Builder, r *report.Report) {
	if r == nil {
		b.WriteString("\nLast accepted handoff: none (no round finished)")
		return
	}
	text, err := report.Indented(*r)
	if err != nil {
		text = fmt.Sprintf("(unprintable: %v)", err)
	}
	b.WriteString("\nLast accepted handoff:\n" + text)
}

// poll feeds the status of the followed run to p. It follows the run's
// continue-as-new chain: when the run it watches has continued as new, it
// prints that run's final status (every round it finished) first and then
// moves on to the latest run.
func (s *session) poll(ctx context.Context, id string, runID *string, p *progressPrinter) {
	if *runID == "" {
		*runID = s.latestRunID(ctx, id)
	}
	if *runID != "" {
		if info, err := s.describe(ctx, id, *runID); err == nil && info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
			if st, err := s.queryStatus(ctx, id, *runID); err == nil {
				p.update(st, nil)
			}
			*runID = s.latestRunID(ctx, id)
		}
	}
	p.update(s.queryStatus(ctx, id, *runID))
}

// describeTimeout bounds one describe call of the starter.
const describeTimeout = 10 * time.Second

// describe is a run's execution info (the latest run when runID is empty).
func (s *session) describe(ctx context.Context, id, runID string) (*workflowpb.WorkflowExecutionInfo, error) {
	dctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	d, err := s.c.DescribeWorkflow(dctx, id, runID)
	if err != nil {
		return nil, err
	}
	return d.RawResponse.GetWorkflowExecutionInfo(), nil
}

// latestRunID is the id of the workflow's latest run ("" when unknown).
func (s *session) latestRunID(ctx context.Context, id string) string {
	info, err := s.describe(ctx, id, "")
	if err != nil {
		return ""
	}
	return info.GetExecution().GetRunId()
}

// queryStatus asks a run (the latest when runID is empty) for its status.
func (s *session) queryStatus(ctx context.Context, id, runID string) (workflows.Status, error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st workflows.Status
	v, err := s.c.QueryWorkflow(qctx, id, runID, workflows.StatusQueryName)
	if err == nil {
		err = v.Get(&st)
	}
	return st, err
}

// status prints the status query as JSON.
func (s *session) status(ctx context.Context) int {
	id := s.cmd.workflowID
	qctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := s.c.QueryWorkflow(qctx, id, "", workflows.StatusQueryName)
	var st workflows.Status
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		if isNotFound(err) {
			s.errorf("no workflow with id %q in namespace %s", id, s.namespace)
			return ExitFailed
		}
		s.errorf("status query on workflow %s failed: %v%s", id, err, s.describeHint(ctx, id))
		return ExitFailed
	}
	if err := writeJSON(s.Stdout, st); err != nil {
		s.errorf("encode the status: %v", err)
		return ExitFailed
	}
	return ExitComplete
}

// describeHint adds what describe knows when a query fails (a query needs a
// worker polling the run's task queue).
func (s *session) describeHint(ctx context.Context, id string) string {
	info, err := s.describe(ctx, id, "")
	if err != nil {
		return ""
	}
	tq := info.GetTaskQueue()
	hint := fmt.Sprintf(" (the run is %s on task queue %s", statusName(info.GetStatus()), tq)
	if q, err := s.pollers(ctx, tq); err == nil && q.all == 0 {
		hint += fmt.Sprintf("; no worker is polling task queue %s, and queries need one", tq)
	}
	return hint + ")"
}

// cancel requests cancellation and, unless --no-wait, waits until the run
// has closed (the running round stopped first).
func (s *session) cancel(ctx context.Context) int {
	id := s.cmd.workflowID
	info, err := s.describe(ctx, id, "")
	switch {
	case isNotFound(err):
		s.errorf("no workflow with id %q in namespace %s: nothing to cancel", id, s.namespace)
		return ExitFailed
	case err != nil:
		s.errorf("describe workflow %s: %v", id, err)
		return ExitFailed
	case info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		s.errorf("workflow %s is not running (it closed as %s): nothing to cancel", id, statusName(info.GetStatus()))
		return ExitFailed
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = s.c.CancelWorkflow(cctx, id, "")
	cancel()
	if err != nil {
		if isNotFound(err) {
			s.errorf("workflow %q closed before it could be cancelled: nothing to cancel", id)
			return ExitFailed
		}
		s.errorf("cancel workflow %s: %v", id, err)
		return ExitFailed
	}
	if s.cmd.noWait {
		s.infof("cancel requested for workflow %s", id)
		return ExitComplete
	}
	s.infof("cancel requested for workflow %s; waiting for the running round to stop…", id)
	o := s.await(ctx, id)
	var canceled *temporal.CanceledError
	if o.err != nil && errors.As(o.err, &canceled) {
		s.infof("workflow %s is cancelled and closed", id)
		return ExitComplete
	}
	return s.report(id, o, true)
}

// result waits for the run to close and prints its result.
func (s *session) result(ctx context.Context) int {
	return s.follow(ctx, s.cmd.workflowID, "", false, false)
}

// attachDiffers names the fields of asked that the open run st does not
// run with: joining it would follow another loop than the one asked for.
// Fields asked is silent on (a deployment default) are not compared; an
// extend that raised a budget counts as a difference.
func attachDiffers(asked workflows.Input, workflowID string, st workflows.Status) []string {
	var differ []string
	if strings.TrimSpace(asked.Objective) != st.Objective {
		differ = append(differ, "objective")
	}
	if asked.MaxRounds != nil && *asked.MaxRounds != st.MaxRounds {
		differ = append(differ, "maxRounds")
	}
	workspace := asked.Workspace
	if workspace == "" {
		workspace = workflows.DefaultWorkspace(workflowID)
	}
	if workspace != st.Workspace {
		differ = append(differ, "workspace")
	}
	if asked.VerifyCommand != "" && asked.VerifyCommand != st.VerifyCommand {
		differ = append(differ, "verifyCommand")
	}
	for _, b := range []struct {
		name       string
		asked, run *int
	}{{"maxTokens", asked.MaxTokens, st.Budget.MaxTokens}, {"maxMinutes", asked.MaxMinutes, st.Budget.MaxMinutes}} {
		if b.asked != nil && (b.run == nil || *b.asked != *b.run) {
			differ = append(differ, b.name)
		}
	}
	return differ
}
