package starterapp

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/workflows"
)

// Subcommands.
const (
	cmdRun    = "run"
	cmdStart  = "start"
	cmdStatus = "status"
	cmdCancel = "cancel"
	cmdResult = "result"
	cmdStop   = "stop"
	cmdPause  = "pause"
	cmdResume = "resume"
)

// command is one parsed invocation.
type command struct {
	name       string
	objective  string
	maxRounds  int // 0: not set, the worker's ceiling applies
	maxTokens  int // 0: not set
	maxMinutes int // 0: not set
	verify     string
	workspace  string
	// reason is the stop update's reason.
	reason     string
	workflowID string
	// allowNoWorker starts even when nobody polls the task queue.
	allowNoWorker bool
	// noWait makes cancel return once the cancel is requested.
	noWait bool
	// jsonOut prints the workflow result as JSON instead of the result text.
	jsonOut bool
	cfg     config.Starter
}

// usageError is bad usage: the starter exits with ExitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

const topUsage = `Usage: starter <command> [flags]

Commands:
  run      start a Ralph run and follow it in the foreground: round-by-round
           progress, then the result text; Ctrl-C cancels the run and waits
           until the running round has stopped
  start    start a Ralph run in the background and print its workflow id
  status   print the run's status query (JSON)
  cancel   cancel a run and wait until it has closed (--no-wait to return at once)
  result   wait for a run to close and print its result text
  stop     end a run gracefully after its running round (--reason); exit 0 when accepted
  pause    hold a run before its next round (the running round finishes)
  resume   let a paused run go on

Start a run with --objective (or --objective-file) and --workspace; the
workflow id defaults to ralph-<workspace>. Address an existing run with
--workflow-id, --workspace, or the id as the only argument.

Connection: the standard TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY, TEMPORAL_TLS_* variables (or --address, --namespace).
Settings: RALPH_TASK_QUEUE (default ralph), RALPH_MAX_RESULT_CHARS (default 16384),
RALPH_ENCRYPTION_KEY_FILE (the workers' key file, when they encrypt payloads).

Exit codes: 0 complete, 3 blocked, 4 budget-limited, 5 stopped, 1 failed (or
any other error), 130 cancelled, 2 bad usage. stop, pause and resume exit 0
when the run accepted the update and 1 when it refused it (the reason is
printed).

Run 'starter <command> --help' for the flags of a command.
`

// parseArgs parses a whole command line (without the program name).
func parseArgs(args []string, env config.Env, stdin io.Reader, stderr io.Writer) (command, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return command{}, usagef("a command is required (run, start, status, cancel, result, stop, pause or resume)")
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stderr, topUsage)
		return command{}, flag.ErrHelp
	case cmdRun, cmdStart, cmdStatus, cmdCancel, cmdResult, cmdStop, cmdPause, cmdResume:
	default:
		return command{}, usagef("unknown command %q (want run, start, status, cancel, result, stop, pause or resume; see starter --help)", name)
	}
	cmd := command{name: name}
	starting := name == cmdRun || name == cmdStart

	fs := flag.NewFlagSet("starter "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	shared := config.NewStarterFlags(fs)
	fs.StringVar(&cmd.workflowID, "workflow-id", "", "workflow id (default ralph-<workspace>)")
	fs.StringVar(&cmd.workspace, "workspace", "", "workspace, relative to the worker's workspace root")
	var objectiveFile, maxRounds, maxTokens, maxMinutes string
	if starting {
		fs.StringVar(&cmd.verify, "verify", "", "command that must pass (exit 0) before a complete report is accepted (default: the worker's RALPH_VERIFY_COMMAND)")
		fs.StringVar(&maxTokens, "max-tokens", "", "token budget of the run, prompt + completion (default: the worker's RALPH_MAX_RUN_TOKENS)")
		fs.StringVar(&maxMinutes, "max-minutes", "", "wall-clock budget of the run in minutes (default: the worker's RALPH_MAX_RUN_MINUTES)")
		fs.StringVar(&cmd.objective, "objective", "", "the immutable objective of the run (required, or --objective-file)")
		fs.StringVar(&objectiveFile, "objective-file", "", "read the objective from this file ('-' for stdin)")
		fs.StringVar(&maxRounds, "max-rounds", "", "lower round cap for this run (default: the worker's ceiling)")
		fs.BoolVar(&cmd.allowNoWorker, "allow-no-worker", false, "start even when no worker polls the task queue (the run waits for one)")
	}
	if name == cmdRun || name == cmdResult {
		fs.BoolVar(&cmd.jsonOut, "json", false, "print the workflow result as JSON instead of the result text")
	}
	if name == cmdStop {
		fs.StringVar(&cmd.reason, "reason", "", "why the run is stopped (kept in the result)")
	}
	if name == cmdCancel {
		fs.BoolVar(&cmd.noWait, "no-wait", false, "return once the cancel is requested instead of waiting for the run to close")
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: starter %s [flags]%s\n\nFlags:\n", name, map[bool]string{true: "", false: " [workflow-id]"}[starting])
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return command{}, err
		}
		return command{}, &usageError{msg: err.Error()}
	}

	// Flags may also follow the workflow id ("stop ralph-w --reason x").
	var rest []string
	for args := fs.Args(); len(args) > 0; args = fs.Args() {
		rest = append(rest, args[0])
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return command{}, err
			}
			return command{}, &usageError{msg: err.Error()}
		}
	}
	switch {
	case starting && len(rest) > 0:
		return command{}, usagef("unexpected argument %q (give the objective with --objective)", rest[0])
	case !starting && len(rest) > 1:
		return command{}, usagef("unexpected argument %q (give one workflow id)", rest[1])
	case !starting && len(rest) == 1:
		if cmd.workflowID != "" && cmd.workflowID != rest[0] {
			return command{}, usagef("two workflow ids: --workflow-id %q and %q", cmd.workflowID, rest[0])
		}
		cmd.workflowID = rest[0]
	}

	cfg, err := shared.Resolve(env)
	if err != nil {
		return command{}, &usageError{msg: err.Error()}
	}
	cmd.cfg = cfg

	if cmd.workspace != "" {
		if err := workflows.CheckWorkspace(cmd.workspace); err != nil {
			var ie *workflows.InputError
			if errors.As(err, &ie) {
				return command{}, usagef("--workspace: %s", ie.Problem)
			}
			return command{}, usagef("--workspace: %v", err)
		}
	}
	cmd.workflowID = strings.TrimSpace(cmd.workflowID)
	if cmd.workflowID == "" {
		if cmd.workspace == "" {
			if starting {
				return command{}, usagef("--workspace is required (the run's directory under the worker's workspace root; the workflow id defaults to ralph-<workspace>), or give --workflow-id")
			}
			return command{}, usagef("which run? give --workflow-id, --workspace, or the workflow id as the argument")
		}
		cmd.workflowID = DefaultWorkflowID(cmd.workspace)
	}

	if !starting {
		return cmd, nil
	}
	if objectiveFile != "" {
		if cmd.objective != "" {
			return command{}, usagef("give --objective or --objective-file, not both")
		}
		data, err := readObjective(objectiveFile, stdin)
		if err != nil {
			return command{}, usagef("--objective-file: %v", err)
		}
		cmd.objective = data
	}
	if strings.TrimSpace(cmd.objective) == "" {
		return command{}, usagef("--objective is required and must not be blank")
	}
	for _, f := range []struct {
		name  string
		value string
		dst   *int
	}{{"--max-rounds", maxRounds, &cmd.maxRounds}, {"--max-tokens", maxTokens, &cmd.maxTokens}, {"--max-minutes", maxMinutes, &cmd.maxMinutes}} {
		if f.value == "" {
			continue
		}
		n, err := config.ParsePositiveInt(f.name, f.value)
		if err != nil {
			return command{}, &usageError{msg: err.Error()}
		}
		*f.dst = n
	}
	if set := flagSet(fs, "verify"); set && strings.TrimSpace(cmd.verify) == "" {
		return command{}, usagef("--verify must not be blank (leave it out to use the worker's default)")
	}
	return cmd, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// DefaultWorkflowID is the starter's workflow id for a workspace, so a second
// start on the same workspace is refused while the first run is open.
func DefaultWorkflowID(workspace string) string {
	return "ralph-" + workspace
}

func readObjective(path string, stdin io.Reader) (string, error) {
	if path == "-" {
		if stdin == nil {
			return "", errors.New("no standard input")
		}
		data, err := io.ReadAll(stdin)
		return string(data), err
	}
	data, err := os.ReadFile(path)
	return string(data), err
}

// input is the workflow input for a start: maxRounds only when set.
func (c command) input() workflows.Input {
	in := workflows.Input{Objective: c.objective, Workspace: c.workspace}
	in.VerifyCommand = strings.TrimSpace(c.verify)
	for _, f := range []struct {
		value int
		dst   **int
	}{{c.maxRounds, &in.MaxRounds}, {c.maxTokens, &in.MaxTokens}, {c.maxMinutes, &in.MaxMinutes}} {
		if f.value > 0 {
			n := f.value
			*f.dst = &n
		}
	}
	return in
}
